/* One-way timestamped messages between two pinned threads (core-to-core-latency's bench 3).
 *
 * Thread A stores its timer reading to line A; thread B spins until the line changes, reads its own
 * timer and keeps the difference (a -> b), then stores a fresh reading of its timer to line B, which A
 * receives the same way (b -> a). Each message is timed alone with the serializing timer read; a
 * sample is the sum over `messages` messages per direction. The differences hold the clock offset
 * between the two CPUs: the smallest difference seen in each direction brackets it (see
 * corelat_ow_job.min_ab), which is how the caller checks that the timers agree. */
#ifndef CORELAT_ONEWAY_H
#define CORELAT_ONEWAY_H

#include <stdint.h>

#include "placement.h"
#include "team.h"

typedef struct {
    int cpu_a, cpu_b;     /* a sends first; both directions are measured */
    int64_t messages;     /* per sample and direction */
    int64_t samples;      /* kept, at most */
    int64_t warmup;       /* run first and discarded */
    uint64_t timeout_ns;  /* longest wait for the partner */
    uint64_t budget_ns;   /* 0, or stop after the first kept sample past this much time */
    int stall_responder;  /* test hook: b never answers (but obeys abort) */
    uint64_t freeze_ns;   /* test hook: b sleeps this long, deaf to everything */
    int64_t offset_ticks; /* test hook: added to every reading of b's timer (a skewed clock) */
    corelat_place place;  /* who first-touches the page, where (placement.h); zero: a */
} corelat_ow_params;

typedef struct {
    corelat_job head;
    corelat_ow_params p;
    /* outputs, p.samples entries each */
    int64_t *sum_ab; /* sum of (b's reading at arrival - a's reading at sending), ticks */
    int64_t *sum_ba; /* the same for messages from b to a */
    int64_t kept;    /* samples measured (fewer than p.samples if the budget ran out) */
    /* smallest single difference per direction over the kept samples: with true latencies >= 0,
     * the offset (b's clock - a's clock) lies in [-min_ba, min_ab] */
    int64_t min_ab;    /* written by b only */
    int64_t min_ba;    /* written by a only */
    corelat_page page; /* mapped and first touched by a on its CPU */
} corelat_ow_job;

/* A new job (one reference, the caller's), or NULL with *status set. */
corelat_ow_job *corelat_ow_new(const corelat_ow_params *p, int *status);

/* Start the pair's threads; then poll, finish and release the job (team.h). */
int corelat_ow_start(corelat_ow_job *job);

#endif
