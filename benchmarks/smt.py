"""SMT figures: this machine's Hyper-threads table, and the busy loops alone vs together.

The second part runs the busy-sibling comparison on the first two allowed CPUs whatever they are
(on a machine without SMT: two separate cores, the baseline a sibling pair is compared with).

Run: python benchmarks/smt.py [--duration SECONDS] [--repeat N]
     (prints text; figures go to benchmarks/RESULTS.md by hand)
"""

import argparse
import platform

import numpy as np

import corelat
from corelat._measure import smt as smt_mod
from corelat._system import sysinfo as _sysinfo


def machine():
    md = _sysinfo.collect()
    topo = corelat.topology()
    print(f"CPU: {md['cpu_model']}; topology: {topo.headline()}; hypervisor: {md['hypervisor']}; "
          f"SMT active: {md['smt_active']}")
    print(f"kernel {md['kernel_release']}, Python {platform.python_version()}, NumPy {np.__version__}, "
          f"timer {corelat.timer_info()['name']}")


def busy_comparison(a, b, duration, repeat):
    """Median (min-max) M iterations/s per thread of each loop: each CPU alone, then both."""
    print(f"\n## Busy loops on CPUs {a} and {b}: alone vs together ({repeat} runs of {duration} s, median"
          " [min-max], M iterations/s per thread)\n")
    head = ("loop", f"CPU {a} alone", f"CPU {b} alone", f"CPU {a} together", f"CPU {b} together", "slowdown")
    rows = []
    for loop in smt_mod.LOOPS:
        alone = np.array([[smt_mod.throughput([c], loop, duration=duration)[0] for c in (a, b)]
                          for _ in range(repeat)]) / 1e6
        both = np.array([smt_mod.throughput([a, b], loop, duration=duration) for _ in range(repeat)]) / 1e6

        def cell(x):
            return f"{np.median(x):.0f} [{np.min(x):.0f}-{np.max(x):.0f}]"

        slow = np.median(alone, axis=0).mean() / np.median(both, axis=0).mean()
        rows.append((loop, cell(alone[:, 0]), cell(alone[:, 1]), cell(both[:, 0]), cell(both[:, 1]),
                     f"{slow:.2f}x"))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=0.2, help="seconds per busy-loop run (default 0.2)")
    p.add_argument("--repeat", type=int, default=5, help="runs of each busy-loop case (default 5)")
    p.add_argument("--quick", action="store_true", help="5 ms busy loops, one run (for CI)")
    args = p.parse_args()
    if args.quick:
        args.duration, args.repeat = 0.005, 1
    machine()
    print("\n## corelat.smt()\n")
    print(corelat.smt(duration=args.duration).table())
    cpus = corelat.allowed_cpus()
    if len(cpus) >= 2:
        busy_comparison(cpus[0], cpus[1], args.duration, args.repeat)


if __name__ == "__main__":
    main()
