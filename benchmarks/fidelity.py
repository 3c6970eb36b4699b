"""Fidelity: does corelat's measuring loop add anything to what it measures, at each vCPU placement?

corelat's ping-pong kernels (cas, rw) run against bare reference loops in benchmarks/fidelity.c: the
same protocol, lines and memory orders with no abort, time-out, heartbeat or CPU checks at all.
Both run interleaved in one process on the same pair, alternating who goes first. Where
../shared/peers/ is present (or CORELAT_SHARED points at it), every round also runs the peers at
equal sizes: the C port of core-to-core-latency's benches 1 (CAS) and 2 (load/store), and c2clat
(its fixed 100 round trips per sample, minimum only; -w for CAS), built from a copy whose only change
is that it prints the fractional minimum (round trip / 200 as a double) instead of integer ns.

On a VM the guest's two vCPUs sit on host SMT siblings (~12 ns here), cores sharing an L3 (~25 ns) or
cores that do not (~100 ns), and that changes whenever the host moves them, above all when a vCPU
halts (an idle guest between two runs). So each tool run is bracketed by a probe (the bare CAS loop,
30 x 200) that labels the placement; a round whose probes disagree (more than 30 % apart) is dropped.
``--hold`` keeps the pair's vCPUs busy with SCHED_IDLE spinners (see ``Hold``), so a placement holds
for a round, and lets them halt between rounds so the rounds sample the placements; ``--placement
"~100 ns"`` re-rolls until the probe reads that placement, so every round is at it. Per
placement (the probe's minimum on a 2x grid through 25 ns) the within-round ratios corelat / other of the
per-sample minimum and median are summarised by their median over rounds with a distribution-free 95 %
confidence interval (order statistics of the binomial(n, 1/2)). 1.00 = no cost.

Self-contained: builds its C with the compiler it finds (``$CC``, cc, gcc, clang) into a temporary
folder from csrc/ and benchmarks/fidelity.c. Run from the repository root:

    python benchmarks/fidelity.py             # 15 rounds of 300 x 1000 round trips per kernel
    python benchmarks/fidelity.py --quick     # 3 rounds of 100 x 200, no peers: for CI
    python benchmarks/fidelity.py --cpus 0,8  # another pair
    python benchmarks/fidelity.py --hold --placement "~100 ns" --rounds 32 --samples 100
"""

import argparse
import ctypes
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
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
        exe, src = tmp / "c2clat", fractional_c2clat(shared / "c2clat.cpp", tmp)
        r = subprocess.run([cxx, "-O3", "-DNDEBUG", "-pthread", str(src), "-o", str(exe)],
                           capture_output=True, text=True, check=False)
        if r.returncode == 0:
            peers["c2clat"] = exe
    return peers, shared


C2CLAT_FRACTIONAL = (  # (original, replacement): the output only, the timed loops untouched
    ("data[{i, j}] = rtt / 2 / 100;", "data[{i, j}] = rtt;"),
    ("data[{j, i}] = rtt / 2 / 100;", "data[{j, i}] = rtt;"),
    ("<< data[{c0, c1}].count();", "<< data[{c0, c1}].count() / 200.0;"),
)


def fractional_c2clat(src, tmp):
    """A copy of c2clat.cpp in tmp that prints round trip / 200 as a double (it rounds to whole ns)."""
    text = src.read_text()
    for old, new in C2CLAT_FRACTIONAL:
        if old not in text:
            sys.exit(f"fidelity: c2clat.cpp changed, {old!r} not found: update C2CLAT_FRACTIONAL")
        text = text.replace(old, new)
    out = tmp / "c2clat_fractional.cpp"
    out.write_text(text)
    return out


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


def probe(exe, a, b):
    """The bare CAS loop's minimum (ns) on the pair now: the label of the vCPU placement."""
    out = subprocess.run([str(exe), "probe", str(a), str(b), "200", "30", "1"], capture_output=True,
                         text=True, check=True, timeout=600)
    return float(out.stdout.split()[1])


def placement(ns):
    """The probe's minimum on a 2x grid through 25 ns (~25, ~50, ~100 ns...), as a label."""
    return f"~{25 * 2.0 ** round(math.log2(ns / 25)):.0f} ns"


def agree(probes, tolerance=1.3):
    return max(probes) <= tolerance * min(probes)


class Hold:
    """Keeps the pair's vCPUs busy between and around the timed runs, so the host leaves them where
    they are: a ``SCHED_IDLE`` busy loop pinned to each CPU of the pair, which the guest runs only
    when nothing else wants that CPU (a halted vCPU is what the host moves: with the guest idle
    between runs, 35 of 40 rounds here saw the placement change between their probes; with the
    spinners 0 of 20). ``reroll()`` stops them and lets the vCPUs halt for a moment, so the host may
    place them anew: each round then sits at one placement, and the rounds sample the placements."""

    def __init__(self, cpus, pause=1.0):
        self.cpus, self.pause, self.procs = list(cpus), pause, []

    def __enter__(self):
        libc = ctypes.CDLL(None, use_errno=True)

        def setup(cpu):
            os.sched_setaffinity(0, {cpu})
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no spinner outlives a killed benchmark

        for c in self.cpus:
            self.procs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                               preexec_fn=lambda c=c: setup(c)))
        return self

    def reroll(self):
        for p in self.procs:
            p.send_signal(signal.SIGSTOP)
        time.sleep(self.pause)
        for p in self.procs:
            p.send_signal(signal.SIGCONT)
        time.sleep(0.05)

    def next_round(self, want, exe, a, b, tries=60):
        """Before a round: re-roll once, or, with ``want`` a placement (e.g. "~100 ns"; None or "any":
        once), until the probe on ``a``, ``b`` reads it; the benchmark ends if it never did in ``tries``."""
        for _ in range(tries):
            self.reroll()
            if want in (None, "any") or placement(probe(exe, a, b)) == want:
                return
        sys.exit(f"{Path(sys.argv[0]).name}: the placement {want} did not come up in {tries} tries")

    def __exit__(self, *exc):
        for p in self.procs:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()


class NoHold:
    def __enter__(self):
        return self

    def next_round(self, want, exe, a, b):
        pass

    def __exit__(self, *exc):
        pass


C2CLAT_RT = 100  # c2clat's round trips per sample, fixed in its source


def _own_run(exe, kernel, a, b, rt, samples, suffix=""):
    out = subprocess.run([str(exe), kernel, str(a), str(b), str(rt), str(samples), "1"],
                         capture_output=True, text=True, check=True, timeout=600)
    values = {}
    for line in out.stdout.splitlines():
        who, mn, med = line.split()
        values[who + suffix] = (float(mn), float(med))
    return values


def one_round(exe, peers, kernel, a, b, rt, samples, first=0):
    """{tool: (min, median)} of one round and its probes, every tool run bracketed by a probe. The
    runs start at the ``first``-th (rotated): a placement that drifts within a round (the host
    settling the busy vCPUs after a re-roll) then favours no tool over the rounds."""
    steps = [lambda: _own_run(exe, kernel, a, b, rt, samples)]
    for p, pexe in peers.items():
        steps.append(lambda p=p, pexe=pexe: (lambda v: {p: v} if v else {})(
            run_peer(p, pexe, kernel, a, b, rt, samples)))
    if "c2clat" in peers:
        # c2clat's samples are 100 round trips whatever the others use, and a minimum over shorter
        # samples is lower (less of the slow tail averaged into each): corelat at c2clat's size too
        steps.append(lambda: _own_run(exe, kernel, a, b, C2CLAT_RT, samples, f"@{C2CLAT_RT}"))
    return run_rotated(steps, first, exe, a, b)


def run_rotated(steps, first, exe, a, b):
    """Run ``steps`` (callables returning {name: value}) from the ``first``-th on, rotated, each
    bracketed by a probe on ``a``, ``b``: (the values of all, the probes)."""
    k = first % len(steps)
    probes, values = [probe(exe, a, b)], {}
    for step in steps[k:] + steps[:k]:
        values.update(step())
        probes.append(probe(exe, a, b))
    return values, probes


def sizes(args, quick, full):
    """(rounds, round trips, samples): those given on the command line, else the ``quick`` or the
    ``full`` triple's."""
    d = quick if args.quick else full
    return args.rounds or d[0], args.round_trips or d[1], args.samples or d[2]


def the_pair(script):
    """The first two CPUs this process may use, or None after saying ``script`` needs two."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        print(f"{script}: needs two CPUs")
        return None
    return allowed[0], allowed[1]


def median_ci(xs):
    """Median of xs and its distribution-free 95 % CI (order statistics, normal approximation)."""
    v = sorted(x for x in xs if math.isfinite(x))
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(v), v[lo], v[hi]


def summarise(kernel, label, rounds, tools):
    n = len(rounds)
    for other in tools + ([f"c2clat, corelat at {C2CLAT_RT} rt"] if "c2clat" in tools else []):
        if other == "corelat":
            continue
        mine, theirs = ("corelat", other) if "," not in other else (f"corelat@{C2CLAT_RT}", "c2clat")
        pairs = [(r[mine], r[theirs]) for r in rounds if mine in r and theirs in r]
        cells = []
        for i in (0, 1) if other not in ("nviennot",) else (0,):  # its "median" is a mean: preemptions
            m, lo, hi = median_ci([c[i] / o[i] for c, o in pairs])
            cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if math.isfinite(m) else "-")
        own = statistics.median(c[0] for c, _ in pairs) if pairs else math.nan
        print(f"| {kernel} | {label} | {n} | {other} | {own:.2f} | {cells[0]} | {(cells + ['-'])[1]} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds of 100 x 200 round trips, no peers")
    ap.add_argument("--cpus", default=None, help="the pair, e.g. 0,1 (default: the first two allowed CPUs)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--round-trips", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--kernels", default="cas,rw")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="print every round's probes and minima")
    ap.add_argument("--hold", action="store_true",
                    help="keep the pair's vCPUs busy (SCHED_IDLE spinners) so the host keeps their "
                         "placement within a round; between rounds they halt for a moment (see Hold)")
    ap.add_argument("--placement", default=None, metavar="LABEL",
                    help='with --hold: re-roll before each round until the probe reads this placement '
                         '(e.g. "~100 ns"), so every round is at it')
    args = ap.parse_args(argv)
    if args.placement and not args.hold:
        ap.error("--placement needs --hold")
    rounds, rt, samples = sizes(args, (3, 200, 100), (15, 1000, 300))
    allowed = sorted(os.sched_getaffinity(0))
    a, b = map(int, args.cpus.split(",")) if args.cpus else allowed[:2]

    with tempfile.TemporaryDirectory(prefix="corelat-fidelity-") as tmp:
        tmp = Path(tmp)
        exe = build(tmp)
        peers, where = ({}, None) if (args.no_peers or args.quick) else build_peers(tmp)
        print(f"# fidelity on CPUs {a} and {b}: {rounds} rounds of {samples} samples x {rt} round trips; "
              f"peers: {', '.join(peers) or 'none'}" + (f" (from {where})" if peers else ""))
        print(f"# {os.uname().nodename}, {os.cpu_count()} CPUs, {_cpu_model()}"
              + ("; placement held within rounds (--hold)" if args.hold else ""))
        print("| kernel | placement | rounds | vs | corelat min ns | min ratio [95 % CI] "
              "| median ratio [95 % CI] |")
        print("|---|---|---|---|---|---|---|")
        for kernel in args.kernels.split(","):
            by_place, dropped = {}, 0
            with Hold((a, b)) if args.hold else NoHold() as hold:
                for _r in range(rounds):
                    hold.next_round(args.placement, exe, a, b)
                    values, probes = one_round(exe, peers, kernel, a, b, rt, samples, first=_r)
                    if args.verbose:
                        print(f"# {kernel} round {_r}: probes {' '.join(f'{x:.1f}' for x in probes)}; minima "
                              + " ".join(f"{k} {v[0]:.2f}" for k, v in values.items()), flush=True)
                    if not agree(probes):
                        dropped += 1
                        continue
                    by_place.setdefault(placement(min(probes)), []).append(values)
            for label, kept in sorted(by_place.items(), key=lambda kv: float(kv[0][1:-3])):
                summarise(kernel, label, kept, ["bare", *peers])
            print(f"| {kernel} | placement changed | {dropped} | (dropped) | | | |")
        print("# ratio = corelat / other within a round, median over rounds [95 % CI]; nviennot reports a "
              "mean and c2clat only a minimum (100 round trips per sample): no median ratio for either")


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
