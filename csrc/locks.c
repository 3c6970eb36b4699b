#include "locks.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "spin.h"
#include "team.h"
#include "timer.h"

const char *const corelat_lock_names[CORELAT_LK_COUNT] = {
    "baseline",
    "inc-atomic-relaxed",
    "inc-atomic-seqcst",
    "lock-cas-spin",
    "lock-ticket-spin",
    "lock-pthread-spin",
    "lock-pthread-mutex",
    "lock-pthread-mutex-trylock",
    "lock-pthread-rwlock-wr",
    "lock-pthread-rwlock-rd",
    "lock-none",
};

/* One object per test, each in its own 128-byte slot of a page: the lock and the counter it
 * protects share a cache line (as they would in real code), and no two tests' objects share a line
 * or an adjacent-line prefetch pair. */
#define SLOT_BYTES 128
#define BUF_BYTES 4096

typedef struct {
    union {
        pthread_mutex_t mutex;
        pthread_spinlock_t spin;
        pthread_rwlock_t rwlock;
        atomic_uint flag;
        struct {
            atomic_uint next;
            atomic_uint serving;
        } ticket;
    } lock;
    atomic_uint_fast64_t counter;
} lock_obj;

_Static_assert(sizeof(lock_obj) <= SLOT_BYTES, "a lock object must fit its slot");
_Static_assert(CORELAT_LK_COUNT * SLOT_BYTES <= BUF_BYTES, "the objects must fit one page");

static lock_obj *slot(char *buf, int test) { return (lock_obj *)(buf + (size_t)test * SLOT_BYTES); }

/* ---- The kernels. Each is one call: noinline, reached through a pointer like the baseline, so
 * subtracting the baseline removes the call itself. A kernel returns 0, or a status when a bounded
 * wait for its lock gave up (Ctrl-C, time-out) -- then it holds nothing. ---- */

typedef struct {
    lock_obj *obj;
    const atomic_int *abort;
    uint64_t timeout_ns;
    int err; /* errno of a failed pthread call */
} kctx;

typedef int (*kernel_fn)(kctx *c);

/* The critical section: a plain read-modify-write. Relaxed atomic load and store compile to
 * ordinary moves, so without a lock updates are lost (what lock-none shows), yet there is no
 * undefined behaviour. */
static inline void body(lock_obj *o)
{
    uint_fast64_t v = atomic_load_explicit(&o->counter, memory_order_relaxed);
    atomic_store_explicit(&o->counter, v + 1, memory_order_relaxed);
}

static __attribute__((noinline)) int k_baseline(kctx *c)
{
    (void)c;
    __asm__ volatile("" ::: "memory");
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_inc_relaxed(kctx *c)
{
    atomic_fetch_add_explicit(&c->obj->counter, 1, memory_order_relaxed);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_inc_seqcst(kctx *c)
{
    atomic_fetch_add_explicit(&c->obj->counter, 1, memory_order_seq_cst);
    return CORELAT_OK;
}

/* Slow paths are out of line so the uncontended path stays a few instructions. */
static __attribute__((noinline)) int cas_wait(kctx *c, atomic_uint *flag)
{
    corelat_spin s;
    corelat_spin_begin(&s, c->abort, c->timeout_ns);
    for (;;) {
        if (!atomic_load_explicit(flag, memory_order_relaxed) &&
            !atomic_exchange_explicit(flag, 1u, memory_order_acquire))
            return CORELAT_OK;
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
}

static __attribute__((noinline)) int k_cas_spin(kctx *c)
{
    lock_obj *o = c->obj;
    atomic_uint *flag = &o->lock.flag;
    if (atomic_load_explicit(flag, memory_order_relaxed) ||
        atomic_exchange_explicit(flag, 1u, memory_order_acquire)) {
        int rc = cas_wait(c, flag);
        if (rc)
            return rc;
    }
    body(o);
    atomic_store_explicit(flag, 0u, memory_order_release);
    return CORELAT_OK;
}

static __attribute__((noinline)) int ticket_wait(kctx *c, atomic_uint *serving, unsigned me)
{
    corelat_spin s;
    corelat_spin_begin(&s, c->abort, c->timeout_ns);
    while (atomic_load_explicit(serving, memory_order_acquire) != me) {
        int rc = corelat_spin_check(&s);
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
    if (e) {
        c->err = e;
        return CORELAT_EINVAL;
    }
    body(o);
    pthread_spin_unlock(&o->lock.spin);
    return CORELAT_OK;
}

/* pthread_mutex_lock may sleep in the kernel, but never for long: every holder runs a bounded
 * body and unlocks at once, whatever the abort flag says, so a waiter is always woken. */
static __attribute__((noinline)) int k_mutex(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_mutex_lock(&o->lock.mutex);
    if (e) {
        c->err = e;
        return CORELAT_EINVAL;
    }
    body(o);
    pthread_mutex_unlock(&o->lock.mutex);
    return CORELAT_OK;
}

static __attribute__((noinline)) int trylock_wait(kctx *c, pthread_mutex_t *mutex)
{
    corelat_spin s;
    corelat_spin_begin(&s, c->abort, c->timeout_ns);
    for (;;) {
        int e = pthread_mutex_trylock(mutex);
        if (e == 0)
            return CORELAT_OK;
        if (e != EBUSY) {
            c->err = e;
            return CORELAT_EINVAL;
        }
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
}

static __attribute__((noinline)) int k_mutex_trylock(kctx *c)
{
    lock_obj *o = c->obj;
    if (pthread_mutex_trylock(&o->lock.mutex) != 0) {
        int rc = trylock_wait(c, &o->lock.mutex);
        if (rc)
            return rc;
    }
    body(o);
    pthread_mutex_unlock(&o->lock.mutex);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_rwlock_wr(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_rwlock_wrlock(&o->lock.rwlock);
    if (e) {
        c->err = e;
        return CORELAT_EINVAL;
    }
    body(o);
    pthread_rwlock_unlock(&o->lock.rwlock);
    return CORELAT_OK;
}

/* Readers hold the lock together by design, so their increment must be atomic. */
static __attribute__((noinline)) int k_rwlock_rd(kctx *c)
{
    lock_obj *o = c->obj;
    int e = pthread_rwlock_rdlock(&o->lock.rwlock);
    if (e) {
        c->err = e;
        return CORELAT_EINVAL;
    }
    atomic_fetch_add_explicit(&o->counter, 1, memory_order_relaxed);
    pthread_rwlock_unlock(&o->lock.rwlock);
    return CORELAT_OK;
}

static __attribute__((noinline)) int k_none(kctx *c)
{
    body(c->obj);
    return CORELAT_OK;
}

static const kernel_fn kernels[CORELAT_LK_COUNT] = {
    k_baseline, k_inc_relaxed, k_inc_seqcst, k_cas_spin,  k_ticket_spin, k_pthread_spin,
    k_mutex,    k_mutex_trylock, k_rwlock_wr, k_rwlock_rd, k_none,
};

/* ---- Objects: a page per owner, zeroed (first touch) and initialised on the owner's CPU. ---- */

static int uses_mutex(int k) { return k == CORELAT_LK_MUTEX || k == CORELAT_LK_MUTEX_TRYLOCK; }
static int uses_rwlock(int k) { return k == CORELAT_LK_RWLOCK_WR || k == CORELAT_LK_RWLOCK_RD; }

static void objs_destroy(char *buf, int upto)
{
    for (int k = 0; k < upto; k++) {
        lock_obj *o = slot(buf, k);
        if (uses_mutex(k))
            pthread_mutex_destroy(&o->lock.mutex);
        else if (uses_rwlock(k))
            pthread_rwlock_destroy(&o->lock.rwlock);
        else if (k == CORELAT_LK_PTHREAD_SPIN)
            pthread_spin_destroy(&o->lock.spin);
    }
}

/* 0, or an errno value after undoing what was initialised. */
static int objs_init(char *buf)
{
    memset(buf, 0, BUF_BYTES);
    for (int k = 0; k < CORELAT_LK_COUNT; k++) {
        lock_obj *o = slot(buf, k);
        int e = 0;
        if (uses_mutex(k))
            e = pthread_mutex_init(&o->lock.mutex, NULL);
        else if (uses_rwlock(k))
            e = pthread_rwlock_init(&o->lock.rwlock, NULL);
        else if (k == CORELAT_LK_PTHREAD_SPIN)
            e = pthread_spin_init(&o->lock.spin, PTHREAD_PROCESS_PRIVATE);
        if (e) {
            objs_destroy(buf, k);
            return e;
        }
    }
    return 0;
}

/* ---- The run ---- */

typedef struct {
    corelat_lock_job *job;
    char **bufs;                    /* n pages (uncontended), or bufs[0] only (shared) */
    int *at_test;                   /* per thread: the test it was in, -1 when none */
    atomic_int buf_ready;           /* shared mode: the leader's page is initialised */
    atomic_uint_fast64_t arrived;   /* phase barrier: arrivals so far, over all phases */
    atomic_uint_fast64_t phase_go;  /* phases whose start time the leader has published */
    atomic_uint_fast64_t start_at;  /* the start time of the latest published phase */
} run_state;

/* Every thread arrives; then the leader (thread 0) publishes a start a little in the future and all
 * spin until the clock reaches it, so the threads of a phase start together. The leader writes the
 * next start only after every thread arrived at the next barrier, i.e. after all read this one. */
static int phase_sync(run_state *rs, corelat_member *m, uint64_t phase, uint64_t *start)
{
    corelat_lock_job *job = rs->job;
    const atomic_int *abort = &m->team->abort;
    corelat_spin s;
    corelat_spin_begin(&s, abort, job->timeout_ns);
    uint64_t target = (phase + 1) * (uint64_t)job->n;
    atomic_fetch_add_explicit(&rs->arrived, 1, memory_order_acq_rel);
    while (atomic_load_explicit(&rs->arrived, memory_order_acquire) < target) {
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    corelat_spin_reset(&s);
    if (m->index == 0) {
        atomic_store_explicit(&rs->start_at, corelat_ticks() + job->lead_ticks, memory_order_relaxed);
        atomic_store_explicit(&rs->phase_go, phase + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(&rs->phase_go, memory_order_acquire) < phase + 1) {
            int rc = corelat_spin_check(&s);
            if (rc)
                return rc;
            corelat_cpu_relax();
        }
    }
    uint64_t at = atomic_load_explicit(&rs->start_at, memory_order_relaxed);
    corelat_spin_reset(&s);
    while (corelat_ticks() < at) {
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    *start = at;
    return CORELAT_OK;
}

/* sermin: single calls, each between two serializing clock reads, until `end`. */
static int run_serial(kernel_fn fn, kctx *c, uint64_t end, uint64_t *best_out, uint64_t *calls_out)
{
    uint64_t best = UINT64_MAX, calls = 0;
    for (;;) {
        uint64_t t0 = corelat_ticks_serial();
        int rc = fn(c);
        uint64_t t1 = corelat_ticks_serial();
        if (rc)
            return rc;
        calls++;
        if (t1 - t0 < best)
            best = t1 - t0;
        if (t1 >= end)
            break;
        if ((calls & 1023u) == 0 && atomic_load_explicit(c->abort, memory_order_relaxed))
            return CORELAT_EABORT;
    }
    *best_out = best;
    *calls_out = calls;
    return CORELAT_OK;
}

/* avg: calls written out UNROLL in a row, the clock and the abort flag read every CHUNK calls. */
#define UNROLL 8
#define CHUNK 64

#define CALL()                                                                                          \
    do {                                                                                                \
        int rc_ = fn(c);                                                                                \
        if (rc_)                                                                                        \
            return rc_;                                                                                 \
    } while (0)

static int run_avg(kernel_fn fn, kctx *c, uint64_t end, uint64_t *calls_out, uint64_t *ticks_out)
{
    uint64_t calls = 0, now;
    uint64_t t0 = corelat_ticks();
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
        if (atomic_load_explicit(c->abort, memory_order_relaxed))
            return CORELAT_EABORT;
    }
    *calls_out = calls;
    *ticks_out = now - t0;
    return CORELAT_OK;
}

static void lock_work(corelat_member *m)
{
    run_state *rs = m->arg;
    corelat_lock_job *job = rs->job;
    char *buf;
    rs->at_test[m->index] = -1;
    if (!job->shared || m->index == 0) {
        void *p = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            m->status = CORELAT_ENOMEM;
            m->err = errno;
            return;
        }
        int e = objs_init(p);
        if (e) {
            munmap(p, BUF_BYTES);
            m->status = e == ENOMEM ? CORELAT_ENOMEM : CORELAT_EINVAL;
            m->err = e;
            return;
        }
        rs->bufs[m->index] = p;
        if (job->shared)
            atomic_store_explicit(&rs->buf_ready, 1, memory_order_release);
        buf = p;
    } else {
        int rc = corelat_spin_until_set(&rs->buf_ready, &m->team->abort, rs->job->timeout_ns);
        if (rc) {
            m->status = rc;
            return;
        }
        buf = rs->bufs[0];
    }

    kctx c = {.obj = NULL, .abort = &m->team->abort, .timeout_ns = job->timeout_ns, .err = 0};
    uint64_t phase = 0, start;
    int rc = CORELAT_OK;
    for (int t = 0; t < job->ntests && rc == CORELAT_OK; t++) {
        int test = job->tests[t];
        kernel_fn fn = kernels[test];
        size_t at = (size_t)t * (size_t)job->n + (size_t)m->index;
        c.obj = slot(buf, test);
        rs->at_test[m->index] = test;
        rc = phase_sync(rs, m, phase++, &start);
        if (rc == CORELAT_OK)
            rc = run_serial(fn, &c, start + job->serial_ticks, &job->sermin[at], &job->sercalls[at]);
        if (rc == CORELAT_OK)
            rc = phase_sync(rs, m, phase++, &start);
        if (rc == CORELAT_OK)
            rc = run_avg(fn, &c, start + job->duration_ticks, &job->calls[at], &job->ticks[at]);
    }
    if (rc == CORELAT_OK)
        rs->at_test[m->index] = -1;
    m->status = rc;
    m->err = c.err;
}

int corelat_locks_start(corelat_lock_job *job, corelat_team *team)
{
    job->status = CORELAT_OK;
    job->failed_cpu = -1;
    job->failed_test = -1;
    job->err = 0;
    job->priv = NULL;
    team->members = NULL;
    team->threads = NULL;
    int valid = job->n >= 1 && job->ntests >= 1 && job->serial_ticks > 0 && job->duration_ticks > 0;
    unsigned seen = 0;
    for (int t = 0; valid && t < job->ntests; t++) {
        int k = job->tests[t];
        valid = k >= 0 && k < CORELAT_LK_COUNT && !(seen & (1u << k)); /* distinct: one object each */
        if (valid)
            seen |= 1u << k;
    }
    if (!valid)
        return job->status = CORELAT_EINVAL;
    run_state *rs = calloc(1, sizeof *rs);
    if (!rs)
        return job->status = CORELAT_ENOMEM;
    rs->bufs = calloc((size_t)job->n, sizeof *rs->bufs);
    rs->at_test = calloc((size_t)job->n, sizeof *rs->at_test);
    if (!rs->bufs || !rs->at_test) {
        free(rs->bufs);
        free(rs->at_test);
        free(rs);
        return job->status = CORELAT_ENOMEM;
    }
    rs->job = job;
    atomic_init(&rs->buf_ready, 0);
    atomic_init(&rs->arrived, 0);
    atomic_init(&rs->phase_go, 0);
    atomic_init(&rs->start_at, 0);
    job->priv = rs;
    size_t cells = (size_t)job->ntests * (size_t)job->n;
    memset(job->calls, 0, cells * sizeof *job->calls);
    memset(job->ticks, 0, cells * sizeof *job->ticks);
    memset(job->sermin, 0, cells * sizeof *job->sermin);
    memset(job->sercalls, 0, cells * sizeof *job->sercalls);
    memset(job->counter, 0, (size_t)job->ntests * sizeof *job->counter);
    int rc = corelat_team_start(team, job->n, job->cpus, lock_work, rs, &job->err);
    if (rc != CORELAT_OK)
        job->status = rc;
    return rc;
}

void corelat_locks_finish(corelat_lock_job *job, corelat_team *team)
{
    run_state *rs = job->priv;
    int idx;
    job->status = corelat_team_settle(team, job->status, &idx, &job->failed_cpu, &job->err);
    if (idx >= 0 && rs)
        job->failed_test = rs->at_test[idx];
    corelat_team_join(team);
    if (!rs)
        return;
    for (int i = 0; i < job->n; i++) {
        char *buf = rs->bufs[i];
        if (!buf)
            continue;
        for (int t = 0; t < job->ntests; t++)
            job->counter[t] += atomic_load_explicit(&slot(buf, job->tests[t])->counter, memory_order_relaxed);
        objs_destroy(buf, CORELAT_LK_COUNT);
        munmap(buf, BUF_BYTES);
    }
    free(rs->bufs);
    free(rs->at_test);
    free(rs);
    job->priv = NULL;
}
