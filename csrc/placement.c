#include "placement.h"

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* From <linux/mempolicy.h>; spelled out so the build needs no NUMA headers. */
#define MPOL_PREFERRED 1
#define QUERY_PAGES 64 /* pages asked about per move_pages call */

int corelat_place_cpus(const corelat_place *p, int cpu_a, int cpu_b, int cpus[3])
{
    cpus[0] = cpu_a;
    cpus[1] = cpu_b;
    cpus[2] = p->cpu;
    return p->toucher == CORELAT_TOUCH_THIRD ? 3 : 2;
}

int corelat_place_bind(void *buf, size_t len, int node)
{
#ifdef SYS_mbind
    enum { BITS = 8 * sizeof(unsigned long) };
    unsigned long mask[1024 / BITS] = {0};
    if (node < 0 || node >= 1024)
        return EINVAL;
    mask[node / BITS] = 1ul << (node % BITS);
    /* maxnode counts one bit more than the kernel reads (a long-standing quirk of the interface). */
    if (syscall(SYS_mbind, buf, len, MPOL_PREFERRED, mask, (unsigned long)1024 + 1, 0u) != 0)
        return errno;
    return 0;
#else
    (void)buf;
    (void)len;
    (void)node;
    return ENOSYS;
#endif
}

int corelat_place_query(void *buf, size_t len, int *node)
{
    *node = -1;
#ifdef SYS_move_pages
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size_t npages = (len + (size_t)page - 1) / (size_t)page;
    int found = -1;
    for (size_t first = 0; first < npages; first += QUERY_PAGES) {
        void *pages[QUERY_PAGES];
        int status[QUERY_PAGES];
        size_t k = npages - first < QUERY_PAGES ? npages - first : QUERY_PAGES;
        for (size_t i = 0; i < k; i++)
            pages[i] = (char *)buf + (first + i) * (size_t)page;
        /* nodes == NULL: query only, move nothing. */
        if (syscall(SYS_move_pages, 0, (unsigned long)k, pages, NULL, status, 0) != 0)
            return errno;
        for (size_t i = 0; i < k; i++) {
            if (status[i] < 0)
                return -status[i]; /* e.g. ENOENT: a page not present (never touched) */
            if (found == -1)
                found = status[i];
            else if (found != status[i])
                found = -2;
        }
    }
    *node = found;
    return 0;
#else
    (void)buf;
    (void)len;
    return ENOSYS;
#endif
}

void corelat_place_before_touch(corelat_place *p, void *buf, size_t len)
{
    if (p->bind)
        p->bind_err = corelat_place_bind(buf, len, p->node);
}

void corelat_place_after_touch(corelat_place *p, void *buf, size_t len)
{
    p->query_err = corelat_place_query(buf, len, &p->home_node);
}
