"""Lock and atomic costs on this machine: every test uncontended, then shared (cpuperf's two tables).

    python benchmarks/locks.py [-d SECONDS] [--repeat N] [--quick] [CPU ...]

Prints the machine, then for each mode the full table (and with --repeat, the run-to-run spread of
avg ns per test, since a VM's vCPUs wander). Figures go to benchmarks/RESULTS.md, section "Locks".
"""

import argparse
import sys

import numpy as np

from corelat._measure.locks import locks
from corelat._system import sysinfo as _sysinfo


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cpus", nargs="*", help="CPU lists (default: all allowed)")
    p.add_argument("-d", "--duration", type=float, default=0.5, help="seconds per test (default 0.5)")
    p.add_argument("--repeat", type=int, default=1, help="runs per mode; the table shown is the first")
    p.add_argument("--quick", action="store_true",
                   help="5 ms per test (for CI: the script runs, figures not judged)")
    args = p.parse_args(argv)
    if args.quick:
        args.duration = 0.005
    cpus = ",".join(args.cpus) if args.cpus else None
    md = _sysinfo.collect()
    print(f"# {md['cpu_model']}, {md['cpu_count']} CPUs, hypervisor {md['hypervisor']}, "
          f"kernel {md['kernel_release']}, governor {md['governor']}, SMT {md['smt_active']}")
    for shared in (False, True):
        runs = [locks(cpus, shared=shared, duration=args.duration) for _ in range(args.repeat)]
        print()
        print(runs[0].table(per_thread=True))
        if runs[0].violations:
            print(f"!! mutual exclusion violated: {', '.join(runs[0].violations)}")
        if args.repeat > 1:
            ns = np.array([r.data["avg_ns"] for r in runs])
            print(f"# avg ns over {args.repeat} runs: name min median max")
            for j, name in enumerate(runs[0].tests):
                col = ns[:, j]
                print(f"#   {name:<28} {col.min():8.2f} {np.median(col):8.2f} {col.max():8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
