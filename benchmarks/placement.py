"""Where the line lives: every kernel with every home, on this machine; prints a table.

    python benchmarks/placement.py [--cpus 0,4] [--samples 50] [--quick]
    python benchmarks/placement.py --call-cost [--cpus 0,1]

For each kernel (cas, rw, read-clean, read-modified) and each home (initiator, responder, every NUMA
node, and a third CPU where one is free), the median over the measured cells of each cell's median,
and where move_pages found the pages. Figures go to benchmarks/RESULTS.md with the machine named;
numbers from an emulated machine (vmtopo.sh, TCG) say nothing about latency, only that every home
lands where it was asked.

``--call-cost``: what ``home="cpu:K"`` pays for its one kernel call per sample: the time per cas
sample of 1000 round trips as its own call against inside one call, with two threads and with a
third toucher (on the CPU after the pair's, or on the pair's first CPU where there is none).
"""

import argparse
import time

import numpy as np

import corelat
from corelat._system import home as _home


def call_cost(cpus, calls=100):
    from corelat._core.binding import extension
    from corelat._system.timer import timer_info
    from corelat._system.validate import KERNELS

    ext = extension()
    timer_info()
    code = getattr(ext, KERNELS["cas"][0])
    a, b = cpus[:2]
    free = [c for c in corelat.allowed_cpus() if c not in (a, b)]
    third = free[0] if free else a
    print(f"cas, 1000 round trips per sample, CPUs {a},{b}; {calls} calls of one sample vs one call of "
          f"{calls}")
    print(f"{'home':<40} {'own call':>10} {'inside one call':>16}")
    for label, home in (("initiator (2 threads)", (-1, 0, -1)),
                        (f"third toucher on CPU {third} (3 threads)", (-1, 2, third))):
        t0 = time.perf_counter()
        for _ in range(calls):
            ext.pingpong(a, b, code, 1000, 1, 0, 5.0, home=home)
        own = (time.perf_counter() - t0) / calls
        t0 = time.perf_counter()
        ext.pingpong(a, b, code, 1000, calls, 0, 5.0, home=home)
        inside = (time.perf_counter() - t0) / calls
        print(f"{label:<40} {own * 1e3:8.3f} ms {inside * 1e3:13.3f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpus", default=None, help="CPUs to measure (default: all allowed, at most 4)")
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="5 samples, 2 kernels: a smoke run")
    ap.add_argument("--call-cost", action="store_true", help="what cpu:K's one kernel call per sample costs")
    args = ap.parse_args()
    allowed = corelat.allowed_cpus()
    cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else allowed[:4]
    if args.call_cost:
        return call_cost(cpus)
    samples = 5 if args.quick else args.samples
    free = [c for c in allowed if c not in cpus]
    homes = ["initiator", "responder"] + [f"node:{k}" for k in _home.memory_nodes()] + (
        [f"cpu:{free[-1]}"] if free else [])
    kernels = ["cas", "read-modified"] if args.quick else ["cas", "rw", "read-clean", "read-modified"]
    topo = corelat.topology()
    print(f"machine: {topo.headline()}; CPUs {cpus}; {samples} samples per pair; timer "
          f"{corelat.timer_info()['name']}")
    print(f"{'kernel':<14} {'home':<11} {'median ns':>9}  {'min..max of cells':>18}  pages found on   s")
    for kernel in kernels:
        for home in homes:
            if home.startswith("cpu:") and kernel.startswith("read-"):
                continue  # the owner touches the lines itself (InputError)
            t0 = time.monotonic()
            r = corelat.measure(cpus, kernel=kernel, home=home, samples=samples, round_trips=100,
                                retest=False, timeout=10.0)
            off = ~np.eye(r.n, dtype=bool)
            med = r.median[off]
            found = sorted({int(v) for v in r.extras["home_node"][off]})
            print(f"{kernel:<14} {home:<11} {np.nanmedian(med):9.1f}  "
                  f"{np.nanmin(med):8.1f}..{np.nanmax(med):<8.1f}"
                  f"  node {','.join(map(str, found)):<10} {time.monotonic() - t0:4.1f}")


if __name__ == "__main__":
    main()
