"""Size and time of the report (issue 21): HTML of a 64-CPU and a 192-CPU machine, a PDF, a fleet.

Run: python benchmarks/report.py [--quick]   (prints a table; figures go to benchmarks/RESULTS.md by hand;
--quick: 64 CPUs and a 100-node fleet only, for CI). Machines are synthetic (two packages, groups of
8 cores, SMT siblings) with samples, so the distribution is drawn; the fleet is corelat/_fleet/synth.py's
copies of a 64-CPU machine. The limits the issue sets are checked and printed beside the figures.
"""

import argparse
import os
import tempfile
import time

import numpy as np

import corelat
from corelat import LatencyResult
from corelat._fleet import synth

#: (what, limit in bytes, limit in seconds or None)
LIMITS = {"html-64": (1.5e6, None), "html-192": (4e6, 5.0), "fleet-1000": (8e6, None)}


def machine(n, samples=20, seed=0):
    """A synthetic n-CPU result: 2 packages, L3 groups of 16 CPUs, SMT sibling pairs, with samples."""
    rng = np.random.default_rng(seed)
    cpu = np.arange(n)
    core = cpu % (n // 2)  # CPU k and k + n/2 are SMT siblings
    pkg, grp = core // (n // 4), core // 8
    base = np.where(pkg[:, None] != pkg[None, :], 140.0, np.where(grp[:, None] != grp[None, :], 60.0, 35.0))
    base = np.where(core[:, None] == core[None, :], 8.0, base)
    s = base[:, :, None] * np.exp(0.03 * rng.standard_normal((n, n, samples)))
    s = (s + s.transpose(1, 0, 2)) / 2
    s[cpu, cpu] = np.nan
    md = {"cpu_model": f"Synthetic {n}-CPU machine", "symmetric": True,
          "latency": "one-way = round-trip time / 2"}
    return LatencyResult(cpus=tuple(cpu), kernel="cas", samples=s, metadata=md, name=f"syn{n}")


def timed(what, path):
    t, c = time.perf_counter(), time.process_time()
    corelat.report(what, path)
    return time.perf_counter() - t, time.process_time() - c, os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="64 CPUs and a 100-node fleet only")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        corelat.report(machine(16), os.path.join(d, "warm.html"))  # matplotlib's import and font cache
        sizes = (64,) if args.quick else (64, 192)
        for n in sizes:
            r = machine(n)
            rows.append((f"html-{n}", *timed(r, os.path.join(d, f"m{n}.html"))))
            rows.append((f"pdf-{n}", *timed(r, os.path.join(d, f"m{n}.pdf"))))
        count = 100 if args.quick else 1000
        base = machine(64)
        nodes = synth.copies(LatencyResult.from_matrix(base.median, base.cpus, name="base",
                                                       metadata={"cpu_model": "Synthetic"}), count, seed=1)
        f = corelat.fleet(nodes, name="synthetic")
        rows.append((f"fleet-{count}", *timed(f, os.path.join(d, "fleet.html"))))
    print("| report | wall s | CPU s | size (MB) | limit (on CPU s) |")
    print("|--------|--------|-------|-----------|-------|")
    failed = False
    for what, wall, s, size in rows:
        lim = LIMITS.get(what)
        ok = lim is None or (size < lim[0] and (lim[1] is None or s < lim[1]))
        failed |= not ok
        words = "" if lim is None else f"< {lim[0] / 1e6:g} MB" + (f", < {lim[1]:g} s" if lim[1] else "")
        print(f"| {what} | {wall:.2f} | {s:.2f} | {size / 1e6:.2f} | {words}{'' if ok else ' EXCEEDED'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
