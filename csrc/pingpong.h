/* Ping-pong kernels between two pinned threads: one-way latency = round-trip time / 2. */
#ifndef CORELAT_PINGPONG_H
#define CORELAT_PINGPONG_H

#include <stdint.h>

enum corelat_pp_kernel {
    CORELAT_PP_CAS = 0, /* both threads compare-exchange one flag on one line */
    CORELAT_PP_RW = 1,  /* each thread stores to its own line and spins loading the other's */
};

typedef struct {
    int kernel;            /* enum corelat_pp_kernel */
    int cpu_a, cpu_b;      /* initiator (timed) and responder */
    int64_t round_trips;   /* per sample */
    int64_t samples;       /* kept */
    int64_t warmup;        /* run first and discarded */
    uint64_t timeout_ns;   /* longest wait for the partner */
    int stall_responder;   /* test hook: the responder never answers */
    /* outputs, `samples` entries each, allocated by the caller */
    uint64_t *ticks;       /* timer ticks for `round_trips` round trips */
    uint8_t *migrated;     /* 1 where either thread was seen off its CPU around the sample */
    /* outputs on failure */
    int status;            /* enum corelat_status */
    int failed_cpu;        /* the CPU whose thread reported the failure */
    int err;               /* errno or detail */
    void *priv;            /* the kernel's own state between start and finish */
} corelat_pp_job;

/* Start measuring a pair; the job and its arrays must stay alive until corelat_pp_finish().
 * The caller polls corelat_team_wait() in between (see team.h). Returns 0 or a status. */
struct corelat_team;
int corelat_pp_start(corelat_pp_job *job, struct corelat_team *team);

/* Join the pair's threads, release the buffer, fill job->status/failed_cpu/err. */
void corelat_pp_finish(corelat_pp_job *job, struct corelat_team *team);

#endif
