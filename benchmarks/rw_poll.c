/* benchmarks/rw_poll.c: does the rate at which the waiting side polls change the load/store (rw)
 * ping-pong's reading? The bare rw loop of benchmarks/fidelity.c with 0, 2, 4, 8 and 16 `nop`s
 * after each failed poll, and corelat's rw kernel, interleaved on one pair. Built and run by
 * benchmarks/rw_poll.py.
 *
 *   rw_poll CPU_A CPU_B ROUND_TRIPS SAMPLES ROUNDS
 *
 * prints per round and loop: "NAME MIN_NS MEDIAN_NS" (one-way = round trip / 2). */
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

static int cpu_a, cpu_b;
static int64_t round_trips, samples;
static double ticks_per_ns;

typedef struct {
    char *buf;
    atomic_int ready;
} pair;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void meet(atomic_int *ready)
{
    atomic_fetch_add(ready, 1);
    while (atomic_load(ready) < 2)
        ;
}

/* The bare loop with PAD nops after each failed poll, on both sides (the lines at 0 and 256, as
 * corelat's). */
#define BARE_RW(PAD)                                                                                         \
    static void *responder_##PAD(void *arg)                                                                  \
    {                                                                                                        \
        pair *p = arg;                                                                                       \
        pin(cpu_b);                                                                                          \
        meet(&p->ready);                                                                                     \
        atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)p->buf,                                            \
                             *b = (atomic_uint_fast64_t *)(p->buf + 256);                                    \
        for (uint64_t seq = 1; seq <= (uint64_t)((samples + 1) * round_trips); seq++) {                      \
            while (atomic_load_explicit(a, memory_order_acquire) != seq)                                     \
                __asm__ volatile(".rept " #PAD "\n\tnop\n\t.endr");                                          \
            atomic_store_explicit(b, seq, memory_order_release);                                             \
        }                                                                                                    \
        return NULL;                                                                                         \
    }                                                                                                        \
    static void run_##PAD(uint64_t *ticks)                                                                   \
    {                                                                                                        \
        pair p = {0};                                                                                        \
        pthread_t t;                                                                                         \
        pin(cpu_a);                                                                                          \
        p.buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);                \
        memset(p.buf, 0, 4096);                                                                              \
        pthread_create(&t, NULL, responder_##PAD, &p);                                                       \
        meet(&p.ready);                                                                                      \
        atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)p.buf, *b = (atomic_uint_fast64_t *)(p.buf + 256); \
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

BARE_RW(0)
BARE_RW(2)
BARE_RW(4)
BARE_RW(8)
BARE_RW(16)

static int corelat_rw(uint64_t *ticks)
{
    corelat_pp_params p = {.kernel = CORELAT_PP_RW,
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

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s CPU_A CPU_B ROUND_TRIPS SAMPLES ROUNDS\n", argv[0]);
        return 2;
    }
    cpu_a = atoi(argv[1]);
    cpu_b = atoi(argv[2]);
    round_trips = atoll(argv[3]);
    samples = atoll(argv[4]);
    int rounds = atoi(argv[5]);
    if (round_trips < 1 || samples < 1 || rounds < 1)
        return 2;
    corelat_timer_info info;
    if (corelat_timer_init(CORELAT_TIMER_HW, 30000000, &info) != 0)
        corelat_timer_init(CORELAT_TIMER_CLOCK, 30000000, &info);
    ticks_per_ns = info.ticks_per_ns;
    uint64_t *ticks = calloc((size_t)samples, sizeof *ticks);
    void (*bare[])(uint64_t *) = {run_0, run_2, run_4, run_8, run_16};
    const char *names[] = {"bare+0", "bare+2", "bare+4", "bare+8", "bare+16"};
    const int n = 6;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            int which = (i + r) % n; /* rotate who goes first: a drifting machine favours none */
            if (which == n - 1) {
                if (corelat_rw(ticks) != CORELAT_OK) {
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
    free(ticks);
    return 0;
}
