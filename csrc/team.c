#include "team.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "affinity.h"
#include "spin.h"

static void *trampoline(void *p)
{
    corelat_member *m = p;
    corelat_team *t = m->team;
    /* pthread_attr_setaffinity_np placed us, but verify: a cpuset change in between would make
     * every number a lie. */
    int cpu = corelat_current_cpu();
    if (cpu >= 0 && cpu != m->cpu) {
        m->status = CORELAT_EMOVED;
        m->err = cpu;
        atomic_store(&t->abort, 1);
    } else {
        t->fn(m);
        if (m->status != CORELAT_OK && m->status != CORELAT_EABORT)
            atomic_store(&t->abort, 1);
    }
    pthread_mutex_lock(&t->mu);
    t->finished++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int corelat_team_start(corelat_team *t, int n, const int *cpus, corelat_work_fn fn, void *arg, int *err)
{
    *err = 0;
    t->n = n;
    t->started = 0;
    t->fn = fn;
    t->finished = 0;
    atomic_init(&t->abort, 0);
    atomic_init(&t->ready, 0);
    t->threads = calloc((size_t)n, sizeof *t->threads);
    t->members = calloc((size_t)n, sizeof *t->members);
    if (!t->threads || !t->members) {
        free(t->threads);
        free(t->members);
        t->threads = NULL;
        t->members = NULL;
        return CORELAT_ENOMEM;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);

    /* New threads inherit the creator's signal mask: block everything around the creation so no
     * worker ever runs a signal handler, then restore ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = CORELAT_OK;
    for (int i = 0; i < n; i++) {
        corelat_member *m = &t->members[i];
        m->team = t;
        m->index = i;
        m->cpu = cpus[i];
        m->status = CORELAT_OK;
        m->err = 0;
        m->arg = arg;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        int e = corelat_attr_pin(&attr, cpus[i]);
        if (e == 0)
            e = pthread_create(&t->threads[i], &attr, trampoline, m);
        pthread_attr_destroy(&attr);
        if (e != 0) {
            *err = e;
            rc = e == EINVAL ? CORELAT_EPIN : CORELAT_ETHREAD;
            m->status = rc;
            m->err = e;
            break;
        }
        t->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != CORELAT_OK) {
        corelat_team_abort(t);
        return rc; /* the caller still joins, which reaps the started threads */
    }
    return CORELAT_OK;
}

int corelat_team_wait(corelat_team *t, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->mu);
    while (t->finished < t->started) {
        if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT)
            break;
    }
    int done = t->finished >= t->started;
    pthread_mutex_unlock(&t->mu);
    return done;
}

void corelat_team_abort(corelat_team *t) { atomic_store(&t->abort, 1); }

void corelat_team_join(corelat_team *t)
{
    if (!t->members)
        return; /* never started: nothing to reap */
    for (int i = 0; i < t->started; i++)
        pthread_join(t->threads[i], NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->threads);
    free(t->members);
    t->threads = NULL;
    t->members = NULL;
}

/* The first failing member's status: a real cause ranks before the aborts it triggered. */
static int team_status(const corelat_team *t, int *index)
{
    int abort_at = -1;
    for (int i = 0; i < t->n; i++) {
        int s = t->members[i].status;
        if (s == CORELAT_OK)
            continue;
        if (s != CORELAT_EABORT) {
            *index = i;
            return s;
        }
        if (abort_at < 0)
            abort_at = i;
    }
    if (abort_at >= 0) {
        *index = abort_at;
        return CORELAT_EABORT;
    }
    *index = -1;
    return CORELAT_OK;
}

int corelat_team_settle(corelat_team *t, int status, int *index, int *cpu, int *err)
{
    *index = -1;
    if (!t->members)
        return status; /* never started */
    while (!corelat_team_wait(t, 100))
        ;
    int idx;
    int status_found = team_status(t, &idx);
    if (status_found != CORELAT_OK && idx >= 0) {
        *index = idx;
        *cpu = t->members[idx].cpu;
        if (t->members[idx].err)
            *err = t->members[idx].err;
    }
    return status != CORELAT_OK ? status : status_found;
}

int corelat_team_barrier(corelat_member *m, unsigned long long timeout_ns)
{
    corelat_team *t = m->team;
    atomic_fetch_add(&t->ready, 1);
    corelat_spin s;
    corelat_spin_begin(&s, &t->abort, timeout_ns);
    while (atomic_load_explicit(&t->ready, memory_order_acquire) < t->n) {
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    return CORELAT_OK;
}

void corelat_page_init(corelat_page *p)
{
    p->buf = NULL;
    atomic_init(&p->ready, 0);
}

int corelat_page_publish(corelat_page *p, corelat_member *m)
{
    void *buf = mmap(NULL, CORELAT_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        m->err = errno;
        return CORELAT_ENOMEM;
    }
    memset(buf, 0, CORELAT_PAGE_BYTES);
    p->buf = buf;
    atomic_store_explicit(&p->ready, 1, memory_order_release);
    return CORELAT_OK;
}

int corelat_page_await(corelat_page *p, corelat_member *m, unsigned long long timeout_ns)
{
    return corelat_spin_until_set(&p->ready, &m->team->abort, timeout_ns);
}

void corelat_page_free(corelat_page *p)
{
    if (p->buf)
        munmap(p->buf, CORELAT_PAGE_BYTES);
    p->buf = NULL;
}

int corelat_member_stall(corelat_member *m)
{
    while (!atomic_load_explicit(&m->team->abort, memory_order_relaxed))
        corelat_cpu_relax();
    return CORELAT_EABORT;
}
