/* The busy-sibling throughput kernel: how much a thread slows down when its SMT sibling is busy
 * (cpuperf's same-core comparison).
 *
 * One thread pinned to each CPU of a set runs the same fixed loop for a fixed time; all threads
 * start together at a common deadline and each counts the iterations it completed. Run it on one
 * CPU ("alone") and on two siblings ("together"): the ratio of the per-thread rates is the slowdown
 * the sibling causes. Two loops stress different shared resources:
 *
 *   alu: four independent 64-bit multiply-add chains (one iteration = four multiplies): bound by
 *        the core's integer multiplier, which siblings share.
 *   mem: a dependent pointer chase through a private buffer of random cache lines, mapped and first
 *        touched by the thread on its own CPU (one iteration = one load): bound by L1/L2 latency.
 *
 * The kernel does not include Python.h; module.c binds it. */
#ifndef CORELAT_SMT_H
#define CORELAT_SMT_H

#include <stdatomic.h>
#include <stdint.h>

#include "team.h"

enum corelat_smt_loop {
    CORELAT_SMT_ALU = 0,
    CORELAT_SMT_MEM = 1,
    CORELAT_SMT_LOOP_COUNT = 2,
};

/* Names of the loops, indexed by enum corelat_smt_loop. */
extern const char *const corelat_smt_loop_names[CORELAT_SMT_LOOP_COUNT];

/* Smallest and largest buffer of the memory loop, per thread. */
#define CORELAT_SMT_MEM_MIN 4096u
#define CORELAT_SMT_MEM_MAX (256u << 20)

typedef struct {
    int loop;                /* enum corelat_smt_loop */
    int n;                   /* threads, one per CPU */
    const int *cpus;         /* n CPU ids (copied by corelat_smt_new) */
    uint64_t duration_ticks; /* how long every thread runs the loop, in timer ticks */
    uint64_t lead_ticks;     /* from the last thread's arrival to the common start */
    uint64_t timeout_ns;     /* longest wait for the other threads at the starting line */
    uint64_t mem_bytes;      /* memory loop: buffer per thread, a multiple of 64 in [MIN, MAX] */
} corelat_smt_params;

typedef struct {
    corelat_job head;
    corelat_smt_params p;
    int *cpus;
    /* outputs, n entries each */
    uint64_t *iterations; /* iterations completed */
    uint64_t *ticks;      /* from the thread's own start to its last clock read */
    /* private */
    char **bufs;    /* memory loop: each thread's buffer */
    uint64_t *sink; /* each thread's final value, so no loop can be optimised away */
    atomic_int go;  /* the leader's start signal */
} corelat_smt_job;

/* A new job (one reference, the caller's), or NULL with *status set. */
corelat_smt_job *corelat_smt_new(const corelat_smt_params *p, int *status);

/* Start the threads; then poll, finish and release the job (team.h). */
int corelat_smt_start(corelat_smt_job *job);

#endif
