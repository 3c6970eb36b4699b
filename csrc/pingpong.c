#include "pingpong.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "affinity.h"
#include "spin.h"
#include "team.h"

/* Offsets in the pair's buffer. Two lines apart and 256 B away so the adjacent-line prefetcher
 * (which fetches 128 B pairs) never couples the two threads' lines. */
#define LINE_A 0
#define LINE_B 256

typedef struct {
    corelat_pp_job *job;
    corelat_page page;        /* mapped and first touched by the timing side on its CPU */
    uint8_t *migrated_b;      /* responder's own record, merged after the join */
} pair_state;

/* ---- CAS: the flag goes 0 -> 1 by the initiator and 1 -> 0 by the responder. ---- */

static int cas_initiator(pair_state *ps, corelat_member *m)
{
    corelat_pp_job *job = ps->job;
    atomic_uint *flag = (atomic_uint *)(ps->page.buf + LINE_A);
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        int cpu0 = corelat_current_cpu();
        uint64_t t0 = corelat_ticks();
        for (int64_t r = 0; r < job->round_trips; r++) {
            unsigned expected = 0;
            while (!atomic_compare_exchange_strong_explicit(flag, &expected, 1u, memory_order_acq_rel,
                                                            memory_order_relaxed)) {
                expected = 0;
                int rc = corelat_spin_check(&s);
                if (rc)
                    return rc;
            }
            corelat_spin_reset(&s);
        }
        uint64_t t1 = corelat_ticks();
        int cpu1 = corelat_current_cpu();
        if (k >= job->warmup) {
            job->ticks[k - job->warmup] = t1 - t0;
            job->migrated[k - job->warmup] = (cpu0 != m->cpu || cpu1 != m->cpu);
        }
    }
    return CORELAT_OK;
}

static int cas_responder(pair_state *ps, corelat_member *m)
{
    corelat_pp_job *job = ps->job;
    atomic_uint *flag = (atomic_uint *)(ps->page.buf + LINE_A);
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        for (int64_t r = 0; r < job->round_trips; r++) {
            unsigned expected = 1;
            while (!atomic_compare_exchange_strong_explicit(flag, &expected, 0u, memory_order_acq_rel,
                                                            memory_order_relaxed)) {
                expected = 1;
                int rc = corelat_spin_check(&s);
                if (rc)
                    return rc;
            }
            corelat_spin_reset(&s);
        }
        /* Checked between batches only: a sched_getcpu per round trip would be measured. */
        if (k >= job->warmup && corelat_current_cpu() != m->cpu)
            ps->migrated_b[k - job->warmup] = 1;
    }
    return CORELAT_OK;
}

/* ---- RW: the initiator stores sequence numbers to line A, the responder echoes them to B. ---- */

static int rw_initiator(pair_state *ps, corelat_member *m)
{
    corelat_pp_job *job = ps->job;
    atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)(ps->page.buf + LINE_A);
    atomic_uint_fast64_t *b = (atomic_uint_fast64_t *)(ps->page.buf + LINE_B);
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    uint64_t seq = 0;
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        int cpu0 = corelat_current_cpu();
        uint64_t t0 = corelat_ticks();
        for (int64_t r = 0; r < job->round_trips; r++) {
            seq++;
            atomic_store_explicit(a, seq, memory_order_release);
            while (atomic_load_explicit(b, memory_order_acquire) != seq) {
                int rc = corelat_spin_check(&s);
                if (rc)
                    return rc;
            }
            corelat_spin_reset(&s);
        }
        uint64_t t1 = corelat_ticks();
        int cpu1 = corelat_current_cpu();
        if (k >= job->warmup) {
            job->ticks[k - job->warmup] = t1 - t0;
            job->migrated[k - job->warmup] = (cpu0 != m->cpu || cpu1 != m->cpu);
        }
    }
    return CORELAT_OK;
}

static int rw_responder(pair_state *ps, corelat_member *m)
{
    corelat_pp_job *job = ps->job;
    atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)(ps->page.buf + LINE_A);
    atomic_uint_fast64_t *b = (atomic_uint_fast64_t *)(ps->page.buf + LINE_B);
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    uint64_t seq = 0;
    int64_t total = job->warmup + job->samples;
    for (int64_t k = 0; k < total; k++) {
        for (int64_t r = 0; r < job->round_trips; r++) {
            seq++;
            while (atomic_load_explicit(a, memory_order_acquire) != seq) {
                int rc = corelat_spin_check(&s);
                if (rc)
                    return rc;
            }
            corelat_spin_reset(&s);
            atomic_store_explicit(b, seq, memory_order_release);
        }
        if (k >= job->warmup && corelat_current_cpu() != m->cpu)
            ps->migrated_b[k - job->warmup] = 1;
    }
    return CORELAT_OK;
}

static void pp_work(corelat_member *m)
{
    pair_state *ps = m->arg;
    corelat_pp_job *job = ps->job;
    int rc;
    if (m->index == 0) {
        /* Map and first-touch on the initiator's CPU: the page lands on its NUMA node, and no line
         * of it was ever cached by a third core. */
        rc = corelat_page_publish(&ps->page, m);
        if (rc != CORELAT_OK) {
            m->status = rc;
            return;
        }
        rc = job->kernel == CORELAT_PP_CAS ? cas_initiator(ps, m) : rw_initiator(ps, m);
    } else {
        rc = corelat_page_await(&ps->page, m, ps->job->timeout_ns);
        if (rc == CORELAT_OK) {
            if (job->stall_responder)
                rc = corelat_member_stall(m);
            else
                rc = job->kernel == CORELAT_PP_CAS ? cas_responder(ps, m) : rw_responder(ps, m);
        }
    }
    m->status = rc;
}

int corelat_pp_start(corelat_pp_job *job, corelat_team *team)
{
    job->status = CORELAT_OK;
    job->failed_cpu = -1;
    job->err = 0;
    job->priv = NULL;
    team->members = NULL;
    team->threads = NULL;
    if (job->round_trips < 1 || job->samples < 1 || job->warmup < 0 ||
        (job->kernel != CORELAT_PP_CAS && job->kernel != CORELAT_PP_RW))
        return job->status = CORELAT_EINVAL;
    pair_state *ps = calloc(1, sizeof *ps);
    if (!ps)
        return job->status = CORELAT_ENOMEM;
    ps->migrated_b = calloc((size_t)job->samples, 1);
    if (!ps->migrated_b) {
        free(ps);
        return job->status = CORELAT_ENOMEM;
    }
    ps->job = job;
    job->priv = ps;
    corelat_page_init(&ps->page);
    memset(job->migrated, 0, (size_t)job->samples);
    int cpus[2] = {job->cpu_a, job->cpu_b};
    int rc = corelat_team_start(team, 2, cpus, pp_work, ps, &job->err);
    if (rc != CORELAT_OK)
        job->status = rc;
    return rc;
}

void corelat_pp_finish(corelat_pp_job *job, corelat_team *team)
{
    pair_state *ps = job->priv;
    int idx;
    job->status = corelat_team_settle(team, job->status, &idx, &job->failed_cpu, &job->err);
    corelat_team_join(team);
    if (ps) {
        for (int64_t k = 0; k < job->samples; k++)
            job->migrated[k] |= ps->migrated_b[k];
        corelat_page_free(&ps->page);
        free(ps->migrated_b);
        free(ps);
        job->priv = NULL;
    }
}
