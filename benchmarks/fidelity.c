/* benchmarks/fidelity.c: corelat's ping-pong kernels against bare reference loops (the same
 * protocol: the same lines, orders and parked CAS flag, but no abort, time-out, heartbeat or CPU
 * checks at all), interleaved on one pair. Built and run by benchmarks/fidelity.py.
 *
 *   fidelity cas|rw|probe|rwpoll CPU_A CPU_B ROUND_TRIPS SAMPLES ROUNDS
 *
 * prints one line per round and implementation: "corelat|bare MIN_NS MEDIAN_NS" (one-way = round
 * trip / 2, per sample of ROUND_TRIPS round trips). `probe` runs the bare CAS loop once and prints
 * "probe MIN_NS MEDIAN_NS": fidelity.py brackets every tool run with it to label the vCPU placement.
 * `rwpoll` runs the bare rw loop with 0, 2, 4, 8 and 16 `nop`s after each failed poll ("bare+N"),
 * the bare loop with its two lines 64 bytes apart as c2clat has them ("bare+0@64") and corelat's rw
 * kernel, interleaved (benchmarks/rw_poll.py). `offsets` (the last argument a STEP) runs the bare CAS loop
 * with its flag at each multiple of STEP in a fresh page, in a rotated order, one line "offsetN MIN
 * MEDIAN" each (benchmarks/line_offset.py). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pingpong.h"
#include "team.h"
#include "timer.h"

static int kernel, cpu_a, cpu_b;
static size_t flag_offset; /* the CAS flag's offset in its page (the `offsets` mode); 0 otherwise */
static int64_t round_trips, samples;
static double ticks_per_ns;

/* ---- bare loops: nothing but the protocol ---- */

typedef struct {
    char *buf;
    uint64_t *ticks;
    atomic_int ready;
} bare_pair;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *bare_responder(void *arg)
{
    bare_pair *p = arg;
    pin(cpu_b);
    atomic_fetch_add(&p->ready, 1);
    while (atomic_load(&p->ready) < 2)
        ;
    int64_t total = (samples + 1) * round_trips; /* one warm-up sample */
    if (kernel == CORELAT_PP_CAS) {
        atomic_uint *flag = (atomic_uint *)(p->buf + flag_offset);
        for (int64_t r = 0; r < total; r++) {
            unsigned e;
            do
                e = 1;
            while (!atomic_compare_exchange_strong_explicit(flag, &e, 0u, memory_order_relaxed,
                                                            memory_order_relaxed));
        }
    } else {
        atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)p->buf, *b = (atomic_uint_fast64_t *)(p->buf + 256);
        for (uint64_t seq = 1; seq <= (uint64_t)total; seq++) {
            while (atomic_load_explicit(a, memory_order_acquire) != seq)
                ;
            atomic_store_explicit(b, seq, memory_order_release);
        }
    }
    return NULL;
}

static void bare_run(uint64_t *ticks)
{
    bare_pair p = {.ticks = ticks};
    atomic_init(&p.ready, 0);
    pthread_t t;
    pin(cpu_a);
    p.buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p.buf, 0, 4096);
    atomic_store((atomic_uint *)(p.buf + flag_offset), 2u); /* parked */
    pthread_create(&t, NULL, bare_responder, &p);
    atomic_fetch_add(&p.ready, 1);
    while (atomic_load(&p.ready) < 2)
        ;
    uint64_t seq = 0;
    for (int64_t k = 0; k <= samples; k++) {
        uint64_t t0 = corelat_ticks();
        if (kernel == CORELAT_PP_CAS) {
            atomic_uint *flag = (atomic_uint *)(p.buf + flag_offset);
            unsigned e;
            atomic_store_explicit(flag, 1u, memory_order_relaxed);
            for (int64_t r = 1; r < round_trips; r++) {
                do
                    e = 0;
                while (!atomic_compare_exchange_strong_explicit(flag, &e, 1u, memory_order_relaxed,
                                                                memory_order_relaxed));
            }
            do
                e = 0;
            while (!atomic_compare_exchange_strong_explicit(flag, &e, 2u, memory_order_relaxed,
                                                            memory_order_relaxed));
        } else {
            atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)p.buf,
                                 *b = (atomic_uint_fast64_t *)(p.buf + 256);
            for (int64_t r = 0; r < round_trips; r++) {
                seq++;
                atomic_store_explicit(a, seq, memory_order_release);
                while (atomic_load_explicit(b, memory_order_acquire) != seq)
                    ;
            }
        }
        uint64_t t1 = corelat_ticks();
        if (k > 0)
            ticks[k - 1] = t1 - t0;
    }
    pthread_join(t, NULL);
    munmap(p.buf, 4096);
}

/* ---- rwpoll: the bare rw loop with PAD nops after each failed poll (benchmarks/rw_poll.py) ---- */

/* The bare loop with PAD nops after each failed poll, on both sides, the lines at 0 and GAP (256 as
 * corelat's; 64 as c2clat's two adjacent `alignas(64)` variables, one 128-byte pair of lines). */
#define BARE_RW(PAD, GAP)                                                                                    \
    static void *responder_##PAD##_##GAP(void *arg)                                                          \
    {                                                                                                        \
        bare_pair *p = arg;                                                                                  \
        pin(cpu_b);                                                                                          \
        atomic_fetch_add(&p->ready, 1);                                                                      \
        while (atomic_load(&p->ready) < 2)                                                                   \
            ;                                                                                                \
        atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)p->buf,                                            \
                             *b = (atomic_uint_fast64_t *)(p->buf + GAP);                                    \
        for (uint64_t seq = 1; seq <= (uint64_t)((samples + 1) * round_trips); seq++) {                      \
            while (atomic_load_explicit(a, memory_order_acquire) != seq)                                     \
                __asm__ volatile(".rept " #PAD "\n\tnop\n\t.endr");                                          \
            atomic_store_explicit(b, seq, memory_order_release);                                             \
        }                                                                                                    \
        return NULL;                                                                                         \
    }                                                                                                        \
    static void run_##PAD##_##GAP(uint64_t *ticks)                                                           \
    {                                                                                                        \
        bare_pair p = {0};                                                                                   \
        pthread_t t;                                                                                         \
        pin(cpu_a);                                                                                          \
        p.buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);                \
        memset(p.buf, 0, 4096);                                                                              \
        pthread_create(&t, NULL, responder_##PAD##_##GAP, &p);                                               \
        atomic_fetch_add(&p.ready, 1);                                                                       \
        while (atomic_load(&p.ready) < 2)                                                                    \
            ;                                                                                                \
        atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)p.buf, *b = (atomic_uint_fast64_t *)(p.buf + GAP); \
        uint64_t seq = 0;                                                                                    \
        for (int64_t k = 0; k <= samples; k++) {                                                             \
            uint64_t t0 = corelat_ticks();                                                                   \
            for (int64_t r = 0; r < round_trips; r++) {                                                      \
                seq++;                                                                                       \
                atomic_store_explicit(a, seq, memory_order_release);                                         \
                while (atomic_load_explicit(b, memory_order_acquire) != seq)                                 \
                    __asm__ volatile(".rept " #PAD "\n\tnop\n\t.endr");                                      \
            }                                                                                                \
            uint64_t t1 = corelat_ticks();                                                                   \
            if (k > 0)                                                                                       \
                ticks[k - 1] = t1 - t0;                                                                      \
        }                                                                                                    \
        pthread_join(t, NULL);                                                                               \
        munmap(p.buf, 4096);                                                                                 \
    }

BARE_RW(0, 256)
BARE_RW(2, 256)
BARE_RW(4, 256)
BARE_RW(8, 256)
BARE_RW(16, 256)
BARE_RW(0, 64)

/* ---- corelat's kernel, through its own job API ---- */

static int corelat_run(uint64_t *ticks)
{
    corelat_pp_params p = {.kernel = kernel,
                           .cpu_a = cpu_a,
                           .cpu_b = cpu_b,
                           .round_trips = round_trips,
                           .samples = samples,
                           .warmup = 1,
                           .timeout_ns = 10000000000ull};
    int status;
    corelat_pp_job *job = corelat_pp_new(&p, &status);
    if (!job)
        return status;
    corelat_pp_start(job);
    status = corelat_job_run(&job->head, 1000000000ull);
    if (status == CORELAT_OK)
        memcpy(ticks, job->ticks, (size_t)samples * sizeof *ticks);
    corelat_job_release(&job->head);
    return status;
}

static int cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static void report(const char *who, uint64_t *ticks)
{
    qsort(ticks, (size_t)samples, sizeof *ticks, cmp);
    double scale = 1.0 / (ticks_per_ns * (double)round_trips * 2.0);
    printf("%s %.3f %.3f\n", who, (double)ticks[0] * scale, (double)ticks[samples / 2] * scale);
}

/* rwpoll: each bare+N loop and corelat's, in an order rotated every round */
static int rw_poll(uint64_t *ticks, int rounds)
{
    void (*bare[])(uint64_t *) = {run_0_256, run_2_256, run_4_256, run_8_256, run_16_256, run_0_64};
    const char *names[] = {"bare+0", "bare+2", "bare+4", "bare+8", "bare+16", "bare+0@64"};
    const int n = 7;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            int which = (i + r) % n;
            if (which == n - 1) {
                if (corelat_run(ticks) != CORELAT_OK) {
                    fprintf(stderr, "corelat kernel failed\n");
                    return 1;
                }
                report("corelat", ticks);
            } else {
                bare[which](ticks);
                report(names[which], ticks);
            }
        }
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int probe = argc == 7 && strcmp(argv[1], "probe") == 0;
    int rwpoll = argc == 7 && strcmp(argv[1], "rwpoll") == 0;
    int offsets = argc == 7 && strcmp(argv[1], "offsets") == 0;
    if (argc != 7 || (strcmp(argv[1], "cas") && strcmp(argv[1], "rw") && !probe && !rwpoll && !offsets)) {
        fprintf(stderr, "usage: %s cas|rw|probe|rwpoll|offsets CPU_A CPU_B ROUND_TRIPS SAMPLES ROUNDS|STEP\n",
                argv[0]);
        return 2;
    }
    kernel = strcmp(argv[1], "rw") == 0 || rwpoll ? CORELAT_PP_RW : CORELAT_PP_CAS;
    cpu_a = atoi(argv[2]);
    cpu_b = atoi(argv[3]);
    round_trips = atoll(argv[4]);
    samples = atoll(argv[5]);
    int rounds = atoi(argv[6]);
    if (round_trips < 1 || samples < 1 || rounds < 1)
        return 2;
    corelat_timer_info info;
    if (corelat_timer_init(CORELAT_TIMER_HW, 30000000, &info) != 0)
        corelat_timer_init(CORELAT_TIMER_CLOCK, 30000000, &info);
    ticks_per_ns = info.ticks_per_ns;
    uint64_t *ticks = calloc((size_t)samples, sizeof *ticks);
    if (probe) { /* the bare CAS loop alone: which placement the pair's vCPUs have now */
        bare_run(ticks);
        report("probe", ticks);
        free(ticks);
        return 0;
    }
    if (offsets) { /* the bare CAS loop with its flag at every multiple of STEP in a fresh page */
        int step = rounds, n = step >= 4 && step <= 4096 && 4096 % step == 0 ? 4096 / step : 0;
        int first = (int)(corelat_ticks() % (uint64_t)(n ? n : 1)); /* a rotated order */
        for (int i = 0; i < n; i++) {
            flag_offset = (size_t)(((i + first) % n) * step);
            bare_run(ticks);
            char who[32];
            snprintf(who, sizeof who, "offset%zu", flag_offset);
            report(who, ticks);
        }
        free(ticks);
        return n ? 0 : 2;
    }
    if (rwpoll) {
        int status = rw_poll(ticks, rounds);
        free(ticks);
        return status;
    }
    for (int r = 0; r < rounds; r++) {
        /* alternate who goes first: a drifting machine favours neither */
        for (int i = 0; i < 2; i++) {
            if ((r + i) % 2 == 0) {
                int status = corelat_run(ticks);
                if (status != CORELAT_OK) {
                    fprintf(stderr, "corelat kernel failed: status %d\n", status);
                    return 1;
                }
                report("corelat", ticks);
            } else {
                bare_run(ticks);
                report("bare", ticks);
            }
        }
        fflush(stdout);
    }
    free(ticks);
    return 0;
}
