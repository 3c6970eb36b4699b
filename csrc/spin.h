/* Bounded spin-waits and the error codes that threads carry back to the binding.
 *
 * A measuring thread never blocks: it spins. Every spin loop calls corelat_spin_check() once per
 * iteration; only one call in 1024 reads the clock and the abort flag, so the fast path is a counter
 * increment, and a partner that never answers (or a Ctrl-C) ends the wait within microseconds of the
 * deadline. */
#ifndef CORELAT_SPIN_H
#define CORELAT_SPIN_H

#include <stdatomic.h>
#include <stdint.h>

#include "timer.h"

enum corelat_status {
    CORELAT_OK = 0,
    CORELAT_ETIMEOUT = 1, /* the partner did not answer in time */
    CORELAT_EABORT = 2,   /* told to stop (Ctrl-C, or the partner failed) */
    CORELAT_ENOMEM = 3,   /* a buffer could not be mapped */
    CORELAT_ETHREAD = 4,  /* pthread_create failed (errno kept) */
    CORELAT_EPIN = 5,     /* a thread could not be pinned to its CPU (errno kept) */
    CORELAT_EMOVED = 7,   /* a pinned thread found itself on another CPU (that CPU kept) */
    CORELAT_EINVAL = 6,   /* inconsistent arguments (the binding validates; this is a backstop) */
};

typedef struct {
    const atomic_int *abort;
    uint64_t timeout_ns;
    uint64_t deadline;
    uint32_t spins;
} corelat_spin;

static inline void corelat_spin_begin(corelat_spin *s, const atomic_int *abort, uint64_t timeout_ns)
{
    s->abort = abort;
    s->timeout_ns = timeout_ns;
    s->deadline = 0;
    s->spins = 0;
}

/* 0 to keep spinning, or CORELAT_ETIMEOUT / CORELAT_EABORT. The deadline starts at the first slow
 * check, so a wait that succeeds quickly never reads the clock. Call corelat_spin_reset() after each
 * successful wait. */
static inline int corelat_spin_check(corelat_spin *s)
{
    if ((++s->spins & 1023u) != 0)
        return 0;
    if (atomic_load_explicit(s->abort, memory_order_relaxed))
        return CORELAT_EABORT;
    uint64_t now = corelat_clock_ns();
    if (s->deadline == 0)
        s->deadline = now + s->timeout_ns;
    else if (now > s->deadline)
        return CORELAT_ETIMEOUT;
    return 0;
}

static inline void corelat_spin_reset(corelat_spin *s)
{
    s->spins = 0;
    s->deadline = 0;
}

static inline void corelat_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/* Wait (bounded, abort-aware) until another thread sets *flag, e.g. "the shared buffer is ready".
 * Returns 0 or CORELAT_ETIMEOUT / CORELAT_EABORT. */
static inline int corelat_spin_until_set(atomic_int *flag, const atomic_int *abort, uint64_t timeout_ns)
{
    corelat_spin s;
    corelat_spin_begin(&s, abort, timeout_ns);
    while (!atomic_load_explicit(flag, memory_order_acquire)) {
        int rc = corelat_spin_check(&s);
        if (rc)
            return rc;
        corelat_cpu_relax();
    }
    return CORELAT_OK;
}

#endif
