"""Core engine figures: timer cost, per-pair fixed overhead, Python overhead, GIL release.

Run: python benchmarks/core.py [--quick]   (prints tables; figures go to benchmarks/RESULTS.md by hand;
--quick: the timer and the fake-measurer Python costs only, a few seconds, for CI)
"""

import argparse
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

import corelat
from corelat import _corelat
from corelat._measure import sweep as _sweep
from corelat._system import sysinfo as _sysinfo
from corelat._system import timer as _timer


def table(title, rows, headers):
    print(f"\n## {title}\n")
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")


def timer_costs():
    rows = []
    for kind in ("hw", "clock"):
        info = _corelat.timer_init(kind)
        tpn = info["ticks_per_ns"]
        rows.append((info["name"], f"{info['frequency_hz'] / 1e6:.1f} MHz",
                     f"{info['overhead_ticks'] / tpn:.1f}", f"{info['overhead_serial_ticks'] / tpn:.1f}"))
    info = _corelat.timer_init("hw")
    rows.append(("clock_gettime(MONOTONIC) via tsc", "",
                 f"{_corelat.clock_cost() / info['ticks_per_ns']:.1f}", ""))
    _timer._timer = None  # let measure() choose again
    table("Timer read cost (ns, minimum of back-to-back reads)", rows,
          ("timer", "frequency", "read", "serialized read"))


def pair_overhead(cpus):
    corelat.timer_info()
    a, b = cpus[:2]
    walls = []
    for _ in range(500):
        t0 = time.perf_counter()
        _corelat.pingpong(a, b, _corelat.KERNEL_CAS, 1, 1, 0, 1.0)
        walls.append(time.perf_counter() - t0)
    w = np.array(walls) * 1e6
    table("Per-pair fixed overhead (2 threads created + pinned, page mapped + touched, 1 round trip, join)",
          [(f"{np.min(w):.0f}", f"{np.median(w):.0f}", f"{np.percentile(w, 90):.0f}")],
          ("min µs", "median µs", "p90 µs"))


class _TimedMeasurer:
    """Wraps the real pair measurer and adds up the time spent inside its C calls."""

    def __init__(self, inner):
        self.inner, self.seconds = inner, 0.0

    def __call__(self, a, b, samples):
        t0 = time.perf_counter()
        out = self.inner(a, b, samples)
        self.seconds += time.perf_counter() - t0
        return out


def python_overhead(cpus):
    from corelat._measure.measurers import make_measurer
    from corelat._system.validate import check_params

    rows = []
    for label, kw in (("default (precision ±2 %)", {}),
                      ("fixed 1000 x 300", {"round_trips": 1000, "samples": 300}),
                      ("fixed 100 x 30", {"round_trips": 100, "samples": 30})):
        kernel, rt, _, warmup, timeout = check_params("cas", kw.get("round_trips", 1000), kw.get("samples"),
                                                      None, 1.0)
        corelat.measure(cpus, **kw)  # timer calibration, imports
        best = None
        for _ in range(5):
            timed = _TimedMeasurer(make_measurer(kernel, rt, warmup, timeout))
            t0 = time.perf_counter()
            _sweep.measure_with(timed, cpus, **kw)
            outer = time.perf_counter() - t0
            share = (outer - timed.seconds) / outer
            if best is None or share < best[2]:
                best = (outer, timed.seconds, share)
        outer, inside, share = best
        rows.append((label, f"{outer * 1e3:.2f}", f"{inside * 1e3:.2f}", f"{(outer - inside) * 1e3:.2f}",
                     f"{100 * share:.1f} %"))
    table("Python overhead of measure() on this machine's CPUs (best of 5; C = time inside the pair calls)",
          rows, ("mode", "measure() ms", "in C ms", "Python ms", "Python share"))
    per_pair_python()


def per_pair_python():
    """Split the Python cost into per sweep and per pair with an instant fake measurer, and project
    the share for bigger machines from the C time per pair measured above."""
    from corelat._system import validate as m
    rng = np.random.default_rng(0)

    def fake(a, b, k):
        return rng.lognormal(np.log(50), 0.05, size=k)

    cpus = sorted(os.sched_getaffinity(0))[:2]
    t0 = time.perf_counter()
    for _ in range(20):
        _sweep.measure_with(fake, cpus, samples=300)
    sweep_and_pair = (time.perf_counter() - t0) / 20
    rows = []
    for label, plan in (("default ±2 %", m.check_sampling()), ("fixed 300", m.check_sampling(300))):
        reps, taken = 300, 0
        t0 = time.perf_counter()
        for _ in range(reps):
            taken += _sweep.measure_pair(fake, 0, 1, plan).values.shape[1]
        per_pair = (time.perf_counter() - t0) / reps
        k = taken / reps
        c_per_pair = k * 1000 * 2 * 50e-9 + 70e-6  # k samples of 1000 round trips at 50 ns + thread setup
        for n in (8, 32, 192):
            pairs = n * (n - 1) // 2
            py = (sweep_and_pair - per_pair) + pairs * per_pair
            c = pairs * c_per_pair
            rows.append((label, f"{k:.0f}", f"{per_pair * 1e6:.0f}", n, f"{py * 1e3:.0f}", f"{c * 1e3:.0f}",
                         f"{100 * py / (py + c):.1f} %"))
    print(f"\nPython per sweep (metadata, topology, result): {(sweep_and_pair - per_pair) * 1e3:.2f} ms")
    table("Projected Python share of a sweep (pairs at 50 ns: the fastest case, so the largest share)",
          rows, ("mode", "samples/pair", "Python µs/pair", "CPUs", "Python ms", "C ms", "Python share"))


def startup(runs=15):
    """`import numpy` and `import corelat` in fresh interpreters, interleaved so that load hits both."""
    codes = {"import numpy": "import numpy", "import corelat": "import corelat",
             "import corelat; corelat.measure": "import corelat; corelat.measure",
             "corelat --help": "import sys; sys.argv=['corelat', '--help']\nfrom corelat.cli import main\n"
                               "try:\n    main()\nexcept SystemExit:\n    pass"}
    times = {label: [] for label in codes}
    for _ in range(runs):
        for label, code in codes.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
            times[label].append((time.perf_counter() - t0) * 1e3)
    table(f"Start-up: a fresh interpreter running each line (ms over {runs} runs, interleaved)",
          [(label, *(f"{f(t):.0f}" for f in (np.min, np.median, np.max))) for label, t in times.items()],
          ("command", "min", "median", "max"))


def gil_release(cpus):
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.1)
    c0, t0 = count[0], time.perf_counter()
    time.sleep(0.3)
    idle_rate = (count[0] - c0) / (time.perf_counter() - t0)
    c0, t0 = count[0], time.perf_counter()
    corelat.measure(cpus, round_trips=1000, samples=300)
    busy_rate = (count[0] - c0) / (time.perf_counter() - t0)
    stop.set()
    t.join()
    table("GIL released: a Python thread counting while measure() runs",
          [(f"{idle_rate / 1e6:.2f}", f"{busy_rate / 1e6:.2f}")],
          ("M counts/s, main thread sleeping", "M counts/s, during measure()"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="timer costs and per-pair Python cost only")
    args = ap.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    model, _ = _sysinfo.cpuinfo()
    print(f"# corelat core benchmarks\n\nmachine: {model}, {len(cpus)} CPUs allowed, "
          f"{platform.machine()}, kernel {platform.release()}, hypervisor: {_sysinfo.hypervisor()}")
    timer_costs()
    if args.quick:
        per_pair_python()
        startup(3)
        return
    startup()
    pair_overhead(cpus)
    python_overhead(cpus)
    gil_release(cpus)


if __name__ == "__main__":
    main()
