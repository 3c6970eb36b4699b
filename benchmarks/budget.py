"""Does a time budget hold, and what does it plan? (A benchmark, not a test.)

Two tables. **This machine**: ``corelat.measure(budget=B)`` for several budgets, the wall time of the
call against the budget (set-up included: topology, timer calibration, warm-up, the assembly), with
settings that make the budget bind (precision 0.0001, a cap of 1000 s per pair: every pair would run
far past it) and with the default settings (where the budget may not bind at all); then the command,
``corelat --budget B``, timed from outside, interpreter start-up included.

**Simulated machines** (``benchmarks/scale.py``'s pair measurer and fake clock): a 128-CPU two-socket
machine (2 packages x 8 L3 groups x 4 cores x 2 threads) measured with ``strategy="sample"`` within
a 30 s budget: per relation (SMT siblings, same L3, across L3s of a package, across packages) its
classes, the classes reached and the pairs measured per class; then the same machine with the
latency across packages slowed by 25 %: the medians of the partial result per relation, against the
healthy machine's, show whether the slowed class is still seen.

    python benchmarks/budget.py [--quick]   # --quick: two short budgets here, a 64-CPU machine
"""

import argparse
import subprocess
import sys
import time

import numpy as np

import corelat
from corelat._measure import sampling as _sampling
from corelat._measure import sweep as _sweep
from corelat._system import validate as _validate

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import scale  # noqa: E402 - the simulated machine of benchmarks/scale.py

#: Settings under which every pair would run far past any budget here: the budget is what stops it.
BINDING = {"precision": 0.0001, "max_time_per_pair": 1000.0, "max_samples": 10**6}

#: The relations a class's key starts with, as the table names them.
RELATIONS = {"smt": "SMT siblings", "l3": "same L3", "node": "across L3s, one package",
             "package": "across L3s, one package", "none": "across packages"}


def here(budgets):
    print("this machine: corelat.measure(budget=B), wall time of the call (set-up included; corelat's "
          "imports paid before, by a first call)")
    print(f"{'budget':>8} {'settings':>10} {'wall':>8} {'wall/budget':>11} {'measured':>8} "
          f"{'not reached':>11} {'pairs ended by':>14}")
    cpus = sorted(corelat.allowed_cpus())
    corelat.measure(cpus, budget=0.01)  # the lazy imports of a first call are not the budget's
    for b in budgets:
        for label, kw in (("binding", BINDING), ("default", {})):
            t0 = time.perf_counter()
            r = corelat.measure(cpus, budget=b, **kw)
            wall = time.perf_counter() - t0
            md = r.metadata["budget"]
            capped = r.metadata["sampling"]["pairs_target_not_met"]
            ended = f"{capped} cap, {md['pairs_measured'] - capped} target"
            print(f"{b:7g}s {label:>10} {wall:7.3f}s {wall / b:10.1%} {md['pairs_measured']:8d} "
                  f"{md['pairs_not_reached']:11d} {ended:>14}", flush=True)
    print("the command: corelat --budget B (binding settings), timed from outside, Python's start-up "
          "included")
    print(f"{'budget':>8} {'wall':>8} {'wall/budget':>11} {'exit':>5}")
    for b in budgets:
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "corelat", "--budget", str(b), "--precision", "0.0001",
                            "--max-time-per-pair", "1000", "--max-samples", str(10**6)],
                           capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        print(f"{b:7g}s {wall:7.3f}s {wall / b:10.1%} {p.returncode:5d}", flush=True)


def relation(key):
    return RELATIONS.get(key[0], str(key[0]))


def simulated(l3_per_package, budget):
    rows, truth, kind = scale.machine(l3_per_package=l3_per_package)
    n = len(rows)
    _validate.allowed_cpus = lambda: list(range(n))  # the measurer is simulated: no CPU is pinned
    classes = _sampling.pair_classes(list(range(n)), topology=rows)
    across = np.array([[rows[i]["package"] != rows[j]["package"] for j in range(n)] for i in range(n)])
    out = {}
    for label, t in (("healthy", truth), ("across packages +25 %", np.where(across, truth * 1.25, truth))):
        warmup = max(1, _validate.FIRST_CHUNK // 10)
        sim = scale.SimulatedPairs(t, kind, warmup)
        t0 = time.perf_counter()
        r = _sweep.measure_with(sim, list(range(n)), clock=sim.clock, strategy="sample", topology=rows,
                                budget=budget)
        out[label] = (r, sim.now, time.perf_counter() - t0)
    r, used, wall = out["healthy"]
    md = r.metadata["budget"]
    print(f"\nsimulated: {n} CPUs = 2 packages x {l3_per_package} L3 x 4 cores x 2 threads, "
          f"{n * (n - 1) // 2} pairs, {len(classes)} classes, budget {budget:g} s")
    print(f"used {md['used_s']:.2f} s of simulated time ({used:.2f} s by the measurer), {wall:.1f} s of "
          f"real time; {md['pairs_measured']} pairs measured, {md['pairs_estimated']} estimated, "
          f"{md['pairs_not_reached']} not reached; {md['classes_reached']} of {md['classes']} classes "
          f"reached ({'complete' if md['complete'] else 'cut by the budget'})")
    measured = {p for p in _measured_pairs(r)}
    by = {}
    for key, pairs in classes.items():
        got = sum(1 for p in pairs if p in measured)
        by.setdefault(relation(key), []).append(got)
    print(f"{'relation':26} {'classes':>7} {'reached':>7} {'pairs/class min':>15} {'median':>6} {'max':>4}")
    for name, got in by.items():
        g = np.array(got)
        print(f"{name:26} {g.size:7d} {int((g > 0).sum()):7d} {int(g.min()):15d} {np.median(g):6.1f} "
              f"{int(g.max()):4d}")
    print("a slowed class in a budget: median of the measured pairs per relation, slowed over healthy")
    slow = out["across packages +25 %"][0]
    for name in by:
        ratio = _relation_median(slow, classes, name) / _relation_median(r, classes, name)
        print(f"{name:26} {ratio:6.3f}")


def _measured_pairs(r):
    low = np.argwhere(np.tril(r.flags & corelat.PairFlag.MEASURED, -1))
    return [(int(i), int(j)) for i, j in low]


def _relation_median(r, classes, name):
    measured = set(_measured_pairs(r))
    values = [r.median[p] for key, pairs in classes.items() if relation(key) == name
              for p in pairs if p in measured]
    return float(np.median(values))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two short budgets here and a 64-CPU machine")
    args = ap.parse_args(argv)
    here([0.5, 1.0] if args.quick else [0.5, 1.0, 2.0, 5.0, 10.0])
    simulated(4 if args.quick else 8, 30.0)
    simulated(4 if args.quick else 8, 3.0)  # a budget that binds: every class first, then more
    return 0


if __name__ == "__main__":
    sys.exit(main())
