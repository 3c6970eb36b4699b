/* The CAS ping-pong loops of pingpong.c, included there once per compare-exchange flavour with
 * CAS_LOOP(name) naming the copy (no include guard on purpose). Relaxed orders: the protocol
 * publishes no data beyond the flag itself. `base` makes the progress counter the slow check sees
 * grow across samples (a repeated value would keep an old deadline: a false time-out). */
static __attribute__((noinline, unused)) int CAS_LOOP(cas_ping)(atomic_uint *flag, int64_t n, uint64_t base,
                                                                corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY;
    int rc = 0;
    unsigned expected;
    atomic_store_explicit(flag, 1u, memory_order_relaxed); /* unpark: the first round trip starts */
    for (int64_t r = 1; r < n; r++) {
        CORELAT_SPIN_WHILE_NOT(
            (expected = 0, atomic_compare_exchange_strong_explicit(flag, &expected, 1u, memory_order_relaxed,
                                                                   memory_order_relaxed)),
            s, base + (uint64_t)r, left, rc, out);
    }
    CORELAT_SPIN_WHILE_NOT(
        (expected = 0, atomic_compare_exchange_strong_explicit(flag, &expected, PARKED, memory_order_relaxed,
                                                               memory_order_relaxed)),
        s, base + (uint64_t)n, left, rc, out);
out:
    return rc;
}

static __attribute__((noinline, unused)) int CAS_LOOP(cas_pong)(atomic_uint *flag, int64_t n, uint64_t base,
                                                                corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY;
    int rc = 0;
    unsigned expected;
    for (int64_t r = 0; r < n; r++) {
        CORELAT_SPIN_WHILE_NOT(
            (expected = 1u, atomic_compare_exchange_strong_explicit(flag, &expected, 0u, memory_order_relaxed,
                                                                    memory_order_relaxed)),
            s, base + (uint64_t)r, left, rc, out);
    }
out:
    return rc;
}
