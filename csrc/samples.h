/* The sample loop of the pair kernels (pingpong.c, oneway.c, chase.c): warm-up, samples, the count
 * kept and the time budget, written once.
 *
 * Each side of a pair runs it with its own step, which does one sample (the timed region, if the
 * side has one, is inside the step). Between two steps, untimed, the loop checks that the thread is
 * still on its CPU (a thread moved onto its partner's CPU would measure the scheduler, see spin.h)
 * and shows the caller it is alive. The loop is inlined into each caller with its step (a constant
 * function pointer, always_inline): the step's code, the timed region included, compiles as it did
 * when each kernel wrote the loop itself, with no call through a pointer per sample. */
#ifndef CORELAT_SAMPLES_H
#define CORELAT_SAMPLES_H

#include <stdatomic.h>
#include <stdint.h>

#include "spin.h"
#include "team.h"
#include "timer.h"

typedef struct {
    int64_t warmup;     /* samples run first and discarded */
    int64_t samples;    /* kept, at most */
    int64_t *kept;      /* NULL, or where the side that counts keeps the number of samples measured */
    uint64_t budget_ns; /* 0, or (with kept) stop after the first kept sample past this much time */
} corelat_samples;

/* One sample: k counts from 0 over warm-up and samples (a sequence number the partners agree on),
 * slot = k - warmup is the sample's index in the output arrays, negative during the warm-up. 0, or a
 * status that ends the loop. */
typedef int (*corelat_sample_fn)(void *side, int64_t k, int64_t slot);

/* Run warm-up + samples steps. CORELAT_OK, or the first failing status (CORELAT_EMOVED for a thread
 * found off its CPU). A budget that runs out before the last sample ends the partner's spin-waits
 * with CORELAT_STOP (no error: the samples measured so far are the result, *kept says how many). */
static inline __attribute__((always_inline)) int
corelat_samples_run(corelat_member *m, const corelat_samples *plan, corelat_sample_fn step, void *side)
{
    int64_t total = plan->warmup + plan->samples;
    uint64_t t_start = plan->budget_ns ? corelat_clock_ns() : 0;
    for (int64_t k = 0; k < total; k++) {
        /* Outside the timed region; a moved thread ends the call (see spin.h). */
        if (!corelat_member_on_cpu(m))
            return CORELAT_EMOVED;
        int rc = step(side, k, k - plan->warmup);
        if (rc)
            return rc;
        corelat_member_beat(m);
        if (k < plan->warmup || !plan->kept)
            continue;
        *plan->kept = k - plan->warmup + 1;
        if (plan->budget_ns && corelat_clock_ns() - t_start > plan->budget_ns && k + 1 < total) {
            atomic_store(&m->job->abort, CORELAT_STOP); /* the partner ends without error */
            return CORELAT_OK;
        }
    }
    return CORELAT_OK;
}

#endif
