#include "affinity.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

/* A CPU set holding `cpu` alone, sized for it (CPU_ALLOC); NULL when out of memory. */
static cpu_set_t *one_cpu(int cpu, size_t *size)
{
    cpu_set_t *set = CPU_ALLOC((size_t)cpu + 1);
    if (!set)
        return NULL;
    *size = CPU_ALLOC_SIZE((size_t)cpu + 1);
    CPU_ZERO_S(*size, set);
    CPU_SET_S((size_t)cpu, *size, set);
    return set;
}

int corelat_attr_pin(pthread_attr_t *attr, int cpu)
{
    if (cpu < 0 || cpu > CORELAT_MAX_CPU)
        return EINVAL;
#if CORELAT_PIN_AT_CREATE
    size_t size;
    cpu_set_t *set = one_cpu(cpu, &size);
    if (!set)
        return ENOMEM;
    int e = pthread_attr_setaffinity_np(attr, size, set);
    CPU_FREE(set);
    return e;
#else
    (void)attr;
    return 0;
#endif
}

int corelat_thread_pin(pthread_t thread, int cpu)
{
    if (cpu < 0 || cpu > CORELAT_MAX_CPU)
        return EINVAL;
    size_t size;
    cpu_set_t *set = one_cpu(cpu, &size);
    if (!set)
        return ENOMEM;
    int e = pthread_setaffinity_np(thread, size, set);
    CPU_FREE(set);
    return e;
}

int corelat_current_cpu(void) { return sched_getcpu(); }

int corelat_on_cpu(int cpu)
{
    int now = sched_getcpu();
    return now < 0 || now == cpu;
}
