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

typedef struct {
    int cpu_a, cpu_b;       /* a sends first; both directions are measured */
    int64_t messages;       /* per sample and direction */
    int64_t samples;        /* kept */
    int64_t warmup;         /* run first and discarded */
    uint64_t timeout_ns;    /* longest wait for the partner */
    int stall_responder;    /* test hook: b never answers */
    int64_t offset_ticks;   /* test hook: added to every reading of b's timer (a skewed clock) */
    /* outputs, `samples` entries each, allocated by the caller */
    int64_t *sum_ab;        /* sum of (b's reading at arrival - a's reading at sending), ticks */
    int64_t *sum_ba;        /* the same for messages from b to a */
    uint8_t *migrated;      /* 1 where either thread was seen off its CPU around the sample */
    /* smallest single difference per direction over the kept samples: with true latencies >= 0,
     * the offset (b's clock - a's clock) lies in [-min_ba, min_ab] */
    int64_t min_ab, min_ba;
    /* outputs on failure */
    int status;             /* enum corelat_status */
    int failed_cpu;         /* the CPU whose thread reported the failure */
    int err;                /* errno or detail */
    void *priv;             /* the kernel's own state between start and finish */
} corelat_ow_job;

struct corelat_team;

/* Start measuring a pair; the job and its arrays must stay alive until corelat_ow_finish().
 * The caller polls corelat_team_wait() in between (see team.h). Returns 0 or a status. */
int corelat_ow_start(corelat_ow_job *job, struct corelat_team *team);

/* Join the pair's threads, release the buffer, fill job->status/failed_cpu/err and the minima. */
void corelat_ow_finish(corelat_ow_job *job, struct corelat_team *team);

#endif
