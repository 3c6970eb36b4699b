#include "tstack.h"

#define IDX_MASK 0xffffffffu

void corelat_tstack_init(corelat_tstack *s)
{
    for (unsigned i = 0; i < CORELAT_TSTACK_NODES; i++) {
        atomic_init(&s->nodes[i].next, i); /* node i+1 sits on node i (index i, 0 = none) */
        atomic_init(&s->nodes[i].value, 0);
    }
    atomic_init(&s->head, (uint64_t)CORELAT_TSTACK_NODES);
}

static uint64_t next_head(const corelat_tstack *s, uint64_t old, unsigned idx)
{
    uint64_t tag = s->untagged ? 0 : (old >> 32) + 1;
    return (tag << 32) | idx;
}

unsigned corelat_tstack_pop_begin(corelat_tstack *s, uint64_t *snap, unsigned *next)
{
    uint64_t h = atomic_load_explicit(&s->head, memory_order_acquire);
    unsigned idx = (unsigned)(h & IDX_MASK);
    *snap = h;
    *next = idx ? atomic_load_explicit(&s->nodes[idx - 1].next, memory_order_relaxed) : 0;
    return idx;
}

unsigned corelat_tstack_pop_commit(corelat_tstack *s, uint64_t snap, unsigned next)
{
    uint64_t want = snap;
    if (atomic_compare_exchange_strong_explicit(&s->head, &want, next_head(s, snap, next),
                                                memory_order_acquire, memory_order_relaxed))
        return (unsigned)(snap & IDX_MASK);
    return 0;
}

unsigned corelat_tstack_pop(corelat_tstack *s)
{
    for (;;) {
        uint64_t snap;
        unsigned next, idx = corelat_tstack_pop_begin(s, &snap, &next);
        if (!idx)
            return 0;
        if (corelat_tstack_pop_commit(s, snap, next))
            return idx;
    }
}

void corelat_tstack_push(corelat_tstack *s, unsigned node)
{
    uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
    do {
        atomic_store_explicit(&s->nodes[node - 1].next, (unsigned)(h & IDX_MASK), memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&s->head, &h, next_head(s, h, node), memory_order_release,
                                                    memory_order_relaxed));
}

uint64_t corelat_tstack_sum(corelat_tstack *s)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < CORELAT_TSTACK_NODES; i++)
        sum += atomic_load_explicit(&s->nodes[i].value, memory_order_relaxed);
    return sum;
}

int corelat_tstack_depth(corelat_tstack *s)
{
    unsigned idx = (unsigned)(atomic_load_explicit(&s->head, memory_order_relaxed) & IDX_MASK);
    int depth = 0;
    while (idx) {
        if (idx > CORELAT_TSTACK_NODES || depth >= CORELAT_TSTACK_NODES)
            return -1;
        depth++;
        idx = atomic_load_explicit(&s->nodes[idx - 1].next, memory_order_relaxed);
    }
    return depth;
}
