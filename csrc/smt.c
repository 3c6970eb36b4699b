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

typedef struct {
    corelat_smt_job *job;
    char **bufs;                   /* memory loop: each thread's buffer */
    uint64_t *sink;                /* each thread's final value, so no loop can be optimised away */
    atomic_int go;                 /* the leader published start_at */
    atomic_uint_fast64_t start_at; /* the common start, in timer ticks */
} smt_state;

/* ---- The loops. Each runs from now until `end` and counts its iterations. ---- */

static int run_alu(const atomic_int *abort, uint64_t end, uint64_t *iters_out, uint64_t *last_out,
                   uint64_t *sink)
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
        if (atomic_load_explicit(abort, memory_order_relaxed))
            return CORELAT_EABORT;
    }
    *iters_out = iters;
    *last_out = now;
    *sink = a ^ b ^ c ^ d;
    return CORELAT_OK;
}

#define HOP() p = (void **)*p

static int run_mem(const atomic_int *abort, void *chain, uint64_t end, uint64_t *iters_out,
                   uint64_t *last_out, uint64_t *sink)
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
        if (atomic_load_explicit(abort, memory_order_relaxed))
            return CORELAT_EABORT;
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

/* Every thread arrives; the leader then publishes a start a little in the future and all spin until
 * the clock reaches it, so the threads start together. */
static int common_start(smt_state *st, corelat_member *m, uint64_t *start)
{
    corelat_smt_job *job = st->job;
    int rc = corelat_team_barrier(m, job->timeout_ns);
    if (rc)
        return rc;
    corelat_spin s;
    corelat_spin_begin(&s, &m->team->abort, job->timeout_ns);
    if (m->index == 0) {
        atomic_store_explicit(&st->start_at, corelat_ticks() + job->lead_ticks, memory_order_relaxed);
        atomic_store_explicit(&st->go, 1, memory_order_release);
    } else {
        while (!atomic_load_explicit(&st->go, memory_order_acquire)) {
            rc = corelat_spin_check(&s);
            if (rc)
                return rc;
            corelat_cpu_relax();
        }
        corelat_spin_reset(&s);
    }
    uint64_t at = atomic_load_explicit(&st->start_at, memory_order_relaxed);
    while (corelat_ticks() < at) {
        rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    *start = at;
    return CORELAT_OK;
}

static void smt_work(corelat_member *m)
{
    smt_state *st = m->arg;
    corelat_smt_job *job = st->job;
    const atomic_int *abort = &m->team->abort;
    int i = m->index;
    if (job->loop == CORELAT_SMT_MEM) {
        /* Mapped and first touched here: the page lands on this CPU's NUMA node and in its caches. */
        void *p = mmap(NULL, job->mem_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            m->status = CORELAT_ENOMEM;
            m->err = errno;
            return; /* the team's abort flag now stops the others at the starting line */
        }
        st->bufs[i] = p;
        build_chain(p, job->mem_bytes / LINE, (uint64_t)i + 1);
    }
    uint64_t start, last = 0;
    int rc = common_start(st, m, &start);
    if (rc) {
        m->status = rc;
        return;
    }
    int cpu0 = corelat_current_cpu();
    uint64_t end = start + job->duration_ticks;
    if (job->loop == CORELAT_SMT_ALU)
        rc = run_alu(abort, end, &job->iterations[i], &last, &st->sink[i]);
    else
        rc = run_mem(abort, st->bufs[i], end, &job->iterations[i], &last, &st->sink[i]);
    int cpu1 = corelat_current_cpu();
    if (rc == CORELAT_OK) {
        job->ticks[i] = last - start;
        job->migrated[i] = (cpu0 >= 0 && cpu0 != m->cpu) || (cpu1 >= 0 && cpu1 != m->cpu);
    }
    m->status = rc;
}

int corelat_smt_start(corelat_smt_job *job, corelat_team *team)
{
    job->status = CORELAT_OK;
    job->failed_cpu = -1;
    job->err = 0;
    job->priv = NULL;
    team->members = NULL;
    team->threads = NULL;
    int valid = job->n >= 1 && job->loop >= 0 && job->loop < CORELAT_SMT_LOOP_COUNT &&
                job->duration_ticks > 0 &&
                (job->loop != CORELAT_SMT_MEM ||
                 (job->mem_bytes >= CORELAT_SMT_MEM_MIN && job->mem_bytes <= CORELAT_SMT_MEM_MAX &&
                  job->mem_bytes % LINE == 0));
    if (!valid)
        return job->status = CORELAT_EINVAL;
    smt_state *st = calloc(1, sizeof *st);
    if (!st)
        return job->status = CORELAT_ENOMEM;
    st->bufs = calloc((size_t)job->n, sizeof *st->bufs);
    st->sink = calloc((size_t)job->n, sizeof *st->sink);
    if (!st->bufs || !st->sink) {
        free(st->bufs);
        free(st->sink);
        free(st);
        return job->status = CORELAT_ENOMEM;
    }
    st->job = job;
    atomic_init(&st->go, 0);
    atomic_init(&st->start_at, 0);
    job->priv = st;
    memset(job->iterations, 0, (size_t)job->n * sizeof *job->iterations);
    memset(job->ticks, 0, (size_t)job->n * sizeof *job->ticks);
    memset(job->migrated, 0, (size_t)job->n);
    int rc = corelat_team_start(team, job->n, job->cpus, smt_work, st, &job->err);
    if (rc != CORELAT_OK)
        job->status = rc;
    return rc;
}

void corelat_smt_finish(corelat_smt_job *job, corelat_team *team)
{
    smt_state *st = job->priv;
    int idx;
    job->status = corelat_team_settle(team, job->status, &idx, &job->failed_cpu, &job->err);
    corelat_team_join(team);
    if (!st)
        return;
    for (int i = 0; i < job->n; i++)
        if (st->bufs[i])
            munmap(st->bufs[i], job->mem_bytes);
    free(st->bufs);
    free(st->sink);
    free(st);
    job->priv = NULL;
}
