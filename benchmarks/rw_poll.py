"""Does the rate of the waiting side's polls change what the rw (load/store) ping-pong reads?

Issue 23 found corelat's rw kernel reading 2-13 % *below* the bare reference loop of
benchmarks/fidelity.c. corelat's rw poll runs the countdown to its next abort/migration check
between polls (two instructions more than the bare loop's load, compare, branch). This runs the
bare loop with 0, 2, 4, 8 and 16 `nop`s after each failed poll, on both sides, the bare loop with its
two lines 64 bytes apart (c2clat's layout: one 128-byte pair of lines; corelat and the others keep
them 256 apart), and corelat's rw kernel called directly and through `corelat.measure()`,
interleaved on one pair
(`benchmarks/fidelity.c rwpoll`), every tool run bracketed by fidelity.py's CAS
probe that labels the vCPU placement; rounds whose probes disagree are dropped. Per placement: the
median over rounds of each loop's minimum and median relative to bare+0 within the round [95 % CI].

    python benchmarks/rw_poll.py             # 30 rounds of 100 samples x 1000 round trips
    python benchmarks/rw_poll.py --quick     # 2 rounds of 50 x 200, held: for CI
    python benchmarks/rw_poll.py --hold --placement "~100 ns"   # placement held (fidelity.Hold)
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import Hold, NoHold, agree, build, median_ci, placement, probe, sizes, the_pair  # noqa: E402

LOOPS = ["bare+0", "bare+2", "bare+4", "bare+8", "bare+16", "bare+0@64", "corelat", "measure()"]


def through_measure(a, b, rt, samples):
    """(min, median) of the pair through corelat.measure(): the installed package, its defaults
    (warm-up, the home of the lines, the buffer) otherwise."""
    import corelat

    r = corelat.measure(cpus=[a, b], kernel="rw", samples=samples, round_trips=rt, retest=False)
    return float(r.min[0, 1]), float(r.median[0, 1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpus", default=None, help="the pair, e.g. 0,1 (default: the first two allowed CPUs)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--round-trips", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--hold", action="store_true",
                    help="keep the pair's vCPUs busy so the host keeps their placement within a round "
                         "(fidelity.Hold)")
    ap.add_argument("--placement", default=None, metavar="LABEL",
                    help='with --hold: re-roll before each round until the probe reads it, e.g. "~100 ns"')
    args = ap.parse_args(argv)
    if args.placement and not args.hold:
        ap.error("--placement needs --hold")
    rounds, rt, samples = sizes(args, (2, 200, 50), (30, 1000, 100))
    pair = the_pair("rw_poll")
    if not pair:
        return
    a, b = map(int, args.cpus.split(",")) if args.cpus else pair
    with tempfile.TemporaryDirectory(prefix="corelat-rwpoll-") as tmp:
        tmp = Path(tmp)
        exe = build(tmp)
        by_place, dropped = {}, 0
        with Hold((a, b)) if args.hold or args.quick else NoHold() as hold:
            for _ in range(rounds):
                hold.next_round(args.placement, exe, a, b)
                before = probe(exe, a, b)
                out = subprocess.run([str(exe), "rwpoll", str(a), str(b), str(rt), str(samples), "1"],
                                     capture_output=True, text=True, check=True, timeout=600)
                after = probe(exe, a, b)
                rows = (line.split() for line in out.stdout.splitlines())
                values = {who: (float(mn), float(med)) for who, mn, med in rows}
                values["measure()"] = through_measure(a, b, rt, samples)
                probes = [before, after, probe(exe, a, b)]
                if not agree(probes):
                    dropped += 1
                    continue
                by_place.setdefault(placement(min(probes)), []).append(values)
    print(f"# rw poll pacing on CPUs {a} and {b}: {rounds} rounds of {samples} samples x {rt} round trips; "
          f"{dropped} dropped (placement changed)")
    print("| placement | rounds | loop | min ns (median over rounds) | min / bare+0 [95 % CI] "
          "| median / bare+0 [95 % CI] |")
    print("|---|---|---|---:|---|---|")
    for label, kept in sorted(by_place.items(), key=lambda kv: float(kv[0][1:-3])):
        for loop in LOOPS:
            cells = []
            for i in (0, 1):
                m, lo, hi = median_ci([r[loop][i] / r["bare+0"][i] for r in kept])
                cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
            own, _, _ = median_ci([r[loop][0] for r in kept])
            print(f"| {label} | {len(kept)} | {loop} | {own:.2f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
