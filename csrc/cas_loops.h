/* The CAS ping-pong loops of pingpong.c, included there once per compare-exchange flavour with
 * CAS_LOOP(name) naming the copy (no include guard on purpose). Relaxed orders: the protocol
 * publishes no data beyond the flag itself. `base` makes the progress counter the slow check sees
 * grow across samples (a repeated value would keep an old deadline: a false time-out).
 *
 * Retry pacing: a failed compare-exchange is retried at once, with nothing in between -- no `pause`,
 * no store, no countdown (spin.h's polls come in groups), as in the bare loop and the peers' sources.
 * Compiled, the peers do pace: gcc stores the C port of core-to-core-latency's `bool` expected value
 * to the stack on every retry, and c2clat's responder reloads the flag's address. On the issue-23
 * host such a store moved CAS minima -4 % on one host placement and +1 % on another, and a `pause`
 * -7 % on the minimum but +12-17 % on the median, so any pacing would measure the pacing as much as
 * the line's transfer, and differently per machine (benchmarks/peer_line.py). The values the loops write and
 * expect are made opaque to the compiler once (CAS_OPAQUE), so each retry is `mov reg, eax; lock cmpxchg;
 * branch`: with constants it rebuilds 0 from the failed attempt's flag (sete; movzbl, one instruction more
 * per failed poll) and reloads the constant it writes on every round trip. */
#ifndef HOT_LOOP /* pingpong.c defines it; a benchmark that includes these loops alone gets this */
#define HOT_LOOP __attribute__((noinline, unused))
#endif
#ifndef CAS_OPAQUE
#if defined(__GNUC__)
#define CAS_OPAQUE(var) __asm__("" : "+r"(var))
#else
#define CAS_OPAQUE(var) ((void)0)
#endif
#endif

static HOT_LOOP int CAS_LOOP(cas_ping)(atomic_uint *flag, int64_t n, uint64_t base, corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY;
    int rc = 0;
    unsigned expected, zero = 0u, one = 1u, parked = PARKED;
    CAS_OPAQUE(zero);
    CAS_OPAQUE(one);
    CAS_OPAQUE(parked);
    atomic_store_explicit(flag, 1u, memory_order_relaxed); /* unpark: the first round trip starts */
    for (int64_t r = 1; r < n; r++) {
        CORELAT_SPIN_WHILE_NOT_X4(
            (expected = zero, atomic_compare_exchange_strong_explicit(
                                  flag, &expected, one, memory_order_relaxed, memory_order_relaxed)),
            s, base + (uint64_t)r, left, rc, out);
    }
    CORELAT_SPIN_WHILE_NOT_X4(
        (expected = zero, atomic_compare_exchange_strong_explicit(
                              flag, &expected, parked, memory_order_relaxed, memory_order_relaxed)),
        s, base + (uint64_t)n, left, rc, out);
out:
    return rc;
}

static HOT_LOOP int CAS_LOOP(cas_pong)(atomic_uint *flag, int64_t n, uint64_t base, corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY;
    int rc = 0;
    unsigned expected, zero = 0u, one = 1u;
    CAS_OPAQUE(zero);
    CAS_OPAQUE(one);
    for (int64_t r = 0; r < n; r++) {
        CORELAT_SPIN_WHILE_NOT_X4(
            (expected = one, atomic_compare_exchange_strong_explicit(
                                 flag, &expected, zero, memory_order_relaxed, memory_order_relaxed)),
            s, base + (uint64_t)r, left, rc, out);
    }
out:
    return rc;
}
