/* Stacks of a few nodes for the stack-* lock tests: a lock-free one whose head is a tagged index,
 * and the plain one the locked variants guard.
 *
 * ABA: a pop reads the head (node X) and X's next (Y), then swaps the head from X to Y. If between
 * the read and the swap other threads pop X, pop Y and push X back, a head compared by pointer
 * alone still says X and the swap installs Y, a node now owned by someone else. Here the head is
 * one 64-bit word, (tag << 32) | index, and every successful push or pop bumps the tag, so that
 * swap fails and the pop retries. (A tag reused after 2^32 operations within one pop's window is
 * the only way through.) Nodes are indices into an array, never freed, so reading a popped node's
 * next is always a read of valid memory (an atomic one). */
#ifndef CORELAT_TSTACK_H
#define CORELAT_TSTACK_H

#include <stdatomic.h>
#include <stdint.h>

#define CORELAT_TSTACK_NODES 8

typedef struct {
    atomic_uint next;           /* index + 1 of the node below, 0 for none */
    atomic_uint_fast64_t value; /* the data a test increments while it owns the node */
} corelat_tnode;

typedef struct {
    atomic_uint_fast64_t head; /* lock-free: (tag << 32) | (index + 1); locked: index + 1 only */
    int untagged;              /* tests only: compare the index alone (the ABA-prone stack) */
    corelat_tnode nodes[CORELAT_TSTACK_NODES];
} corelat_tstack;

/* Every node on the stack, values 0. */
void corelat_tstack_init(corelat_tstack *s);

/* Lock-free pop in two steps so a test can put other operations in between: begin reads the head
 * (snapshot) and the top node's next; commit swaps them in. Returns the node index + 1, or 0 (begin:
 * empty; commit: the head changed since begin, retry). */
unsigned corelat_tstack_pop_begin(corelat_tstack *s, uint64_t *snap, unsigned *next);
unsigned corelat_tstack_pop_commit(corelat_tstack *s, uint64_t snap, unsigned next);
/* Lock-free pop (retrying; 0 only when empty) and push of a node it popped. */
unsigned corelat_tstack_pop(corelat_tstack *s);
void corelat_tstack_push(corelat_tstack *s, unsigned node);

/* The same stack under a caller's lock: plain (relaxed) operations. Inline, so the stack-mutex /
 * -sema / -wrlock kernels call only the lock, as cpuperf's do: out of line in tstack.c they were two
 * more calls per operation (sermin ~28 against cpuperf's ~23 cycles). */
static inline unsigned corelat_tstack_pop_locked(corelat_tstack *s)
{
    unsigned idx = (unsigned)atomic_load_explicit(&s->head, memory_order_relaxed);
    if (idx)
        atomic_store_explicit(&s->head, atomic_load_explicit(&s->nodes[idx - 1].next, memory_order_relaxed),
                              memory_order_relaxed);
    return idx;
}

static inline void corelat_tstack_push_locked(corelat_tstack *s, unsigned node)
{
    atomic_store_explicit(&s->nodes[node - 1].next,
                          (unsigned)atomic_load_explicit(&s->head, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&s->head, node, memory_order_relaxed);
}

/* Sum of the nodes' values; the number of nodes on the stack (-1 if a cycle or a bad index). */
uint64_t corelat_tstack_sum(corelat_tstack *s);
int corelat_tstack_depth(corelat_tstack *s);

#endif
