/* Internal to the lock kernels (locks.c, opkernels.c): the object a test works on and the context
 * every kernel call gets. */
#ifndef CORELAT_LOCKOBJ_H
#define CORELAT_LOCKOBJ_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

#include "team.h"
#include "tstack.h"

typedef struct {
    union {
        pthread_mutex_t mutex;
        pthread_spinlock_t spin;
        pthread_rwlock_t rwlock;
        sem_t sem;
        atomic_uint flag;
        struct {
            atomic_uint next;
            atomic_uint serving;
        } ticket;
    } lock;
    atomic_uint_fast64_t counter;
    corelat_tstack stack; /* stack-* tests only */
} corelat_lock_obj;

typedef struct {
    corelat_lock_obj *obj;
    corelat_member *m; /* for a wait's spin set-up and the heartbeat */
    int err;           /* errno of a failed call */
    uint64_t rng[2];   /* the thread's own xoroshiro128+ state */
    uint64_t sink;     /* results of tests that compute something, so the work is done */
    int spread;        /* the thread may run on any CPU of its group: no "moved" checks */
} corelat_kctx;

typedef int (*corelat_kernel_fn)(corelat_kctx *c);

/* The kernel of a test that is not a lock (instructions, system calls, generators, counters), or
 * NULL. */
corelat_kernel_fn corelat_op_kernel(int test);

#endif
