/* Lock, atomic, instruction and system-call kernels in cpuperf's manner (its whole list of tests,
 * under its names): one thread per CPU of a set runs each test, first as many short brackets of
 * calls, each timed with the serializing timer and spanning many timer steps (the minimum per call
 * is kept: `sermin`), then as an unrolled, unserialized loop for a fixed time (the call count gives
 * the throughput: `avg`). Every lock test's critical section is the same body, one increment of a
 * counter that lives on the lock's cache line, so the tests compare.
 *
 * Threads form groups (one group unless the caller says otherwise). Uncontended mode gives each
 * thread its own objects (pages it maps and first touches itself); shared mode gives each group one
 * object per test, mapped by the group's first thread. Every thread counts the calls it completed,
 * so after a run the protected counter must equal the sum of the counts: a broken lock shows. */
#ifndef CORELAT_LOCKS_H
#define CORELAT_LOCKS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cpufeat.h"
#include "team.h"

enum corelat_lock_test {
    CORELAT_LK_BASELINE = 0,
    CORELAT_LK_INC_TLS,
    CORELAT_LK_INC_ATOMIC,     /* relaxed */
    CORELAT_LK_INC_ATOMIC_CST, /* sequentially consistent */
    CORELAT_LK_PRNG_XOROSHIRO,
    CORELAT_LK_PRNG_MOD128,
    CORELAT_LK_PRNG_MOD127,
    CORELAT_LK_CPU_RDRAND64,
    CORELAT_LK_CPU_RDTSC,
    CORELAT_LK_CPU_RDTSCP,
    CORELAT_LK_CPU_RDPID,
    CORELAT_LK_SYS_SCHED_GETCPU,
    CORELAT_LK_CPU_LSL,
    CORELAT_LK_CPU_CPUID,
    CORELAT_LK_CPU_LFENCE,
    CORELAT_LK_CPU_SFENCE,
    CORELAT_LK_CPU_MFENCE,
    CORELAT_LK_CPU_PAUSE,
    CORELAT_LK_CPU_ISB,
    CORELAT_LK_CPU_DMB_ISH,
    CORELAT_LK_CPU_DSB_SY,
    CORELAT_LK_CPU_CNTVCT,
    CORELAT_LK_CPU_YIELD,
    CORELAT_LK_CPU_RNDR,
    CORELAT_LK_CLOCK_REAL,
    CORELAT_LK_CLOCK_REAL_COARSE,
    CORELAT_LK_CLOCK_MONO,
    CORELAT_LK_CLOCK_MONO_COARSE,
    CORELAT_LK_TICKET_SPIN,
    CORELAT_LK_CMPXCHG_SPIN, /* cpuperf's: compare-exchange first, then wait reading */
    CORELAT_LK_TTAS_SPIN,    /* corelat's: read first, compare-exchange only when free */
    CORELAT_LK_SPIN_DEFAULT,
    CORELAT_LK_SPIN_PSHARED,
    CORELAT_LK_SPIN_TRYLOCK,
    CORELAT_LK_MUTEX_DEFAULT,
    CORELAT_LK_MUTEX_PSHARED,
    CORELAT_LK_MUTEX_ROBUST,
    CORELAT_LK_MUTEX_INHERIT,
    CORELAT_LK_MUTEX_PROTECT,
    CORELAT_LK_MUTEX_TRYLOCK,
    CORELAT_LK_BINSEMA,
    CORELAT_LK_BINSEMA_PSHARED,
    CORELAT_LK_RWLOCK_WR,
    CORELAT_LK_RWLOCK_WR_PSHARED,
    CORELAT_LK_RWLOCK_RD,
    CORELAT_LK_RWLOCK_RD_PSHARED,
    CORELAT_LK_SEMAPHORE, /* value = threads sharing it: not exclusive, its increment is atomic */
    CORELAT_LK_STACK_LOCKFREE,
    CORELAT_LK_STACK_MUTEX,
    CORELAT_LK_STACK_SEMA,
    CORELAT_LK_STACK_WRLOCK,
    CORELAT_LK_NONE, /* no lock at all: broken on purpose, for tests of the check */
    CORELAT_LK_COUNT
};

/* Names of the tests, indexed by enum corelat_lock_test. */
extern const char *const corelat_lock_names[CORELAT_LK_COUNT];

/* 1 if the test can run here (the CPU has the instruction, the C library sets the mutex up as its
 * name says); else 0 and a one-line reason. With feats NULL: this CPU's own features. */
int corelat_lock_available(int test, const corelat_cpu_feats *feats, char *why, size_t why_len);
/* 1 if the test is for another architecture (left out of lists rather than shown unavailable). */
int corelat_lock_other_arch(int test, const corelat_cpu_feats *feats);

/* The robust mutex's correctness test (not timed): a thread locks it and exits holding it; the next
 * locker must get EOWNERDEAD, make it consistent, and both it and a later locker go on. 0, or -1
 * with the reason in why. */
int corelat_lock_robust_check(char *why, size_t why_len);

typedef struct {
    int n;            /* threads */
    const int *cpus;  /* n CPU ids (copied by corelat_locks_new) */
    const int *group; /* n group numbers 0..ngroups-1 (copied), or NULL for one group */
    int spread;       /* 1: each thread may run on any CPU of its group (cpuperf without -a) */
    int ntests;
    const int *tests;        /* ntests distinct codes, run in this order (copied) */
    int shared;              /* 1: one object per test for each group */
    uint64_t serial_ticks;   /* length of each test's serialized phase, in timer ticks */
    uint64_t duration_ticks; /* length of each test's throughput phase, in timer ticks */
    uint64_t lead_ticks;     /* from the last thread's arrival to the common start */
    uint64_t bracket_ticks;  /* a serialized bracket times enough calls to span this (20 timer steps) */
    uint64_t timeout_ns;     /* longest wait for a lock or for the other threads */
} corelat_lock_params;

typedef struct {
    corelat_job head;
    corelat_lock_params p;
    int *cpus, *tests, *group;
    /* outputs, row-major (ntests, n) */
    uint64_t *calls;      /* calls completed in the throughput phase */
    uint64_t *ticks;      /* ticks from the thread's own start to its last clock read */
    uint64_t *sermin;     /* minimum ticks of one serialized bracket of serk calls, timer included */
    uint64_t *serempty;   /* minimum ticks of an empty bracket (no call) timed after each of those */
    uint64_t *serk;       /* calls per serialized bracket */
    uint64_t *sercalls;   /* calls completed in the serialized phase */
    uint64_t *counter;    /* ntests: protected counter(s) at the end, summed over objects */
    uint64_t *counter_by; /* (ntests, n): the counter of the objects thread i mapped (0: it used
                           * its group leader's), so a caller can sum per group */
    int *ran_on;          /* n: the CPU each thread was on at its end (spread mode: where it ran) */
    int *aff_count;       /* n: CPUs in the thread's affinity mask at its end */
    int *aff_outside;     /* n: of those, CPUs outside its group (0 unless something moved it) */
    int failed_test;      /* output: the test a failing thread was in, or -1 */
    /* private */
    char **bufs;                  /* n buffers: each thread's own (uncontended) or its group leader's */
    atomic_int *at_test;          /* per thread: the test it is in, -1 (atomic: a thread left
                                   * behind may still write it) */
    atomic_int *buf_ready;        /* shared mode, per thread: this group leader's objects are ready */
    atomic_uint_fast64_t arrived; /* phase barrier: arrivals so far, over all phases */
    atomic_int phase_go;          /* phases the leader has started */
} corelat_lock_job;

/* A new job (one reference, the caller's), or NULL with *status set (EINVAL also for a test that
 * cannot run here: see corelat_lock_available). */
corelat_lock_job *corelat_locks_new(const corelat_lock_params *p, int *status);

/* Start the threads; then poll, finish and release the job (team.h). After finishing, read the
 * counters with corelat_locks_collect() (only when every thread finished). */
int corelat_locks_start(corelat_lock_job *job);

/* Sum the protected counters into job->counter and name job->failed_test. */
void corelat_locks_collect(corelat_lock_job *job);

#endif
