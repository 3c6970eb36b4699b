"""Fidelity: does corelat's measuring loop add anything to what it measures?

corelat's ping-pong kernels (cas, rw) run against bare reference loops in benchmarks/fidelity.c: the
same protocol, lines and memory orders with no abort, time-out, heartbeat or CPU checks at all.
Both run interleaved in one process on the same pair, round after round, alternating who goes first;
the ratio corelat / bare of the per-sample minimum and median is taken within each round and its
median over the rounds is printed (1.00 = no cost; the target is <= 1.02). Where ../shared/peers/ is
present (or CORELAT_SHARED points at it), the same rounds also run the peers at equal sizes: the C
port of core-to-core-latency's benches 1 (CAS) and 2 (load/store), and c2clat (its fixed 100 round
trips per sample, minimum only; -w for CAS).

Self-contained: builds its C with the compiler it finds (``$CC``, cc, gcc, clang) into a temporary
folder from csrc/ and benchmarks/fidelity.c. Run from the repository root:

    python benchmarks/fidelity.py             # 15 rounds of 300 x 1000 round trips per kernel
    python benchmarks/fidelity.py --quick     # 5 rounds of 100 x 200: a minute on 2 vCPUs
    python benchmarks/fidelity.py --cpus 0,8  # another pair
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def compiler(names=("cc", "gcc", "clang")):
    for c in ([os.environ["CC"]] if os.environ.get("CC") else []) + list(names):
        if shutil.which(c):
            return c
    sys.exit("fidelity: no C compiler found (set CC)")


def build(tmp):
    csrc = sorted(str(p) for p in (REPO / "csrc").glob("*.c") if p.name not in ("module.c", "selftest.c"))
    exe = tmp / "fidelity"
    subprocess.run([compiler(), "-std=c11", "-O2", "-D_GNU_SOURCE", "-pthread",
                    f"-I{REPO / 'csrc'}", "-o", str(exe),
                    str(REPO / "benchmarks" / "fidelity.c"), *csrc], check=True)
    return exe


def build_peers(tmp):
    shared = Path(os.environ.get("CORELAT_SHARED", REPO.parent / "shared")) / "peers"
    peers = {}
    if (shared / "nviennot_port.c").is_file():
        exe = tmp / "nviennot_port"
        r = subprocess.run([compiler(), "-O2", "-pthread", str(shared / "nviennot_port.c"), "-o", str(exe)],
                           capture_output=True, text=True, check=False)
        if r.returncode == 0:
            peers["nviennot"] = exe
    cxx = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if cxx and (shared / "c2clat.cpp").is_file():
        exe = tmp / "c2clat"
        r = subprocess.run([cxx, "-O3", "-DNDEBUG", "-pthread", str(shared / "c2clat.cpp"), "-o", str(exe)],
                           capture_output=True, text=True, check=False)
        if r.returncode == 0:
            peers["c2clat"] = exe
    return peers, shared


def run_peer(name, exe, kernel, a, b, round_trips, samples):
    """(min_ns, median-or-mean ns) of one peer run on the pair, or None."""
    if name == "nviennot":
        out = subprocess.run([str(exe), "1" if kernel == "cas" else "2", str(a), str(b), str(round_trips),
                              str(samples)], capture_output=True, text=True, check=False, timeout=600)
        if out.returncode != 0:
            return None
        mean, mn = map(float, out.stdout.split())
        return mn, mean  # it reports the mean, not the median
    args = ["taskset", "-c", f"{a},{b}", str(exe), "-s", str(samples)] + (["-w"] if kernel == "cas" else [])
    out = subprocess.run(args, capture_output=True, text=True, check=False, timeout=600)
    if out.returncode != 0:
        return None
    rows = [line.split() for line in out.stdout.splitlines() if line.strip()]
    try:
        value = float(rows[-1][1])  # the matrix's last row: CPU b against CPU a
    except (IndexError, ValueError):
        return None
    return value, float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 rounds of 100 samples x 200 round trips")
    ap.add_argument("--cpus", default=None, help="the pair, e.g. 0,1 (default: the first two allowed CPUs)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--round-trips", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args(argv)
    rounds = args.rounds or (5 if args.quick else 15)
    rt = args.round_trips or (200 if args.quick else 1000)
    samples = args.samples or (100 if args.quick else 300)
    allowed = sorted(os.sched_getaffinity(0))
    a, b = map(int, args.cpus.split(",")) if args.cpus else allowed[:2]

    with tempfile.TemporaryDirectory(prefix="corelat-fidelity-") as tmp:
        tmp = Path(tmp)
        exe = build(tmp)
        peers, where = ({}, None) if args.no_peers else build_peers(tmp)
        print(f"# fidelity on CPUs {a} and {b}: {rounds} rounds of {samples} samples x {rt} round trips; "
              f"peers: {', '.join(peers) or 'none'}" + (f" (from {where})" if peers else ""))
        print(f"# {os.uname().nodename}, {os.cpu_count()} CPUs, {_cpu_model()}")
        print(f"{'kernel':<6} {'tool':<9} {'min ns':>8} {'median ns':>10} {'min/bare':>9} {'med/bare':>9}")
        for kernel in ("cas", "rw"):
            per = {"corelat": [], "bare": []}
            peer_vals = {p: [] for p in peers}
            for _r in range(rounds):
                out = subprocess.run([str(exe), kernel, str(a), str(b), str(rt), str(samples), "1"],
                                     capture_output=True, text=True, check=True, timeout=600)
                for line in out.stdout.splitlines():
                    who, mn, med = line.split()
                    per[who].append((float(mn), float(med)))
                for p, pexe in peers.items():
                    v = run_peer(p, pexe, kernel, a, b, rt, samples)
                    if v:
                        peer_vals[p].append(v)
            bare = per["bare"]
            rows = [("corelat", per["corelat"]), ("bare", bare)] + list(peer_vals.items())
            for name, vals in rows:
                if not vals:
                    continue
                n = min(len(vals), len(bare))
                mins = statistics.median(v[0] for v in vals)
                meds = statistics.median(v[1] for v in vals)
                rmin = statistics.median(vals[i][0] / bare[i][0] for i in range(n))
                rmed = statistics.median(vals[i][1] / bare[i][1] for i in range(n))
                print(f"{kernel:<6} {name:<9} {mins:>8.2f} {meds:>10.2f} {rmin:>9.3f} {rmed:>9.3f}")
        print("# ratios: median over rounds of (tool / bare) within the same round; nviennot's 'median' is "
              "its mean, c2clat reports only a minimum (integer ns, 100 round trips per sample)")


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
