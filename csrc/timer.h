/* Timers: the cheapest counter each architecture offers, and a portable fallback.
 *
 * Reads are inline so kernels pay only the instruction. Which counter is active is chosen by
 * corelat_timer_init() and kept in a global that kernels read; the branch on it is perfectly
 * predicted. */
#ifndef CORELAT_TIMER_H
#define CORELAT_TIMER_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CORELAT_HAVE_HW_TIMER 1
#define CORELAT_HW_TIMER_NAME "tsc"
#elif defined(__aarch64__)
#define CORELAT_HAVE_HW_TIMER 1
#define CORELAT_HW_TIMER_NAME "cntvct_el0"
#else
#define CORELAT_HAVE_HW_TIMER 0
#define CORELAT_HW_TIMER_NAME "none"
#endif

enum corelat_timer_kind { CORELAT_TIMER_HW = 1, CORELAT_TIMER_CLOCK = 2 };

/* Distinct back-to-back deltas kept for the record (the smallest ones). */
#define CORELAT_TIMER_HIST 8

typedef struct {
    int kind;            /* enum corelat_timer_kind */
    const char *name;    /* "tsc", "cntvct_el0" or "clock_gettime" */
    double ticks_per_ns; /* calibrated against CLOCK_MONOTONIC_RAW */
    /* The counter's step (see corelat_timer_step): some counters advance in steps of many ticks
     * (~24 ticks = 10 ns on some AMD hosts), so their smallest back-to-back difference is a step,
     * not a cost, and any interval shorter than a few steps is unresolved. */
    double resolution; /* ticks */
    /* Cost of one read: the mean back-to-back difference (over a random phase, a stepped counter's
     * mean difference is the true one), outliers (interrupts) left out. */
    double overhead;        /* ticks */
    double overhead_serial; /* the same for the serializing read */
    int hw_invariant;       /* the hardware says its counter runs at a constant rate */
    /* The smallest distinct back-to-back deltas of the plain read and how often each came. */
    int hist_len;
    uint64_t hist_delta[CORELAT_TIMER_HIST];
    uint64_t hist_count[CORELAT_TIMER_HIST];
} corelat_timer_info;

/* The active timer's kind (enum corelat_timer_kind). corelat_timer_init() may run (the binding called
 * from another Python thread: the GIL is released while it calibrates) while another sweep's threads
 * read it: atomic. Relaxed is enough: a reader needs only the value, which read to make; nothing else is
 * published through it (the calibration itself is handed over by corelat_timer_current()). A relaxed
 * load is a plain load on x86-64 and aarch64: the timed reads cost what they did. */
extern atomic_int corelat_timer_kind_active;

static inline int corelat_timer_kind(void)
{
    return atomic_load_explicit(&corelat_timer_kind_active, memory_order_relaxed);
}

static inline uint64_t corelat_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t corelat_hw_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    /* isb: without it the counter read may be satisfied early, out of program order. */
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
#else
    return corelat_clock_ns();
#endif
}

/* A read that neither earlier nor later instructions can cross: for timing single short calls, and
 * for the reads around a timed batch, whose end a plain read can run ahead of (pingpong.c). */
static inline uint64_t corelat_hw_ticks_serial(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
    return v;
#else
    return corelat_clock_ns();
#endif
}

/* The fallback read, out of line: inlined, clock_gettime's call would cost the hot loops that
 * read the timer (one-way) their registers. */
uint64_t corelat_clock_ns_cold(void) __attribute__((noinline, cold));

static inline uint64_t corelat_ticks(void)
{
    return __builtin_expect(corelat_timer_kind() == CORELAT_TIMER_HW, 1) ? corelat_hw_ticks()
                                                                         : corelat_clock_ns_cold();
}

static inline uint64_t corelat_ticks_serial(void)
{
    return __builtin_expect(corelat_timer_kind() == CORELAT_TIMER_HW, 1) ? corelat_hw_ticks_serial()
                                                                         : corelat_clock_ns_cold();
}

/* Does the hardware declare a constant-rate counter (x86 CPUID invariant TSC; always on aarch64)? */
int corelat_timer_hw_invariant(void);

/* Choose the timer (kind = CORELAT_TIMER_HW or CORELAT_TIMER_CLOCK) and calibrate it for
 * calibrate_ns of wall time. Returns 0, or -1 when the hardware timer does not exist here. Calls from
 * several threads take turns (a lock, which a fork waits for: pthread_atfork); the kind becomes active
 * when its calibration is done, together with what corelat_timer_current() hands out. */
int corelat_timer_init(int kind, uint64_t calibrate_ns, corelat_timer_info *info);

/* The calibration of the active timer (the last corelat_timer_init() to end): 0, or -1 before any. */
int corelat_timer_current(corelat_timer_info *info);

/* The counter's step in ticks from n sorted back-to-back deltas: the spacing of the clusters they
 * fall in (a fractional step such as 24.45 ticks shows as neighbours 24/25, 48/49; a 26-tick step
 * under a hypervisor's scaling as 1, 25/26), each cluster placed at its most frequent value and a
 * first cluster near zero (the counter did not advance between two reads) placed at zero. A run of
 * consecutive values is a counter that counts single ticks. Values seen in fewer than 0.1 % of the
 * reads (interrupts) are ignored. */
double corelat_timer_step(const uint64_t *sorted, int n);

/* Cost in ticks of a clock_gettime(CLOCK_MONOTONIC) call, measured with the active timer. */
double corelat_timer_clock_cost(void);

#endif
