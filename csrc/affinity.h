/* Pinning threads to CPUs. CPU sets are sized for the CPU asked for (CPU_ALLOC), not capped at
 * glibc's fixed CPU_SETSIZE (1024): machines with more CPUs exist. */
#ifndef CORELAT_AFFINITY_H
#define CORELAT_AFFINITY_H

#include <pthread.h>

/* Largest CPU id accepted: the kernel's own limit (CONFIG_NR_CPUS tops out at 8192). */
#define CORELAT_MAX_CPU 8191

/* Set attr so the thread it creates starts on `cpu` only. Returns 0 or an errno value. */
int corelat_attr_pin(pthread_attr_t *attr, int cpu);

/* The CPU the calling thread runs on now, or -1 if the system cannot tell. */
int corelat_current_cpu(void);

/* Is the calling thread on `cpu`? An unknown CPU (sched_getcpu() == -1) counts as yes, the one rule
 * for every kernel: a thread is only called moved when the system says where it is. */
int corelat_on_cpu(int cpu);

#endif
