/* Lock and atomic kernels in cpuperf's manner: one pinned thread per CPU of a set runs each test,
 * first as many single calls each timed with the serializing timer (the minimum is kept: `sermin`),
 * then as an unrolled, unserialized loop for a fixed time (the call count gives the throughput:
 * `avg`). Every test's critical section is the same body, one increment of a counter that lives on
 * the lock's cache line, so the tests compare.
 *
 * Uncontended mode gives each thread its own objects (a page it maps and first touches itself);
 * shared mode gives the whole set one object per test. Every thread counts the calls it completed,
 * so after a run the protected counter must equal the sum of the counts: a broken lock shows. */
#ifndef CORELAT_LOCKS_H
#define CORELAT_LOCKS_H

#include <stdint.h>

enum corelat_lock_test {
    CORELAT_LK_BASELINE = 0,       /* call of an empty function */
    CORELAT_LK_INC_RELAXED = 1,    /* atomic fetch-add, relaxed */
    CORELAT_LK_INC_SEQCST = 2,     /* atomic fetch-add, sequentially consistent */
    CORELAT_LK_CAS_SPIN = 3,       /* test-and-test-and-set spinlock with a pause hint */
    CORELAT_LK_TICKET_SPIN = 4,    /* ticket spinlock */
    CORELAT_LK_PTHREAD_SPIN = 5,   /* pthread_spin_lock */
    CORELAT_LK_MUTEX = 6,          /* pthread_mutex_lock */
    CORELAT_LK_MUTEX_TRYLOCK = 7,  /* spin on pthread_mutex_trylock */
    CORELAT_LK_RWLOCK_WR = 8,      /* pthread_rwlock_wrlock */
    CORELAT_LK_RWLOCK_RD = 9,      /* pthread_rwlock_rdlock; readers share, so the body is atomic */
    CORELAT_LK_NONE = 10,          /* no lock at all: broken on purpose, for tests of the check */
    CORELAT_LK_COUNT = 11,
};

/* Names of the tests, indexed by enum corelat_lock_test. */
extern const char *const corelat_lock_names[CORELAT_LK_COUNT];

typedef struct {
    int n;                   /* threads, one per CPU */
    const int *cpus;         /* n CPU ids */
    int ntests;
    const int *tests;        /* ntests codes, run in this order */
    int shared;              /* 1: one object per test for the whole set */
    uint64_t serial_ticks;   /* length of each test's serialized phase, in timer ticks */
    uint64_t duration_ticks; /* length of each test's throughput phase, in timer ticks */
    uint64_t lead_ticks;     /* from the last thread's arrival to the common start */
    uint64_t timeout_ns;     /* longest wait for a lock or for the other threads */
    /* outputs, row-major (ntests, n), allocated by the caller */
    uint64_t *calls;         /* calls completed in the throughput phase */
    uint64_t *ticks;         /* ticks from the thread's start to its last clock read */
    uint64_t *sermin;        /* minimum ticks of one serialized call, timer included */
    uint64_t *sercalls;      /* calls completed in the serialized phase */
    uint64_t *counter;       /* ntests: protected counter(s) at the end, summed over objects */
    /* outputs on failure */
    int status;              /* enum corelat_status */
    int failed_cpu;          /* the CPU whose thread reported the failure, or -1 */
    int failed_test;         /* the test it was running, or -1 */
    int err;                 /* errno or detail */
    void *priv;              /* the run's own state between start and finish */
} corelat_lock_job;

struct corelat_team;

/* Start the threads; the job and its arrays must stay alive until corelat_locks_finish(). The
 * caller polls corelat_team_wait() in between (see team.h). Returns 0 or a status. */
int corelat_locks_start(corelat_lock_job *job, struct corelat_team *team);

/* Join the threads, read the counters, release the objects, fill status/failed_cpu/err. */
void corelat_locks_finish(corelat_lock_job *job, struct corelat_team *team);

#endif
