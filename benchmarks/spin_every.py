"""How often may a waiting thread run its slow check? corelat's kernels built with other intervals.

A spin-wait of corelat's counts its failed polls down and, every CORELAT_SPIN_EVERY_LOAD of them (the
load polls of rw, one-way and chase; csrc/spin.h), runs the slow check: the abort flag, the thread's
heartbeat, its CPU and the clock. This builds benchmarks/fidelity.c against copies of csrc/ with that
interval set to each value asked for, and runs every build's rw (or cas) kernel beside the bare loop
in the same process, the builds interleaved (their order reversed every other round), every round at
one vCPU placement held by fidelity.Hold and labelled by the probe. Per build: the median over
rounds of corelat / bare within the build's run [95 % CI], on the minimum and on the median.

    python benchmarks/spin_every.py                                   # 1024,8192,65536 at ~100 ns
    python benchmarks/spin_every.py --placement "~25 ns" --rounds 16
    python benchmarks/spin_every.py --quick                           # 2 rounds, 2 builds: for CI
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import REPO, Hold, agree, compiler, median_ci, placement, probe, sizes, the_pair  # noqa: E402

DEFINE = "#define CORELAT_SPIN_EVERY_LOAD "


def build(tmp, every):
    """fidelity.c against a copy of csrc/ whose load polls check every ``every`` polls."""
    src = tmp / f"csrc-{every}"
    shutil.copytree(REPO / "csrc", src)
    spin = src / "spin.h"
    text = spin.read_text()
    line = next(x for x in text.splitlines() if x.startswith(DEFINE))
    spin.write_text(text.replace(line, f"{DEFINE}{every}u"))
    exe = tmp / f"fidelity-{every}"
    kernels = sorted(str(p) for p in src.glob("*.c") if p.name not in ("module.c", "selftest.c"))
    subprocess.run([compiler(), "-std=c11", "-O2", "-D_GNU_SOURCE", "-pthread", f"-I{src}", "-o", str(exe),
                    str(REPO / "benchmarks" / "fidelity.c"), *kernels], check=True)
    return exe


def run(exe, kernel, a, b, rt, samples):
    out = subprocess.run([str(exe), kernel, str(a), str(b), str(rt), str(samples), "1"],
                         capture_output=True, text=True, check=True, timeout=600)
    rows = (line.split() for line in out.stdout.splitlines())
    return {who: (float(mn), float(med)) for who, mn, med in rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--every", default=None, help="intervals, e.g. 1024,8192,65536")
    ap.add_argument("--kernel", default="rw", choices=("rw", "cas"))
    ap.add_argument("--placement", default="~100 ns",
                    help='the held placement, e.g. "~25 ns"; "any": no re-roll')
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--round-trips", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    args = ap.parse_args(argv)
    every = [int(x) for x in (args.every or ("1024,8192" if args.quick else "1024,8192,65536")).split(",")]
    rounds, rt, samples = sizes(args, (2, 200, 20), (20, 1000, 100))
    want = "any" if args.quick else args.placement
    pair = the_pair("spin_every")
    if not pair:
        return
    a, b = pair
    with tempfile.TemporaryDirectory(prefix="corelat-spin-every-") as tmp:
        exes = {e: build(Path(tmp), e) for e in every}
        first = exes[every[0]]
        kept, dropped = {e: [] for e in every}, 0
        label_of = {}
        with Hold((a, b)) as hold:
            for r in range(rounds):
                hold.next_round(want, first, a, b)
                probes, got = [probe(first, a, b)], {}
                for e in every if r % 2 == 0 else every[::-1]:
                    got[e] = run(exes[e], args.kernel, a, b, rt, samples)
                    probes.append(probe(first, a, b))
                if not agree(probes):
                    dropped += 1
                    continue
                label_of[r] = placement(min(probes))
                for e in every:
                    kept[e].append(got[e])
    labels = sorted(set(label_of.values()))
    print(f"# {args.kernel}, CPUs {a} and {b}: {rounds} rounds of {samples} samples x {rt} round trips, "
          f"placement {want} (held), rounds kept at {', '.join(labels) or 'none'}; {dropped} dropped")
    print("| polls per slow check | rounds | corelat / bare, min [95 % CI] "
          "| corelat / bare, median [95 % CI] |")
    print("|---:|---:|---|---|")
    for e in every:
        cells = []
        for i in (0, 1):
            m, lo, hi = median_ci([x["corelat"][i] / x["bare"][i] for x in kept[e]])
            cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
        print(f"| {e:,} | {len(kept[e])} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
