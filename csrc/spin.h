/* Bounded spin-waits and the status codes that threads carry back to the binding.
 *
 * A measuring thread never blocks: it spins. A hot loop counts its failed polls down in a register
 * and calls corelat_spin_slow() -- out of line, so the loop keeps every value in registers -- once
 * every CORELAT_SPIN_EVERY polls. The slow path reads the abort flag, the CPU the thread runs on and
 * the clock: a partner that never answers, a Ctrl-C or a thread moved off its CPU ends the wait
 * within microseconds. A wait times out when the caller's progress counter has not moved for
 * timeout_ns, so the fast path never resets anything. */
#ifndef CORELAT_SPIN_H
#define CORELAT_SPIN_H

#include <stdatomic.h>
#include <stdint.h>

#include "timer.h"

enum corelat_status {
    CORELAT_OK = 0,
    CORELAT_ETIMEOUT = 1,  /* the partner did not answer in time */
    CORELAT_EABORT = 2,    /* told to stop (Ctrl-C, or the partner failed) */
    CORELAT_ENOMEM = 3,    /* a buffer could not be allocated or mapped (errno kept) */
    CORELAT_ETHREAD = 4,   /* pthread_create failed (errno kept) */
    CORELAT_EPIN = 5,      /* a thread could not be pinned to its CPU (errno kept) */
    CORELAT_EINVAL = 6,    /* inconsistent arguments (the binding validates; this is a backstop) */
    CORELAT_EMOVED = 7,    /* a pinned thread found itself on another CPU (that CPU kept in err) */
    CORELAT_ENOANSWER = 8, /* a thread stopped running (frozen, stopped, starved); the caller left it */
    CORELAT_ESTOP = 9,     /* internal: the run ended early on purpose (time budget); not a failure */
    CORELAT_STATUS_COUNT = 10,
};

/* The enum's names without the prefix ("OK", "ETIMEOUT", ...), indexed by code. The extension exports
 * them (STATUS_CODES), so that corelat._core.status maps the codes this enum has rather than a copy
 * that could drift; a code added above without a name here is a NULL that the selftest and the
 * module's init refuse. */
extern const char *const corelat_status_names[CORELAT_STATUS_COUNT];

/* Values of a team's abort flag. */
enum { CORELAT_RUN = 0, CORELAT_ABORT = 1, CORELAT_STOP = 2 };

/* Failed polls between two slow checks. */
#define CORELAT_SPIN_EVERY 1024u

/* The same for the load polls of the hot loops (rw, one-way, chase). A failed load poll reads a line
 * the waiting core already holds and costs about a nanosecond, so 1,024 of them came every
 * microsecond or so, about once per round trip at the ~100 ns placement of the project's VM: rw read
 * 6-8 % above the bare loop on the minimum and 15-19 % on the median there (issue 23,
 * benchmarks/RESULTS.md). 8,192 brought both within 1 % at ~25 and ~100 ns; 65,536 read 2.7 % below
 * the bare loop at ~25 ns. A check still comes every ~10 us of polls that hit, and at most every
 * ~3 ms where every poll misses (300 ns each): an abort or a time-out is seen as before. */
#define CORELAT_SPIN_EVERY_LOAD 8192u

typedef struct {
    const atomic_int *abort;    /* the team's flag (enum above) */
    atomic_uint_fast64_t *beat; /* bumped by every slow check: the caller sees the thread alive */
    uint64_t timeout_ns;
    uint64_t deadline; /* 0 until the first slow check of a wait */
    uint64_t progress; /* the caller's counter at the last slow check */
    int cpu;           /* the CPU the thread is pinned to */
    /* The thread's own CPU time and the clock when the wait was first seen long (wall_mark 0: not
     * yet): a wait's time-out counts only the time this thread ran, so a stop of the whole process
     * (Ctrl-Z, SIGSTOP, a freezer) blames no partner. */
    uint64_t cpu_mark, wall_mark;
} corelat_spin;

void corelat_spin_begin(corelat_spin *s, const atomic_int *abort, atomic_uint_fast64_t *beat, int cpu,
                        uint64_t timeout_ns);

/* 0 to keep spinning, or CORELAT_ETIMEOUT / EABORT / EMOVED / ESTOP. `progress` is any counter that
 * changes with every successful wait (a sequence number, a round-trip count): the time-out runs from
 * the first slow check that sees it unchanged, and time this thread itself did not run (stopped,
 * descheduled) is added to it. Cold and out of line on purpose. */
int corelat_spin_slow(corelat_spin *s, uint64_t progress);

static inline void corelat_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/* The pattern every bounded wait uses: `poll` is a C expression that is true when the wait is over.
 * `left` is a uint32_t counting down to the next slow check from `every` (where it starts too); `rc`
 * receives a failing status and `fail` is where to go then. */
#define CORELAT_SPIN_WHILE_NOT_EVERY(poll, s, progress, left, every, rc, fail)                               \
    while (!(poll)) {                                                                                        \
        if (__builtin_expect(--(left) == 0, 0)) {                                                            \
            (left) = (every);                                                                                \
            (rc) = corelat_spin_slow((s), (progress));                                                       \
            if (rc)                                                                                          \
                goto fail;                                                                                   \
        }                                                                                                    \
    }
#define CORELAT_SPIN_WHILE_NOT(poll, s, progress, left, rc, fail)                                            \
    CORELAT_SPIN_WHILE_NOT_EVERY(poll, s, progress, left, CORELAT_SPIN_EVERY, rc, fail)

/* The same with the polls CORELAT_SPIN_UNROLL at a time and the countdown once per group, for the CAS
 * loops: a failed compare-exchange then runs what a bare loop runs (mov, lock cmpxchg, branch) and
 * the countdown's two instructions a quarter as often (they cost 0.2-2.9 % at ~25 ns on the issue-23
 * host). The first attempt stands alone, so the retry loop is reached by a branch. Not for load polls: four
 * loads of the line in a row read rw 3-4 % below the bare loop there (benchmarks/RESULTS.md), a different
 * thing measured, not a cheaper loop. `left` starts at and is reset to CORELAT_SPIN_EVERY, a multiple of the
 * group, so the countdown reaches 0 exactly. */
#define CORELAT_SPIN_UNROLL 4u
_Static_assert(CORELAT_SPIN_EVERY % CORELAT_SPIN_UNROLL == 0, "the countdown must reach 0 exactly");
#define CORELAT_SPIN_WHILE_NOT_X4(poll, s, progress, left, rc, fail)                                         \
    if (!(poll)) {                                                                                           \
        for (;;) {                                                                                           \
            if ((poll) || (poll) || (poll) || (poll))                                                        \
                break;                                                                                       \
            if (__builtin_expect(((left) -= CORELAT_SPIN_UNROLL) == 0, 0)) {                                 \
                (left) = CORELAT_SPIN_EVERY;                                                                 \
                (rc) = corelat_spin_slow((s), (progress));                                                   \
                if (rc)                                                                                      \
                    goto fail;                                                                               \
            }                                                                                                \
        }                                                                                                    \
    }

/* One failed poll of a wait that is not a hot loop: 0, or the slow check's status every
 * CORELAT_SPIN_EVERY calls. `left` starts at CORELAT_SPIN_EVERY. */
static inline int corelat_spin_tick(corelat_spin *s, uint32_t *left, uint64_t progress)
{
    if (__builtin_expect(--*left != 0, 1))
        return 0;
    *left = CORELAT_SPIN_EVERY;
    return corelat_spin_slow(s, progress);
}

/* Wait (bounded, abort-aware, with a pause hint) until *flag >= value, e.g. "the buffer is ready".
 * Returns 0 or a status. */
int corelat_spin_until(const atomic_int *flag, int value, corelat_spin *s);

#endif
