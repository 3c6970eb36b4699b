"""Why do the peers read below corelat's CAS at ~25 ns? Their loops on its line, the bare loop on theirs.

Every round sits at one vCPU placement, held by fidelity.Hold and labelled by the probe. It runs three
measurements, in an order rotated every round:

1. **In one process** (`fidelity nvloop`, INNER rounds, the order rotated): the bare CAS loop on one
   line (corelat's place: offset 0 of an mmap'ed page) against
   - "bare+store": the bare loop with a stack store per failed attempt (what gcc makes of
     nviennot_port.c's `bool e`);
   - "nv1": core-to-core-latency's bench 1 as the port has it (its start, its partner running free
     across samples, a 1-byte flag);
   - "nv4": the same loop with a 4-byte flag (gcc then keeps `e` in a register);
   - "c2w": c2clat's `-w` protocol;
   - "bare@bss" and "nv4@bss": the bare loop and nv4 on a line in the program's .bss, at page
     offset 640, where the port's flag is.

   Each is divided by the bare loop within the process, median over the inner rounds.
2. **Each in its own process:** the peers' programs (nviennot's port as shipped and with a 4-byte
   flag, patched as line_offset.py does; c2clat, only at its own 100 round trips per sample) and
   `fidelity cas` (corelat's kernel and the bare loop). Each is divided by that bare loop.
3. **Pages** (`fidelity pages`): the bare loop on 8 pages mapped once, at offsets 0 and 640. This
   gives the spread of the per-page medians within one process, as max / min.

Summary: the median over rounds [95 % CI], over all rounds, then over the faster and the slower half
of the rounds. The halves are split by the in-process bare loop, because a placement label such as
"~25 ns" spans host placements that differ in more than speed.

    python benchmarks/peer_line.py --rounds 30                    # ~25 ns, 100 samples x 1000
    python benchmarks/peer_line.py --rounds 30 --round-trips 100  # with c2clat
    python benchmarks/peer_line.py --quick                        # 2 rounds, no re-roll: for CI
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import (  # noqa: E402
    C2CLAT_RT, Hold, agree, build, build_peers, median_ci, placement, run_peer, run_rotated, sizes, the_pair)
from line_offset import build_nviennot  # noqa: E402

IN_PROCESS = ("bare+store", "nv1", "nv4", "c2w", "bare@bss", "nv4@bss")


def minima(exe, *args):
    """{who: [minimum per line]} of one run of the fidelity binary."""
    out = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, check=True, timeout=600)
    rows = {}
    for line in out.stdout.splitlines():
        who, mn = line.split()[:2]
        rows.setdefault(who, []).append(float(mn))
    return rows


def one_round(exe, nv, peers, a, b, rt, samples, inner, r):
    """{quantity: value} of one round, and its probes."""
    def in_process():
        rows = minima(exe, "nvloop", a, b, rt, samples, inner)
        got = {w: statistics.median(x / y for x, y in zip(rows[w], rows["bare"])) for w in IN_PROCESS}
        got["bare ns"] = statistics.median(rows["bare"])
        return got

    def pages():
        got = {}
        for off in (0, 640):
            rows = minima(exe, "pages", a, b, rt, samples, 2, 8, off)
            meds = [statistics.median(v) for v in rows.values()]
            got[f"pages@{off}"] = max(meds) / min(meds)
        return got

    def own():
        rows = minima(exe, "cas", a, b, rt, samples, 1)
        return {"corelat": rows["corelat"][0], "bare (cas)": rows["bare"][0]}

    steps = [in_process, pages, own]
    for name, nexe in nv.items():
        steps.append(lambda name=name, nexe=nexe: {name: float(subprocess.run(
            [str(nexe), "1", str(a), str(b), str(rt), str(samples)], capture_output=True, text=True,
            check=True, timeout=600).stdout.split()[1])})
    if "c2clat" in peers and rt == C2CLAT_RT:
        steps.append(lambda: (lambda v: {"c2clat": v[0]} if v else {})(
            run_peer("c2clat", peers["c2clat"], "cas", a, b, rt, samples)))
    return run_rotated(steps, r, exe, a, b)


def cell(xs):
    m, lo, hi = median_ci(xs)
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if xs else "-"


def report(rows, standalone):
    if not rows:
        print("no rounds kept")
        return
    cut = statistics.median(r["bare ns"] for r in rows)
    groups = [("all", rows), (f"bare < {cut:.1f} ns", [r for r in rows if r["bare ns"] < cut]),
              (f"bare >= {cut:.1f} ns", [r for r in rows if r["bare ns"] >= cut])]
    print("\n| on the bare loop's line (same process) / the bare loop | "
          + " | ".join(f"{g} ({len(rs)})" for g, rs in groups) + " |")
    print("|---|" + "---|" * len(groups))
    for w in IN_PROCESS:
        print(f"| {w} | " + " | ".join(cell([r[w] for r in rs]) for _, rs in groups) + " |")
    print("\n| own process / `fidelity cas`'s bare loop | " + " | ".join(g for g, _ in groups) + " |")
    print("|---|" + "---|" * len(groups))
    for w in ["corelat", *standalone]:
        cells = (cell([r[w] / r["bare (cas)"] for r in rs if w in r]) for _, rs in groups)
        print(f"| {w} | " + " | ".join(cells) + " |")
    print("\n| within one process, 8 pages: max / min of the per-page medians "
          "| median over rounds [95 % CI] |")
    print("|---|---|")
    for off in (0, 640):
        print(f"| flag at offset {off} | {cell([r[f'pages@{off}'] for r in rows])} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--placement", default="~25 ns", help='held placement, e.g. "~100 ns"; "any": no re-roll')
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--inner", type=int, default=3, help="rounds within the nvloop process")
    ap.add_argument("--round-trips", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    rounds, rt, samples = sizes(args, (2, 100, 10), (30, 1000, 100))
    inner = 1 if args.quick else args.inner
    want = "any" if args.quick else args.placement
    pair = the_pair("peer_line")
    if not pair:
        return
    a, b = pair
    kept, dropped = [], 0
    with tempfile.TemporaryDirectory(prefix="corelat-peer-line-") as tmp:
        tmp = Path(tmp)
        exe = build(tmp)
        nv = {k: v for k, v in build_nviennot(tmp).items() if "mmap" not in k}
        peers = build_peers(tmp)[0] if rt == C2CLAT_RT and not args.quick else {}
        with Hold((a, b)) as hold:
            for r in range(rounds):
                hold.next_round(want, exe, a, b)
                got, probes = one_round(exe, nv, peers, a, b, rt, samples, inner, r)
                ok = args.quick or (agree(probes) and (want == "any" or placement(min(probes)) == want))
                if args.verbose:
                    print(f"# round {r}{'' if ok else ' (dropped)'}: probes "
                          + " ".join(f"{x:.1f}" for x in probes) + "; "
                          + " ".join(f"{k}={v:.3f}" for k, v in got.items()), flush=True)
                if ok:
                    kept.append(got)
                else:
                    dropped += 1
    print(f"# CAS on CPUs {a} and {b}, placement {want} (held): {len(kept)} rounds kept, {dropped} dropped; "
          f"{samples} samples x {rt} round trips; {os.cpu_count()} CPUs")
    report(kept, [*nv, *(["c2clat"] if "c2clat" in peers else [])])


if __name__ == "__main__":
    main()
