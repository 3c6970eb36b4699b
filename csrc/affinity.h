/* Pinning threads to CPUs. */
#ifndef CORELAT_AFFINITY_H
#define CORELAT_AFFINITY_H

#include <pthread.h>

/* Set attr so the thread it creates starts on `cpu` only. Returns 0 or an errno value. */
int corelat_attr_pin(pthread_attr_t *attr, int cpu);

/* The CPU the calling thread runs on now, or -1 if the system cannot tell. */
int corelat_current_cpu(void);

/* Number of CPUs the calling thread may run on, or -1 on error (errno set). */
int corelat_allowed_count(void);

#endif
