"""A leak check that a real leak cannot pass and interpreter noise cannot fail.

A leak of one Python object per call grows the allocated blocks by at least one per call in every
round. Noise does not scale with the calls: a lazy cache filling, a free list topping up, an allocator
arena changing hands once. CI saw 326 blocks in one round of 1500 calls of the SMT entry point that
grew by none the next time, so one round is not enough: the check passes when any of a few rounds
stays under the bound, and a leak fails every round.
"""

import gc
import sys


def rss_kib():
    """This process's resident set, KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def growth(fn, calls):
    """(Python blocks, RSS KiB) more after ``calls`` calls of ``fn``, garbage collected."""
    gc.collect()
    blocks, rss = sys.getallocatedblocks(), rss_kib()
    for _ in range(calls):
        fn()
    gc.collect()
    return sys.getallocatedblocks() - blocks, rss_kib() - rss


def assert_flat(fn, calls, *, warm=200, max_blocks=None, max_rss_kib=1024, rounds=3):
    """Fail unless some round of ``calls`` calls grows by fewer than ``max_blocks`` blocks (half the
    calls unless given: a leak of one object per call grows by ``calls``) and ``max_rss_kib``."""
    max_blocks = calls // 2 if max_blocks is None else max_blocks
    for _ in range(warm):  # warm caches, allocator pools, interned objects
        fn()
    seen = []
    for _ in range(rounds):
        blocks, rss = growth(fn, calls)
        if blocks < max_blocks and rss < max_rss_kib:
            return
        seen.append((blocks, rss))
    raise AssertionError(
        f"every round of {calls} calls grew (blocks, RSS KiB): {seen}; "
        f"bounds {max_blocks} blocks, {max_rss_kib} KiB"
    )
