#include "oneway.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "spin.h"
#include "team.h"

/* Line offsets in the pair's page, 256 B apart as in pingpong.c (no adjacent-line prefetch coupling). */
#define LINE_A 0
#define LINE_B 256

typedef struct {
    corelat_ow_job *job;
    corelat_page page;        /* mapped and first touched by the timing side on its CPU */
    uint8_t *migrated_b;    /* b's own record, merged after the join */
    int64_t min_ab;         /* written by b only */
    int64_t min_ba;         /* written by a only */
} ow_state;

/* A message: its timestamp, and a sequence number that says a new one arrived. The number, not the
 * timestamp, signals arrival: a coarse counter (24 MHz on some ARM chips) can read the same twice in a
 * row, and a receiver waiting for a changed timestamp would then wait forever. Both words share one
 * cache line, so a message still moves one line. */
typedef struct {
    _Atomic uint64_t seq;
    _Atomic uint64_t ts;
} message;

static inline void send(message *line, uint64_t seq, uint64_t ts)
{
    atomic_store_explicit(&line->ts, ts, memory_order_relaxed);
    atomic_store_explicit(&line->seq, seq, memory_order_release);
}

/* Spin until message number `seq` arrives; returns its timestamp in *ts. */
static inline int receive(message *line, uint64_t seq, uint64_t *ts, corelat_spin *s)
{
    while (atomic_load_explicit(&line->seq, memory_order_acquire) != seq) {
        int rc = corelat_spin_check(s);
        if (rc)
            return rc;
    }
    corelat_spin_reset(s);
    *ts = atomic_load_explicit(&line->ts, memory_order_relaxed);
    return CORELAT_OK;
}

/* a: send a timestamp, then receive b's. */
static int sender(ow_state *st, corelat_member *m)
{
    corelat_ow_job *job = st->job;
    message *la = (message *)(st->page.buf + LINE_A);
    message *lb = (message *)(st->page.buf + LINE_B);
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    uint64_t seq = 0, ts_b;
    int64_t best = INT64_MAX;
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        int cpu0 = corelat_current_cpu();
        int64_t sum = 0, low = INT64_MAX;
        for (int64_t r = 0; r < job->messages; r++) {
            seq++;
            send(la, seq, corelat_ticks_serial());
            int rc = receive(lb, seq, &ts_b, &s);
            if (rc)
                return rc;
            int64_t d = (int64_t)(corelat_ticks_serial() - ts_b);
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
    message *la = (message *)(st->page.buf + LINE_A);
    message *lb = (message *)(st->page.buf + LINE_B);
    const uint64_t off = (uint64_t)job->offset_ticks;
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    uint64_t seq = 0, ts_a;
    int64_t best = INT64_MAX;
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        int64_t sum = 0, low = INT64_MAX;
        for (int64_t r = 0; r < job->messages; r++) {
            seq++;
            int rc = receive(la, seq, &ts_a, &s);
            if (rc)
                return rc;
            int64_t d = (int64_t)(corelat_ticks_serial() + off - ts_a);
            sum += d;
            if (d < low)
                low = d;
            send(lb, seq, corelat_ticks_serial() + off);
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

static void ow_work(corelat_member *m)
{
    ow_state *st = m->arg;
    corelat_ow_job *job = st->job;
    int rc;
    if (m->index == 0) {
        /* Map and first-touch on a's CPU: fresh lines no third core ever cached. */
        rc = corelat_page_publish(&st->page, m);
        if (rc != CORELAT_OK) {
            m->status = rc;
            return;
        }
        rc = sender(st, m);
    } else {
        rc = corelat_page_await(&st->page, m, st->job->timeout_ns);
        if (rc == CORELAT_OK)
            rc = job->stall_responder ? corelat_member_stall(m) : receiver(st, m);
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
    corelat_page_init(&st->page);
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
    int idx;
    job->status = corelat_team_settle(team, job->status, &idx, &job->failed_cpu, &job->err);
    corelat_team_join(team);
    if (st) {
        for (int64_t k = 0; k < job->samples; k++)
            job->migrated[k] |= st->migrated_b[k];
        job->min_ab = st->min_ab;
        job->min_ba = st->min_ba;
        corelat_page_free(&st->page);
        free(st->migrated_b);
        free(st);
        job->priv = NULL;
    }
}
