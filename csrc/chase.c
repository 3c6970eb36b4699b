#include "chase.h"

#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "samples.h"
#include "spin.h"

#define LINE 64

int corelat_chase_valid_order(const int *order, int64_t lines)
{
    if (lines < CORELAT_CHASE_MIN_LINES || lines > CORELAT_CHASE_MAX_LINES)
        return 0;
    uint8_t *seen = calloc((size_t)lines, 1);
    if (!seen)
        return 0;
    int ok = 1;
    for (int64_t k = 0; ok && k < lines; k++) {
        int v = order[k], next = order[(k + 1) % lines];
        ok = v >= 0 && v < lines && !seen[v] && v / 2 != next / 2;
        if (ok)
            seen[v] = 1;
    }
    free(seen);
    return ok;
}

/* Evict a line from every cache of the coherence domain. */
static inline void evict(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_clflush(p);
#elif defined(__aarch64__)
    __asm__ volatile("dc civac, %0" : : "r"(p) : "memory");
#else
    (void)p;
#endif
}

static inline void evict_done(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_mfence();
#elif defined(__aarch64__)
    __asm__ volatile("dsb ish" ::: "memory");
#endif
}

static int wait_for(atomic_uint_fast64_t *word, uint64_t value, corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY_LOAD;
    int rc = 0;
    CORELAT_SPIN_WHILE_NOT_EVERY(atomic_load_explicit(word, memory_order_acquire) == value, s, value, left,
                                 CORELAT_SPIN_EVERY_LOAD, rc, out);
out:
    return rc;
}

/* A side of the pair, as its sample loop's step sees it (samples.h). */
typedef struct {
    corelat_chase_job *job;
    corelat_member *m;
    corelat_spin *s;
    char *start;   /* the reader's: the chain's first line */
    uintptr_t sum; /* the owner's: what its clean reads read */
} side;

static int reader_sample(void *p, int64_t k, int64_t slot)
{
    side *d = p;
    corelat_chase_job *job = d->job;
    char *buf = job->page.buf;
    int64_t n = job->p.lines;
    /* Once per sample, untimed: a Ctrl-C ends the call at once (the loop checks the CPU). */
    if (atomic_load_explicit(&d->m->job->abort, memory_order_relaxed) != CORELAT_RUN)
        return CORELAT_EABORT;
    for (int64_t i = 0; i < n; i++)
        evict(buf + (size_t)i * LINE);
    evict_done();
    atomic_store_explicit(&job->req, (uint64_t)k + 1, memory_order_release);
    int rc = wait_for(&job->done, (uint64_t)k + 1, d->s);
    if (rc)
        return rc;
    /* Serializing reads (lfence; rdtsc; lfence -- isb; mrs; isb on aarch64), as in pingpong.c's
     * initiator. A plain rdtsc waits for nothing: the closing read ran ahead of the chain's
     * dependent loads, and samples of a 4-line chase read 1 tick (medians of 26 ticks against
     * ~1300 fenced; 64 lines 8866 against 13234: issue 27, benchmarks/RESULTS.md). The fence
     * before the closing read waits for the last load; the one after the opening read keeps the
     * first load from starting before it. */
    uint64_t t0 = corelat_ticks_serial();
    char *q = d->start;
    for (int64_t i = 0; i < n; i++)
        q = *(char *volatile *)q;
    uint64_t t1 = corelat_ticks_serial();
    job->reader_sink += (uintptr_t)q;
    if (slot >= 0)
        job->ticks[slot] = t1 - t0;
    return CORELAT_OK;
}

static int owner_sample(void *p, int64_t k, int64_t slot)
{
    side *d = p;
    const corelat_chase_params *q = &d->job->p;
    char *buf = d->job->page.buf;
    (void)slot;
    int rc = wait_for(&d->job->req, (uint64_t)k + 1, d->s);
    if (rc)
        return rc;
    /* Word 1 is the owner's: writing it takes the line Modified without touching the chain. */
    for (int64_t i = 0; i < q->lines; i++) {
        volatile uintptr_t *line = (volatile uintptr_t *)(buf + (size_t)i * LINE);
        if (q->kind == CORELAT_CHASE_MODIFIED)
            line[1] = (uintptr_t)k;
        else
            d->sum += line[0];
    }
    atomic_store_explicit(&d->job->done, (uint64_t)k + 1, memory_order_release);
    return CORELAT_OK;
}

/* The reader links the chain, then times one pass per sample; the owner touches the lines first. */
static int reader(corelat_chase_job *job, corelat_member *m)
{
    char *buf = job->page.buf;
    int64_t n = job->p.lines;
    /* Word 0 of each line points to the next line of the chain. */
    for (int64_t k = 0; k < n; k++)
        *(char **)(buf + (size_t)job->order[k] * LINE) = buf + (size_t)job->order[(k + 1) % n] * LINE;
    corelat_spin s;
    corelat_member_spin(m, &s);
    side d = {job, m, &s, buf + (size_t)job->order[0] * LINE, 0};
    corelat_samples plan = {job->p.warmup, job->p.samples, NULL, 0};
    return corelat_samples_run(m, &plan, reader_sample, &d);
}

static int owner(corelat_chase_job *job, corelat_member *m)
{
    corelat_spin s;
    corelat_member_spin(m, &s);
    side d = {job, m, &s, NULL, 0};
    corelat_samples plan = {job->p.warmup, job->p.samples, NULL, 0};
    int rc = corelat_samples_run(m, &plan, owner_sample, &d);
    if (rc == CORELAT_OK)
        job->owner_sink = d.sum;
    return rc;
}

static void chase_work(corelat_member *m)
{
    corelat_chase_job *job = (corelat_chase_job *)m->job;
    int rc = corelat_page_join(&job->page, m, NULL);
    if (rc == CORELAT_OK)
        rc = corelat_member_barrier(m);
    if (rc == CORELAT_OK && m->index == 0)
        rc = reader(job, m);
    else if (rc == CORELAT_OK && m->index == 1)
        rc = job->p.stall_responder ? corelat_member_stall(m) : owner(job, m);
    m->status = rc;
}

static void chase_destroy(corelat_job *head)
{
    corelat_chase_job *job = (corelat_chase_job *)head;
    corelat_page_free(&job->page);
    free(job->order);
    free(job->ticks);
    free(job);
}

corelat_chase_job *corelat_chase_new(const corelat_chase_params *p, const int *order, int *status)
{
    if (!CORELAT_HAVE_CHASE || p->samples < 1 || p->warmup < 0 || p->cpu_a == p->cpu_b || !order ||
        (p->kind != CORELAT_CHASE_CLEAN && p->kind != CORELAT_CHASE_MODIFIED) ||
        !corelat_chase_valid_order(order, p->lines)) {
        *status = CORELAT_EINVAL;
        return NULL;
    }
    corelat_chase_job *job = aligned_alloc(128, (sizeof(corelat_chase_job) + 127) / 128 * 128);
    int *copy = malloc((size_t)p->lines * sizeof *copy);
    uint64_t *ticks = calloc((size_t)p->samples, sizeof *ticks);
    if (!job || !copy || !ticks) {
        free(job);
        free(copy);
        free(ticks);
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    memset(job, 0, sizeof *job);
    corelat_job_init(&job->head, p->timeout_ns, chase_work, chase_destroy);
    job->p = *p;
    memcpy(copy, order, (size_t)p->lines * sizeof *copy);
    job->order = copy;
    job->ticks = ticks;
    atomic_init(&job->req, 0);
    atomic_init(&job->done, 0);
    corelat_page_init(&job->page);
    job->page.bytes = (size_t)p->lines * LINE;
    job->page.place = &job->p.place;
    *status = CORELAT_OK;
    return job;
}

int corelat_chase_start(corelat_chase_job *job)
{
    int cpus[3];
    int n = corelat_place_cpus(&job->p.place, job->p.cpu_a, job->p.cpu_b, cpus);
    return corelat_job_start(&job->head, n, cpus);
}
