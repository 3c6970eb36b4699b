/* Lock and atomic kernels in cpuperf's manner: one pinned thread per CPU of a set runs each test,
 * first as many short brackets of calls, each timed with the serializing timer and spanning many
 * timer steps (the minimum per call is kept: `sermin`),
 * then as an unrolled, unserialized loop for a fixed time (the call count gives the throughput:
 * `avg`). Every test's critical section is the same body, one increment of a counter that lives on
 * the lock's cache line, so the tests compare.
 *
 * Uncontended mode gives each thread its own objects (a page it maps and first touches itself);
 * shared mode gives the whole set one object per test. Every thread counts the calls it completed,
 * so after a run the protected counter must equal the sum of the counts: a broken lock shows. */
#ifndef CORELAT_LOCKS_H
#define CORELAT_LOCKS_H

#include <stdatomic.h>
#include <stdint.h>

#include "team.h"

enum corelat_lock_test {
    CORELAT_LK_BASELINE = 0,      /* call of an empty function */
    CORELAT_LK_INC_RELAXED = 1,   /* atomic fetch-add, relaxed */
    CORELAT_LK_INC_SEQCST = 2,    /* atomic fetch-add, sequentially consistent */
    CORELAT_LK_CAS_SPIN = 3,      /* test-and-test-and-compare-exchange spinlock, pause hint */
    CORELAT_LK_TICKET_SPIN = 4,   /* ticket spinlock */
    CORELAT_LK_PTHREAD_SPIN = 5,  /* pthread_spin_lock */
    CORELAT_LK_MUTEX = 6,         /* pthread_mutex_lock */
    CORELAT_LK_MUTEX_TRYLOCK = 7, /* spin on pthread_mutex_trylock */
    CORELAT_LK_RWLOCK_WR = 8,     /* pthread_rwlock_wrlock */
    CORELAT_LK_RWLOCK_RD = 9,     /* pthread_rwlock_rdlock; readers share, so the body is atomic */
    CORELAT_LK_NONE = 10,         /* no lock at all: broken on purpose, for tests of the check */
    CORELAT_LK_COUNT = 11,
};

/* Names of the tests, indexed by enum corelat_lock_test. */
extern const char *const corelat_lock_names[CORELAT_LK_COUNT];

typedef struct {
    int n;           /* threads, one per CPU */
    const int *cpus; /* n CPU ids (copied by corelat_locks_new) */
    int ntests;
    const int *tests;        /* ntests distinct codes, run in this order (copied) */
    int shared;              /* 1: one object per test for the whole set */
    uint64_t serial_ticks;   /* length of each test's serialized phase, in timer ticks */
    uint64_t duration_ticks; /* length of each test's throughput phase, in timer ticks */
    uint64_t lead_ticks;     /* from the last thread's arrival to the common start */
    uint64_t bracket_ticks;  /* a serialized bracket times enough calls to span this (20 timer steps) */
    uint64_t timeout_ns;     /* longest wait for a lock or for the other threads */
} corelat_lock_params;

typedef struct {
    corelat_job head;
    corelat_lock_params p;
    int *cpus, *tests;
    /* outputs, row-major (ntests, n) */
    uint64_t *calls;    /* calls completed in the throughput phase */
    uint64_t *ticks;    /* ticks from the thread's own start to its last clock read */
    uint64_t *sermin;   /* minimum ticks of one serialized bracket of serk calls, timer included */
    uint64_t *serk;     /* calls per serialized bracket */
    uint64_t *sercalls; /* calls completed in the serialized phase */
    uint64_t *counter;  /* ntests: protected counter(s) at the end, summed over objects */
    int failed_test;    /* output: the test a failing thread was in, or -1 */
    /* private */
    char **bufs;                  /* n pages (uncontended), or bufs[0] only (shared) */
    atomic_int *at_test;          /* per thread: the test it is in, -1 (atomic: a thread left
                                   * behind may still write it) */
    atomic_int buf_ready;         /* shared mode: the leader's page is initialised */
    atomic_uint_fast64_t arrived; /* phase barrier: arrivals so far, over all phases */
    atomic_int phase_go;          /* phases the leader has started */
} corelat_lock_job;

/* A new job (one reference, the caller's), or NULL with *status set. */
corelat_lock_job *corelat_locks_new(const corelat_lock_params *p, int *status);

/* Start the threads; then poll, finish and release the job (team.h). After finishing, read the
 * counters with corelat_locks_collect() (only when every thread finished). */
int corelat_locks_start(corelat_lock_job *job);

/* Sum the protected counters into job->counter and name job->failed_test. */
void corelat_locks_collect(corelat_lock_job *job);

#endif
