"""How long `corelat report` and `corelat plot --annotate` of a large file take to end after Ctrl-C.

    python benchmarks/analysis_interrupt.py                    # 1,000, 3,000 and 6,000 CPUs
    python benchmarks/analysis_interrupt.py --quick            # 1,000 CPUs, one delay (CI)
    python benchmarks/analysis_interrupt.py --before OLD_TREE  # also older code (PYTHONPATH), side by side

Each file is a value-only matrix of N CPUs (SMT pairs at 8 ns, four groups at 30 ns inside and 90 ns
across, 2 % noise), written once. Each try starts the command, sends SIGINT after a delay (the analysis
is running by then: reading the file takes a fraction of it) and times the exit. A try that has not ended
`--limit` seconds after the signal is killed and counted as a hang. Prints one row per command, size and
tree: tries, exits within 1 s, worst and median time to honour the signal, and how long the command
takes uninterrupted (capped at `--limit`).
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# Started in the background (SIGINT ignored, which exec keeps), the children would ignore SIGINT.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def make_file(n, path):
    import corelat

    rng = np.random.default_rng(n)
    g = np.arange(n) // max(n // 4, 1)
    m = np.where(g[:, None] == g[None, :], 30.0, 90.0) * rng.normal(1.0, 0.02, (n, n))
    for i in range(0, n - 1, 2):
        m[i, i + 1] = m[i + 1, i] = 8.0
    corelat.LatencyResult.from_matrix(m, name=f"{n} CPUs").save(path)


def env_for(tree):
    env = {k: v for k, v in os.environ.items() if k != "CORELAT_DEBUG"}
    if tree:
        env["PYTHONPATH"] = tree
    return env


def one_try(args, env, delay, limit):
    """Seconds from SIGINT to the exit (None: a hang), or the full run's time when it ended first."""
    p = subprocess.Popen([sys.executable, "-m", "corelat", *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    try:
        p.wait(timeout=delay)
        return "done"
    except subprocess.TimeoutExpired:
        pass
    p.send_signal(signal.SIGINT)
    t = time.monotonic()
    try:
        p.wait(timeout=limit)
        return time.monotonic() - t
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def full_run(args, env, limit):
    t = time.monotonic()
    try:
        subprocess.run([sys.executable, "-m", "corelat", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,6000")
    ap.add_argument("--delays", default="1,3,6", help="seconds before SIGINT, one try each")
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--before", metavar="DIR", help="a tree of older code (PYTHONPATH) to time as well")
    ap.add_argument("--quick", action="store_true", help="1,000 CPUs, one delay of 2 s (CI)")
    args = ap.parse_args()
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    delays = [2.0] if args.quick else [float(s) for s in args.delays.split(",")]
    trees = ([("before", args.before)] if args.before else []) + [("now", None)]
    print("| command | CPUs | code | tries | within 1 s | worst s | median s | uninterrupted s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            path = os.path.join(d, f"big{n}.npz")
            make_file(n, path)
            commands = {"report": ["report", path],
                        "plot --annotate": ["plot", path, "--annotate", "-o", os.path.join(d, "x.png")]}
            for name, cmd in commands.items():
                for label, tree in trees:
                    env = env_for(tree)
                    times = [one_try(cmd, env, delay, args.limit) for delay in delays]
                    honoured = [t for t in times if isinstance(t, float)]
                    hangs = sum(t is None for t in times)
                    within = sum(t <= 1.0 for t in honoured)
                    worst = "hang" if hangs else (f"{max(honoured):.2f}" if honoured else "–")
                    med = f"{statistics.median(honoured):.2f}" if honoured else "–"
                    full = full_run(cmd, env, args.limit)
                    full_s = f"> {args.limit:g}" if full is None else f"{full:.1f}"
                    row = [name, f"{n:,}", label, len(times), within, worst, med, full_s]
                    print("| " + " | ".join(map(str, row)) + " |", flush=True)


if __name__ == "__main__":
    main()
