/* Ping-pong kernels between two pinned threads: one-way latency = round-trip time / 2. */
#ifndef CORELAT_PINGPONG_H
#define CORELAT_PINGPONG_H

#include <stdint.h>

#include "placement.h"
#include "team.h"

enum corelat_pp_kernel {
    CORELAT_PP_CAS = 0, /* both threads compare-exchange one flag on one line */
    CORELAT_PP_RW = 1,  /* each thread stores to its own line and spins loading the other's */
};

typedef struct {
    int kernel;              /* enum corelat_pp_kernel */
    int cpu_a, cpu_b;        /* initiator (timed) and responder */
    int64_t round_trips;     /* per sample */
    int64_t samples;         /* kept, at most */
    int64_t warmup;          /* run first and discarded */
    uint64_t timeout_ns;     /* longest wait for the partner */
    uint64_t budget_ns;      /* 0, or stop after the first kept sample past this much time */
    int stall_responder;     /* test hook: the responder never answers (but obeys abort) */
    uint64_t freeze_ns;      /* test hook: the responder sleeps this long, deaf to everything */
    uint64_t start_delay_ns; /* test hook: the responder starts this late (sleeps before the start
                              * barrier, then runs normally): a slow thread start, made long */
    corelat_place place;     /* who first-touches the page, where (placement.h); zero: the initiator */
} corelat_pp_params;

typedef struct {
    corelat_job head;
    corelat_pp_params p;
    uint64_t *ticks;   /* output: timer ticks for `round_trips` round trips, per sample */
    int64_t kept;      /* output: samples measured (fewer than p.samples if the budget ran out) */
    corelat_page page; /* mapped and first touched by the initiator on its CPU */
} corelat_pp_job;

/* How this build's CAS kernel compare-exchanges ("lock cmpxchg", "lse cas", "ll/sc (ldxr/stxr)"). */
const char *corelat_pp_cas_impl(void);

/* A new job (one reference, the caller's), or NULL with *status set. */
corelat_pp_job *corelat_pp_new(const corelat_pp_params *p, int *status);

/* Start the pair's threads; then poll, finish and release the job (team.h). */
int corelat_pp_start(corelat_pp_job *job);

#endif
