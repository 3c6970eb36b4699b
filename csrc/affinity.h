/* Pinning threads to CPUs. CPU sets are sized for the CPU asked for (CPU_ALLOC), not capped at
 * glibc's fixed CPU_SETSIZE (1024): machines with more CPUs exist. */
#ifndef CORELAT_AFFINITY_H
#define CORELAT_AFFINITY_H

#include <pthread.h>

/* Largest CPU id accepted: the kernel's own limit (CONFIG_NR_CPUS tops out at 8192). */
#define CORELAT_MAX_CPU 8191

/* How a new thread gets onto its CPU. glibc pins it at creation (pthread_attr_setaffinity_np): it
 * never runs anywhere else. Other C libraries (musl) have no such attribute: there the creator pins
 * the thread (pthread_setaffinity_np) right after pthread_create returns, before it hands the job to
 * anyone, and the thread waits for that before it does anything (team.c). Pinning by the creator,
 * not by the thread itself, keeps one order on every C library: every thread is pinned when
 * corelat_job_start() returns, so a move from outside after that (taskset -p, a cpuset change) is
 * never undone by a late self-pin, and is seen. */
#ifndef CORELAT_PIN_AT_CREATE /* -DCORELAT_PIN_AT_CREATE=0 runs musl's way on glibc (make tsan) */
#if defined(__GLIBC__)
#define CORELAT_PIN_AT_CREATE 1
#else
#define CORELAT_PIN_AT_CREATE 0
#endif
#endif

/* Set attr so the thread it creates starts on `cpu` only (where CORELAT_PIN_AT_CREATE; elsewhere it
 * only checks `cpu`). Returns 0 or an errno value. */
int corelat_attr_pin(pthread_attr_t *attr, int cpu);

/* Pin a running thread to `cpu` only. Returns 0 or an errno value (EINVAL: a CPU it may not use). */
int corelat_thread_pin(pthread_t thread, int cpu);

/* The CPU the calling thread runs on now, or -1 if the system cannot tell. */
int corelat_current_cpu(void);

/* Is the calling thread on `cpu`? An unknown CPU (sched_getcpu() == -1) counts as yes, the one rule
 * for every kernel: a thread is only called moved when the system says where it is. */
int corelat_on_cpu(int cpu);

#endif
