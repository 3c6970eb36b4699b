#include "affinity.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

int corelat_attr_pin(pthread_attr_t *attr, int cpu)
{
    if (cpu < 0 || cpu > CORELAT_MAX_CPU)
        return EINVAL;
    cpu_set_t *set = CPU_ALLOC((size_t)cpu + 1);
    if (!set)
        return ENOMEM;
    size_t size = CPU_ALLOC_SIZE((size_t)cpu + 1);
    CPU_ZERO_S(size, set);
    CPU_SET_S((size_t)cpu, size, set);
    int e = pthread_attr_setaffinity_np(attr, size, set);
    CPU_FREE(set);
    return e;
}

int corelat_current_cpu(void) { return sched_getcpu(); }

int corelat_on_cpu(int cpu)
{
    int now = sched_getcpu();
    return now < 0 || now == cpu;
}
