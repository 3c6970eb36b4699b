#include "timer.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

atomic_int corelat_timer_kind_active = CORELAT_TIMER_CLOCK;

/* corelat_timer_init's turn: it guards the deltas buffer below and the (kind, calibration) pair. A fork
 * takes the lock first (pthread_atfork), so a child never inherits it held by a thread it does not have. */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static corelat_timer_info current;
static int have_current;

static void init_lock(void) { pthread_mutex_lock(&init_mu); }
static void init_unlock(void) { pthread_mutex_unlock(&init_mu); }
static void register_atfork(void) { pthread_atfork(init_lock, init_unlock, init_unlock); }

uint64_t corelat_clock_ns_cold(void) { return corelat_clock_ns(); }

int corelat_timer_hw_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1u; /* "Invariant TSC" */
#elif defined(__aarch64__)
    return 1; /* the generic timer has a fixed frequency by architecture */
#else
    return 0;
#endif
}

#define READS 20000

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Back-to-back deltas of `read`, sorted; returns the trimmed mean (the cost of one read). */
static double read_deltas(uint64_t (*read)(void), uint64_t *d)
{
    for (int i = 0; i < READS; i++) {
        uint64_t t0 = read();
        uint64_t t1 = read();
        d[i] = t1 - t0;
    }
    qsort(d, READS, sizeof *d, cmp_u64);
    uint64_t cap = d[READS / 2] * 4 + 1; /* an interrupt in between is not the read's cost */
    double sum = 0;
    int n = 0;
    for (int i = 0; i < READS && d[i] <= cap; i++, n++)
        sum += (double)d[i];
    return n ? sum / n : 0.0;
}

/* The counter's step: the spacing of the clusters of back-to-back deltas. Each cluster (frequent values
 * no more than a tick apart) is placed at its most frequent value, so a counter that steps 26 ticks
 * with a tick of jitter (deltas 25 and 26) sits at 26. A first cluster close to zero (deltas 0 or 1:
 * the counter did not advance between two reads) is placed at zero, else the tick of jitter that it
 * carries would shorten the step (1 and 26 would read 25, and 1 and 25..26 used to read 24). Only the
 * two first clusters count: they hold most reads, where a later one (two steps, 0.3 % of the reads on
 * the issue-23 host) may be placed a tick off by chance. */
#define STEP_CLUSTERS 2

double corelat_timer_step(const uint64_t *d, int n)
{
    uint64_t pos[STEP_CLUSTERS], last = 0, mode_count = 0;
    int clusters = 0, values = 0, i = 0;
    while (i < n) {
        int j = i;
        while (j < n && d[j] == d[i])
            j++;
        uint64_t count = (uint64_t)(j - i);
        if (count >= (uint64_t)(n / 1000 + 1)) { /* a value seen often enough to count */
            if (values == 0 || d[i] > last + 1) {
                if (clusters == STEP_CLUSTERS)
                    break;
                pos[clusters++] = d[i];
                mode_count = count;
            } else if (count > mode_count) {
                pos[clusters - 1] = d[i];
                mode_count = count;
            }
            last = d[i];
            values++;
        }
        i = j;
    }
    if (clusters >= 2) {
        if (pos[0] * 4 <= pos[1] - pos[0])
            pos[0] = 0;
        return (double)(pos[1] - pos[0]); /* the two first clusters hold most reads: the surest */
    }
    if (values >= 3)
        return 1.0; /* one run of consecutive values: a counter that counts single ticks */
    if (clusters == 1 && pos[0] > 0)
        return (double)pos[0]; /* one or two values: the step is at most the smallest delta */
    for (int k = 0; k < n; k++)
        if (d[k] > 0)
            return (double)d[k]; /* zeros and rare others: the smallest advance seen */
    return 1.0;                  /* never advanced: no better bound than one tick */
}

static void measure_reads(corelat_timer_info *info, uint64_t (*read)(void), uint64_t (*read_serial)(void))
{
    static uint64_t d[READS]; /* under init_mu */
    info->overhead_serial = read_deltas(read_serial, d);
    info->overhead = read_deltas(read, d);
    info->resolution = corelat_timer_step(d, READS);
    info->hist_len = 0;
    for (int i = 0; i < READS; i++) {
        int h = info->hist_len;
        if (h > 0 && info->hist_delta[h - 1] == d[i]) {
            info->hist_count[h - 1]++;
        } else if (h < CORELAT_TIMER_HIST) {
            info->hist_delta[h] = d[i];
            info->hist_count[h] = 1;
            info->hist_len++;
        }
    }
}

static uint64_t read_hw(void) { return corelat_hw_ticks(); }
static uint64_t read_hw_serial(void) { return corelat_hw_ticks_serial(); }
static uint64_t read_clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_nsec;
}

double corelat_timer_clock_cost(void)
{
    /* Time 1000 calls with the active timer; the loop overhead is negligible against a syscall. */
    double best = 1e300;
    for (int rep = 0; rep < 5; rep++) {
        uint64_t t0 = corelat_ticks();
        volatile uint64_t sink = 0;
        for (int i = 0; i < 1000; i++)
            sink += read_clock_mono();
        uint64_t t1 = corelat_ticks();
        (void)sink;
        double per = (double)(t1 - t0) / 1000.0;
        if (per < best)
            best = per;
    }
    return best;
}

int corelat_timer_init(int kind, uint64_t calibrate_ns, corelat_timer_info *info)
{
    if (kind == CORELAT_TIMER_HW && !CORELAT_HAVE_HW_TIMER)
        return -1;
    pthread_once(&atfork_once, register_atfork);
    init_lock();
    info->kind = kind;
    info->hw_invariant = corelat_timer_hw_invariant();
    if (kind == CORELAT_TIMER_CLOCK) {
        info->name = "clock_gettime";
        info->ticks_per_ns = 1.0;
    } else {
        info->name = CORELAT_HW_TIMER_NAME;
        /* Best of three short windows: a window in which we were preempted between the paired reads
         * gives a skewed rate; the pairing below keeps each window's error to one read's cost. */
        double best_err = 1e300, rate = 0.0;
        uint64_t window = calibrate_ns / 3 ? calibrate_ns / 3 : 1;
        for (int rep = 0; rep < 3; rep++) {
            uint64_t c0a = corelat_clock_ns(), t0 = corelat_hw_ticks(), c0b = corelat_clock_ns();
            uint64_t c1a, c1b, t1;
            do {
                c1a = corelat_clock_ns();
                t1 = corelat_hw_ticks();
                c1b = corelat_clock_ns();
            } while (c1a - c0b < window);
            double err = (double)(c0b - c0a) + (double)(c1b - c1a);
            double ns = ((double)c1a + (double)c1b - (double)c0a - (double)c0b) / 2.0;
            if (ns > 0 && err < best_err) {
                best_err = err;
                rate = (double)(t1 - t0) / ns;
            }
        }
        info->ticks_per_ns = rate;
    }
    /* The kind's own reads, not the active ones: the kind becomes active only once it is calibrated. */
    if (kind == CORELAT_TIMER_HW)
        measure_reads(info, read_hw, read_hw_serial);
    else
        measure_reads(info, corelat_clock_ns_cold, corelat_clock_ns_cold);
    current = *info;
    have_current = 1;
    atomic_store_explicit(&corelat_timer_kind_active, kind, memory_order_relaxed);
    init_unlock();
    return 0;
}

int corelat_timer_current(corelat_timer_info *info)
{
    init_lock();
    int ok = have_current;
    if (ok)
        *info = current;
    init_unlock();
    return ok ? 0 : -1;
}
