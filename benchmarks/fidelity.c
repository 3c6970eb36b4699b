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
 * MEDIAN" each (benchmarks/line_offset.py). `pages` (extra last arguments NPAGES [OFFSET]) maps NPAGES
 * pages once and runs the bare CAS loop with its flag at OFFSET (default 0) of each, ROUNDS times in a rotated order,
 * in this one process: "pageI MIN MEDIAN pfn=P" (benchmarks/line_offset.py). With CORELAT_FIDELITY_PFN
 * set, the other modes' lines end in "pfn=P" too: the guest-physical page frame of the CAS flag
 * (/proc/self/pagemap; 0 where it is not readable, without CAP_SYS_ADMIN). `nvloop` runs, on one page
 * mapped once, the bare CAS loop, the bare loop with a stack store per failed attempt ("bare+store")
 * and core-to-core-latency's bench 1 as ../shared/peers/nviennot_port.c has it (its own start, its
 * protocol, a 1-byte flag: "nv1"; a 4-byte flag: "nv4"), in an order rotated every round
 * (benchmarks/line_offset.py): the peer's loop in this process, on the bare loop's line. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pingpong.h"
#include "team.h"
#include "timer.h"

static int kernel, cpu_a, cpu_b;
static void report(const char *who, uint64_t *ticks);
static size_t flag_offset; /* the CAS flag's offset in its page (the `offsets` mode); 0 otherwise */
static char *given_page;    /* the `pages` mode: the page bare_run uses instead of a fresh one */
static int show_pfn;        /* CORELAT_FIDELITY_PFN: end each line with the flag's page frame */
static uint64_t last_pfn;   /* the page frame of the last run's flag */

/* The guest-physical page frame of addr: 0 where /proc/self/pagemap does not give it. */
static uint64_t pfn_of(const void *addr)
{
    FILE *f = fopen("/proc/self/pagemap", "rb");
    uint64_t entry = 0;
    if (!f)
        return 0;
    if (fseek(f, (long)((uintptr_t)addr / 4096 * 8), SEEK_SET) != 0 || fread(&entry, 8, 1, f) != 1)
        entry = 0;
    fclose(f);
    return entry >> 63 ? entry & ((1ull << 55) - 1) : 0;
}
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

/* The bare loops, and with `store` the same with a stack store per failed CAS attempt (what
 * nviennot_port.c's `bool e` costs there as gcc builds it): inlined with a constant, so the bare
 * loop itself has no test in it (objdump: mov, lock cmpxchg, jne). */
static inline __attribute__((always_inline)) void *responder_impl(void *arg, const int store)
{
    bare_pair *p = arg;
    pin(cpu_b);
    atomic_fetch_add(&p->ready, 1);
    while (atomic_load(&p->ready) < 2)
        ;
    int64_t total = (samples + 1) * round_trips; /* one warm-up sample */
    if (kernel == CORELAT_PP_CAS) {
        atomic_uint *flag = (atomic_uint *)(p->buf + flag_offset);
        volatile unsigned char slot;
        for (int64_t r = 0; r < total; r++) {
            unsigned e;
            do {
                e = 1;
                if (store)
                    slot = 0;
            } while (!atomic_compare_exchange_strong_explicit(flag, &e, 0u, memory_order_relaxed,
                                                              memory_order_relaxed));
        }
        if (store)
            (void)slot;
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

static void *bare_responder(void *arg) { return responder_impl(arg, 0); }
static void *bare_store_responder(void *arg) { return responder_impl(arg, 1); }

static inline __attribute__((always_inline)) void run_impl(uint64_t *ticks, const int store)
{
    bare_pair p = {.ticks = ticks};
    atomic_init(&p.ready, 0);
    pthread_t t;
    pin(cpu_a);
    p.buf = given_page ? given_page : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p.buf, 0, 4096);
    atomic_store((atomic_uint *)(p.buf + flag_offset), 2u); /* parked */
    last_pfn = pfn_of(p.buf);
    pthread_create(&t, NULL, store ? bare_store_responder : bare_responder, &p);
    atomic_fetch_add(&p.ready, 1);
    while (atomic_load(&p.ready) < 2)
        ;
    uint64_t seq = 0;
    for (int64_t k = 0; k <= samples; k++) {
        uint64_t t0 = corelat_ticks();
        if (kernel == CORELAT_PP_CAS) {
            atomic_uint *flag = (atomic_uint *)(p.buf + flag_offset);
            volatile unsigned char slot;
            unsigned e;
            atomic_store_explicit(flag, 1u, memory_order_relaxed);
            for (int64_t r = 1; r < round_trips; r++) {
                do {
                    e = 0;
                    if (store)
                        slot = 1;
                } while (!atomic_compare_exchange_strong_explicit(flag, &e, 1u, memory_order_relaxed,
                                                                  memory_order_relaxed));
            }
            if (store)
                (void)slot;
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
    if (!given_page)
        munmap(p.buf, 4096);
}

static void bare_run(uint64_t *ticks) { run_impl(ticks, 0); }
static void bare_store_run(uint64_t *ticks) { run_impl(ticks, 1); }

/* ---- nvloop: nviennot_port.c's bench 1, in this process, on a given line ---- */

typedef struct {
    char *buf;
    int wide; /* 4-byte flag, else nviennot's 1-byte atomic_bool */
    pthread_barrier_t barrier;
} nv_pair;

static void *nv_pong(void *arg)
{
    nv_pair *p = arg;
    pin(cpu_b);
    pthread_barrier_wait(&p->barrier);
    unsigned long n = (unsigned long)round_trips * (unsigned long)(samples + 1);
    if (p->wide) {
        atomic_uint *flag = (atomic_uint *)p->buf;
        for (unsigned long k = 0; k < n; k++) {
            unsigned e;
            do {
                e = 0;
            } while (!atomic_compare_exchange_strong_explicit(flag, &e, 1u, memory_order_relaxed,
                                                              memory_order_relaxed));
        }
    } else {
        atomic_bool *flag = (atomic_bool *)p->buf;
        for (unsigned long k = 0; k < n; k++) {
            bool e;
            do {
                e = 0;
            } while (!atomic_compare_exchange_strong_explicit(flag, &e, 1, memory_order_relaxed,
                                                              memory_order_relaxed));
        }
    }
    return NULL;
}

/* Its start (the partner created first, a barrier, the main thread pinned after), its protocol (the
 * partner runs free across samples, no parked flag) and its loops, timed with corelat_ticks. */
static void nv_run(uint64_t *ticks, char *page, int wide)
{
    nv_pair p = {.buf = page, .wide = wide};
    memset(page, 0, 128); /* the flag's line pair: page may be inside a page */
    pthread_barrier_init(&p.barrier, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, nv_pong, &p);
    pin(cpu_a);
    pthread_barrier_wait(&p.barrier);
    for (int64_t s = 0; s <= samples; s++) {
        uint64_t t0 = corelat_ticks();
        if (wide) {
            atomic_uint *flag = (atomic_uint *)page;
            for (int64_t k = 0; k < round_trips; k++) {
                unsigned e;
                do {
                    e = 1;
                } while (!atomic_compare_exchange_strong_explicit(flag, &e, 0u, memory_order_relaxed,
                                                                  memory_order_relaxed));
            }
        } else {
            atomic_bool *flag = (atomic_bool *)page;
            for (int64_t k = 0; k < round_trips; k++) {
                bool e;
                do {
                    e = 1;
                } while (!atomic_compare_exchange_strong_explicit(flag, &e, 0, memory_order_relaxed,
                                                                  memory_order_relaxed));
            }
        }
        uint64_t t1 = corelat_ticks();
        if (s > 0)
            ticks[s - 1] = t1 - t0;
    }
    pthread_join(t, NULL);
    pthread_barrier_destroy(&p.barrier);
}

/* c2clat's -w protocol (../shared/peers/c2clat.cpp), in this process: per sample, a handshake on a
 * second line 64 bytes on, then ROUND_TRIPS round trips of a counter each side compare-exchanges in
 * turn (-1 -> 0 -> 1 ...), and a wait until the partner's last increment is seen; timed with
 * corelat_ticks where c2clat reads steady_clock. */
typedef struct {
    atomic_int *seq1, *seq2;
} c2_pair;

static void *c2_responder(void *arg)
{
    c2_pair *p = arg;
    pin(cpu_b);
    for (int64_t m = 0; m <= samples; m++) {
        while (atomic_load_explicit(p->seq2, memory_order_acquire) != 0)
            ;
        atomic_store_explicit(p->seq2, 1, memory_order_release);
        for (int n = 0; n < (int)round_trips; n++) {
            int cmp;
            do
                cmp = 2 * n;
            while (!atomic_compare_exchange_strong(p->seq1, &cmp, cmp + 1));
        }
    }
    return NULL;
}

static void c2_run(uint64_t *ticks, char *page)
{
    c2_pair p = {(atomic_int *)page, (atomic_int *)(page + 64)};
    atomic_store(p.seq1, -1);
    atomic_store(p.seq2, -1);
    pthread_t t;
    pin(cpu_a);
    pthread_create(&t, NULL, c2_responder, &p);
    for (int64_t m = 0; m <= samples; m++) {
        atomic_store(p.seq1, -1);
        atomic_store(p.seq2, -1);
        atomic_store_explicit(p.seq2, 0, memory_order_release);
        while (atomic_load_explicit(p.seq2, memory_order_acquire) == 0)
            ;
        atomic_store_explicit(p.seq2, -1, memory_order_release);
        uint64_t t0 = corelat_ticks();
        for (int n = 0; n < (int)round_trips; n++) {
            int cmp;
            do
                cmp = 2 * n - 1;
            while (!atomic_compare_exchange_strong(p.seq1, &cmp, cmp + 1));
        }
        while (atomic_load_explicit(p.seq1, memory_order_acquire) != 2 * (int)round_trips - 1)
            ;
        uint64_t t1 = corelat_ticks();
        if (m > 0)
            ticks[m - 1] = t1 - t0;
    }
    pthread_join(t, NULL);
}

/* a page in .bss, as nviennot_port.c's flag is (at page offset 640 there, `nm`) */
static _Alignas(4096) char bss_page[4096];
#define BSS_OFFSET 640

static void nv_loop(uint64_t *ticks, int rounds)
{
    const char *names[] = {"bare", "bare+store", "nv1", "nv4", "bare@bss", "nv4@bss", "c2w"};
    const int n = 7;
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            int which = (i + r) % n;
            char *where = which < 4 || which == 6 ? page : bss_page;
            given_page = where;
            flag_offset = which == 4 ? BSS_OFFSET : 0;
            if (which == 0 || which == 4)
                bare_run(ticks);
            else if (which == 1)
                bare_store_run(ticks);
            else if (which == 6)
                c2_run(ticks, where);
            else
                nv_run(ticks, which == 5 ? where + BSS_OFFSET : where, which != 2);
            last_pfn = pfn_of(where);
            report(names[which], ticks);
        }
        fflush(stdout);
    }
    given_page = NULL;
    flag_offset = 0;
    munmap(page, 4096);
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
    last_pfn = pfn_of(job->page.buf);
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
    printf("%s %.3f %.3f", who, (double)ticks[0] * scale, (double)ticks[samples / 2] * scale);
    if (show_pfn)
        printf(" pfn=%llu", (unsigned long long)last_pfn);
    printf("\n");
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
    int pages = (argc == 8 || argc == 9) && strcmp(argv[1], "pages") == 0;
    int nvloop = argc == 7 && strcmp(argv[1], "nvloop") == 0;
    if ((argc != 7 && !pages) ||
        (strcmp(argv[1], "cas") && strcmp(argv[1], "rw") && !probe && !rwpoll && !offsets && !pages && !nvloop)) {
        fprintf(stderr, "usage: %s cas|rw|probe|rwpoll|offsets|nvloop CPU_A CPU_B ROUND_TRIPS SAMPLES ROUNDS|STEP\n"
                        "       %s pages CPU_A CPU_B ROUND_TRIPS SAMPLES ROUNDS NPAGES [OFFSET]\n",
                argv[0], argv[0]);
        return 2;
    }
    show_pfn = pages || getenv("CORELAT_FIDELITY_PFN") != NULL;
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
    if (pages) { /* the same NPAGES pages, every round: does the flag's physical page decide? */
        int n = atoi(argv[7]);
        flag_offset = argc == 9 ? (size_t)atoi(argv[8]) / 64 * 64 % 4096 : 0;
        char *area = n >= 1 && n <= 4096 ? mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE,
                                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                         : MAP_FAILED;
        if (area == MAP_FAILED)
            return 2;
        memset(area, 0, (size_t)n * 4096);
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < n; i++) {
                int which = (i + r) % n;
                given_page = area + (size_t)which * 4096;
                bare_run(ticks);
                char who[32];
                snprintf(who, sizeof who, "page%d", which);
                report(who, ticks);
            }
            fflush(stdout);
        }
        munmap(area, (size_t)n * 4096);
        free(ticks);
        return 0;
    }
    if (nvloop) {
        nv_loop(ticks, rounds);
        free(ticks);
        return 0;
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
