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
_Static_assert((CORELAT_LK_COUNT * SLOT_BYTES) <= BUF_BYTES, "the objects must fit one page");

static lock_obj *slot(char *buf, int test) { return (lock_obj *)(buf + (size_t)test * SLOT_BYTES); }

/* ---- The kernels. Each is one call: noinline, reached through a pointer like the baseline, so
 * subtracting the baseline removes the call itself. A kernel returns 0, or a status when a bounded
 * wait for its lock gave up (Ctrl-C, time-out) -- then it holds nothing. ---- */

typedef struct {
    lock_obj *obj;
    corelat_member *m; /* for a wait's spin set-up and the heartbeat */
    int err;           /* errno of a failed pthread call */
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

static __attribute__((noinline)) int k_cas_spin(kctx *c)
{
    lock_obj *o = c->obj;
    atomic_uint *flag = &o->lock.flag;
    unsigned expected = 0;
    if (atomic_load_explicit(flag, memory_order_relaxed) ||
        !atomic_compare_exchange_strong_explicit(flag, &expected, 1u, memory_order_acquire,
                                                 memory_order_relaxed)) {
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
    corelat_member_spin(c->m, &s);
    uint32_t left = CORELAT_SPIN_EVERY;
    for (;;) {
        int e = pthread_mutex_trylock(mutex);
        if (e == 0)
            return CORELAT_OK;
        if (e != EBUSY) {
            c->err = e;
            return CORELAT_EINVAL;
        }
        int rc = corelat_spin_tick(&s, &left, 0);
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
    k_baseline, k_inc_relaxed,   k_inc_seqcst, k_cas_spin,  k_ticket_spin, k_pthread_spin,
    k_mutex,    k_mutex_trylock, k_rwlock_wr,  k_rwlock_rd, k_none,
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

/* sermin: brackets of k calls between two serializing clock reads, until `end`. */
static int run_serial(kernel_fn fn, kctx *c, uint64_t k, uint64_t end, uint64_t *best_out,
                      uint64_t *calls_out)
{
    uint64_t best = UINT64_MAX, calls = 0, brackets = 0, t0, t1;
    for (;;) {
        int rc = bracket(fn, c, k, &t0, &t1);
        if (rc)
            return rc;
        calls += k;
        if (t1 - t0 < best)
            best = t1 - t0;
        if (t1 >= end)
            break;
        if ((++brackets & 255u) == 0 && (rc = corelat_member_check(c->m)) != 0)
            return rc;
    }
    *best_out = best;
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
        int rc = corelat_member_check(c->m);
        if (rc)
            return rc;
    }
    *calls_out = calls;
    *ticks_out = now - t0;
    return CORELAT_OK;
}

/* The thread's objects: its own page (uncontended, and the leader in shared mode), or the leader's. */
static int objects(corelat_lock_job *job, corelat_member *m, char **buf)
{
    if (job->p.shared && m->index != 0) {
        corelat_spin s;
        corelat_member_spin(m, &s);
        int rc = corelat_spin_until(&job->buf_ready, 1, &s);
        *buf = job->bufs[0];
        return rc;
    }
    void *p = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        m->err = errno;
        return CORELAT_ENOMEM;
    }
    int e = objs_init(p);
    if (e) {
        munmap(p, BUF_BYTES);
        m->err = e;
        return e == ENOMEM ? CORELAT_ENOMEM : CORELAT_EINVAL;
    }
    job->bufs[m->index] = p;
    if (job->p.shared)
        atomic_store_explicit(&job->buf_ready, 1, memory_order_release);
    *buf = p;
    return CORELAT_OK;
}

static void lock_work(corelat_member *m)
{
    corelat_lock_job *job = (corelat_lock_job *)m->job;
    const corelat_lock_params *p = &job->p;
    char *buf = NULL;
    atomic_store_explicit(&job->at_test[m->index], -1, memory_order_relaxed);
    int rc = objects(job, m, &buf);
    kctx c = {.obj = NULL, .m = m, .err = 0};
    int phase = 0;
    uint64_t start, k, cal;
    for (int t = 0; t < p->ntests && rc == CORELAT_OK; t++) {
        int test = p->tests[t];
        kernel_fn fn = kernels[test];
        size_t at = (size_t)t * (size_t)p->n + (size_t)m->index;
        c.obj = slot(buf, test);
        atomic_store_explicit(&job->at_test[m->index], test, memory_order_relaxed);
        rc = bracket_size(fn, &c, p->bracket_ticks, &k, &cal);
        if (rc == CORELAT_OK)
            rc = phase_sync(job, m, phase++, &start);
        if (rc == CORELAT_OK) {
            job->serk[at] = k;
            rc = run_serial(fn, &c, k, start + p->serial_ticks, &job->sermin[at], &job->sercalls[at]);
            job->sercalls[at] += cal;
        }
        if (rc == CORELAT_OK)
            rc = phase_sync(job, m, phase++, &start);
        if (rc == CORELAT_OK)
            rc = run_avg(fn, &c, start, start + p->duration_ticks, &job->calls[at], &job->ticks[at]);
    }
    if (rc == CORELAT_OK)
        atomic_store_explicit(&job->at_test[m->index], -1, memory_order_relaxed);
    m->status = rc;
    if (!m->err)
        m->err = c.err;
}

static void locks_destroy(corelat_job *head)
{
    corelat_lock_job *job = (corelat_lock_job *)head;
    for (int i = 0; job->bufs && i < job->p.n; i++) {
        if (job->bufs[i]) {
            objs_destroy(job->bufs[i], CORELAT_LK_COUNT);
            munmap(job->bufs[i], BUF_BYTES);
        }
    }
    free(job->bufs);
    free(job->at_test);
    free(job->cpus);
    free(job->tests);
    free(job->calls);
    free(job->ticks);
    free(job->sermin);
    free(job->serk);
    free(job->sercalls);
    free(job->counter);
    free(job);
}

corelat_lock_job *corelat_locks_new(const corelat_lock_params *p, int *status)
{
    int valid = p->n >= 1 && p->ntests >= 1 && p->serial_ticks > 0 && p->duration_ticks > 0;
    unsigned seen = 0;
    for (int t = 0; valid && t < p->ntests; t++) {
        int k = p->tests[t];
        valid = k >= 0 && k < CORELAT_LK_COUNT && !(seen & (1u << k)); /* distinct: one object each */
        if (valid)
            seen |= 1u << k;
    }
    if (!valid) {
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
    job->tests = calloc((size_t)p->ntests, sizeof *job->tests);
    job->bufs = calloc(n, sizeof *job->bufs);
    job->at_test = calloc(n, sizeof *job->at_test);
    job->calls = calloc(cells, sizeof *job->calls);
    job->ticks = calloc(cells, sizeof *job->ticks);
    job->sermin = calloc(cells, sizeof *job->sermin);
    job->serk = calloc(cells, sizeof *job->serk);
    job->sercalls = calloc(cells, sizeof *job->sercalls);
    job->counter = calloc((size_t)p->ntests, sizeof *job->counter);
    if (!job->cpus || !job->tests || !job->bufs || !job->at_test || !job->calls || !job->ticks ||
        !job->sermin || !job->serk || !job->sercalls || !job->counter) {
        corelat_job_release(&job->head);
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    memcpy(job->cpus, p->cpus, n * sizeof *job->cpus);
    memcpy(job->tests, p->tests, (size_t)p->ntests * sizeof *job->tests);
    job->p.cpus = job->cpus;
    job->p.tests = job->tests;
    atomic_init(&job->buf_ready, 0);
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
        for (int t = 0; t < job->p.ntests; t++)
            job->counter[t] += atomic_load_explicit(&slot(buf, job->tests[t])->counter, memory_order_relaxed);
    }
}
