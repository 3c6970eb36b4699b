"""Core engine figures: timer cost, per-pair fixed overhead, Python overhead, GIL release.

Run: python benchmarks/core.py   (prints tables; figures go to benchmarks/RESULTS.md by hand)
"""

import os
import platform
import threading
import time

import numpy as np

import corelat
from corelat import _corelat, sysinfo


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
    rows.append(("clock_gettime(MONOTONIC) via tsc", "", f"{_corelat.clock_cost() / info['ticks_per_ns']:.1f}", ""))
    corelat.measure.__globals__["_timer"] = None  # let measure() choose again
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


def python_overhead(cpus):
    rows = []
    for rt, s in ((1000, 300), (100, 30)):
        corelat.measure(cpus, round_trips=rt, samples=s)  # timer calibration, imports
        t0 = time.perf_counter()
        r = corelat.measure(cpus, round_trips=rt, samples=s)
        outer = time.perf_counter() - t0
        total, kern = r.metadata["elapsed_s"], r.metadata["kernel_s"]
        rows.append((f"{rt} x {s}", f"{outer * 1e3:.1f}", f"{kern * 1e3:.1f}",
                     f"{100 * (outer - kern) / outer:.2f} %", f"{100 * (total - kern) / total:.2f} %"))
    table("Python overhead of measure() (whole call vs time inside the C pair calls)", rows,
          ("round trips x samples", "measure() ms", "in C ms", "overhead (whole call)", "overhead (sweep loop)"))


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


def main():
    cpus = sorted(os.sched_getaffinity(0))
    model, _ = sysinfo.cpuinfo()
    print(f"# corelat core benchmarks\n\nmachine: {model}, {len(cpus)} CPUs allowed, "
          f"{platform.machine()}, kernel {platform.release()}, hypervisor: {sysinfo.hypervisor()}")
    timer_costs()
    pair_overhead(cpus)
    python_overhead(cpus)
    gil_release(cpus)


if __name__ == "__main__":
    main()
