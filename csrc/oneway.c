#include "oneway.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "samples.h"
#include "spin.h"

/* Line offsets in the pair's page, 256 B apart as in pingpong.c (no adjacent-line prefetch coupling). */
#define LINE_A 0
#define LINE_B 256

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

/* The hot loops (one per side, as in pingpong.c): every value in registers, the slow check cold.
 * Each sums the differences of one sample and keeps the smallest. */
static __attribute__((noinline)) int ow_send(message *la, message *lb, uint64_t seq, uint64_t end,
                                             int64_t *sum_out, int64_t *low_out, corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY_LOAD;
    int rc = 0;
    int64_t sum = 0, low = INT64_MAX;
    while (seq != end) {
        seq++;
        send(la, seq, corelat_ticks_serial());
        CORELAT_SPIN_WHILE_NOT_EVERY(atomic_load_explicit(&lb->seq, memory_order_acquire) == seq, s, seq,
                                     left, CORELAT_SPIN_EVERY_LOAD, rc, out);
        int64_t d = (int64_t)(corelat_ticks_serial() - atomic_load_explicit(&lb->ts, memory_order_relaxed));
        sum += d;
        low = d < low ? d : low;
    }
    *sum_out = sum;
    *low_out = low;
out:
    return rc;
}

static __attribute__((noinline)) int ow_recv(message *la, message *lb, uint64_t seq, uint64_t end,
                                             uint64_t off, int64_t *sum_out, int64_t *low_out,
                                             corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY_LOAD;
    int rc = 0;
    int64_t sum = 0, low = INT64_MAX;
    while (seq != end) {
        seq++;
        CORELAT_SPIN_WHILE_NOT_EVERY(atomic_load_explicit(&la->seq, memory_order_acquire) == seq, s, seq,
                                     left, CORELAT_SPIN_EVERY_LOAD, rc, out);
        int64_t d =
            (int64_t)(corelat_ticks_serial() + off - atomic_load_explicit(&la->ts, memory_order_relaxed));
        sum += d;
        low = d < low ? d : low;
        send(lb, seq, corelat_ticks_serial() + off);
    }
    *sum_out = sum;
    *low_out = low;
out:
    return rc;
}

/* A side of the pair, as its sample loop's step sees it (samples.h). */
typedef struct {
    corelat_ow_job *job;
    corelat_spin *s;
    message *la, *lb;
    int is_a;
    int64_t *sums, *min; /* this side's direction: b -> a for a, a -> b for b */
    int64_t best;        /* the smallest difference so far, this thread's own (*min is in the job) */
} side;

static int sample(void *p, int64_t k, int64_t slot)
{
    side *d = p;
    const corelat_ow_params *q = &d->job->p;
    uint64_t n = (uint64_t)q->messages, seq = (uint64_t)k * n;
    int64_t sum, low;
    int rc = d->is_a ? ow_send(d->la, d->lb, seq, seq + n, &sum, &low, d->s)
                     : ow_recv(d->la, d->lb, seq, seq + n, (uint64_t)q->offset_ticks, &sum, &low, d->s);
    if (rc == 0 && slot >= 0) {
        d->sums[slot] = sum;
        d->best = low < d->best ? low : d->best;
        *d->min = d->best;
    }
    return rc;
}

/* a (index 0) sends first, keeps the count and watches the budget; b (index 1) answers. Each keeps its
 * direction's sums and minimum. */
static int run_side(corelat_ow_job *job, corelat_member *m)
{
    int is_a = m->index == 0;
    corelat_spin s;
    corelat_member_spin(m, &s);
    side d = {job,
              &s,
              (message *)(job->page.buf + LINE_A),
              (message *)(job->page.buf + LINE_B),
              is_a,
              is_a ? job->sum_ba : job->sum_ab,
              is_a ? &job->min_ba : &job->min_ab,
              INT64_MAX};
    corelat_samples plan = {job->p.warmup, job->p.samples, is_a ? &job->kept : NULL,
                            is_a ? job->p.budget_ns : 0};
    return corelat_samples_run(m, &plan, sample, &d);
}

static void ow_work(corelat_member *m)
{
    corelat_ow_job *job = (corelat_ow_job *)m->job;
    /* By default a maps and first-touches the page on its CPU: fresh lines no third core ever
     * cached. p.place may choose otherwise; a third-party toucher (member 2) is done once it has
     * written the page. */
    int rc = corelat_page_join(&job->page, m, NULL);
    if (rc == CORELAT_OK && m->index == 1 && job->p.freeze_ns)
        rc = corelat_member_freeze(m, job->p.freeze_ns);
    if (rc == CORELAT_OK)
        rc = corelat_member_barrier(m);
    if (rc == CORELAT_OK && m->index == 0)
        rc = run_side(job, m);
    else if (rc == CORELAT_OK && m->index == 1)
        rc = job->p.stall_responder ? corelat_member_stall(m) : run_side(job, m);
    m->status = rc;
}

static void ow_destroy(corelat_job *head)
{
    corelat_ow_job *job = (corelat_ow_job *)head;
    corelat_page_free(&job->page);
    free(job->sum_ab);
    free(job->sum_ba);
    free(job);
}

corelat_ow_job *corelat_ow_new(const corelat_ow_params *p, int *status)
{
    if (p->messages < 1 || p->samples < 1 || p->warmup < 0 || p->cpu_a == p->cpu_b) {
        *status = CORELAT_EINVAL;
        return NULL;
    }
    corelat_ow_job *job = calloc(1, sizeof *job);
    int64_t *ab = calloc((size_t)p->samples, sizeof *ab), *ba = calloc((size_t)p->samples, sizeof *ba);
    if (!job || !ab || !ba) {
        free(job);
        free(ab);
        free(ba);
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    corelat_job_init(&job->head, p->timeout_ns, ow_work, ow_destroy);
    job->p = *p;
    job->sum_ab = ab;
    job->sum_ba = ba;
    job->min_ab = job->min_ba = INT64_MAX;
    corelat_page_init(&job->page);
    job->page.place = &job->p.place;
    *status = CORELAT_OK;
    return job;
}

int corelat_ow_start(corelat_ow_job *job)
{
    int cpus[3];
    int n = corelat_place_cpus(&job->p.place, job->p.cpu_a, job->p.cpu_b, cpus);
    return corelat_job_start(&job->head, n, cpus);
}
