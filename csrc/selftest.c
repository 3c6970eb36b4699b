/* Plain-C self-test of the kernels, without Python: for ASan/UBSan and valgrind runs (see Makefile).
 * Exercises the success, time-out, abort and bad-CPU paths of the ping-pong kernels. */
#include <stdio.h>
#include <stdlib.h>

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
    printf("selftest: %s (timer %s, %.1f MHz)\n", failures ? "FAILED" : "ok", info.name,
           info.ticks_per_ns * 1e3);
    return failures ? 1 : 0;
}
