#include "oneway.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "affinity.h"
#include "spin.h"
#include "team.h"

/* Line offsets in the pair's page, 256 B apart as in pingpong.c (no adjacent-line prefetch coupling). */
#define LINE_A 0
#define LINE_B 256
#define BUF_BYTES 4096

typedef struct {
    corelat_ow_job *job;
    char *buf;              /* mapped and first touched by a on its CPU */
    atomic_int buf_ready;
    uint8_t *migrated_b;    /* b's own record, merged after the join */
    int64_t min_ab;         /* written by b only */
    int64_t min_ba;         /* written by a only */
} ow_state;

static int wait_ready(ow_state *st, corelat_member *m)
{
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, st->job->timeout_ns);
    while (!atomic_load_explicit(&st->buf_ready, memory_order_acquire)) {
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    return CORELAT_OK;
}

/* Spin until *line differs from *last; returns the new value in *last. */
static inline int wait_change(_Atomic uint64_t *line, uint64_t *last, corelat_spin *s)
{
    uint64_t v;
    while ((v = atomic_load_explicit(line, memory_order_acquire)) == *last) {
        int rc = corelat_spin_check(s);
        if (rc)
            return rc;
    }
    corelat_spin_reset(s);
    *last = v;
    return CORELAT_OK;
}

/* a: send a timestamp, then receive b's. Timer readings are never 0, so 0 means "nothing yet". */
static int sender(ow_state *st, corelat_member *m)
{
    corelat_ow_job *job = st->job;
    _Atomic uint64_t *la = (_Atomic uint64_t *)(st->buf + LINE_A);
    _Atomic uint64_t *lb = (_Atomic uint64_t *)(st->buf + LINE_B);
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    uint64_t last_b = 0;
    int64_t best = INT64_MAX;
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        int cpu0 = corelat_current_cpu();
        int64_t sum = 0, low = INT64_MAX;
        for (int64_t r = 0; r < job->messages; r++) {
            atomic_store_explicit(la, corelat_ticks_serial(), memory_order_release);
            int rc = wait_change(lb, &last_b, &s);
            if (rc)
                return rc;
            int64_t d = (int64_t)(corelat_ticks_serial() - last_b);
            sum += d;
            if (d < low)
                low = d;
        }
        int cpu1 = corelat_current_cpu();
        if (k >= job->warmup) {
            job->sum_ba[k - job->warmup] = sum;
            job->migrated[k - job->warmup] = (cpu0 != m->cpu || cpu1 != m->cpu);
            if (low < best)
                best = low;
        }
    }
    st->min_ba = best;
    return CORELAT_OK;
}

/* b: receive a's timestamp, then answer with its own. */
static int receiver(ow_state *st, corelat_member *m)
{
    corelat_ow_job *job = st->job;
    _Atomic uint64_t *la = (_Atomic uint64_t *)(st->buf + LINE_A);
    _Atomic uint64_t *lb = (_Atomic uint64_t *)(st->buf + LINE_B);
    const uint64_t off = (uint64_t)job->offset_ticks;
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    uint64_t last_a = 0;
    int64_t best = INT64_MAX;
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        int64_t sum = 0, low = INT64_MAX;
        for (int64_t r = 0; r < job->messages; r++) {
            int rc = wait_change(la, &last_a, &s);
            if (rc)
                return rc;
            int64_t d = (int64_t)(corelat_ticks_serial() + off - last_a);
            sum += d;
            if (d < low)
                low = d;
            atomic_store_explicit(lb, corelat_ticks_serial() + off, memory_order_release);
        }
        /* Checked between batches only: a sched_getcpu per message would be measured. */
        if (k >= job->warmup) {
            job->sum_ab[k - job->warmup] = sum;
            if (corelat_current_cpu() != m->cpu)
                st->migrated_b[k - job->warmup] = 1;
            if (low < best)
                best = low;
        }
    }
    st->min_ab = best;
    return CORELAT_OK;
}

static int stall(corelat_member *m)
{
    /* Test hook: a partner descheduled forever that still obeys abort. */
    while (!atomic_load_explicit(&m->team->abort, memory_order_relaxed))
        corelat_cpu_relax();
    return CORELAT_EABORT;
}

static void ow_work(corelat_member *m)
{
    ow_state *st = m->arg;
    corelat_ow_job *job = st->job;
    int rc;
    if (m->index == 0) {
        /* Map and first-touch on a's CPU: fresh lines no third core ever cached. */
        void *p = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            m->status = CORELAT_ENOMEM;
            m->err = errno;
            return;
        }
        memset(p, 0, BUF_BYTES);
        st->buf = p;
        atomic_store_explicit(&st->buf_ready, 1, memory_order_release);
        rc = sender(st, m);
    } else {
        rc = wait_ready(st, m);
        if (rc == CORELAT_OK)
            rc = job->stall_responder ? stall(m) : receiver(st, m);
    }
    m->status = rc;
}

int corelat_ow_start(corelat_ow_job *job, corelat_team *team)
{
    job->status = CORELAT_OK;
    job->failed_cpu = -1;
    job->err = 0;
    job->priv = NULL;
    job->min_ab = job->min_ba = INT64_MAX;
    team->members = NULL;
    team->threads = NULL;
    if (job->messages < 1 || job->samples < 1 || job->warmup < 0)
        return job->status = CORELAT_EINVAL;
    ow_state *st = calloc(1, sizeof *st);
    if (!st)
        return job->status = CORELAT_ENOMEM;
    st->migrated_b = calloc((size_t)job->samples, 1);
    if (!st->migrated_b) {
        free(st);
        return job->status = CORELAT_ENOMEM;
    }
    st->job = job;
    st->min_ab = st->min_ba = INT64_MAX;
    job->priv = st;
    atomic_init(&st->buf_ready, 0);
    memset(job->migrated, 0, (size_t)job->samples);
    int cpus[2] = {job->cpu_a, job->cpu_b};
    int rc = corelat_team_start(team, 2, cpus, ow_work, st, &job->err);
    if (rc != CORELAT_OK)
        job->status = rc;
    return rc;
}

void corelat_ow_finish(corelat_ow_job *job, corelat_team *team)
{
    ow_state *st = job->priv;
    int idx = -1;
    int status = team->members ? corelat_team_status(team, &idx) : job->status;
    if (status != CORELAT_OK && idx >= 0) {
        job->failed_cpu = team->members[idx].cpu;
        if (team->members[idx].err)
            job->err = team->members[idx].err;
    }
    if (job->status == CORELAT_OK)
        job->status = status;
    corelat_team_join(team);
    if (st) {
        for (int64_t k = 0; k < job->samples; k++)
            job->migrated[k] |= st->migrated_b[k];
        job->min_ab = st->min_ab;
        job->min_ba = st->min_ba;
        if (st->buf)
            munmap(st->buf, BUF_BYTES);
        free(st->migrated_b);
        free(st);
        job->priv = NULL;
    }
}
