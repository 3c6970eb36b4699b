/* Where a shared buffer's memory lives: bind it to a NUMA node before its first touch, and ask the
 * kernel afterwards where its pages really are. Raw syscalls (mbind(2), move_pages(2)), no libnuma:
 * the wheel must not depend on a library that many machines lack. */
#ifndef CORELAT_PLACEMENT_H
#define CORELAT_PLACEMENT_H

#include <stddef.h>

/* Who first touches a team's shared buffer, and where it was found. */
enum corelat_toucher {
    CORELAT_TOUCH_INITIATOR = 0, /* team member 0, the timing side (the default) */
    CORELAT_TOUCH_RESPONDER = 1, /* member 1 */
    CORELAT_TOUCH_THIRD = 2,     /* member 2, pinned to `cpu`: first-touches and writes, then exits */
};

/* All zero: today's default (first touch by the initiator, no binding). */
typedef struct corelat_place_s {
    int bind;      /* 1: bind the buffer to `node` before its first touch */
    int node;      /* the NUMA node for `bind` */
    int toucher;   /* enum corelat_toucher */
    int cpu;       /* the third CPU for CORELAT_TOUCH_THIRD */
    int home_node; /* out: the node move_pages found every page on; -1 unknown, -2 pages on several */
    int bind_err;  /* out: errno of a failed mbind, else 0 */
    int query_err; /* out: errno of a failed move_pages, else 0 */
} corelat_place;

/* The CPUs of a pair's team under placement p: {a, b}, or {a, b, third}. Returns the count. */
int corelat_place_cpus(const corelat_place *p, int cpu_a, int cpu_b, int cpus[3]);

/* Prefer `node` for the pages of [buf, buf + len) not yet touched (MPOL_PREFERRED: a node without
 * free memory falls back instead of killing the process; the query below tells). 0 or an errno. */
int corelat_place_bind(void *buf, size_t len, int node);

/* Where the (touched) pages of [buf, buf + len) are: *node is their node, -2 when they are spread
 * over several. 0 or an errno (ENOSYS, EPERM under some container profiles); *node = -1 then. */
int corelat_place_query(void *buf, size_t len, int *node);

/* Both, around a first touch done by the caller: bind (if asked), then query into p->home_node. */
void corelat_place_before_touch(corelat_place *p, void *buf, size_t len);
void corelat_place_after_touch(corelat_place *p, void *buf, size_t len);

#endif
