"""How long `corelat` takes to end after Ctrl-C (SIGINT) or SIGTERM, in the environment a user has.

    python benchmarks/exit_time.py                  # 10 tries each: plain, chrt -f 10, both signals
    python benchmarks/exit_time.py --tries 3 --quick

Each try starts a measurement that would run for hours (`corelat --kernel K 1000000 1000`, every
allowed CPU),
waits until the measuring threads exist and have run for `--after` seconds, sends the signal and
times the exit. The command's environment is this process's, with the BLAS thread variables
(OPENBLAS_NUM_THREADS and kin) removed unless `--blas-threads N` sets them: a user has none set, and
an OpenBLAS thread at the caller's real-time priority is exactly what starved the measuring threads
under `chrt -f 10` (issue 27). A try that has not ended `--limit` seconds after the signal is killed
and counted as a hang. Prints one row per case: tries, exits within 1 s, worst and median time.
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

BLAS_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# Started in the background (SIGINT ignored, which exec keeps), the children would ignore SIGINT.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def user_env(blas_threads=None):
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARS and k != "CORELAT_DEBUG"}
    if blas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    return env


def measuring_threads(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task")) - 1
    except OSError:
        return 0


def one_try(prefix, kernel, sig, after, limit, env):
    cmd = [*prefix, sys.executable, "-m", "corelat", "--kernel", kernel, "1000000", "1000"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while measuring_threads(p.pid) < 2:  # the partner threads (OpenBLAS's may come first)
            if p.poll() is not None or time.monotonic() > deadline:
                return None, "did not start: " + p.communicate()[1].decode()[-300:]
            time.sleep(0.01)
        time.sleep(after)
        t0 = time.monotonic()
        p.send_signal(sig)
        try:
            p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return float("inf"), "hang"
        return time.monotonic() - t0, p.returncode
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--after", type=float, default=1.0, help="seconds of measuring before the signal")
    ap.add_argument("--limit", type=float, default=20.0, help="seconds after the signal that count as a hang")
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="1 try of each case, 0.3 s in (CI)")
    args = ap.parse_args()
    if args.quick:
        args.tries, args.after = 1, 0.3
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 allowed CPUs")
        return 0
    chrt = shutil.which("chrt")
    fifo_ok = bool(chrt) and (
        subprocess.run([chrt, "-f", "10", "true"], check=False, capture_output=True).returncode == 0)
    env = user_env(args.blas_threads)
    blas = "unset" if args.blas_threads is None else f"OPENBLAS_NUM_THREADS={args.blas_threads}"
    print(f"exit time after a signal, {args.tries} tries each, signal {args.after} s into the run, BLAS vars "
          f"{blas}")
    print(f"{'case':34} {'tries':>5} {'<1 s':>5} {'median s':>9} {'worst s':>8}  exit codes")
    failed = 0
    for policy in (["plain", []], ["chrt -f 10", [chrt, "-f", "10"]] if fifo_ok else None):
        if policy is None:
            print("chrt -f 10: SCHED_FIFO not permitted here; skipped")
            continue
        for kernel in ("cas", "rw"):
            for signame in ("SIGINT", "SIGTERM"):
                times, codes = [], []
                for _ in range(args.tries):
                    t, code = one_try(policy[1], kernel, getattr(signal, signame),
                                      args.after, args.limit, env)
                    times.append(t if t is not None else float("inf"))
                    codes.append(code)
                within = sum(t < 1.0 for t in times)
                failed += within < len(times)
                worst = max(times)
                print(f"{policy[0] + ', ' + kernel + ', ' + signame:34} {len(times):5d} {within:5d} "
                      f"{statistics.median(times):9.3f} {worst:8.3f}  {sorted(set(map(str, codes)))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
