/* Plain-C self-test of the kernels, without Python: for ASan/UBSan and valgrind runs (see Makefile).
 * Exercises the success, time-out, abort and bad-CPU paths of the ping-pong kernels. */
#include <stdio.h>
#include <stdlib.h>

#include "locks.h"
#include "oneway.h"
#include "pingpong.h"
#include "spin.h"
#include "team.h"
#include "timer.h"

static int run(int kernel, int a, int b, int stall, double timeout_s, int abort_early)
{
    enum { SAMPLES = 20 };
    uint64_t ticks[SAMPLES];
    uint8_t migrated[SAMPLES];
    corelat_pp_job job = {
        .kernel = kernel, .cpu_a = a, .cpu_b = b, .round_trips = 50, .samples = SAMPLES, .warmup = 2,
        .timeout_ns = (uint64_t)(timeout_s * 1e9), .stall_responder = stall, .ticks = ticks,
        .migrated = migrated,
    };
    corelat_team team;
    if (corelat_pp_start(&job, &team) == CORELAT_OK) {
        if (abort_early)
            corelat_team_abort(&team);
        while (!corelat_team_wait(&team, 100))
            ;
    }
    corelat_pp_finish(&job, &team);
    return job.status;
}

/* One-way messages both ways; with a skewed "clock" on b the bracket must move by the skew. */
static int run_oneway(int stall, double timeout_s, int64_t offset, int64_t *min_ab, int64_t *min_ba)
{
    enum { SAMPLES = 10 };
    int64_t sum_ab[SAMPLES], sum_ba[SAMPLES];
    uint8_t migrated[SAMPLES];
    corelat_ow_job job = {
        .cpu_a = 0, .cpu_b = 1, .messages = 50, .samples = SAMPLES, .warmup = 1,
        .timeout_ns = (uint64_t)(timeout_s * 1e9), .stall_responder = stall, .offset_ticks = offset,
        .sum_ab = sum_ab, .sum_ba = sum_ba, .migrated = migrated,
    };
    corelat_team team;
    if (corelat_ow_start(&job, &team) == CORELAT_OK)
        while (!corelat_team_wait(&team, 100))
            ;
    corelat_ow_finish(&job, &team);
    *min_ab = job.min_ab;
    *min_ba = job.min_ba;
    return job.status;
}

/* Every lock test in shared mode on CPUs 0 and 1: the protected counter equals the calls made. */
static int run_locks(double seconds, double ticks_per_ns)
{
    enum { N = 2, T = CORELAT_LK_NONE }; /* every public test; lock-none is broken on purpose */
    int cpus[N] = {0, 1}, tests[T];
    uint64_t calls[T * N], ticks[T * N], sermin[T * N], sercalls[T * N], counter[T];
    for (int t = 0; t < T; t++)
        tests[t] = t;
    uint64_t phase = (uint64_t)(seconds * 1e9 * ticks_per_ns);
    corelat_lock_job job = {
        .n = N, .cpus = cpus, .ntests = T, .tests = tests, .shared = 1, .serial_ticks = phase / 4,
        .duration_ticks = phase, .lead_ticks = phase / 10, .timeout_ns = 60000000000ull,
        .calls = calls, .ticks = ticks, .sermin = sermin, .sercalls = sercalls, .counter = counter,
    };
    corelat_team team;
    if (corelat_locks_start(&job, &team) == CORELAT_OK)
        while (!corelat_team_wait(&team, 100))
            ;
    corelat_locks_finish(&job, &team);
    if (job.status != CORELAT_OK)
        return -1;
    int bad = 0;
    for (int t = CORELAT_LK_CAS_SPIN; t < T; t++) {
        uint64_t sum = 0;
        for (int i = 0; i < N; i++)
            sum += calls[t * N + i] + sercalls[t * N + i];
        if (sum != counter[t]) {
            fprintf(stderr, "%s: counter %llu != calls %llu\n", corelat_lock_names[t],
                    (unsigned long long)counter[t], (unsigned long long)sum);
            bad++;
        }
    }
    return bad;
}

int main(void)
{
    corelat_timer_info info;
    if (corelat_timer_init(CORELAT_TIMER_HW, 10000000, &info) != 0)
        corelat_timer_init(CORELAT_TIMER_CLOCK, 10000000, &info);
    /* Under valgrind threads take turns, so a partner answers slowly: allow a longer wait. */
    const char *slow = getenv("CORELAT_SELFTEST_SLOW");
    double ok_wait = slow ? 60.0 : 1.0;
    int failures = 0;
#define EXPECT(cond)                                                                                       \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                               \
            failures++;                                                                                    \
        }                                                                                                  \
    } while (0)
    EXPECT(run(CORELAT_PP_CAS, 0, 1, 0, ok_wait, 0) == CORELAT_OK);
    EXPECT(run(CORELAT_PP_RW, 1, 0, 0, ok_wait, 0) == CORELAT_OK);
    EXPECT(run(CORELAT_PP_CAS, 0, 1, 1, 0.05, 0) == CORELAT_ETIMEOUT);
    EXPECT(run(CORELAT_PP_RW, 0, 1, 1, 10.0, 1) == CORELAT_EABORT);
    EXPECT(run(CORELAT_PP_CAS, 0, 4095, 0, 1.0, 0) == CORELAT_EPIN);
    EXPECT(run(7, 0, 1, 0, 1.0, 0) == CORELAT_EINVAL);
    int64_t ab, ba, ab2, ba2;
    EXPECT(run_oneway(0, ok_wait, 0, &ab, &ba) == CORELAT_OK);
    EXPECT(run_oneway(0, ok_wait, 1000000, &ab2, &ba2) == CORELAT_OK);
    EXPECT(ab2 > ab && ba2 < ba); /* b's clock ahead: a->b looks slower, b->a faster */
    EXPECT(run_oneway(1, 0.05, 0, &ab, &ba) == CORELAT_ETIMEOUT);
    EXPECT(run_locks(slow ? 0.05 : 0.01, info.ticks_per_ns) == 0);
    printf("selftest: %s (timer %s, %.1f MHz)\n", failures ? "FAILED" : "ok", info.name,
           info.ticks_per_ns * 1e3);
    return failures ? 1 : 0;
}
