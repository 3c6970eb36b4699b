"""What ``corelat.place()`` costs on a big machine: a synthetic 256-CPU block matrix, k = 8, 32, 128.

The matrix: 2 sockets x 8 groups (an L3, a CCD) x 16 CPUs, no SMT (so all 256 CPUs are candidates
and the search is the heuristic, not the enumeration): 30 ns inside a group, 90 ns across groups,
200 ns across sockets, 2 % noise. Each line gives the seconds of one ``place()`` (the best of the
repeats), the worst pair it found, the groups and sockets the chosen CPUs use, and whether that is
what the goal asks: ``close`` in one socket (a pair across costs 200 ns; inside a socket the worst
pair is a 90 ns one whatever the groups, so min-max does not count the groups, only the noise),
``spread`` over as many groups as there are CPUs to place.

Run: python benchmarks/place.py [--quick]   (prints a table; figures go to benchmarks/RESULTS.md by
hand; --quick: one repeat, for CI)
"""

import argparse
import time

import numpy as np

import corelat

SOCKETS, GROUPS, SIZE = 2, 8, 16
KS = (8, 32, 128)


def block_matrix(seed=1, noise=0.02):
    """(result, group of each CPU) of the synthetic machine."""
    rng = np.random.default_rng(seed)
    n = SOCKETS * GROUPS * SIZE
    c = np.arange(n)
    group, socket = c // SIZE, c // (GROUPS * SIZE)
    m = np.where(group[:, None] == group[None, :], 30.0,
                 np.where(socket[:, None] == socket[None, :], 90.0, 200.0))
    m = m * (1 + noise * rng.standard_normal((n, n)))
    m = (m + m.T) / 2
    np.fill_diagonal(m, np.nan)
    return corelat.LatencyResult.from_matrix(m, name="synthetic 256"), group


def timed(result, k, goal, repeats):
    best, placed = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        placed = corelat.place(result, k, goal=goal)
        best = min(best, time.perf_counter() - t)
    return best, placed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repeat (CI)")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else 3
    result, group = block_matrix()
    socket = group // GROUPS
    print(f"place() on {result.n} CPUs ({SOCKETS} sockets x {GROUPS} groups x {SIZE}), best of {repeats}")
    print(f"{'goal':<7} {'k':>4} {'seconds':>8} {'worst ns':>9} {'groups':>7} {'sockets':>8} {'as asked':>9}")
    ok = True
    for goal in ("close", "spread"):
        for k in KS:
            seconds, placed = timed(result, k, goal, repeats)
            groups = len({int(group[c]) for c in placed.cpus})
            sockets = len({int(socket[c]) for c in placed.cpus})
            good = sockets == 1 if goal == "close" else groups == min(k, SOCKETS * GROUPS)
            ok &= good
            print(f"{goal:<7} {k:>4} {seconds:>8.3f} {placed.worst:>9.1f} {groups:>7} {sockets:>8} "
                  f"{'yes' if good else 'NO':>9}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
