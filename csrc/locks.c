#include "locks.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "affinity.h"
#include "lockobj.h"
#include "spin.h"
#include "team.h"
#include "timer.h"
#include "tstack.h"

typedef corelat_kctx kctx;
typedef corelat_kernel_fn kernel_fn;
typedef corelat_lock_obj lock_obj;

/* cpuperf's names (its four sys-clock-gettime rows and two of each rwlock row, told apart there by
 * the description, get the clock or "-pshared" in the name here). */
const char *const corelat_lock_names[CORELAT_LK_COUNT] = {
    "baseline",
    "inc-tls",
    "inc-atomic",
    "inc-atomic-cst",
    "prng-xoroshiro",
    "prng-mod128",
    "prng-mod127",
    "cpu-rdrand64",
    "cpu-rdtsc",
    "cpu-rdtscp",
    "cpu-rdpid",
    "sys-sched-getcpu",
    "cpu-lsl",
    "cpu-cpuid",
    "cpu-lfence",
    "cpu-sfence",
    "cpu-mfence",
    "cpu-pause",
    "cpu-isb",
    "cpu-dmb-ish",
    "cpu-dsb-sy",
    "cpu-cntvct",
    "cpu-yield",
    "cpu-rndr",
    "sys-clock-gettime-realtime",
    "sys-clock-gettime-realtime-coarse",
    "sys-clock-gettime-monotonic",
    "sys-clock-gettime-monotonic-coarse",
    "lock-ticket-spin",
    "lock-cmpxchg-spin",
    "lock-ttas-spin",
    "lock-pthread-spin-default",
    "lock-pthread-spin-pshared",
    "lock-pthread-spin-trylock",
    "lock-pthread-mutex-default",
    "lock-pthread-mutex-pshared",
    "lock-pthread-mutex-robust",
    "lock-pthread-mutex-inherit",
    "lock-pthread-mutex-protect",
    "lock-pthread-mutex-trylock",
    "lock-binsema-mutex",
    "lock-binsema-mutex-pshared",
    "lock-pthread-rwlock-wrlock",
    "lock-pthread-rwlock-wrlock-pshared",
    "lock-pthread-rwlock-rdlock",
    "lock-pthread-rwlock-rdlock-pshared",
    "lock-semaphore",
    "stack-lockfree",
    "stack-mutex",
    "stack-sema",
    "stack-wrlock",
    "lock-none",
};

/* One object per test, each in its own 256-byte slot: the lock and the counter it protects share
 * a cache line (as they would in real code), and no two tests' objects share a line or an
 * adjacent-line prefetch pair. */
#define SLOT_BYTES 256
#define BUF_BYTES 16384

_Static_assert(sizeof(lock_obj) <= SLOT_BYTES, "a lock object must fit its slot");
_Static_assert((CORELAT_LK_COUNT * SLOT_BYTES) <= BUF_BYTES, "the objects must fit the buffer");
_Static_assert(CORELAT_LK_COUNT <= 64, "tests are a 64-bit set in corelat_locks_new");

static lock_obj *slot(char *buf, int test) { return (lock_obj *)(buf + (size_t)test * SLOT_BYTES); }

/* ---- The lock kernels. A kernel returns 0, or a status when a bounded wait for its lock gave up
 * (Ctrl-C, time-out) -- then it holds nothing. ---- */

/* The critical section: a plain read-modify-write. Relaxed atomic load and store compile to
 * ordinary moves, so without a lock updates are lost (what lock-none shows), yet there is no
 * undefined behaviour. */
static inline void bump(atomic_uint_fast64_t *v)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1, memory_order_relaxed);
}

static inline void body(lock_obj *o) { bump(&o->counter); }

static int failed(kctx *c, int e)
{
    c->err = e;
    return CORELAT_EINVAL;
}

static __attribute__((noinline)) int k_baseline(kctx *c)
{
    (void)c;
    __asm__ volatile("" ::: "memory");
    return CORELAT_OK;
}

/* Slow paths are out of line so the uncontended path stays a few instructions. */
static __attribute__((noinline)) int flag_wait(kctx *c, atomic_uint *flag)
{
    corelat_spin s;
    corelat_member_spin(c->m, &s);
    uint32_t left = CORELAT_SPIN_EVERY;
    for (;;) {
        unsigned expected = 0;
        if (!atomic_load_explicit(flag, memory_order_relaxed) &&
            atomic_compare_exchange_strong_explicit(flag, &expected, 1u, memory_order_acquire,
                                                    memory_order_relaxed))
            return CORELAT_OK;
        int rc = corelat_spin_tick(&s, &left, 0);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
}

/* A spin lock found held: wait for it (bounded), then the critical section and the release. Called
 * last, so the kernels below reach it by a jump and their uncontended path saves no register. */
static __attribute__((noinline)) int flag_contended(kctx *c)
{
    lock_obj *o = c->obj;
    int rc = flag_wait(c, &o->lock.flag);
    if (rc)
        return rc;
    body(o);
    atomic_store_explicit(&o->lock.flag, 0u, memory_order_release);
    return CORELAT_OK;
}

/* cpuperf's: compare-exchange at once, and only when that fails wait reading. Uncontended, the
 * instructions of cpuperf's subr_cmpxchg_spin (benchmarks/RESULTS.md). */
static __attribute__((noinline)) int k_cmpxchg_spin(kctx *c)
{
    lock_obj *o = c->obj;
    unsigned expected = 0;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&o->lock.flag, &expected, 1u,
                                                                  memory_order_acquire, memory_order_relaxed),
                         0))
        return flag_contended(c);
    body(o);
    atomic_store_explicit(&o->lock.flag, 0u, memory_order_release);
    return CORELAT_OK;
}

/* corelat's: read first, compare-exchange only a lock that looked free (no write to a held lock's
 * line). */
static __attribute__((noinline)) int k_ttas_spin(kctx *c)
{
    lock_obj *o = c->obj;
    unsigned expected = 0;
    if (__builtin_expect(atomic_load_explicit(&o->lock.flag, memory_order_relaxed) ||
                             !atomic_compare_exchange_strong_explicit(
                                 &o->lock.flag, &expected, 1u, memory_order_acquire, memory_order_relaxed),
                         0))
        return flag_contended(c);
    body(o);
    atomic_store_explicit(&o->lock.flag, 0u, memory_order_release);
    return CORELAT_OK;
}

static __attribute__((noinline)) int ticket_wait(kctx *c, atomic_uint *serving, unsigned me)
{
    corelat_spin s;
    corelat_member_spin(c->m, &s);
    uint32_t left = CORELAT_SPIN_EVERY;
    while (atomic_load_explicit(serving, memory_order_acquire) != me) {
        int rc = corelat_spin_tick(&s, &left, 0);
        if (rc)
            return rc; /* the ticket is lost: the run is over for every thread anyway */
        corelat_cpu_relax();
    }
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_ticket_spin(kctx *c)
{
    lock_obj *o = c->obj;
    unsigned me = atomic_fetch_add_explicit(&o->lock.ticket.next, 1u, memory_order_relaxed);
    if (atomic_load_explicit(&o->lock.ticket.serving, memory_order_acquire) != me) {
        int rc = ticket_wait(c, &o->lock.ticket.serving, me);
        if (rc)
            return rc;
    }
    body(o);
    atomic_store_explicit(&o->lock.ticket.serving, me + 1u, memory_order_release);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_pthread_spin(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_spin_lock(&o->lock.spin);
    if (e)
        return failed(c, e);
    body(o);
    pthread_spin_unlock(&o->lock.spin);
    return CORELAT_OK;
}

/* A trylock spun on: try, and while busy, a bounded, abort-aware wait. */
/* The lock goes by its object: pthread_spinlock_t is a volatile int in glibc. */
typedef int (*try_fn)(lock_obj *o);
static int try_spin(lock_obj *o) { return pthread_spin_trylock(&o->lock.spin); }
static int try_mutex(lock_obj *o) { return pthread_mutex_trylock(&o->lock.mutex); }

static __attribute__((noinline)) int try_wait(kctx *c, try_fn try, lock_obj *o)
{
    corelat_spin s;
    corelat_member_spin(c->m, &s);
    uint32_t left = CORELAT_SPIN_EVERY;
    for (;;) {
        int e = try(o);
        if (e == 0)
            return CORELAT_OK;
        if (e != EBUSY)
            return failed(c, e);
        int rc = corelat_spin_tick(&s, &left, 0);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
}

static __attribute__((noinline)) int k_spin_trylock(kctx *c)
{
    lock_obj *o = c->obj;
    if (pthread_spin_trylock(&o->lock.spin) != 0) {
        int rc = try_wait(c, try_spin, o);
        if (rc)
            return rc;
    }
    body(o);
    pthread_spin_unlock(&o->lock.spin);
    return CORELAT_OK;
}

/* pthread_mutex_lock and sem_wait may sleep in the kernel, but never for long: every holder runs a
 * bounded body and unlocks at once, whatever the abort flag says, so a waiter is always woken. */
static __attribute__((noinline)) int k_mutex(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_mutex_lock(&o->lock.mutex);
    if (e)
        return failed(c, e); /* EOWNERDEAD cannot come: no holder ever dies in a timed run */
    body(o);
    pthread_mutex_unlock(&o->lock.mutex);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_mutex_trylock(kctx *c)
{
    lock_obj *o = c->obj;
    if (pthread_mutex_trylock(&o->lock.mutex) != 0) {
        int rc = try_wait(c, try_mutex, o);
        if (rc)
            return rc;
    }
    body(o);
    pthread_mutex_unlock(&o->lock.mutex);
    return CORELAT_OK;
}

static int sem_take(kctx *c, sem_t *sem)
{
    while (sem_wait(sem) != 0) {
        if (errno != EINTR)
            return failed(c, errno);
    }
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_binsema(kctx *c)
{
    lock_obj *o = c->obj;
    int rc = sem_take(c, &o->lock.sem);
    if (rc)
        return rc;
    body(o);
    sem_post(&o->lock.sem);
    return CORELAT_OK;
}

/* A counting semaphore (value = the threads sharing it) admits everyone: its increment is atomic. */
static __attribute__((noinline)) int k_semaphore(kctx *c)
{
    lock_obj *o = c->obj;
    int rc = sem_take(c, &o->lock.sem);
    if (rc)
        return rc;
    atomic_fetch_add_explicit(&o->counter, 1, memory_order_relaxed);
    sem_post(&o->lock.sem);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_rwlock_wr(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_rwlock_wrlock(&o->lock.rwlock);
    if (e)
        return failed(c, e);
    body(o);
    pthread_rwlock_unlock(&o->lock.rwlock);
    return CORELAT_OK;
}

/* Readers hold the lock together by design, so their increment must be atomic. */
static __attribute__((noinline)) int k_rwlock_rd(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_rwlock_rdlock(&o->lock.rwlock);
    if (e)
        return failed(c, e);
    atomic_fetch_add_explicit(&o->counter, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&o->lock.rwlock);
    return CORELAT_OK;
}

/* ---- Stacks: pop a node, increment its value (plainly: the node is this thread's alone until
 * pushed back), push it. A stack of 8 nodes shared by more threads can be empty for a moment: the
 * pop waits, bounded. The nodes' values must sum to the calls. ---- */

static __attribute__((noinline)) int stack_empty(kctx *c, uint32_t *left, corelat_spin *s, int *armed)
{
    if (!*armed) {
        corelat_member_spin(c->m, s);
        *left = CORELAT_SPIN_EVERY;
        *armed = 1;
    }
    int rc = corelat_spin_tick(s, left, 0);
    corelat_cpu_relax();
    return rc;
}

static __attribute__((noinline)) int k_stack_lockfree(kctx *c)
{
    corelat_tstack *st = &c->obj->stack;
    corelat_spin s;
    uint32_t left = 0;
    int armed = 0;
    unsigned node;
    while ((node = corelat_tstack_pop(st)) == 0) {
        int rc = stack_empty(c, &left, &s, &armed);
        if (rc)
            return rc;
    }
    bump(&st->nodes[node - 1].value);
    corelat_tstack_push(st, node);
    return CORELAT_OK;
}

enum { SK_MUTEX, SK_SEMA, SK_WRLOCK };

static int stack_lock(kctx *c, lock_obj *o, int kind)
{
    int e = kind == SK_MUTEX    ? pthread_mutex_lock(&o->lock.mutex)
            : kind == SK_WRLOCK ? pthread_rwlock_wrlock(&o->lock.rwlock)
                                : 0;
    if (kind == SK_SEMA)
        return sem_take(c, &o->lock.sem);
    return e ? failed(c, e) : CORELAT_OK;
}

static void stack_unlock(lock_obj *o, int kind)
{
    if (kind == SK_MUTEX)
        pthread_mutex_unlock(&o->lock.mutex);
    else if (kind == SK_WRLOCK)
        pthread_rwlock_unlock(&o->lock.rwlock);
    else
        sem_post(&o->lock.sem);
}

/* A locked pop that found the stack empty: wait (bounded) and pop again. Out of line, with the spin
 * state, so the kernels' usual path saves no more registers than cpuperf's. */
static __attribute__((noinline)) int stack_locked_wait(kctx *c, int kind, unsigned *node)
{
    lock_obj *o = c->obj;
    corelat_spin s;
    uint32_t left = 0;
    int armed = 0, rc;
    do {
        if ((rc = stack_empty(c, &left, &s, &armed)) != 0)
            return rc;
        if ((rc = stack_lock(c, o, kind)) != 0)
            return rc;
        *node = corelat_tstack_pop_locked(&o->stack);
        stack_unlock(o, kind);
    } while (!*node);
    return CORELAT_OK;
}

/* cpuperf's locked stacks: lock, pop, unlock; inc; lock, push, unlock. The object is kept in a local:
 * read through c it would be loaded again after every call. */
static inline int stack_locked(kctx *c, int kind)
{
    lock_obj *o = c->obj;
    unsigned node;
    int rc;
    if ((rc = stack_lock(c, o, kind)) != 0)
        return rc;
    node = corelat_tstack_pop_locked(&o->stack);
    stack_unlock(o, kind);
    if (__builtin_expect(!node, 0) && (rc = stack_locked_wait(c, kind, &node)) != 0)
        return rc;
    bump(&o->stack.nodes[node - 1].value);
    if ((rc = stack_lock(c, o, kind)) != 0)
        return rc;
    corelat_tstack_push_locked(&o->stack, node);
    stack_unlock(o, kind);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_stack_mutex(kctx *c) { return stack_locked(c, SK_MUTEX); }
static __attribute__((noinline)) int k_stack_sema(kctx *c) { return stack_locked(c, SK_SEMA); }
static __attribute__((noinline)) int k_stack_wrlock(kctx *c) { return stack_locked(c, SK_WRLOCK); }

static __attribute__((noinline)) int k_none(kctx *c)
{
    body(c->obj);
    return CORELAT_OK;
}

static kernel_fn kernel_of(int test)
{
    switch (test) {
    case CORELAT_LK_BASELINE:
        return k_baseline;
    case CORELAT_LK_TICKET_SPIN:
        return k_ticket_spin;
    case CORELAT_LK_CMPXCHG_SPIN:
        return k_cmpxchg_spin;
    case CORELAT_LK_TTAS_SPIN:
        return k_ttas_spin;
    case CORELAT_LK_SPIN_DEFAULT:
    case CORELAT_LK_SPIN_PSHARED:
        return k_pthread_spin;
    case CORELAT_LK_SPIN_TRYLOCK:
        return k_spin_trylock;
    case CORELAT_LK_MUTEX_DEFAULT:
    case CORELAT_LK_MUTEX_PSHARED:
    case CORELAT_LK_MUTEX_ROBUST:
    case CORELAT_LK_MUTEX_INHERIT:
    case CORELAT_LK_MUTEX_PROTECT:
        return k_mutex;
    case CORELAT_LK_MUTEX_TRYLOCK:
        return k_mutex_trylock;
    case CORELAT_LK_BINSEMA:
    case CORELAT_LK_BINSEMA_PSHARED:
        return k_binsema;
    case CORELAT_LK_RWLOCK_WR:
    case CORELAT_LK_RWLOCK_WR_PSHARED:
        return k_rwlock_wr;
    case CORELAT_LK_RWLOCK_RD:
    case CORELAT_LK_RWLOCK_RD_PSHARED:
        return k_rwlock_rd;
    case CORELAT_LK_SEMAPHORE:
        return k_semaphore;
    case CORELAT_LK_STACK_LOCKFREE:
        return k_stack_lockfree;
    case CORELAT_LK_STACK_MUTEX:
        return k_stack_mutex;
    case CORELAT_LK_STACK_SEMA:
        return k_stack_sema;
    case CORELAT_LK_STACK_WRLOCK:
        return k_stack_wrlock;
    case CORELAT_LK_NONE:
        return k_none;
    default:
        return corelat_op_kernel(test);
    }
}

/* ---- Objects: a buffer per owner, zeroed (first touch) and initialised on the owner's CPU. ---- */

enum { OBJ_PLAIN, OBJ_SPIN, OBJ_MUTEX, OBJ_RWLOCK, OBJ_SEM };

static int obj_kind(int k)
{
    switch (k) {
    case CORELAT_LK_SPIN_DEFAULT:
    case CORELAT_LK_SPIN_PSHARED:
    case CORELAT_LK_SPIN_TRYLOCK:
        return OBJ_SPIN;
    case CORELAT_LK_MUTEX_DEFAULT:
    case CORELAT_LK_MUTEX_PSHARED:
    case CORELAT_LK_MUTEX_ROBUST:
    case CORELAT_LK_MUTEX_INHERIT:
    case CORELAT_LK_MUTEX_PROTECT:
    case CORELAT_LK_MUTEX_TRYLOCK:
    case CORELAT_LK_STACK_MUTEX:
        return OBJ_MUTEX;
    case CORELAT_LK_RWLOCK_WR:
    case CORELAT_LK_RWLOCK_WR_PSHARED:
    case CORELAT_LK_RWLOCK_RD:
    case CORELAT_LK_RWLOCK_RD_PSHARED:
    case CORELAT_LK_STACK_WRLOCK:
        return OBJ_RWLOCK;
    case CORELAT_LK_BINSEMA:
    case CORELAT_LK_BINSEMA_PSHARED:
    case CORELAT_LK_SEMAPHORE:
    case CORELAT_LK_STACK_SEMA:
        return OBJ_SEM;
    default:
        return OBJ_PLAIN;
    }
}

static int pshared(int k)
{
    return k == CORELAT_LK_SPIN_PSHARED || k == CORELAT_LK_MUTEX_PSHARED || k == CORELAT_LK_BINSEMA_PSHARED ||
           k == CORELAT_LK_RWLOCK_WR_PSHARED || k == CORELAT_LK_RWLOCK_RD_PSHARED;
}

static int is_stack(int k) { return k >= CORELAT_LK_STACK_LOCKFREE && k <= CORELAT_LK_STACK_WRLOCK; }

/* The mutex attributes a test's name says, checked back with pthread_mutexattr_get*: 0, or an errno
 * (ENOTSUP where the library took the setting but reads back another) with the step in *what. */
static int mutex_attr(int k, pthread_mutexattr_t *a, const char **what)
{
    int e = pthread_mutexattr_init(a), v = -1;
    *what = "pthread_mutexattr_init";
    if (e)
        return e;
    if (k == CORELAT_LK_MUTEX_PSHARED) {
        *what = "pthread_mutexattr_setpshared(PTHREAD_PROCESS_SHARED)";
        if (!(e = pthread_mutexattr_setpshared(a, PTHREAD_PROCESS_SHARED)) &&
            !(e = pthread_mutexattr_getpshared(a, &v)))
            e = v == PTHREAD_PROCESS_SHARED ? 0 : ENOTSUP;
    } else if (k == CORELAT_LK_MUTEX_ROBUST) {
        *what = "pthread_mutexattr_setrobust(PTHREAD_MUTEX_ROBUST)";
        if (!(e = pthread_mutexattr_setrobust(a, PTHREAD_MUTEX_ROBUST)) &&
            !(e = pthread_mutexattr_getrobust(a, &v)))
            e = v == PTHREAD_MUTEX_ROBUST ? 0 : ENOTSUP;
    } else if (k == CORELAT_LK_MUTEX_INHERIT) {
        *what = "pthread_mutexattr_setprotocol(PTHREAD_PRIO_INHERIT)";
        if (!(e = pthread_mutexattr_setprotocol(a, PTHREAD_PRIO_INHERIT)) &&
            !(e = pthread_mutexattr_getprotocol(a, &v)))
            e = v == PTHREAD_PRIO_INHERIT ? 0 : ENOTSUP;
    } else if (k == CORELAT_LK_MUTEX_PROTECT) {
        int ceiling = sched_get_priority_min(SCHED_FIFO), got = -1;
        *what = "pthread_mutexattr_setprotocol(PTHREAD_PRIO_PROTECT)";
        if (!(e = pthread_mutexattr_setprotocol(a, PTHREAD_PRIO_PROTECT)) &&
            !(e = pthread_mutexattr_getprotocol(a, &v)))
            e = v == PTHREAD_PRIO_PROTECT ? 0 : ENOTSUP;
        if (!e) {
            *what = "pthread_mutexattr_setprioceiling(the lowest SCHED_FIFO priority)";
#if defined(__GLIBC__)
            if (!(e = pthread_mutexattr_setprioceiling(a, ceiling)) &&
                !(e = pthread_mutexattr_getprioceiling(a, &got)))
                e = got == ceiling ? 0 : ENOTSUP;
#else
            /* musl has no priority ceilings (its setprotocol refuses PROTECT; it has no setprioceiling) */
            (void)ceiling, (void)got;
            e = ENOTSUP;
#endif
        }
    }
    if (e)
        pthread_mutexattr_destroy(a);
    return e;
}

static int obj_init(lock_obj *o, int k, int sem_value)
{
    int e = 0;
    const char *what;
    pthread_mutexattr_t ma;
    pthread_rwlockattr_t ra;
    switch (obj_kind(k)) {
    case OBJ_SPIN:
        e = pthread_spin_init(&o->lock.spin, pshared(k) ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE);
        break;
    case OBJ_MUTEX:
        if (!(e = mutex_attr(k, &ma, &what))) {
            e = pthread_mutex_init(&o->lock.mutex, &ma);
            pthread_mutexattr_destroy(&ma);
        }
        break;
    case OBJ_RWLOCK:
        if (!(e = pthread_rwlockattr_init(&ra))) {
            if (!(e = pthread_rwlockattr_setpshared(&ra, pshared(k) ? PTHREAD_PROCESS_SHARED
                                                                    : PTHREAD_PROCESS_PRIVATE)))
                e = pthread_rwlock_init(&o->lock.rwlock, &ra);
            pthread_rwlockattr_destroy(&ra);
        }
        break;
    case OBJ_SEM:
        e = sem_init(&o->lock.sem, pshared(k), k == CORELAT_LK_SEMAPHORE ? (unsigned)sem_value : 1u) ? errno
                                                                                                     : 0;
        break;
    default:
        break;
    }
    if (!e && is_stack(k))
        corelat_tstack_init(&o->stack);
    return e;
}

static void obj_destroy(lock_obj *o, int k)
{
    switch (obj_kind(k)) {
    case OBJ_SPIN:
        pthread_spin_destroy(&o->lock.spin);
        break;
    case OBJ_MUTEX:
        pthread_mutex_destroy(&o->lock.mutex);
        break;
    case OBJ_RWLOCK:
        pthread_rwlock_destroy(&o->lock.rwlock);
        break;
    case OBJ_SEM:
        sem_destroy(&o->lock.sem);
        break;
    default:
        break;
    }
}

static void objs_destroy(char *buf, const int *tests, int upto)
{
    for (int t = 0; t < upto; t++)
        obj_destroy(slot(buf, tests[t]), tests[t]);
}

/* The objects of the tests to run: 0, or an errno value after undoing what was initialised. */
static int objs_init(char *buf, const int *tests, int ntests, int sem_value)
{
    memset(buf, 0, BUF_BYTES);
    for (int t = 0; t < ntests; t++) {
        int e = obj_init(slot(buf, tests[t]), tests[t], sem_value);
        if (e) {
            objs_destroy(buf, tests, t);
            return e;
        }
    }
    return 0;
}

/* ---- What can run here ---- */

static int cpu_need(int test)
{
    switch (test) {
    case CORELAT_LK_CPU_RDRAND64:
        return CORELAT_NEED_X86_RDRAND;
    case CORELAT_LK_CPU_RDTSC:
        return CORELAT_NEED_X86_TSC;
    case CORELAT_LK_CPU_RDTSCP:
        return CORELAT_NEED_X86_RDTSCP;
    case CORELAT_LK_CPU_RDPID:
        return CORELAT_NEED_X86_RDPID;
    case CORELAT_LK_CPU_LSL:
    case CORELAT_LK_CPU_CPUID:
    case CORELAT_LK_CPU_PAUSE:
        return CORELAT_NEED_X86;
    case CORELAT_LK_CPU_LFENCE:
    case CORELAT_LK_CPU_MFENCE:
        return CORELAT_NEED_X86_SSE2;
    case CORELAT_LK_CPU_SFENCE:
        return CORELAT_NEED_X86_SSE;
    case CORELAT_LK_CPU_ISB:
    case CORELAT_LK_CPU_DMB_ISH:
    case CORELAT_LK_CPU_DSB_SY:
    case CORELAT_LK_CPU_CNTVCT:
    case CORELAT_LK_CPU_YIELD:
        return CORELAT_NEED_ARM;
    case CORELAT_LK_CPU_RNDR:
        return CORELAT_NEED_ARM_RNG;
    default:
        return CORELAT_NEED_NONE;
    }
}

int corelat_lock_other_arch(int test, const corelat_cpu_feats *feats)
{
    corelat_cpu_feats own;
    if (!feats) {
        corelat_cpu_feats_read(&own);
        feats = &own;
    }
    return test >= 0 && test < CORELAT_LK_COUNT && corelat_cpu_other_arch(cpu_need(test), feats);
}

/* Set the mutex up and lock it once on this thread: where the library or the kernel refuses (a
 * priority ceiling needs the right to raise this thread's priority), the test cannot run. */
static int mutex_probe(int k, char *why, size_t why_len)
{
    pthread_mutexattr_t ma;
    pthread_mutex_t mu;
    const char *what;
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer reports a lock the C library refuses (a ceiling it cannot apply) as the use of
     * an invalid mutex: in that build the ceiling is not tried. */
    if (k == CORELAT_LK_MUTEX_PROTECT) {
        snprintf(why, why_len, "not tried under ThreadSanitizer");
        return 0;
    }
#endif
    int held_here = 1;
#if defined(__GLIBC__)
    if (k == CORELAT_LK_MUTEX_PROTECT) {
        /* glibc lifts a locker to the ceiling with sched_setscheduler under the thread's own policy
         * (nptl/tpp.c): SCHED_OTHER takes no priority but 0, so every lock fails with EINVAL, as
         * does one by a thread above the ceiling. What counts is the policy the measuring threads get
         * (team.c: one priority below a SCHED_FIFO/RR caller, else SCHED_OTHER), not the caller's. */
        int policy = SCHED_OTHER, lowest = sched_get_priority_min(SCHED_FIFO);
        struct sched_param sp = {0};
        pthread_getschedparam(pthread_self(), &policy, &sp);
        int rt = (policy == SCHED_FIFO || policy == SCHED_RR) &&
                 sp.sched_priority > sched_get_priority_min(policy);
        if (!rt) {
            snprintf(why, why_len,
                     "glibc lifts a locker to the ceiling within its policy: its SCHED_OTHER threads are "
                     "refused (EINVAL); run under chrt -f %d for SCHED_FIFO %d threads",
                     lowest + 1, lowest);
            return 0;
        }
        if (sp.sched_priority - 1 > lowest) {
            snprintf(why, why_len,
                     "its threads would run at SCHED_FIFO %d, above the ceiling (%d), which glibc refuses "
                     "(EINVAL); run under chrt -f %d",
                     sp.sched_priority - 1, lowest, lowest + 1);
            return 0;
        }
        held_here = 0; /* this thread is one above the ceiling: the lock is tried by the threads */
    }
#endif
    int e = mutex_attr(k, &ma, &what);
    if (!e && !held_here) {
        what = "pthread_mutex_init";
        e = pthread_mutex_init(&mu, &ma);
        pthread_mutexattr_destroy(&ma);
        if (!e)
            pthread_mutex_destroy(&mu);
    } else if (!e) {
        what = "pthread_mutex_init";
        e = pthread_mutex_init(&mu, &ma);
        pthread_mutexattr_destroy(&ma);
        if (!e) {
            what = "pthread_mutex_lock";
            e = pthread_mutex_lock(&mu);
            if (!e && k == CORELAT_LK_MUTEX_PROTECT) {
                /* Held, the thread must run at the ceiling. (glibc can take the lock yet leave the
                 * thread where it was, when raising it failed before on this thread.) */
                int policy = -1;
                struct sched_param sp = {0};
                pthread_getschedparam(pthread_self(), &policy, &sp);
                if (policy != SCHED_FIFO || sp.sched_priority < sched_get_priority_min(SCHED_FIFO)) {
                    pthread_mutex_unlock(&mu);
                    pthread_mutex_destroy(&mu);
                    snprintf(why, why_len,
                             "the C library took the lock but left the thread below the "
                             "ceiling (SCHED_FIFO %d): raising it was refused",
                             sched_get_priority_min(SCHED_FIFO));
                    return 0;
                }
            }
            if (!e)
                pthread_mutex_unlock(&mu);
            pthread_mutex_destroy(&mu);
        }
    }
    if (!e)
        return 1;
    snprintf(why, why_len, "the C library refused it: %s: %s%s", what, strerror(e),
             k == CORELAT_LK_MUTEX_PROTECT && e == EPERM
                 ? " (a priority ceiling needs CAP_SYS_NICE or an RLIMIT_RTPRIO)"
                 : "");
    return 0;
}

int corelat_lock_available(int test, const corelat_cpu_feats *feats, char *why, size_t why_len)
{
    corelat_cpu_feats own;
    if (why_len)
        why[0] = '\0';
    if (test < 0 || test >= CORELAT_LK_COUNT) {
        snprintf(why, why_len, "no such test");
        return 0;
    }
    if (!feats) {
        corelat_cpu_feats_read(&own);
        feats = &own;
    }
    if (!corelat_cpu_has(feats, cpu_need(test), why, why_len))
        return 0;
    if (!kernel_of(test)) {
        snprintf(why, why_len, "not built for this platform");
        return 0;
    }
    if (test == CORELAT_LK_MUTEX_INHERIT || test == CORELAT_LK_MUTEX_PROTECT ||
        test == CORELAT_LK_MUTEX_ROBUST || test == CORELAT_LK_MUTEX_PSHARED)
        return mutex_probe(test, why, why_len);
    return 1;
}

/* ---- The robust mutex's correctness test ---- */

static void *die_holding(void *arg)
{
    intptr_t e = pthread_mutex_lock((pthread_mutex_t *)arg);
    return (void *)e; /* the thread ends holding the lock */
}

/* Where the kernel never learns of the owner's death (qemu-user cannot pass it the robust list), a
 * plain lock would wait for ever: bounded, so the check reports that instead of hanging. */
static int lock_within(pthread_mutex_t *mu, int seconds)
{
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer takes a timed lock's EOWNERDEAD for a failure, and then reports the unlock that
     * follows; it runs natively, where the owner's death is reported at once. */
    (void)seconds;
    return pthread_mutex_lock(mu);
#endif
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    return pthread_mutex_timedlock(mu, &until);
}

int corelat_lock_robust_check(char *why, size_t why_len)
{
    pthread_mutexattr_t ma;
    pthread_mutex_t mu;
    pthread_t th;
    void *ret = NULL;
    const char *what;
    int e = mutex_attr(CORELAT_LK_MUTEX_ROBUST, &ma, &what), rc = -1;
    if (e) {
        snprintf(why, why_len, "%s: %s", what, strerror(e));
        return -1;
    }
    e = pthread_mutex_init(&mu, &ma);
    pthread_mutexattr_destroy(&ma);
    if (e) {
        snprintf(why, why_len, "pthread_mutex_init: %s", strerror(e));
        return -1;
    }
    if ((e = pthread_create(&th, NULL, die_holding, &mu)) != 0 || (e = pthread_join(th, &ret)) != 0 || ret) {
        snprintf(why, why_len, "the owner thread: %s", strerror(e ? e : (int)(intptr_t)ret));
    } else if ((e = lock_within(&mu, 3)) != EOWNERDEAD) {
        if (e == ETIMEDOUT)
            snprintf(why, why_len,
                     "the owner's death was never reported: the next locker waited 3 s "
                     "(no robust futex list here: qemu-user has none)");
        else
            snprintf(why, why_len, "the next locker got %s, not EOWNERDEAD",
                     e ? strerror(e) : "the lock (0)");
        if (!e)
            pthread_mutex_unlock(&mu);
    } else if ((e = pthread_mutex_consistent(&mu)) != 0) {
        snprintf(why, why_len, "pthread_mutex_consistent: %s", strerror(e));
        pthread_mutex_unlock(&mu);
    } else {
        pthread_mutex_unlock(&mu);
        /* made consistent, it works as before: a plain lock, no EOWNERDEAD again */
        if ((e = pthread_mutex_lock(&mu)) != 0) {
            snprintf(why, why_len, "after pthread_mutex_consistent, lock gave %s", strerror(e));
        } else {
            pthread_mutex_unlock(&mu);
            rc = 0;
        }
    }
    pthread_mutex_destroy(&mu);
    return rc;
}

/* ---- The run ---- */

/* corelat_member_check, less the "still on its CPU" part where moving is allowed (spread mode). */
static int member_check(kctx *c)
{
    if (!c->spread)
        return corelat_member_check(c->m);
    if (atomic_load_explicit(&c->m->job->abort, memory_order_relaxed) != CORELAT_RUN)
        return CORELAT_EABORT;
    corelat_member_beat(c->m);
    return CORELAT_OK;
}

/* Every thread arrives; then the leader (thread 0) waits a little on its own clock and starts the
 * phase through memory, and every thread starts its own clock when it sees that: no thread reads
 * another CPU's clock. The leader starts the next phase only after every thread arrived at the next
 * barrier, i.e. after all saw this one. */
static int phase_sync(corelat_lock_job *job, corelat_member *m, int phase, uint64_t *start)
{
    corelat_spin s;
    corelat_member_spin(m, &s);
    uint64_t target = ((uint64_t)phase + 1) * (uint64_t)job->p.n;
    atomic_fetch_add_explicit(&job->arrived, 1, memory_order_acq_rel);
    uint32_t left = CORELAT_SPIN_EVERY;
    while (atomic_load_explicit(&job->arrived, memory_order_acquire) < target) {
        int rc = corelat_spin_tick(&s, &left, 0);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    if (m->index == 0) {
        uint64_t at = corelat_ticks() + job->p.lead_ticks;
        while (corelat_ticks() < at)
            corelat_cpu_relax();
        atomic_store_explicit(&job->phase_go, phase + 1, memory_order_release);
    } else {
        int rc = corelat_spin_until(&job->phase_go, phase + 1, &s);
        if (rc)
            return rc;
    }
    *start = corelat_ticks();
    return CORELAT_OK;
}

/* Calls per serialized bracket: doubled until the fastest of a few brackets spans `span` ticks, so a
 * timer that advances in coarse steps (10 ns on some AMD hosts) still resolves one call. */
/* One bracket: k calls between two serializing clock reads; 0 or a kernel's status. */
static int bracket(kernel_fn fn, kctx *c, uint64_t k, uint64_t *t0, uint64_t *t1)
{
    *t0 = corelat_ticks_serial();
    for (uint64_t i = 0; i < k; i++) {
        int rc = fn(c);
        if (rc)
            return rc;
    }
    *t1 = corelat_ticks_serial();
    return CORELAT_OK;
}

static int bracket_size(kernel_fn fn, kctx *c, uint64_t span, uint64_t *k_out, uint64_t *calls_out)
{
    uint64_t k = 1, t0, t1;
    *calls_out = 0;
    for (; k < (1u << 16); k *= 2) {
        uint64_t best = UINT64_MAX;
        for (int rep = 0; rep < 8; rep++) {
            int rc = bracket(fn, c, k, &t0, &t1);
            if (rc)
                return rc;
            *calls_out += k; /* they entered the lock too: the exclusion check counts them */
            if (t1 - t0 < best)
                best = t1 - t0;
        }
        if (best >= span)
            break;
    }
    *k_out = k;
    return CORELAT_OK;
}

/* sermin: brackets of k calls between two serializing clock reads, until `end`. Each is followed by
 * an empty bracket (the same two reads, no call), whose minimum is what the timer costs a bracket:
 * both are minima of the same reads on the same thread at the same time, so their difference is
 * the calls' cost. (A calibrated cost of one read is a mean: a bracket's minimum falls below it by
 * the read's own spread, ~10 ticks where the counter steps 2, and the difference went negative.) */
static int run_serial(kernel_fn fn, kctx *c, uint64_t k, uint64_t end, uint64_t *best_out,
                      uint64_t *empty_out, uint64_t *calls_out)
{
    uint64_t best = UINT64_MAX, empty = UINT64_MAX, calls = 0, brackets = 0, t0, t1, e0, e1;
    for (;;) {
        int rc = bracket(fn, c, k, &t0, &t1);
        if (rc)
            return rc;
        calls += k;
        if (t1 - t0 < best)
            best = t1 - t0;
        if ((rc = bracket(fn, c, 0, &e0, &e1)) != 0)
            return rc;
        if (e1 - e0 < empty)
            empty = e1 - e0;
        if (t1 >= end)
            break;
        if ((++brackets & 255u) == 0 && (rc = member_check(c)) != 0)
            return rc;
    }
    *best_out = best;
    *empty_out = empty;
    *calls_out = calls;
    return CORELAT_OK;
}

/* avg: calls written out UNROLL in a row, the clock and the abort flag read every CHUNK calls. */
#define UNROLL 8
#define CHUNK 64

#define CALL()                                                                                               \
    do {                                                                                                     \
        int rc_ = fn(c);                                                                                     \
        if (rc_)                                                                                             \
            return rc_;                                                                                      \
    } while (0)

static int run_avg(kernel_fn fn, kctx *c, uint64_t t0, uint64_t end, uint64_t *calls_out, uint64_t *ticks_out)
{
    uint64_t calls = 0, now;
    for (;;) {
        for (int r = 0; r < CHUNK / UNROLL; r++) {
            CALL();
            CALL();
            CALL();
            CALL();
            CALL();
            CALL();
            CALL();
            CALL();
        }
        calls += CHUNK;
        now = corelat_ticks();
        if (now >= end)
            break;
        int rc = member_check(c);
        if (rc)
            return rc;
    }
    *calls_out = calls;
    *ticks_out = now - t0;
    return CORELAT_OK;
}

/* The first thread of a thread's group. */
static int leader_of(const corelat_lock_job *job, int i)
{
    if (!job->group)
        return 0;
    for (int j = 0; j < i; j++)
        if (job->group[j] == job->group[i])
            return j;
    return i;
}

static int group_size(const corelat_lock_job *job, int i)
{
    int n = 0;
    for (int j = 0; j < job->p.n; j++)
        n += !job->group || job->group[j] == job->group[i];
    return n;
}

/* The thread's objects: its own buffer (uncontended, and a group leader in shared mode), or its
 * group leader's. */
static int objects(corelat_lock_job *job, corelat_member *m, char **buf)
{
    int lead = leader_of(job, m->index);
    if (job->p.shared && lead != m->index) {
        corelat_spin s;
        corelat_member_spin(m, &s);
        int rc = corelat_spin_until(&job->buf_ready[lead], 1, &s);
        *buf = job->bufs[lead];
        return rc;
    }
    void *p = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        m->err = errno;
        return CORELAT_ENOMEM;
    }
    /* a counting semaphore admits as many as share it */
    int e = objs_init(p, job->p.tests, job->p.ntests, job->p.shared ? group_size(job, m->index) : 1);
    if (e) {
        munmap(p, BUF_BYTES);
        m->err = e;
        return e == ENOMEM ? CORELAT_ENOMEM : CORELAT_EINVAL;
    }
    job->bufs[m->index] = p;
    if (job->p.shared)
        atomic_store_explicit(&job->buf_ready[m->index], 1, memory_order_release);
    *buf = p;
    return CORELAT_OK;
}

/* Spread mode: the team pinned the thread to one CPU; widen that to its group's set and stop the
 * "moved off its CPU" checks (moving inside the set is the point). */
static int spread(corelat_lock_job *job, corelat_member *m)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int j = 0; j < job->p.n; j++)
        if (job->cpus[j] >= 0 && job->cpus[j] < CPU_SETSIZE &&
            (!job->group || job->group[j] == job->group[m->index]))
            CPU_SET(job->cpus[j], &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        m->err = errno;
        return CORELAT_EPIN;
    }
    m->cpu = -1;
    return CORELAT_OK;
}

static int in_group(const corelat_lock_job *job, int i, int cpu)
{
    for (int j = 0; j < job->p.n; j++)
        if (job->cpus[j] == cpu && (!job->group || job->group[j] == job->group[i]))
            return 1;
    return 0;
}

/* What the thread's affinity is at its end, for tests of pinning: how many CPUs, how many outside
 * its group. */
static void affinity_seen(corelat_lock_job *job, int i)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            job->aff_count[i]++;
            job->aff_outside[i] += !in_group(job, i, c);
        }
    }
}

static void lock_work(corelat_member *m)
{
    corelat_lock_job *job = (corelat_lock_job *)m->job;
    const corelat_lock_params *p = &job->p;
    char *buf = NULL;
    atomic_store_explicit(&job->at_test[m->index], -1, memory_order_relaxed);
    int rc = p->spread ? spread(job, m) : CORELAT_OK;
    if (rc == CORELAT_OK)
        rc = objects(job, m, &buf);
    kctx c = {.obj = NULL,
              .m = m,
              .err = 0,
              .spread = p->spread,
              .rng = {0x9E3779B97F4A7C15ull + (uint64_t)m->index, 0xD1B54A32D192ED03ull}};
    int phase = 0;
    uint64_t start, k, cal;
    for (int t = 0; t < p->ntests && rc == CORELAT_OK; t++) {
        int test = p->tests[t];
        kernel_fn fn = kernel_of(test);
        size_t at = (size_t)t * (size_t)p->n + (size_t)m->index;
        c.obj = slot(buf, test);
        atomic_store_explicit(&job->at_test[m->index], test, memory_order_relaxed);
        rc = bracket_size(fn, &c, p->bracket_ticks, &k, &cal);
        if (rc == CORELAT_OK)
            rc = phase_sync(job, m, phase++, &start);
        if (rc == CORELAT_OK) {
            job->serk[at] = k;
            rc = run_serial(fn, &c, k, start + p->serial_ticks, &job->sermin[at], &job->serempty[at],
                            &job->sercalls[at]);
            job->sercalls[at] += cal;
        }
        if (rc == CORELAT_OK)
            rc = phase_sync(job, m, phase++, &start);
        if (rc == CORELAT_OK)
            rc = run_avg(fn, &c, start, start + p->duration_ticks, &job->calls[at], &job->ticks[at]);
    }
    if (rc == CORELAT_OK)
        atomic_store_explicit(&job->at_test[m->index], -1, memory_order_relaxed);
    job->ran_on[m->index] = sched_getcpu();
    affinity_seen(job, m->index);
    m->status = rc;
    if (!m->err)
        m->err = c.err;
}

static void locks_destroy(corelat_job *head)
{
    corelat_lock_job *job = (corelat_lock_job *)head;
    for (int i = 0; job->bufs && i < job->p.n; i++) {
        if (job->bufs[i]) {
            objs_destroy(job->bufs[i], job->tests, job->p.ntests);
            munmap(job->bufs[i], BUF_BYTES);
        }
    }
    free(job->bufs);
    free(job->at_test);
    free(job->buf_ready);
    free(job->cpus);
    free(job->group);
    free(job->tests);
    free(job->calls);
    free(job->ticks);
    free(job->sermin);
    free(job->serempty);
    free(job->serk);
    free(job->sercalls);
    free(job->counter);
    free(job->counter_by);
    free(job->ran_on);
    free(job->aff_count);
    free(job->aff_outside);
    free(job);
}

static int params_valid(const corelat_lock_params *p)
{
    if (p->n < 1 || p->ntests < 1 || p->serial_ticks == 0 || p->duration_ticks == 0)
        return 0;
    for (int i = 0; p->group && i < p->n; i++)
        if (p->group[i] < 0 || p->group[i] >= p->n)
            return 0;
    uint64_t seen = 0;
    char why[160];
    for (int t = 0; t < p->ntests; t++) {
        int k = p->tests[t];
        /* distinct (one object each), and runnable here: never an instruction the CPU lacks */
        if (k < 0 || k >= CORELAT_LK_COUNT || (seen & (1ull << k)) ||
            !corelat_lock_available(k, NULL, why, sizeof why))
            return 0;
        seen |= 1ull << k;
    }
    return 1;
}

corelat_lock_job *corelat_locks_new(const corelat_lock_params *p, int *status)
{
    if (!params_valid(p)) {
        *status = CORELAT_EINVAL;
        return NULL;
    }
    corelat_lock_job *job = calloc(1, sizeof *job);
    if (!job) {
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    size_t n = (size_t)p->n, cells = (size_t)p->ntests * n;
    job->p = *p;
    job->failed_test = -1;
    corelat_job_init(&job->head, p->timeout_ns, lock_work, locks_destroy);
    job->cpus = calloc(n, sizeof *job->cpus);
    job->group = p->group ? calloc(n, sizeof *job->group) : NULL;
    job->tests = calloc((size_t)p->ntests, sizeof *job->tests);
    job->bufs = calloc(n, sizeof *job->bufs);
    job->at_test = calloc(n, sizeof *job->at_test);
    job->buf_ready = calloc(n, sizeof *job->buf_ready);
    job->calls = calloc(cells, sizeof *job->calls);
    job->ticks = calloc(cells, sizeof *job->ticks);
    job->sermin = calloc(cells, sizeof *job->sermin);
    job->serempty = calloc(cells, sizeof *job->serempty);
    job->serk = calloc(cells, sizeof *job->serk);
    job->sercalls = calloc(cells, sizeof *job->sercalls);
    job->counter = calloc((size_t)p->ntests, sizeof *job->counter);
    job->ran_on = calloc(n, sizeof *job->ran_on);
    job->counter_by = calloc(cells, sizeof *job->counter_by);
    job->aff_count = calloc(n, sizeof *job->aff_count);
    job->aff_outside = calloc(n, sizeof *job->aff_outside);
    if (!job->cpus || (p->group && !job->group) || !job->tests || !job->bufs || !job->at_test ||
        !job->buf_ready || !job->calls || !job->ticks || !job->sermin || !job->serempty || !job->serk ||
        !job->sercalls || !job->counter || !job->ran_on || !job->counter_by || !job->aff_count ||
        !job->aff_outside) {
        corelat_job_release(&job->head);
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    memcpy(job->cpus, p->cpus, n * sizeof *job->cpus);
    if (p->group)
        memcpy(job->group, p->group, n * sizeof *job->group);
    memcpy(job->tests, p->tests, (size_t)p->ntests * sizeof *job->tests);
    job->p.cpus = job->cpus;
    job->p.group = job->group;
    job->p.tests = job->tests;
    for (size_t i = 0; i < n; i++) {
        atomic_init(&job->buf_ready[i], 0);
        job->ran_on[i] = -1;
    }
    atomic_init(&job->arrived, 0);
    atomic_init(&job->phase_go, 0);
    *status = CORELAT_OK;
    return job;
}

int corelat_locks_start(corelat_lock_job *job) { return corelat_job_start(&job->head, job->p.n, job->cpus); }

void corelat_locks_collect(corelat_lock_job *job)
{
    int idx = job->head.failed_index;
    if (idx >= 0 && idx < job->head.started)
        job->failed_test = atomic_load_explicit(&job->at_test[idx], memory_order_relaxed);
    if (job->head.left_behind)
        return; /* a thread may still touch the objects */
    for (int i = 0; i < job->p.n; i++) {
        char *buf = job->bufs[i];
        if (!buf)
            continue;
        for (int t = 0; t < job->p.ntests; t++) {
            lock_obj *o = slot(buf, job->tests[t]);
            uint64_t v = atomic_load_explicit(&o->counter, memory_order_relaxed);
            if (is_stack(job->tests[t]))
                v += corelat_tstack_sum(&o->stack);
            job->counter[t] += v;
            job->counter_by[(size_t)t * (size_t)job->p.n + (size_t)i] = v;
        }
    }
}
