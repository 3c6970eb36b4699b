#include "pingpong.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "samples.h"
#include "spin.h"

/* Offsets in the pair's page. Two lines apart and 256 B away so the adjacent-line prefetcher
 * (which fetches 128 B pairs) never couples the two threads' lines. */
#define LINE_A 0
#define LINE_B 256

/* The hot loops. Each is its own function, so what stays in registers is plain to see (objdump,
 * benchmarks/RESULTS.md): the line addresses, the counters and the countdown to the next slow check
 * live in registers; the slow check is a cold call. Memory orders: the protocol publishes no data
 * beyond the flag itself, so acquire/release (rw) and relaxed (cas) suffice. */

/* ---- CAS: the initiator moves the flag 0 -> 1, the responder 1 -> 0. Between samples the
 * initiator parks it at PARKED, which the responder does not take: so every sample starts with a
 * hand-off from the initiator (the responder cannot have answered early), and its first round trip
 * is a real one even when a sample is a single round trip. ---- */
#define PARKED 2u

/* rw_pong's loop keeps one alignment nop on each round trip's path: GCC pads the retry loop's head,
 * which the first poll falls into. A first poll standing alone was merged back into the loop by GCC;
 * the per-function optimize("no-align-loops", "no-align-jumps") attribute did not remove it (the
 * command-line -fno-align-loops -fno-align-jumps does); unrolled load polls changed what rw reads
 * (spin.h). One nop, issued alongside the poll's load, is left. */
#define HOT_LOOP __attribute__((noinline, unused))

/* The CAS loops, once per way of doing a compare-exchange (see cas_loops.h). */
#define CAS_LOOP(name) name##_native
#include "cas_loops.h"
#undef CAS_LOOP

/* aarch64: with outline atomics (Debian's default) every attempt would be a call to a helper that
 * tests the CPU's features each time. Both inline forms are built instead and one is chosen once at
 * start-up: LSE `cas` where the CPU has it, else the LL/SC loop (ldxr/stxr). They move the line
 * differently -- a failed LL/SC compare does not take the line exclusive -- so results say which. */
#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#include <pthread.h>
#include <sys/auxv.h>
#ifndef HWCAP_ATOMICS
#define HWCAP_ATOMICS (1 << 8)
#endif
#pragma GCC push_options
#pragma GCC target("arch=armv8.1-a")
#define CAS_LOOP(name) name##_lse
#include "cas_loops.h"
#undef CAS_LOOP
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("no-outline-atomics")
#define CAS_LOOP(name) name##_llsc
#include "cas_loops.h"
#undef CAS_LOOP
#pragma GCC pop_options

static int have_lse(void) { return (getauxval(AT_HWCAP) & HWCAP_ATOMICS) != 0; }

/* Chosen once, by the first corelat_pp_new: pthread_once orders the write before every caller's return,
 * and each job's threads start after their corelat_pp_new, so every read sees it (a later sweep's
 * corelat_pp_new, perhaps while another sweep's threads read it, writes nothing). */
static int use_lse;
static pthread_once_t lse_once = PTHREAD_ONCE_INIT;
static void choose_lse(void) { use_lse = have_lse(); }

const char *corelat_pp_cas_impl(void) { return have_lse() ? "lse cas" : "ll/sc (ldxr/stxr)"; }

static int cas_ping(atomic_uint *flag, int64_t n, uint64_t base, corelat_spin *s)
{
    return use_lse ? cas_ping_lse(flag, n, base, s) : cas_ping_llsc(flag, n, base, s);
}

static int cas_pong(atomic_uint *flag, int64_t n, uint64_t base, corelat_spin *s)
{
    return use_lse ? cas_pong_lse(flag, n, base, s) : cas_pong_llsc(flag, n, base, s);
}
#define CHOOSE_CAS() pthread_once(&lse_once, choose_lse)
#else
const char *corelat_pp_cas_impl(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return "lock cmpxchg";
#else
    return "compiler's compare-exchange";
#endif
}
#define cas_ping cas_ping_native
#define cas_pong cas_pong_native
#define CHOOSE_CAS() ((void)0)
#endif

/* ---- RW: the initiator stores sequence numbers to line A, the responder echoes them to line B. ---- */

static HOT_LOOP int rw_ping(atomic_uint_fast64_t *a, atomic_uint_fast64_t *b, uint64_t seq, uint64_t end,
                            corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY_LOAD;
    int rc = 0;
    while (seq != end) {
        seq++;
        atomic_store_explicit(a, seq, memory_order_release);
        CORELAT_SPIN_WHILE_NOT_EVERY(atomic_load_explicit(b, memory_order_acquire) == seq, s, seq, left,
                                     CORELAT_SPIN_EVERY_LOAD, rc, out);
    }
out:
    return rc;
}

static HOT_LOOP int rw_pong(atomic_uint_fast64_t *a, atomic_uint_fast64_t *b, uint64_t seq, uint64_t end,
                            corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY_LOAD;
    int rc = 0;
    while (seq != end) {
        seq++;
        CORELAT_SPIN_WHILE_NOT_EVERY(atomic_load_explicit(a, memory_order_acquire) == seq, s, seq, left,
                                     CORELAT_SPIN_EVERY_LOAD, rc, out);
        atomic_store_explicit(b, seq, memory_order_release);
    }
out:
    return rc;
}

/* One batch of round trips, as the initiator (timed) or the responder. */
static int batch(corelat_pp_job *job, int initiator, uint64_t k, corelat_spin *s)
{
    char *buf = job->page.buf;
    int64_t n = job->p.round_trips;
    uint64_t seq = k * (uint64_t)n; /* round trips before this batch */
    if (job->p.kernel == CORELAT_PP_CAS) {
        atomic_uint *flag = (atomic_uint *)(buf + LINE_A);
        return initiator ? cas_ping(flag, n, seq, s) : cas_pong(flag, n, seq, s);
    }
    atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)(buf + LINE_A);
    atomic_uint_fast64_t *b = (atomic_uint_fast64_t *)(buf + LINE_B);
    return initiator ? rw_ping(a, b, seq, seq + (uint64_t)n, s) : rw_pong(a, b, seq, seq + (uint64_t)n, s);
}

/* A side of the pair, as its sample loop's step sees it (samples.h). */
typedef struct {
    corelat_pp_job *job;
    corelat_spin *s;
} side;

static int initiator_sample(void *p, int64_t k, int64_t slot)
{
    side *d = p;
    /* Serializing reads (lfence; rdtsc; lfence -- isb; mrs; isb on aarch64), not plain ones. A
     * plain rdtsc waits for nothing: where the loop's exit is predicted (the first compare-exchange
     * after the unpark usually succeeding) the closing read ran ahead of the lock cmpxchg that
     * ends the batch, before the partner had answered, and one-round-trip samples read 0-1 timer
     * steps (issue 27, benchmarks/RESULTS.md). The fence before the closing read waits for the
     * batch to complete; the one after the opening read keeps the batch from starting before it.
     * Costs one serializing read (~overhead_serial_ticks) per sample instead of a plain one. */
    uint64_t t0 = corelat_ticks_serial();
    int rc = batch(d->job, 1, (uint64_t)k, d->s);
    uint64_t t1 = corelat_ticks_serial();
    if (rc == 0 && slot >= 0)
        d->job->ticks[slot] = t1 - t0;
    return rc;
}

static int responder_sample(void *p, int64_t k, int64_t slot)
{
    side *d = p;
    (void)slot;
    return batch(d->job, 0, (uint64_t)k, d->s);
}

/* The initiator times the batches, keeps the count and watches the budget; the responder answers. */
static int run_side(corelat_pp_job *job, corelat_member *m)
{
    corelat_spin s;
    corelat_member_spin(m, &s);
    side d = {job, &s};
    int timed = m->index == 0;
    corelat_samples plan = {job->p.warmup, job->p.samples, timed ? &job->kept : NULL,
                            timed ? job->p.budget_ns : 0};
    return timed ? corelat_samples_run(m, &plan, initiator_sample, &d)
                 : corelat_samples_run(m, &plan, responder_sample, &d);
}

/* Run by the page's first toucher: park the CAS flag (see PARKED). */
static void park(char *buf)
{
    atomic_store_explicit((atomic_uint *)(buf + LINE_A), PARKED, memory_order_relaxed);
}

static void pp_work(corelat_member *m)
{
    corelat_pp_job *job = (corelat_pp_job *)m->job;
    /* By default the initiator maps and first-touches the page on its CPU: it lands on its NUMA
     * node, and no line of it was ever cached by a third core. p.place may choose otherwise; a
     * third-party toucher (member 2) is done once it has written the page. */
    int rc = corelat_page_join(&job->page, m, park);
    if (rc == CORELAT_OK && m->index == 1 && job->p.freeze_ns)
        rc = corelat_member_freeze(m, job->p.freeze_ns);
    if (rc == CORELAT_OK && m->index == 1 && job->p.start_delay_ns)
        rc = corelat_member_delay(m, job->p.start_delay_ns);
    if (rc == CORELAT_OK)
        rc = corelat_member_barrier(m); /* all start together: no sample holds a start-up */
    if (rc == CORELAT_OK && m->index == 0)
        rc = run_side(job, m);
    else if (rc == CORELAT_OK && m->index == 1)
        rc = job->p.stall_responder ? corelat_member_stall(m) : run_side(job, m);
    m->status = rc;
}

static void pp_destroy(corelat_job *head)
{
    corelat_pp_job *job = (corelat_pp_job *)head;
    corelat_page_free(&job->page);
    free(job->ticks);
    free(job);
}

corelat_pp_job *corelat_pp_new(const corelat_pp_params *p, int *status)
{
    if (p->round_trips < 1 || p->samples < 1 || p->warmup < 0 ||
        (p->kernel != CORELAT_PP_CAS && p->kernel != CORELAT_PP_RW) || p->cpu_a == p->cpu_b) {
        *status = CORELAT_EINVAL;
        return NULL;
    }
    CHOOSE_CAS();
    corelat_pp_job *job = calloc(1, sizeof *job);
    uint64_t *ticks = calloc((size_t)p->samples, sizeof *ticks);
    if (!job || !ticks) {
        free(job);
        free(ticks);
        *status = CORELAT_ENOMEM;
        return NULL;
    }
    corelat_job_init(&job->head, p->timeout_ns, pp_work, pp_destroy);
    job->p = *p;
    job->ticks = ticks;
    corelat_page_init(&job->page);
    job->page.place = &job->p.place;
    *status = CORELAT_OK;
    return job;
}

int corelat_pp_start(corelat_pp_job *job)
{
    int cpus[3];
    int n = corelat_place_cpus(&job->p.place, job->p.cpu_a, job->p.cpu_b, cpus);
    return corelat_job_start(&job->head, n, cpus);
}
