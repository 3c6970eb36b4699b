/* spin.h's status names, the slow check of every bounded wait, and the plain wait built on it. */
#include "spin.h"

#include <time.h>

#include "affinity.h"

const char *const corelat_status_names[CORELAT_STATUS_COUNT] = {
    [CORELAT_OK] = "OK",         [CORELAT_ETIMEOUT] = "ETIMEOUT", [CORELAT_EABORT] = "EABORT",
    [CORELAT_ENOMEM] = "ENOMEM", [CORELAT_ETHREAD] = "ETHREAD",   [CORELAT_EPIN] = "EPIN",
    [CORELAT_EINVAL] = "EINVAL", [CORELAT_EMOVED] = "EMOVED",     [CORELAT_ENOANSWER] = "ENOANSWER",
    [CORELAT_ESTOP] = "ESTOP",
};

void corelat_spin_begin(corelat_spin *s, const atomic_int *abort, atomic_uint_fast64_t *beat, int cpu,
                        uint64_t timeout_ns)
{
    s->abort = abort;
    s->beat = beat;
    s->cpu = cpu;
    s->timeout_ns = timeout_ns;
    s->deadline = 0;
    s->progress = 0;
    s->cpu_mark = 0;
    s->wall_mark = 0;
}

/* This thread's CPU time (ns), or 0 if the clock is missing. A system call: read only in waits that
 * are already long, never on a sample's ordinary path. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The deadline has passed. A thread that did not run for much of the wait (the whole process
 * stopped by Ctrl-Z or SIGSTOP and continued, a freezer thawed, a long preemption) has not watched
 * its partner for the time-out: the time it was off the CPU is added to the deadline, and the wait
 * goes on. After a stop every thread resumes at its own moment, so without this the first one to
 * run blamed a partner that had not been given a CPU yet. A thread that ran (almost) all the time
 * times out: a frozen or starved partner is still given up within its bound of this thread's own
 * running time. */
static int past_deadline(corelat_spin *s, uint64_t now)
{
    uint64_t cpu = thread_cpu_ns();
    if (cpu == 0 || s->cpu_mark == 0) /* no CPU-time clock: the wall clock decides, as it did */
        return CORELAT_ETIMEOUT;
    uint64_t wall = now - s->wall_mark, ran = cpu - s->cpu_mark;
    uint64_t off = wall > ran ? wall - ran : 0;
    s->cpu_mark = cpu;
    s->wall_mark = now;
    /* Off for less than an eighth of the time-out: it watched its partner for (nearly) all of it.
     * (Excusing crumbs would only read the clock again at every check from here on.) */
    if (off < s->timeout_ns / 8)
        return CORELAT_ETIMEOUT;
    s->deadline += off;
    return now > s->deadline ? CORELAT_ETIMEOUT : 0;
}

__attribute__((noinline, cold)) int corelat_spin_slow(corelat_spin *s, uint64_t progress)
{
    int a = atomic_load_explicit(s->abort, memory_order_relaxed);
    if (a != CORELAT_RUN)
        return a == CORELAT_STOP ? CORELAT_ESTOP : CORELAT_EABORT;
    if (s->beat) /* one writer: a plain store, no locked instruction */
        atomic_store_explicit(s->beat, atomic_load_explicit(s->beat, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    /* Two threads moved onto one CPU take turns a scheduler slice at a time: every wait is short,
     * so no time-out would ever fire. Stop at the first sign. */
    if (s->cpu >= 0 && !corelat_on_cpu(s->cpu))
        return CORELAT_EMOVED;
    uint64_t now = corelat_clock_ns();
    if (s->deadline == 0 || progress != s->progress) {
        s->progress = progress;
        s->deadline = now + s->timeout_ns;
        s->wall_mark = 0;
        return 0;
    }
    if (s->wall_mark == 0) {
        /* The first check of a long wait: from here on the thread's CPU time says how long it ran.
         * Before, since the check that set the deadline, 1,024 polls (65,536 load polls) took
         * microseconds, at most milliseconds, if the thread ran; far longer means it was stopped in
         * between (counted once per wait, so even polls that slow could only postpone a time-out
         * once). */
        uint64_t gap = now - (s->deadline - s->timeout_ns);
        if (gap > s->timeout_ns / 8)
            s->deadline += gap;
        s->cpu_mark = thread_cpu_ns();
        s->wall_mark = now;
    }
    return now > s->deadline ? past_deadline(s, now) : 0;
}

int corelat_spin_until(const atomic_int *flag, int value, corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY;
    int rc = 0;
    for (;;) {
        CORELAT_SPIN_WHILE_NOT(
            (corelat_cpu_relax(), atomic_load_explicit(flag, memory_order_acquire) >= value), s, 0, left, rc,
            fail);
        return CORELAT_OK;
    }
fail:
    return rc;
}
