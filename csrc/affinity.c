#include "affinity.h"

#include <errno.h>
#include <sched.h>

int corelat_attr_pin(pthread_attr_t *attr, int cpu)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_attr_setaffinity_np(attr, sizeof set, &set);
}

int corelat_current_cpu(void) { return sched_getcpu(); }

int corelat_allowed_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    return CPU_COUNT(&set);
}
