#include "team.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "affinity.h"
#include "spin.h"

static atomic_int jobs_alive;

int corelat_jobs_alive(void) { return atomic_load(&jobs_alive); }

/* ---- members ---- */

void corelat_member_spin(corelat_member *m, corelat_spin *s)
{
    corelat_spin_begin(s, &m->job->abort, &m->beat, m->cpu, m->job->timeout_ns);
}

int corelat_member_on_cpu(const corelat_member *m) { return corelat_on_cpu(m->cpu); }

__attribute__((noinline)) int corelat_member_check(corelat_member *m)
{
    if (atomic_load_explicit(&m->job->abort, memory_order_relaxed) != CORELAT_RUN)
        return CORELAT_EABORT;
    corelat_member_beat(m);
    /* every 16th: sched_getcpu costs more than the rest of the check */
    if ((++m->checks & 15u) == 0 && !corelat_member_on_cpu(m))
        return CORELAT_EMOVED;
    return CORELAT_OK;
}

/* Where the C library cannot pin at creation, wait (bounded, abort-aware) until the creator pinned
 * this thread. Not on its CPU yet: no move check (cpu -1). CORELAT_OK, or the status to end with. */
static int await_pin(corelat_member *m)
{
    if (CORELAT_PIN_AT_CREATE)
        return CORELAT_OK;
    corelat_spin s;
    corelat_spin_begin(&s, &m->job->abort, &m->beat, -1, m->job->timeout_ns);
    int rc = corelat_spin_until(&m->pinned, CORELAT_PIN_DONE, &s);
    if (rc == CORELAT_OK && atomic_load_explicit(&m->pinned, memory_order_acquire) != CORELAT_PIN_DONE)
        rc = CORELAT_EABORT; /* the creator could not pin it and reports why */
    return rc;
}

static void *trampoline(void *p)
{
    corelat_member *m = p;
    corelat_job *job = m->job;
    /* Pinned (at creation, or by the creator), but verify: a cpuset change in between would make
     * every number a lie. */
    int rc = await_pin(m);
    /* One reading: a move from outside between two readings reported the CPU it left (selftest's
     * moved_partner(0) under TSan). -1 (unknown) counts as on its CPU, as in corelat_on_cpu. */
    int cpu = corelat_current_cpu();
    if (rc != CORELAT_OK) {
        m->status = rc;
    } else if (cpu >= 0 && cpu != m->cpu) {
        m->status = CORELAT_EMOVED;
        m->err = cpu;
    } else {
        job->work(m);
        if (m->status == CORELAT_ESTOP)
            m->status = CORELAT_OK; /* stopped on purpose by a partner */
        if (m->status == CORELAT_EMOVED && m->err == 0)
            m->err = corelat_current_cpu();
    }
    if (m->status != CORELAT_OK && m->status != CORELAT_EABORT)
        atomic_store(&job->abort, CORELAT_ABORT);
    pthread_mutex_lock(&job->mu);
    m->done = 1;
    job->finished++;
    pthread_cond_broadcast(&job->cv);
    pthread_mutex_unlock(&job->mu);
    corelat_job_release(job);
    return NULL;
}

void corelat_job_init(corelat_job *job, uint64_t timeout_ns, corelat_work_fn work,
                      void (*destroy)(corelat_job *job))
{
    job->status = 0;
    job->failed_cpu = -1;
    job->failed_index = -1;
    job->err = 0;
    job->timeout_ns = timeout_ns;
    job->work = work;
    job->destroy = destroy;
    atomic_init(&job->refs, 1);
    atomic_init(&job->abort, CORELAT_RUN);
    atomic_init(&job->ready, 0);
    atomic_fetch_add(&jobs_alive, 1);
}

void corelat_job_release(corelat_job *job)
{
    if (atomic_fetch_sub_explicit(&job->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (job->sync_init) {
        pthread_mutex_destroy(&job->mu);
        pthread_cond_destroy(&job->cv);
    }
    free(job->threads);
    free(job->members);
    job->destroy(job);
    atomic_fetch_sub(&jobs_alive, 1);
}

/* Measuring threads below the caller: under SCHED_FIFO/RR (chrt) threads of equal priority never
 * yield, so two spinning workers would keep the caller -- the thread that watches for Ctrl-C and
 * time-outs -- off both CPUs for good. One priority lower (or SCHED_OTHER at the lowest) keeps the
 * measurement real-time against everything else while the caller can always preempt it. */
static int attr_sched(pthread_attr_t *attr)
{
    int policy;
    struct sched_param sp;
    if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0)
        return 0;
    if (policy != SCHED_FIFO && policy != SCHED_RR)
        return 0;
    if (sp.sched_priority > sched_get_priority_min(policy)) {
        sp.sched_priority--;
    } else {
        policy = SCHED_OTHER;
        sp.sched_priority = 0;
    }
    int e = pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED);
    if (e == 0)
        e = pthread_attr_setschedpolicy(attr, policy);
    if (e == 0)
        e = pthread_attr_setschedparam(attr, &sp);
    return e;
}

int corelat_job_start(corelat_job *job, int n, const int *cpus)
{
    job->n = n;
    job->threads = calloc((size_t)n, sizeof *job->threads);
    /* aligned_alloc: calloc's 16 bytes would put two members' beats back on one line (team.h) */
    job->members = aligned_alloc(CORELAT_MEMBER_ALIGN, (size_t)n * sizeof *job->members);
    if (job->members)
        memset(job->members, 0, (size_t)n * sizeof *job->members);
    if (!job->threads || !job->members) {
        job->err = ENOMEM;
        return job->status = CORELAT_ENOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* a stepped wall clock must not bend a wait */
    pthread_mutex_init(&job->mu, NULL);
    pthread_cond_init(&job->cv, &ca);
    pthread_condattr_destroy(&ca);
    job->sync_init = 1;
    for (int i = 0; i < n; i++) {
        corelat_member *m = &job->members[i];
        m->job = job;
        m->index = i;
        m->cpu = cpus[i];
        atomic_init(&m->beat, 0);
        atomic_init(&m->pinned, CORELAT_PIN_AT_CREATE ? CORELAT_PIN_DONE : CORELAT_PIN_WAIT);
    }

    /* New threads inherit the creator's signal mask: block everything around the creation so no
     * worker ever runs a signal handler, then restore ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = CORELAT_OK;
    for (int i = 0; i < n; i++) {
        corelat_member *m = &job->members[i];
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        int e = corelat_attr_pin(&attr, cpus[i]), created = 0;
        if (e != 0) {
            rc = CORELAT_EPIN;
        } else if ((e = attr_sched(&attr)) != 0) {
            rc = CORELAT_EINVAL;
        } else {
            atomic_fetch_add(&job->refs, 1);
            e = pthread_create(&job->threads[i], &attr, trampoline, m);
            if (e != 0) {
                atomic_fetch_sub(&job->refs, 1);
                /* glibc reports a CPU it cannot pin to as EINVAL from pthread_create */
                rc = e == EINVAL ? CORELAT_EPIN : CORELAT_ETHREAD;
            } else {
                created = 1;
                job->started++;
            }
        }
        if (created && !CORELAT_PIN_AT_CREATE) {
            /* The thread waits for this (affinity.h); on failure it ends as aborted, we say why. */
            e = corelat_thread_pin(job->threads[i], cpus[i]);
            if (e != 0)
                rc = CORELAT_EPIN;
            atomic_store_explicit(&m->pinned, e ? CORELAT_PIN_FAILED : CORELAT_PIN_DONE,
                                  memory_order_release);
        }
        pthread_attr_destroy(&attr);
        if (rc != CORELAT_OK) {
            if (!created) { /* a started thread sets its own status and done */
                m->status = rc;
                m->err = e;
                m->done = 1;
            }
            job->err = e;
            job->failed_cpu = cpus[i];
            job->failed_index = i;
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != CORELAT_OK) {
        corelat_job_abort(job);
        job->status = rc;
    }
    return rc;
}

void corelat_job_abort(corelat_job *job) { atomic_store(&job->abort, CORELAT_ABORT); }

static int all_finished(corelat_job *job) { return job->finished >= job->started; }

/* Polls come a slice apart. Longer than the grace since the last one, the caller was not watching:
 * the whole process was stopped (Ctrl-Z, SIGSTOP) and continued, or the caller got no CPU for that
 * long. The threads could not beat meanwhile either (stopped too), or did and nobody looked: either
 * way that time is not silence, and the watchdog's clocks move past it. After a stop the threads
 * resume one by one; a caller that ran first gave up on a team that was waking. Shorter gaps count:
 * a caller merely kept waiting for a CPU on a loaded machine (tens of milliseconds, often) must not
 * stretch the grace it gives a frozen thread (with two slices as the bound, a frozen partner of 2 s
 * woke before a loaded CI machine's caller had watched its 0.5 s grace). */
static void unwatched(corelat_job *job, uint64_t now, uint64_t slice_ns, uint64_t grace_ns)
{
    uint64_t last = job->watched_ns;
    job->watched_ns = now;
    if (last == 0 || now - last <= 2 * slice_ns || now - last <= grace_ns)
        return;
    uint64_t gap = now - last - slice_ns;
    if (job->beat_seen_ns)
        job->beat_seen_ns += gap;
    if (job->abort_seen_ns)
        job->abort_seen_ns += gap;
}

int corelat_job_poll(corelat_job *job, int slice_ms, uint64_t grace_ns)
{
    if (!job->sync_init)
        return 1; /* never started */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += slice_ms / 1000;
    ts.tv_nsec += (long)(slice_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&job->mu);
    while (!all_finished(job)) {
        if (pthread_cond_timedwait(&job->cv, &job->mu, &ts) == ETIMEDOUT)
            break;
    }
    int done = all_finished(job);
    pthread_mutex_unlock(&job->mu);
    if (done)
        return 1;

    /* Still running: is anyone alive? */
    uint64_t now = corelat_clock_ns(), sum = 0;
    unwatched(job, now, (uint64_t)slice_ms * 1000000u, grace_ns);
    for (int i = 0; i < job->started; i++)
        sum += atomic_load_explicit(&job->members[i].beat, memory_order_relaxed);
    if (job->beat_seen_ns == 0 || sum != job->beat_sum) {
        job->beat_sum = sum;
        job->beat_seen_ns = now;
    }
    if (atomic_load(&job->abort) == CORELAT_ABORT) {
        if (job->abort_seen_ns == 0)
            job->abort_seen_ns = now;
        if (now - job->abort_seen_ns > grace_ns)
            return -1;
    }
    /* A beat comes every CORELAT_SPIN_EVERY(_LOAD) failed polls and every sample; none at all for longer
     * than a thread may wait means every thread has stopped running. */
    if (now - job->beat_seen_ns > job->timeout_ns + grace_ns)
        return -1;
    return 0;
}

/* The outcome: a thread left behind ranks first (it is why the others were stopped), then a real
 * cause, then the aborts it caused; the first member of the highest rank names it. */
static int rank(int s)
{
    return s == CORELAT_OK ? 0 : s == CORELAT_EABORT ? 1 : s == CORELAT_ENOANSWER ? 3 : 2;
}

static void settle(corelat_job *job)
{
    int best = -1, best_rank = 0, best_status = CORELAT_OK;
    for (int i = 0; i < job->started; i++) {
        corelat_member *m = &job->members[i];
        int s = m->done ? m->status : CORELAT_ENOANSWER;
        if (rank(s) > best_rank) {
            best = i;
            best_rank = rank(s);
            best_status = s;
        }
    }
    if (best < 0)
        return;
    job->status = best_status;
    job->failed_index = best;
    job->failed_cpu = job->members[best].cpu;
    if (best_status != CORELAT_ENOANSWER)
        job->err = job->members[best].err;
    else
        job->err = 0;
}

int corelat_job_finish(corelat_job *job)
{
    if (!job->sync_init)
        return job->status;
    int start_status = job->status; /* a failed start keeps its cause */
    /* Under the mutex: a thread left behind may still finish while we look. */
    pthread_mutex_lock(&job->mu);
    for (int i = 0; i < job->started; i++) {
        if (job->members[i].done) {
            pthread_join(job->threads[i], NULL); /* it only has to return */
        } else {
            pthread_detach(job->threads[i]);
            job->left_behind++;
        }
    }
    if (start_status == CORELAT_OK)
        settle(job);
    pthread_mutex_unlock(&job->mu);
    if (job->left_behind)
        corelat_job_abort(job); /* if it ever wakes, it stops at once */
    return job->status;
}

int corelat_job_run(corelat_job *job, uint64_t grace_ns)
{
    while (corelat_job_poll(job, 100, grace_ns) == 0)
        ;
    return corelat_job_finish(job);
}

int corelat_member_barrier(corelat_member *m)
{
    corelat_job *job = m->job;
    atomic_fetch_add(&job->ready, 1);
    corelat_spin s;
    corelat_member_spin(m, &s);
    return corelat_spin_until(&job->ready, job->n, &s);
}

void corelat_page_init(corelat_page *p)
{
    p->buf = NULL;
    p->bytes = CORELAT_PAGE_BYTES;
    atomic_init(&p->ready, 0);
    p->place = NULL;
}

static int publish(corelat_page *p, corelat_member *m, void (*prepare)(char *buf))
{
    void *buf = mmap(NULL, p->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        m->err = errno;
        return CORELAT_ENOMEM;
    }
    if (p->place)
        corelat_place_before_touch(p->place, buf, p->bytes);
    memset(buf, 0, p->bytes);
    if (p->place)
        corelat_place_after_touch(p->place, buf, p->bytes);
    if (prepare)
        prepare(buf);
    p->buf = buf;
    atomic_store_explicit(&p->ready, 1, memory_order_release);
    return CORELAT_OK;
}

int corelat_page_join(corelat_page *p, corelat_member *m, void (*prepare)(char *buf))
{
    int toucher = p->place ? p->place->toucher : CORELAT_TOUCH_INITIATOR;
    return m->index == toucher ? publish(p, m, prepare) : corelat_page_await(p, m);
}

int corelat_page_await(corelat_page *p, corelat_member *m)
{
    corelat_spin s;
    corelat_member_spin(m, &s);
    return corelat_spin_until(&p->ready, 1, &s);
}

void corelat_page_free(corelat_page *p)
{
    if (p->buf)
        munmap(p->buf, p->bytes);
    p->buf = NULL;
}

int corelat_member_stall(corelat_member *m)
{
    while (atomic_load_explicit(&m->job->abort, memory_order_relaxed) == CORELAT_RUN)
        corelat_cpu_relax();
    return CORELAT_EABORT;
}

int corelat_member_freeze(corelat_member *m, uint64_t ns)
{
    (void)m;
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return CORELAT_EABORT;
}

int corelat_member_delay(corelat_member *m, uint64_t ns)
{
    uint64_t end = corelat_clock_ns() + ns;
    for (;;) {
        if (atomic_load_explicit(&m->job->abort, memory_order_relaxed) != CORELAT_RUN)
            return CORELAT_EABORT;
        uint64_t now = corelat_clock_ns();
        if (now >= end)
            return CORELAT_OK;
        uint64_t left = end - now, slice = left < 10000000u ? left : 10000000u; /* 10 ms */
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice};
        nanosleep(&ts, NULL);
    }
}
