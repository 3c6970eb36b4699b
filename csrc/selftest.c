/* Plain-C self-test of the kernels, without Python: for ASan/UBSan, TSan, valgrind and qemu runs
 * (see Makefile). Exercises the success, time-out, abort, moved-thread, frozen-partner, budget and
 * bad-CPU paths. No assertion depends on how fast anything runs. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chase.h"
#include "locks.h"
#include "oneway.h"
#include "pingpong.h"
#include "smt.h"
#include "spin.h"
#include "team.h"
#include "timer.h"
#include "tstack.h"

static int failures;
#define EXPECT(cond)                                                                                         \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                                  \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)

/* A status check that says what came instead. */
#define EXPECT_STATUS(expr, want)                                                                            \
    do {                                                                                                     \
        int got_ = (expr);                                                                                   \
        if (got_ != (want)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: status %d, want %d\n", __FILE__, __LINE__, #expr, got_, want);  \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)

/* No check may depend on how soon a thread gets a CPU: on a loaded machine a runnable thread can
 * wait hundreds of milliseconds for one (seen: up to 0.6 s at nice 15 and 1.6 s at nice 19 beside two
 * busy loops). So every wait that is not what a check is about is one no scheduler delay comes near,
 * and it only bounds how long a broken kernel takes to fail:
 *  - ok_wait, a thread's time-out for a partner that does answer;
 *  - grace_ns, the caller's watchdog (corelat_job_poll): it gives up on a thread that showed no sign
 *    of life (beat) for time-out + grace, or that has not stopped within grace of an abort. The
 *    time-out checks (a partner that never answers, 0.05 s) are about the waiting thread's own
 *    time-out: with a grace of 0.2 s the watchdog raced it, and a waiting thread that was not
 *    scheduled for ~0.25 s around its deadline (or a stalled partner not scheduled within 0.2 s of
 *    the abort) turned CORELAT_ETIMEOUT into CORELAT_ENOANSWER.
 * The one check about the watchdog itself, frozen_partner, runs with a short one (watchdog_grace_ns):
 * the caller must give up on a frozen thread long before it wakes. */
static double ok_wait = 60.0;
static uint64_t grace_ns = 60000000000ull;
static uint64_t watchdog_grace_ns = 200000000u;

static double now_s(void) { return (double)corelat_clock_ns() / 1e9; }

static corelat_pp_params pp(int kernel, int a, int b, double timeout_s)
{
    corelat_pp_params p = {.kernel = kernel,
                           .cpu_a = a,
                           .cpu_b = b,
                           .round_trips = 50,
                           .samples = 20,
                           .warmup = 2,
                           .timeout_ns = (uint64_t)(timeout_s * 1e9)};
    return p;
}

/* Run a ping-pong job to its end, the caller giving up on a silent thread after `grace`; returns the
 * status, and the samples kept and failing CPU. */
static int run_pp_grace(const corelat_pp_params *p, int abort_early, int64_t *kept, int *failed_cpu,
                        uint64_t grace)
{
    int status;
    corelat_pp_job *job = corelat_pp_new(p, &status);
    if (!job)
        return status;
    if (corelat_pp_start(job) == CORELAT_OK && abort_early)
        corelat_job_abort(&job->head);
    status = corelat_job_run(&job->head, grace);
    if (kept && status == CORELAT_OK)
        *kept = job->kept;
    if (failed_cpu)
        *failed_cpu = job->head.failed_cpu;
    corelat_job_release(&job->head);
    return status;
}

/* Every member on its own 128-byte block (two cache lines): a member's beat, written by each slow
 * check of its thread, shares no line with another member (issue 23: +6-8 % on rw at ~100 ns). */
static void member_lines(void)
{
    corelat_pp_params p = pp(CORELAT_PP_RW, 0, 1, ok_wait);
    int status;
    corelat_pp_job *job = corelat_pp_new(&p, &status);
    EXPECT(job != NULL);
    if (!job)
        return;
    EXPECT_STATUS(corelat_pp_start(job), CORELAT_OK);
    const corelat_member *m = job->head.members;
    EXPECT(m != NULL && job->head.n == 2);
    for (int i = 0; m && i < job->head.n; i++) {
        uintptr_t start = (uintptr_t)&m[i], end = start + sizeof m[i] - 1, beat = (uintptr_t)&m[i].beat;
        EXPECT(start % 128 == 0 && end / 128 != (end + 1) / 128);
        EXPECT(beat / 128 == start / 128);
    }
    EXPECT_STATUS(corelat_job_run(&job->head, grace_ns), CORELAT_OK);
    corelat_job_release(&job->head);
}

static int run_pp(const corelat_pp_params *p, int abort_early, int64_t *kept, int *failed_cpu)
{
    return run_pp_grace(p, abort_early, kept, failed_cpu, grace_ns);
}

static int pp_status(int kernel, int a, int b, int stall, double timeout_s, int abort_early)
{
    corelat_pp_params p = pp(kernel, a, b, timeout_s);
    p.stall_responder = stall;
    return run_pp(&p, abort_early, NULL, NULL);
}

/* One-way messages both ways; with a skewed "clock" on b the bracket moves by the skew. */
static int run_oneway(int stall, double timeout_s, int64_t offset, int64_t *min_ab, int64_t *min_ba)
{
    corelat_ow_params p = {.cpu_a = 0,
                           .cpu_b = 1,
                           .messages = 50,
                           .samples = 10,
                           .warmup = 1,
                           .timeout_ns = (uint64_t)(timeout_s * 1e9),
                           .stall_responder = stall,
                           .offset_ticks = offset};
    int status;
    corelat_ow_job *job = corelat_ow_new(&p, &status);
    if (!job)
        return status;
    corelat_ow_start(job);
    status = corelat_job_run(&job->head, grace_ns);
    *min_ab = job->min_ab;
    *min_ba = job->min_ba;
    corelat_job_release(&job->head);
    return status;
}

/* Every lock test that can run here, in shared mode on CPUs 0 and 1 (one group), as two groups of
 * one thread each (each its own object), and as one group whose threads may run on either CPU
 * (spread): every protected counter equals the calls made. */
enum { ONE_GROUP, TWO_GROUPS, SPREAD };
static int run_locks(double seconds, const corelat_timer_info *info, int mode)
{
    enum { N = 2 };
    int cpus[N] = {0, 1}, groups[N] = {0, 1}, tests[CORELAT_LK_COUNT], T = 0;
    char why[200];
    /* valgrind does not emulate every instruction the CPU has (lsl: SIGILL): under it
     * (CORELAT_SELFTEST_NO_INSN, the Makefile's valgrind target) the instruction tests are left out. */
    int no_insn = getenv("CORELAT_SELFTEST_NO_INSN") != NULL;
    for (int t = 0; t < CORELAT_LK_NONE; t++) /* lock-none is broken on purpose */
        if (corelat_lock_available(t, NULL, why, sizeof why) &&
            !(no_insn && strncmp(corelat_lock_names[t], "cpu-", 4) == 0))
            tests[T++] = t;
    uint64_t phase = (uint64_t)(seconds * 1e9 * info->ticks_per_ns);
    corelat_lock_params p = {.n = N,
                             .cpus = cpus,
                             .group = mode == TWO_GROUPS ? groups : NULL,
                             .spread = mode == SPREAD,
                             .ntests = T,
                             .tests = tests,
                             .shared = 1,
                             .serial_ticks = phase / 4,
                             .duration_ticks = phase,
                             .lead_ticks = phase / 10,
                             .bracket_ticks = (uint64_t)(20 * info->resolution),
                             .timeout_ns = 60000000000ull};
    int status, bad = 0;
    corelat_lock_job *job = corelat_locks_new(&p, &status);
    if (!job)
        return -1;
    corelat_locks_start(job);
    status = corelat_job_run(&job->head, grace_ns);
    corelat_locks_collect(job);
    if (status != CORELAT_OK) {
        fprintf(stderr, "lock run: status %d in %s (errno %d)\n", status,
                job->failed_test >= 0 ? corelat_lock_names[job->failed_test] : "setup", job->head.err);
        bad = -1;
    }
    for (int i = 0; bad >= 0 && i < T; i++) {
        int t = tests[i];
        uint64_t sum = 0;
        for (int j = 0; j < N; j++) {
            sum += job->calls[i * N + j] + job->sercalls[i * N + j];
            if (job->serk[i * N + j] < 1)
                bad++;
        }
        int counts =
            t == CORELAT_LK_INC_ATOMIC || t == CORELAT_LK_INC_ATOMIC_CST || t >= CORELAT_LK_TICKET_SPIN;
        if (counts && sum != job->counter[i]) {
            fprintf(stderr, "%s: counter %llu != calls %llu\n", corelat_lock_names[t],
                    (unsigned long long)job->counter[i], (unsigned long long)sum);
            bad++;
        }
    }
    corelat_job_release(&job->head);
    return bad;
}

/* lock-none shared by two threads loses updates (so the check above can fail); a refused test
 * (an instruction the CPU lacks, with a fake table) is refused by corelat_locks_new. */
static void lock_checks_bite(const corelat_timer_info *info)
{
    int cpus[2] = {0, 1}, none = CORELAT_LK_NONE, status;
    uint64_t phase = (uint64_t)(0.02 * 1e9 * info->ticks_per_ns);
    corelat_lock_params p = {.n = 2,
                             .cpus = cpus,
                             .ntests = 1,
                             .tests = &none,
                             .shared = 1,
                             .serial_ticks = phase / 4,
                             .duration_ticks = phase,
                             .lead_ticks = phase / 10,
                             .bracket_ticks = (uint64_t)(20 * info->resolution),
                             .timeout_ns = 60000000000ull};
    corelat_lock_job *job = corelat_locks_new(&p, &status);
    EXPECT(job != NULL);
    if (job) {
        corelat_locks_start(job);
        EXPECT_STATUS(corelat_job_run(&job->head, grace_ns), CORELAT_OK);
        corelat_locks_collect(job);
        /* two CPUs hammering a plain increment for 20 ms: lost updates, unless the threads never
         * overlapped (one CPU, or taking turns under valgrind); then the counts are equal, not less */
        EXPECT(job->counter[0] <= job->calls[0] + job->calls[1] + job->sercalls[0] + job->sercalls[1]);
        corelat_job_release(&job->head);
    }
    corelat_cpu_feats own;
    corelat_cpu_feats_read(&own);
    char why[200];
    int other = own.arch == CORELAT_ARCH_X86_64 ? CORELAT_LK_CPU_ISB : CORELAT_LK_CPU_LFENCE;
    EXPECT(!corelat_lock_available(other, NULL, why, sizeof why) && corelat_lock_other_arch(other, NULL));
    p.tests = &other;
    EXPECT(corelat_locks_new(&p, &status) == NULL && status == CORELAT_EINVAL);
}

/* Instruction tests against made-up CPUID and HWCAP tables: present exactly where the table says. */
static void feature_tables(void)
{
    char why[200];
    corelat_cpu_feats x = {.arch = CORELAT_ARCH_X86_64,
                           .max_leaf = 7,
                           .max_ext = 0x80000001u,
                           .leaf1_edx = (1u << 4) | (1u << 25) | (1u << 26)};
#if defined(__x86_64__)
    EXPECT(corelat_lock_available(CORELAT_LK_CPU_RDTSC, &x, why, sizeof why));
    EXPECT(corelat_lock_available(CORELAT_LK_CPU_LFENCE, &x, why, sizeof why));
#else
    /* the table has the instructions, but a build for another architecture has no kernel for them */
    EXPECT(!corelat_lock_available(CORELAT_LK_CPU_RDTSC, &x, why, sizeof why) && strstr(why, "not built"));
    EXPECT(corelat_cpu_has(&x, CORELAT_NEED_X86_TSC, why, sizeof why));
#endif
    EXPECT(!corelat_lock_available(CORELAT_LK_CPU_RDRAND64, &x, why, sizeof why) && strstr(why, "rdrand"));
    EXPECT(!corelat_lock_available(CORELAT_LK_CPU_RDTSCP, &x, why, sizeof why) && strstr(why, "rdtscp"));
    EXPECT(!corelat_lock_available(CORELAT_LK_CPU_RDPID, &x, why, sizeof why) && strstr(why, "rdpid"));
    EXPECT(!corelat_lock_other_arch(CORELAT_LK_CPU_RDPID, &x) &&
           corelat_lock_other_arch(CORELAT_LK_CPU_ISB, &x));
    x.leaf1_ecx = 1u << 30;
    x.leaf7_ecx = 1u << 22;
    x.ext1_edx = 1u << 27;
    EXPECT(corelat_cpu_has(&x, CORELAT_NEED_X86_RDRAND, why, sizeof why));
    EXPECT(corelat_cpu_has(&x, CORELAT_NEED_X86_RDPID, why, sizeof why));
    EXPECT(corelat_cpu_has(&x, CORELAT_NEED_X86_RDTSCP, why, sizeof why));
    x.max_leaf = 1; /* leaf 7 beyond the maximum: its bits mean nothing */
    EXPECT(!corelat_cpu_has(&x, CORELAT_NEED_X86_RDPID, why, sizeof why));
    corelat_cpu_feats a = {.arch = CORELAT_ARCH_AARCH64};
    EXPECT(corelat_cpu_has(&a, CORELAT_NEED_ARM, why, sizeof why));
    EXPECT(!corelat_cpu_has(&a, CORELAT_NEED_ARM_RNG, why, sizeof why) && strstr(why, "rndr"));
    EXPECT(!corelat_cpu_has(&a, CORELAT_NEED_X86_TSC, why, sizeof why) && strstr(why, "architecture"));
    a.hwcap2 = 1u << 16;
    EXPECT(corelat_cpu_has(&a, CORELAT_NEED_ARM_RNG, why, sizeof why));
}

/* The ABA interleaving, step by step: A reads head X (next Y); B pops X, pops Y, pushes X; A's swap
 * must fail. The untagged stack lets it through (head = Y, a node B holds): the test catches ABA. */
static int aba_slips_through(int untagged)
{
    corelat_tstack s;
    corelat_tstack_init(&s);
    s.untagged = untagged;
    uint64_t snap;
    unsigned next, x = corelat_tstack_pop_begin(&s, &snap, &next);
    unsigned bx = corelat_tstack_pop(&s), by = corelat_tstack_pop(&s);
    corelat_tstack_push(&s, bx);
    unsigned got = corelat_tstack_pop_commit(&s, snap, next);
    int slipped = got != 0;
    EXPECT(x == bx && by == next);
    if (!slipped)
        EXPECT(corelat_tstack_depth(&s) == CORELAT_TSTACK_NODES - 1); /* Y still out, the rest intact */
    return slipped;
}

static void stacks(void)
{
    corelat_tstack s;
    corelat_tstack_init(&s);
    EXPECT(corelat_tstack_depth(&s) == CORELAT_TSTACK_NODES);
    unsigned got[CORELAT_TSTACK_NODES];
    for (int i = 0; i < CORELAT_TSTACK_NODES; i++)
        EXPECT((got[i] = corelat_tstack_pop(&s)) != 0);
    EXPECT(corelat_tstack_pop(&s) == 0 && corelat_tstack_depth(&s) == 0);
    for (int i = 0; i < CORELAT_TSTACK_NODES; i++)
        corelat_tstack_push(&s, got[i]);
    EXPECT(corelat_tstack_depth(&s) == CORELAT_TSTACK_NODES);
    EXPECT(!aba_slips_through(0));
    EXPECT(aba_slips_through(1));
    /* the locked pair (inline in tstack.h): last in, first out, 0 when empty, every node back */
    corelat_tstack_init(&s);
    for (int i = 0; i < CORELAT_TSTACK_NODES; i++)
        EXPECT((got[i] = corelat_tstack_pop_locked(&s)) != 0);
    EXPECT(corelat_tstack_pop_locked(&s) == 0 && corelat_tstack_depth(&s) == 0);
    corelat_tstack_push_locked(&s, got[2]);
    corelat_tstack_push_locked(&s, got[5]);
    EXPECT(corelat_tstack_pop_locked(&s) == got[5] && corelat_tstack_depth(&s) == 1);
    corelat_tstack_push_locked(&s, got[5]);
    for (int i = 0; i < CORELAT_TSTACK_NODES; i++)
        if (i != 2 && i != 5)
            corelat_tstack_push_locked(&s, got[i]);
    EXPECT(corelat_tstack_depth(&s) == CORELAT_TSTACK_NODES);
    char why[200] = "";
    int robust = corelat_lock_robust_check(why, sizeof why);
    if (robust)
        fprintf(stderr, "robust mutex: %s\n", why);
    /* qemu-user has no robust futex list (set_robust_list is ENOSYS there): glibc makes the mutex all
     * the same and the check must say in bounded time that the death went unreported; musl refuses the
     * attribute. Everywhere else the owner's death must be reported. */
    if (getenv("CORELAT_SELFTEST_QEMU"))
        EXPECT(robust == 0 || strstr(why, "never reported") || strstr(why, "setrobust")); /* glibc; musl */
    else
        EXPECT(robust == 0);
}

/* A responder that sleeps deaf to everything, like a frozen thread: the caller must give up on it
 * within time-out + grace, name its CPU, and its memory must stay valid until it wakes. */
static void frozen_partner(int slow)
{
    /* Under valgrind threads take turns and every step is slow: a longer sleep keeps "caller
     * returned while the partner still sleeps" true however slowly the caller gets there. */
    double sleep_s = slow ? 12.0 : 3.0;
    corelat_pp_params p = pp(CORELAT_PP_RW, 0, 1, 0.05);
    p.freeze_ns = (uint64_t)(sleep_s * 1e9);
    int failed_cpu = -2;
    double t0 = now_s();
    EXPECT_STATUS(run_pp_grace(&p, 0, NULL, &failed_cpu, watchdog_grace_ns), CORELAT_ENOANSWER);
    EXPECT(failed_cpu == 1);
    EXPECT(now_s() - t0 < sleep_s * 0.8); /* long before the partner wakes */
    EXPECT(corelat_jobs_alive() == 1);    /* the frozen thread still holds the job */
    for (int i = 0; i < (int)(sleep_s * 40) && corelat_jobs_alive() > 0; i++) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    EXPECT(corelat_jobs_alive() == 0); /* it woke, saw the abort, freed the job */
}

/* The same frozen partner, watched by a caller that gets its CPU late at every poll, as on a loaded
 * machine: such delays are no stop of the whole process, and the caller still gives up on the frozen
 * thread long before it wakes (when every gap over two slices was skipped as a stop, it waited for
 * the thread to wake and reported the waiting partner's time-out instead). */
static void frozen_partner_late_caller(int slow)
{
    /* Polls 0.3 s late: over two slices (0.1 s), well within the grace of 2 s, so every gap is time
     * the caller watched, also when a loaded machine adds its own delay to each (with 0.6 s in 1 s,
     * a sanitizer build on a machine at load 6 saw gaps over the grace, skipped them as stops, and
     * waited for the partner to wake). */
    double sleep_s = slow ? 12.0 : 6.0;
    uint64_t grace = 2000000000u;
    corelat_pp_params p = pp(CORELAT_PP_RW, 0, 1, 0.05);
    p.freeze_ns = (uint64_t)(sleep_s * 1e9);
    int status;
    corelat_pp_job *job = corelat_pp_new(&p, &status);
    EXPECT(job != NULL);
    if (!job)
        return;
    double t0 = now_s();
    if (corelat_pp_start(job) == CORELAT_OK) {
        struct timespec late = {0, 300000000};
        while (corelat_job_poll(&job->head, 50, grace) == 0)
            nanosleep(&late, NULL);
    }
    EXPECT_STATUS(corelat_job_finish(&job->head), CORELAT_ENOANSWER);
    EXPECT(now_s() - t0 < sleep_s * 0.8);
    corelat_job_release(&job->head);
    for (int i = 0; i < (int)(sleep_s * 40) && corelat_jobs_alive() > 0; i++) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    EXPECT(corelat_jobs_alive() == 0);
}

/* After delay_ns, move a thread onto CPU 0 from outside, as taskset -p does. */
static void move_to_cpu0(pthread_t thread, long delay_ns)
{
    struct timespec ts = {0, delay_ns};
    if (delay_ns)
        nanosleep(&ts, NULL);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(thread, sizeof one, &one);
}

/* The responder moved off its CPU in mid-run (as by taskset -p or a cpuset change): the call ends
 * with CORELAT_EMOVED long before it would have finished. With delay_ns 0 the move comes as soon as
 * the start returns, perhaps before the thread ever ran: a thread pinned late (by itself, after
 * that) would undo the move and run for hours; every thread must be pinned when the start returns. */
static void moved_partner(long delay_ns)
{
    corelat_pp_params p = pp(CORELAT_PP_RW, 0, 1, 10.0);
    p.round_trips = 1000000;
    p.samples = 1000; /* hours if it ran to its end */
    int status;
    corelat_pp_job *job = corelat_pp_new(&p, &status);
    EXPECT(job && corelat_pp_start(job) == CORELAT_OK);
    if (!job)
        return;
    move_to_cpu0(job->head.threads[1], delay_ns);
    double t0 = now_s();
    status = corelat_job_run(&job->head, grace_ns);
    EXPECT_STATUS(status, CORELAT_EMOVED);
    EXPECT(job->head.failed_cpu == 1 && job->head.err == 0);
    EXPECT(now_s() - t0 < 30.0);
    corelat_job_release(&job->head);
}

/* The same for a loop without spin-waits (smt's busy loop, minutes long): it ends at once too. */
static void moved_busy(const corelat_timer_info *info)
{
    int cpus[2] = {0, 1};
    corelat_smt_params p = {.loop = CORELAT_SMT_ALU,
                            .n = 2,
                            .cpus = cpus,
                            .duration_ticks = (uint64_t)(600e9 * info->ticks_per_ns),
                            .lead_ticks = (uint64_t)(1e5 * info->ticks_per_ns),
                            .timeout_ns = 10000000000ull};
    int status;
    corelat_smt_job *job = corelat_smt_new(&p, &status);
    EXPECT(job && corelat_smt_start(job) == CORELAT_OK);
    if (!job)
        return;
    move_to_cpu0(job->head.threads[1], 20000000);
    double t0 = now_s();
    EXPECT_STATUS(corelat_job_run(&job->head, grace_ns), CORELAT_EMOVED);
    EXPECT(job->head.failed_cpu == 1);
    EXPECT(now_s() - t0 < 30.0);
    corelat_job_release(&job->head);
}

/* The pointer chase (csrc/chase.c) on an 8-line chain, placed as `place` says; *home_node where the
 * lines were found. */
static int run_chase(int kind, int stall, double timeout_s, int abort_early, const int *order,
                     const corelat_place *place, int *home_node)
{
    corelat_chase_params p = {.kind = kind,
                              .cpu_a = 0,
                              .cpu_b = 1,
                              .lines = 8,
                              .samples = 10,
                              .warmup = 1,
                              .timeout_ns = (uint64_t)(timeout_s * 1e9),
                              .stall_responder = stall};
    if (place)
        p.place = *place;
    int status;
    corelat_chase_job *job = corelat_chase_new(&p, order, &status);
    if (!job)
        return status;
    if (corelat_chase_start(job) == CORELAT_OK && abort_early)
        corelat_job_abort(&job->head);
    status = corelat_job_run(&job->head, grace_ns);
    if (home_node)
        *home_node = job->p.place.query_err ? 0 : job->p.place.home_node;
    corelat_job_release(&job->head);
    return status;
}

static void chase_and_placement(void)
{
    static const int chain[8] = {0, 2, 4, 6, 1, 3, 5, 7}, bad[8] = {0, 1, 2, 4, 3, 5, 6, 7};
    corelat_place node0 = {.bind = 1, .node = 0}, by_owner = {.toucher = CORELAT_TOUCH_RESPONDER};
    int home = -1;
    EXPECT_STATUS(run_chase(CORELAT_CHASE_CLEAN, 0, ok_wait, 0, chain, NULL, NULL), CORELAT_OK);
    EXPECT_STATUS(run_chase(CORELAT_CHASE_MODIFIED, 0, ok_wait, 0, chain, &node0, &home), CORELAT_OK);
    EXPECT(home == 0); /* node 0 exists everywhere; an unverifiable query (EPERM) counts as 0 too */
    EXPECT_STATUS(run_chase(CORELAT_CHASE_MODIFIED, 0, ok_wait, 0, chain, &by_owner, NULL), CORELAT_OK);
    EXPECT_STATUS(run_chase(CORELAT_CHASE_CLEAN, 1, 0.05, 0, chain, NULL, NULL), CORELAT_ETIMEOUT);
    EXPECT_STATUS(run_chase(CORELAT_CHASE_MODIFIED, 1, 10.0, 1, chain, NULL, NULL), CORELAT_EABORT);
    EXPECT_STATUS(run_chase(CORELAT_CHASE_CLEAN, 0, 1.0, 0, bad, NULL, NULL), CORELAT_EINVAL);
    /* A third CPU (here CPU 1, sharing it with the responder) first-touches the ping-pong page. */
    corelat_pp_params p = pp(CORELAT_PP_CAS, 0, 1, ok_wait);
    p.samples = 2;
    p.place.toucher = CORELAT_TOUCH_THIRD;
    p.place.cpu = 1;
    EXPECT_STATUS(run_pp(&p, 0, NULL, NULL), CORELAT_OK);
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The whole process stopped (Ctrl-Z, SIGSTOP) for two and a half time-outs in mid-run, then
 * continued: no partner is to blame, so neither a thread's time-out nor the caller's watchdog (its
 * short grace here) may end the run. A child process runs the job; this one stops and continues it.
 * The time-out is one no scheduler delay comes near (see ok_wait): with 0.05 s, a partner merely not
 * scheduled for 50 ms on a loaded machine timed out, which is a starved partner, not this check. */
static void stopped_process(int slow)
{
    double timeout_s = slow ? 2.0 : 1.0, stop_s = 2.5 * timeout_s;
    int ready[2];
    if (pipe(ready) != 0) {
        EXPECT(!"pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        corelat_pp_params p = pp(CORELAT_PP_RW, 0, 1, timeout_s);
        p.round_trips = 1000;
        p.samples = 1000000;                            /* minutes: the budget ends it */
        p.budget_ns = (uint64_t)((stop_s + 1.0) * 1e9); /* still running after the stop */
        int status;
        corelat_pp_job *job = corelat_pp_new(&p, &status);
        if (!job || corelat_pp_start(job) != CORELAT_OK)
            _exit(100);
        if (write(ready[1], "x", 1) != 1)
            _exit(101);
        status = corelat_job_run(&job->head, watchdog_grace_ns);
        _exit(status);
    }
    close(ready[1]);
    char c;
    EXPECT(pid > 0 && read(ready[0], &c, 1) == 1);
    close(ready[0]);
    if (pid <= 0)
        return;
    sleep_s(0.1);
    kill(pid, SIGSTOP);
    sleep_s(stop_s);
    kill(pid, SIGCONT);
    int ws = 0;
    EXPECT(waitpid(pid, &ws, 0) == pid);
    EXPECT_STATUS(WIFEXITED(ws) ? WEXITSTATUS(ws) : 200, CORELAT_OK);
}

/* corelat_timer_init from other threads while a job's threads read the active timer, as the binding
 * allows (called from a second Python thread, it calibrates with the GIL released): the kind is read and
 * written atomically (make tsan), two inits take turns, and the job completes. Then a fork while a
 * thread calibrates: the child's own init returns (the fork waited for the lock, not copied it held). */
static void *reinit_timer(void *arg)
{
    corelat_timer_info info;
    for (int i = 0; i < 3; i++)
        EXPECT(corelat_timer_init(*(const int *)arg, 2000000, &info) == 0);
    return NULL;
}

/* Calibrates until told to stop, so that it is calibrating when the process forks. A thread that had
 * already ended, not yet joined, is one the child never joins: TSan reports it as leaked there and
 * fails the child (seen in CI when a loaded machine let three calibrations end before the fork). */
static atomic_int stop_reinit;

static void *reinit_until_stopped(void *arg)
{
    corelat_timer_info info;
    while (!atomic_load(&stop_reinit))
        EXPECT(corelat_timer_init(*(const int *)arg, 2000000, &info) == 0);
    return NULL;
}

static void timer_init_while_measuring(int kind)
{
    corelat_pp_params p = pp(CORELAT_PP_RW, 0, 1, ok_wait);
    p.samples = 200;
    int status;
    corelat_pp_job *job = corelat_pp_new(&p, &status);
    EXPECT(job != NULL);
    if (!job)
        return;
    pthread_t t[2];
    EXPECT_STATUS(corelat_pp_start(job), CORELAT_OK);
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, reinit_timer, &kind) == 0);
    EXPECT_STATUS(corelat_job_run(&job->head, grace_ns), CORELAT_OK);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    corelat_job_release(&job->head);
    corelat_timer_info now;
    EXPECT(corelat_timer_current(&now) == 0 && now.kind == kind);

    atomic_store(&stop_reinit, 0);
    pthread_create(&t[0], NULL, reinit_until_stopped, &kind);
    sleep_s(0.002);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(corelat_timer_init(kind, 1000000, &now) == 0 ? 0 : 1);
    int ws = -1;
    for (int i = 0; i < 2000 && pid > 0 && waitpid(pid, &ws, WNOHANG) == 0; i++)
        sleep_s(0.005);
    if (pid > 0 && ws == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &ws, 0);
    }
    EXPECT(pid > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    atomic_store(&stop_reinit, 1);
    pthread_join(t[0], NULL);
}

int main(void)
{
    corelat_timer_info info;
    if (corelat_timer_init(CORELAT_TIMER_HW, 10000000, &info) != 0)
        corelat_timer_init(CORELAT_TIMER_CLOCK, 10000000, &info);
    /* Under valgrind or qemu threads run slowly or take turns: a longer grace for the watchdog's check. */
    const char *slow = getenv("CORELAT_SELFTEST_SLOW");
    if (slow)
        watchdog_grace_ns = 1000000000u;
    EXPECT(info.resolution >= 1 && info.hist_len >= 1 && info.overhead >= 0);
    /* The step from back-to-back deltas: a stepping AMD counter (24.45 ticks: reads in one step
     * differ by 0), the same with reads longer than a step, a tick counter, and an outlier. */
    const uint64_t amd[] = {0, 0, 0, 0, 24, 24, 25, 25, 49, 2000};
    const uint64_t amd_slow[] = {48, 48, 49, 49, 73, 73, 74, 97, 98, 98};
    const uint64_t ticks[] = {26, 27, 27, 28, 28, 28, 29, 30, 30, 31};
    /* A 26-tick counter with a tick of jitter (the report of issue 23): 1, 25 and mostly 26. */
    const uint64_t jitter[] = {1, 1, 25, 26, 26, 26, 26, 26, 26, 26};
    EXPECT(corelat_timer_step(amd, 10) == 24);
    EXPECT(corelat_timer_step(amd_slow, 10) == 25); /* clusters at 48, 73 and 98 */
    EXPECT(corelat_timer_step(ticks, 10) == 1);
    EXPECT(corelat_timer_step(jitter, 10) == 26);
    for (int code = 0; code < CORELAT_STATUS_COUNT; code++)
        EXPECT(corelat_status_names[code] != NULL);
    member_lines();

    EXPECT_STATUS(pp_status(CORELAT_PP_CAS, 0, 1, 0, ok_wait, 0), CORELAT_OK);
    EXPECT_STATUS(pp_status(CORELAT_PP_RW, 1, 0, 0, ok_wait, 0), CORELAT_OK);
    EXPECT_STATUS(pp_status(CORELAT_PP_CAS, 0, 1, 1, 0.05, 0), CORELAT_ETIMEOUT);
    EXPECT_STATUS(pp_status(CORELAT_PP_RW, 0, 1, 1, 10.0, 1), CORELAT_EABORT);
    EXPECT_STATUS(pp_status(CORELAT_PP_CAS, 0, 4095, 0, 1.0, 0), CORELAT_EPIN);
    EXPECT_STATUS(pp_status(CORELAT_PP_CAS, 0, 1500, 0, 1.0, 0), CORELAT_EPIN); /* above CPU_SETSIZE: clean */
    EXPECT_STATUS(pp_status(7, 0, 1, 0, 1.0, 0), CORELAT_EINVAL);

    /* Single round trips with no warm-up: every sample is a real hand-off (the responder cannot
     * answer before the initiator unparks the flag), so the protocol must still complete. */
    for (int kernel = CORELAT_PP_CAS; kernel <= CORELAT_PP_RW; kernel++) {
        corelat_pp_params p = pp(kernel, 0, 1, ok_wait);
        p.round_trips = 1;
        p.warmup = 0;
        EXPECT_STATUS(run_pp(&p, 0, NULL, NULL), CORELAT_OK);
    }

    /* A budget ends a long chunk early, without error, with the samples taken so far. */
    corelat_pp_params b = pp(CORELAT_PP_RW, 0, 1, ok_wait);
    b.round_trips = 1000;
    b.samples = 1000000;
    b.budget_ns = 20000000;
    int64_t kept = -1;
    EXPECT_STATUS(run_pp(&b, 0, &kept, NULL), CORELAT_OK);
    EXPECT(kept >= 1 && kept < b.samples);

    int64_t ab, ba, ab2, ba2;
    /* An offset far beyond any latency, even under valgrind: b's clock ahead makes a->b look
     * slower and b->a faster, deterministically (a 1 ms offset need not dominate there). */
    const int64_t skew = 1000000000000ll;
    EXPECT_STATUS(run_oneway(0, ok_wait, 0, &ab, &ba), CORELAT_OK);
    EXPECT_STATUS(run_oneway(0, ok_wait, skew, &ab2, &ba2), CORELAT_OK);
    EXPECT(ab2 > ab && ba2 < ba);
    EXPECT(ab2 - skew < skew / 2 && ba2 + skew > -skew / 2);
    EXPECT_STATUS(run_oneway(1, 0.05, 0, &ab, &ba), CORELAT_ETIMEOUT);
    EXPECT(run_locks(slow ? 0.05 : 0.01, &info, ONE_GROUP) == 0);
    EXPECT(run_locks(slow ? 0.05 : 0.01, &info, TWO_GROUPS) == 0);
    EXPECT(run_locks(slow ? 0.05 : 0.01, &info, SPREAD) == 0);
    lock_checks_bite(&info);
    feature_tables();
    stacks();

    chase_and_placement();
    frozen_partner(slow != NULL);
    frozen_partner_late_caller(slow != NULL);
    moved_partner(20000000);
    moved_partner(0);
    moved_busy(&info);
    timer_init_while_measuring(info.kind);
    EXPECT(corelat_jobs_alive() == 0);
    stopped_process(slow != NULL);

    printf("selftest: %s (timer %s, %.1f MHz, step %.0f ticks; cas: %s)\n", failures ? "FAILED" : "ok",
           info.name, info.ticks_per_ns * 1e3, info.resolution, corelat_pp_cas_impl());
    return failures ? 1 : 0;
}
