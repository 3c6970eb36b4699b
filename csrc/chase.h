/* Clean and modified line transfers (Intel MLC's HIT and HITM): a reader chases pointers through
 * lines that another core, the owner, holds.
 *
 * Before every sample, untimed: the reader evicts the lines from every cache (clflush / dc civac),
 * the owner touches each line (reads it for "clean": the line is then Exclusive in the owner's
 * cache; writes it for "modified": Modified there). Timed: the reader follows the chain, one
 * dependent load per line, in a random single-cycle order that no prefetcher can follow. A sample is
 * the time of one pass; divided by the number of lines it is the cost of one load served by the
 * owner's cache: a one-way transfer, not a round trip. */
#ifndef CORELAT_CHASE_H
#define CORELAT_CHASE_H

#include <stdatomic.h>
#include <stdint.h>

#include "placement.h"
#include "team.h"

enum corelat_chase_kind {
    CORELAT_CHASE_CLEAN = 0,    /* the owner read the lines */
    CORELAT_CHASE_MODIFIED = 1, /* the owner wrote the lines */
};

/* Lines per chain: at least 4 (two 128 B pairs, so no two consecutive lines share one). */
#define CORELAT_CHASE_MIN_LINES 4
#define CORELAT_CHASE_MAX_LINES 65536 /* 4 MiB */

/* 1 where this architecture can evict a line from every cache (x86 clflush, aarch64 dc civac). */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
#define CORELAT_HAVE_CHASE 1
#else
#define CORELAT_HAVE_CHASE 0
#endif

typedef struct {
    int kind;            /* enum corelat_chase_kind */
    int cpu_a, cpu_b;    /* reader (timed) and owner */
    int64_t lines;       /* 64 B lines in the buffer = entries of the order */
    int64_t samples;     /* kept */
    int64_t warmup;      /* run first and discarded */
    uint64_t timeout_ns; /* longest wait for the partner */
    int stall_responder; /* test hook: the owner never answers (but obeys abort) */
    corelat_place place; /* who first-touches the buffer, where (placement.h); zero: the reader */
} corelat_chase_params;

typedef struct {
    corelat_job head;
    corelat_chase_params p;
    int *order;      /* p.lines entries, copied: the chain visits line order[0], order[1], ... */
    uint64_t *ticks; /* output: timer ticks for one pass over the chain, per sample */
    /* the reader asks (req = sample number), the owner answers when it has touched every line */
    _Alignas(128) atomic_uint_fast64_t req;
    _Alignas(128) atomic_uint_fast64_t done;
    /* keep the timed loads and the owner's reads from being optimised away; one per thread */
    _Alignas(128) uintptr_t reader_sink;
    _Alignas(128) uintptr_t owner_sink;
    corelat_page page; /* the chain's lines */
} corelat_chase_job;

/* A new job (one reference, the caller's), or NULL with *status set (CORELAT_EINVAL for a chain
 * that breaks the rules below). */
corelat_chase_job *corelat_chase_new(const corelat_chase_params *p, const int *order, int *status);

/* Start the threads; then poll, finish and release the job (team.h). */
int corelat_chase_start(corelat_chase_job *job);

/* Is `order` a single cycle over 0..lines-1 with no two consecutive lines (the last and the first
 * included) in one 128 B pair? The kernel refuses other chains (CORELAT_EINVAL). */
int corelat_chase_valid_order(const int *order, int64_t lines);

#endif
