"""Lock and atomic costs on this machine (cpuperf's two tables), and corelat locks against cpuperf.

    python benchmarks/locks.py [-d SECONDS] [--repeat N] [--quick] [CPU ...]
    python benchmarks/locks.py --cpuperf [--rounds N] [-d SECONDS] [--tests A,B] [--modes own,shared]
                                         [--cpus A,B] [--readme] [--quick]

The first prints the machine, then for each mode (every test uncontended, then shared) the full table,
and with --repeat the run-to-run spread of avg ns per test, since a VM's vCPUs wander. ``--quick``
runs both: the tables at 5 ms per test, and the comparison's quick form.

``--cpuperf``: ../shared/peers/cpuperf side by side, test by test, interleaved. cpuperf is built (make
-f GNUmakefile) in a temporary copy, never copied into the project. For each test with a cpuperf
counterpart, each mode (uncontended: one object per thread; shared: one object for the pair) and each
round, both tools run on the same pair of CPUs, one after the other (the order alternates by round),
with equal durations: cpuperf ``-a -d D -t '^NAME$' A B`` (uncontended) or ``-a -s -d D -t '^NAME$'
A,B`` (shared: today's cpuperf makes one group per positional list, so corelat's ``-s A B`` is cpuperf's
``-s A,B``), corelat ``locks -k NAME -d D [-s] A,B``.

Both are put on cpuperf's definitions before the ratio: sermin = the fastest thread's serialized
minimum minus the baseline's; avg = the threads' mean cycles per call minus the baseline's sermin
(what cpuperf subtracts from its avg column). Printed per test and mode: the median over rounds of
each tool's figure, the ratio corelat / cpuperf (median, and min-max over rounds), and why a ratio
cannot be close (a figure under 20 timer steps: cpuperf times one call per bracket).

Without ../shared/peers/cpuperf (a clone of the project alone, CI) it says so and exits 0.
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from corelat._measure.locks import locks
from corelat._results.locks_names import CPUPERF, TESTS
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import timer_info

HERE = pathlib.Path(__file__).resolve().parent
#: cpuperf's tests that touch shared data (its `-s` runs only those).
CPUPERF_SHARED = ("inc-atomic", "inc-atomic-cst", "lock-", "stack-")
QUICK_TESTS = ["inc-atomic", "lock-pthread-mutex-default"]
#: A figure the timer resolves: this many timer steps (cpuperf times one call per bracket).
RESOLVED_STEPS = 20


def find_cpuperf():
    """The cpuperf source folder, or None."""
    env = os.environ.get("CORELAT_SHARED")
    for root in ([pathlib.Path(env)] if env else []) + [HERE.parent.parent / "shared"]:
        if (root / "peers" / "cpuperf" / "cpuperf.c").is_file():
            return root / "peers" / "cpuperf"
    return None


def build_cpuperf(src, tmp):
    """Build cpuperf in a copy under ``tmp``; the binary's path."""
    dst = pathlib.Path(tmp) / "cpuperf"
    shutil.copytree(src, dst)
    subprocess.run(["make", "-f", "GNUmakefile"], cwd=dst, check=True, capture_output=True, timeout=300)
    return dst / "cpuperf"


def pairs():
    """(corelat name, cpuperf name, cpuperf DESC to match or None) for every test cpuperf has."""
    out = []
    for name in TESTS:
        cp = CPUPERF.get(name)
        if not cp or cp.startswith("corelat's own"):
            continue
        base, _, desc = cp.partition(" (")
        out.append((name, base, desc[:-1] if desc else None))
    return out


def cpuperf_rows(text):
    """cpuperf's summary rows: [(name, desc, sermin cycles, avg cycles)]."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 11 and f[0] == "-" and f[1] == "-":
            try:
                rows.append((f[10], " ".join(f[11:]), float(f[8]), float(f[6])))
            except ValueError:
                continue
    return rows


def run_cpuperf(binary, cpuperf_name, desc, cpus, shared, seconds, hz):
    """cpuperf's (sermin, avg) cycles for one test, baseline subtracted its way; None if absent."""
    a, b = cpus
    where = [f"{a},{b}"] if shared else [str(a), str(b)]
    cmd = [str(binary), "-a", "-d", str(int(max(1, round(seconds)))), "-f", str(int(hz)),
           "-t", f"^{cpuperf_name}$"] + (["-s"] if shared else []) + where
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    for name, d, sermin, avg in cpuperf_rows(p.stdout):
        if name == cpuperf_name and (desc is None or d == desc):
            return sermin, avg
    return None


def run_corelat(name, cpus, shared, seconds):
    """corelat's (sermin, avg) cycles on cpuperf's definitions, and its sermin bracket's timer steps
    over the baseline (what says whether the timer resolves it)."""
    r = locks(list(cpus), kernel=name, shared=shared, duration=seconds, serial_duration=min(seconds, 3.0))
    th = r.threads
    base = th[th["name"] == "baseline"]
    mine = th[th["name"] == name]
    # cpuperf's baseline row is its raw figures; every other row has the baseline's sermin taken off
    base_ser = 0.0 if name == "baseline" else float(base["sermin_ticks_raw"].min())
    sermin = float(mine["sermin_ticks_raw"].min()) - base_ser
    avg = float(mine["avg_ticks_raw"].mean()) - base_ser
    return sermin, avg, float(r.row(name)["sermin_steps"])


def one_round(binary, name, cp, desc, cpus, shared, seconds, hz, flip):
    """Both tools once, in the order ``flip`` says; (corelat, cpuperf) or None where a tool had none."""
    runs = [lambda: run_corelat(name, cpus, shared, seconds),
            lambda: run_cpuperf(binary, cp, desc, cpus, shared, seconds, hz)]
    if flip:
        theirs, ours = runs[1](), runs[0]()
    else:
        ours, theirs = runs[0](), runs[1]()
    return ours, theirs


def _ratio_cells(ours, theirs):
    """median ours, median theirs, median ratio and its min-max, for one figure over rounds."""
    o, t = np.array(ours), np.array(theirs)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = o / t
    ok = np.isfinite(r) & (t > 0)
    if not ok.any():
        return f"{np.median(o):8.1f} {np.median(t):8.1f} {'-':>6} {'':>13}"
    return (f"{np.median(o):8.1f} {np.median(t):8.1f} {np.median(r[ok]):6.2f} "
            f"[{r[ok].min():5.2f}-{r[ok].max():5.2f}]")


def _why(steps, theirs_ser, step):
    """Why a sermin ratio cannot be read, or ""."""
    notes = []
    if np.median(steps) < RESOLVED_STEPS:
        notes.append(f"corelat sermin {np.median(steps):.1f} steps: at the timer's resolution")
    if np.median(theirs_ser) < RESOLVED_STEPS * step:
        notes.append(f"cpuperf sermin under {RESOLVED_STEPS} steps of {step:g} ticks (one call per bracket)")
    return "; ".join(notes)


def compare(binary, tests, modes, cpus, seconds, rounds, hz, step):
    """Run and print the table; returns the rows printed."""
    print(f"{'test':<36} {'mode':<6} {'n':>2} | {'sermin':^46} | {'avg':^46} | note")
    print(f"{'':<36} {'':<6} {'':>2} | {'corelat  cpuperf  ratio  [min-max]':^46} | "
          f"{'corelat  cpuperf  ratio  [min-max]':^46} |")
    table = []
    for name, cp, desc in tests:
        for mode in modes:
            shared = mode == "shared"
            if shared and not name.startswith(CPUPERF_SHARED):
                continue
            got = [one_round(binary, name, cp, desc, cpus, shared, seconds, hz, k % 2) for k in range(rounds)]
            got = [(o, t) for o, t in got if o and t]
            if not got:
                print(f"{name:<36} {mode:<6}  0 | cpuperf printed no row for it")
                continue
            o_ser = [o[0] for o, _ in got]
            t_ser = [t[0] for _, t in got]
            line = (f"{name:<36} {mode:<6} {len(got):>2} | {_ratio_cells(o_ser, t_ser)} | "
                    f"{_ratio_cells([o[1] for o, _ in got], [t[1] for _, t in got])} | "
                    f"{_why([o[2] for o, _ in got], t_ser, step)}")
            print(line, flush=True)
            table.append(line)
    return table


def readme_example(binary, cpus, seconds, hz):
    """cpuperf's README example (-t lock-mutex 2 4, then -s) on this machine's pair, both tools."""
    a, b = cpus
    d = str(int(max(1, round(seconds))))
    for shared in (False, True):
        where = [f"{a},{b}"] if shared else [str(a), str(b)]
        cmd = [str(binary), "-a", "-d", d, "-f", str(int(hz)), "-t", "^lock-pthread-mutex-default$"] + (
            ["-s"] if shared else []) + where
        print("$ " + " ".join(["cpuperf"] + cmd[1:]))
        print(subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False).stdout.rstrip())
        print(f"$ corelat locks -t lock-pthread-mutex-default -d {d}{' -s' if shared else ''} {a} {b}")
        r = locks([a, b], kernel="lock-pthread-mutex-default", shared=shared, duration=float(d))
        print(r.table())


def against_cpuperf(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds per test and mode (default 3)")
    p.add_argument("-d", "--duration", type=float, default=1.0, help="seconds per phase (cpuperf: >= 1)")
    p.add_argument("--tests", help="comma-separated corelat test names (default: every one cpuperf has)")
    p.add_argument("--modes", default="own,shared", help="own, shared or both (default)")
    p.add_argument("--cpus", help="the pair, A,B (default: the first two allowed CPUs)")
    p.add_argument("--readme", action="store_true", help="also reproduce cpuperf's README example")
    p.add_argument("--quick", action="store_true", help="two tests, one round, uncontended (for CI)")
    args = p.parse_args(argv)
    src = find_cpuperf()
    if src is None:
        print("locks.py --cpuperf: no ../shared/peers/cpuperf (nor $CORELAT_SHARED/peers/cpuperf) beside "
              "this clone: nothing to compare with; skipped")
        return 0
    allowed = sorted(os.sched_getaffinity(0))
    cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else allowed[:2]
    if len(cpus) != 2:
        print("locks.py --cpuperf: needs a pair of CPUs (--cpus A,B)", file=sys.stderr)
        return 2
    tests = pairs()
    if args.quick:
        args.rounds, args.duration, args.modes = 1, 1.0, "own"
        tests = [t for t in tests if t[0] in QUICK_TESTS]
    elif args.tests:
        wanted = set(args.tests.split(","))
        tests = [t for t in tests if t[0] in wanted]
    timer = timer_info()
    hz = timer["ticks_per_ns"] * 1e9
    md = _sysinfo.collect()
    print(f"# {md['cpu_model']}, {md['cpu_count']} CPUs, hypervisor {md['hypervisor']}, kernel "
          f"{md['kernel_release']}; CPUs {cpus[0]} and {cpus[1]}; timer {timer['name']} {hz / 1e6:.1f} MHz, "
          f"step {timer.get('resolution_ticks', 1.0):g} ticks; cycles = timer ticks; {args.duration:g} s "
          f"per phase, {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        binary = build_cpuperf(src, tmp)
        compare(binary, tests, args.modes.replace("own", "uncontended").split(","), cpus, args.duration,
                args.rounds, hz, float(timer.get("resolution_ticks", 1.0)))
        if args.readme:
            readme_example(binary, cpus, args.duration, hz)
    return 0


def tables(argv):
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--cpuperf" in argv:
        argv.remove("--cpuperf")
        return against_cpuperf(argv)
    status = tables(argv)
    if "--quick" in argv:  # CI: the comparison runs too (it says so and skips without cpuperf)
        status = status or against_cpuperf(["--quick"])
    return status


if __name__ == "__main__":
    sys.exit(main())
