#include "smt.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "affinity.h"
#include "spin.h"
#include "team.h"
#include "timer.h"

const char *const corelat_smt_loop_names[CORELAT_SMT_LOOP_COUNT] = {"alu", "mem"};

/* Iterations between two clock reads (and abort checks): a few microseconds of work, so the
 * clock's cost vanishes and the run ends within microseconds of its deadline. */
#define CHUNK 256
#define LINE 64

/* ---- The loops. Each runs from now until `end` and counts its iterations. ---- */

static int run_alu(corelat_member *m, uint64_t end, uint64_t *iters_out, uint64_t *last_out, uint64_t *sink)
{
    /* Knuth's MMIX LCG multiplier; four chains so the multiplier, not one chain's latency, limits. */
    const uint64_t k = 6364136223846793005u;
    uint64_t a = 1, b = 2, c = 3, d = 4, iters = 0, now;
    for (;;) {
        for (int r = 0; r < CHUNK; r++) {
            a = a * k + 1;
            b = b * k + 3;
            c = c * k + 5;
            d = d * k + 7;
            /* The values must exist in registers every iteration: no vectorising, no folding. */
            __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
        }
        iters += CHUNK;
        now = corelat_ticks();
        if (now >= end)
            break;
        int rc = corelat_member_check(m);
        if (rc)
            return rc;
    }
    *iters_out = iters;
    *last_out = now;
    *sink = a ^ b ^ c ^ d;
    return CORELAT_OK;
}

#define HOP() p = (void **)*p

static int run_mem(corelat_member *m, void *chain, uint64_t end, uint64_t *iters_out, uint64_t *last_out,
                   uint64_t *sink)
{
    void **p = chain;
    uint64_t iters = 0, now;
    for (;;) {
        for (int r = 0; r < CHUNK; r += 8) {
            HOP();
            HOP();
            HOP();
            HOP();
            HOP();
            HOP();
            HOP();
            HOP();
        }
        iters += CHUNK;
        now = corelat_ticks();
        if (now >= end)
            break;
        int rc = corelat_member_check(m);
        if (rc)
            return rc;
    }
    *iters_out = iters;
    *last_out = now;
    *sink = (uint64_t)(uintptr_t)p;
    return CORELAT_OK;
}

/* Link the buffer's lines into one random cycle (Sattolo's shuffle, done on the links in place):
 * every hop goes to a line the prefetchers cannot predict, and the chase visits every line. */
static void build_chain(char *buf, size_t lines, uint64_t seed)
{
    for (size_t i = 0; i < lines; i++)
        *(void **)(buf + i * LINE) = buf + i * LINE;
    uint64_t x = seed * 0x9E3779B97F4A7C15u + 1;
    for (size_t i = lines - 1; i > 0; i--) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = (size_t)(x % i);
        void **a = (void **)(buf + i * LINE), **b = (void **)(buf + j * LINE);
        void *t = *a;
        *a = *b;
        *b = t;
    }
}

/* ---- The run ---- */

/* Every thread arrives; the leader then waits a little on its own clock and raises `go`, and each
 * thread starts its own clock when it sees it. No thread reads another CPU's clock: with
 * unsynchronised timers a deadline in the leader's time would be early or late elsewhere. */
static int common_start(corelat_smt_job *job, corelat_member *m, uint64_t *start)
{
    int rc = corelat_member_barrier(m);
    if (rc)
        return rc;
    if (m->index == 0) {
        uint64_t at = corelat_ticks() + job->p.lead_ticks;
        while (corelat_ticks() < at)
            corelat_cpu_relax();
        atomic_store_explicit(&job->go, 1, memory_order_release);
    } else {
        corelat_spin s;
        corelat_member_spin(m, &s);
        rc = corelat_spin_until(&job->go, 1, &s);
        if (rc)
            return rc;
    }
    *start = corelat_ticks();
    return CORELAT_OK;
}

static void smt_work(corelat_member *m)
{
    corelat_smt_job *job = (corelat_smt_job *)m->job;
    const corelat_smt_params *p = &job->p;
    int i = m->index;
    if (p->loop == CORELAT_SMT_MEM) {
        /* Mapped and first touched here: the page lands on this CPU's NUMA node and in its caches. */
        void *buf = mmap(NULL, p->mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED) {
            m->status = CORELAT_ENOMEM;
            m->err = errno;
            return; /* the team's abort flag now stops the others at the starting line */
        }
        job->bufs[i] = buf;
        build_chain(buf, p->mem_bytes / LINE, (uint64_t)i + 1);
    }
    uint64_t start, last = 0;
    int rc = common_start(job, m, &start);
    if (rc) {
        m->status = rc;
        return;
    }
    /* A thread seen off its CPU ends the run for all (corelat_member_check), also at the ends. */
    uint64_t end = start + p->duration_ticks;
    if (!corelat_member_on_cpu(m))
        rc = CORELAT_EMOVED;
    else if (p->loop == CORELAT_SMT_ALU)
        rc = run_alu(m, end, &job->iterations[i], &last, &job->sink[i]);
    else
        rc = run_mem(m, job->bufs[i], end, &job->iterations[i], &last, &job->sink[i]);
    if (rc == CORELAT_OK && !corelat_member_on_cpu(m))
        rc = CORELAT_EMOVED;
    if (rc == CORELAT_OK)
        job->ticks[i] = last - start;
    m->status = rc;
}

static void smt_destroy(corelat_job *head)
{
    corelat_smt_job *job = (corelat_smt_job *)head;
    for (int i = 0; job->bufs && i < job->p.n; i++)
        if (job->bufs[i])
            munmap(job->bufs[i], job->p.mem_bytes);
    free(job->bufs);
    free(job->sink);
    free(job->cpus);
    free(job->iterations);
    free(job->ticks);
    free(job);
}

corelat_smt_job *corelat_smt_new(const corelat_smt_params *p, int *status)
{
    int valid =
        p->n >= 1 && p->loop >= 0 && p->loop < CORELAT_SMT_LOOP_COUNT && p->duration_ticks > 0 &&
        (p->loop != CORELAT_SMT_MEM || (p->mem_bytes >= CORELAT_SMT_MEM_MIN &&
                                        p->mem_bytes <= CORELAT_SMT_MEM_MAX && p->mem_bytes % LINE == 0));
    if (!valid) {
        *status = CORELAT_EINVAL;
        return NULL;
    }
    corelat_smt_job *job = calloc(1, sizeof *job);
    if (!job) {
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    size_t n = (size_t)p->n;
    job->p = *p;
    job->cpus = calloc(n, sizeof *job->cpus);
    job->iterations = calloc(n, sizeof *job->iterations);
    job->ticks = calloc(n, sizeof *job->ticks);
    job->bufs = calloc(n, sizeof *job->bufs);
    job->sink = calloc(n, sizeof *job->sink);
    corelat_job_init(&job->head, p->timeout_ns, smt_work, smt_destroy);
    if (!job->cpus || !job->iterations || !job->ticks || !job->bufs || !job->sink) {
        corelat_job_release(&job->head);
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    memcpy(job->cpus, p->cpus, n * sizeof *job->cpus);
    job->p.cpus = job->cpus;
    atomic_init(&job->go, 0);
    *status = CORELAT_OK;
    return job;
}

int corelat_smt_start(corelat_smt_job *job) { return corelat_job_start(&job->head, job->p.n, job->cpus); }
