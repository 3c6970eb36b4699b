"""Peak memory and time of the commands that read a big value-only file (issue 34 item 18).

Run: python benchmarks/big_files.py [--quick]   (prints a table; figures go to benchmarks/RESULTS.md by
hand; --quick: 200 and 400 CPUs, for CI). The file is a synthetic one-value-per-pair matrix (another
tool's, imported) with a block structure: 8-CPU groups, quarters, across. Each command runs as its own
process; its peak resident memory is the kernel's (wait4's ru_maxrss), so it counts the interpreter,
NumPy and matplotlib too. The files are made by another child: a child's ru_maxrss starts at what its
parent held when it forked (the first version of this table read 668 MB for every 4,000-CPU command).
"matrices" is that peak over one n x n float64 matrix (n² x 8 bytes);
docs/results.md ("Big machines") states the budget.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import corelat

COMMANDS = (("report", ["report", "{a}"]), ("report --matrix", ["report", "--matrix", "{a}"]),
            ("compare", ["compare", "{a}", "{b}"]), ("plot", ["plot", "{a}", "-o", "{d}/p.png"]),
            ("plot --kind hist", ["plot", "--kind", "hist", "{a}", "-o", "{d}/h.png"]),
            ("report --html", ["report", "{a}", "--html", "{d}/r.html"]),
            ("report --pdf", ["report", "{a}", "--pdf", "{d}/r.pdf"]))


def big_matrix(n, seed=1):
    """Block-structured latencies: 8-CPU groups ~20 ns, quarters ~80 ns, ~200 ns across (as the test's)."""
    rng = np.random.default_rng(seed)
    c = np.arange(n)
    group, quarter = c // 8, c // max(1, n // 4)
    m = np.where(group[:, None] == group[None, :], 20.0,
                 np.where(quarter[:, None] == quarter[None, :], 80.0, 200.0))
    m += rng.random((n, n))
    return (m + m.T) / 2


def run(argv):
    """(exit status, peak RSS in bytes, seconds) of ``python -m corelat ARGV``."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "corelat", *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss * 1024, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 and 400 CPUs only")
    ap.add_argument("--make", nargs=3, metavar=("N", "PATH", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:  # in a child of its own, so that the commands' peaks start from nothing held
        n, path, seed = int(args.make[0]), args.make[1], int(args.make[2])
        corelat.LatencyResult.from_matrix(big_matrix(n, seed), name=f"big{n}-{seed}", kernel="cas").save(path)
        return
    sizes = (200, 400) if args.quick else (1000, 2000, 4000)
    print(f"{'CPUs':>5}  {'command':<16} {'peak MB':>8} {'matrices':>8} {'s':>6}  exit")
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            a, b = os.path.join(d, f"a{n}.npz"), os.path.join(d, f"b{n}.npz")
            for seed, path in enumerate((a, b)):
                subprocess.run([sys.executable, __file__, "--make", str(n), path, str(seed)], check=True)
            matrix = n * n * 8
            for what, argv in COMMANDS:
                status, peak, took = run([x.format(a=a, b=b, d=d) for x in argv])
                print(f"{n:>5}  {what:<16} {peak / 1e6:>8.0f} {peak / matrix:>8.1f} {took:>6.1f}  {status}",
                      flush=True)


if __name__ == "__main__":
    main()
