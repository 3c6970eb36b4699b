"""``corelat.measure()``: the core-to-core latency sweep.

Python validates every argument and orchestrates the sweep pair by pair; the C extension measures
one pair at a time with the GIL released. Between pairs Python looks for Ctrl-C, updates progress and
converts ticks to nanoseconds, so nothing Python does is inside a timed region.
"""

import os
import time

import numpy as np

from . import cpulist, sysinfo
from .errors import InputError
from .result import LatencyResult, PairFlag

#: Ping-pong kernels: name -> (C kernel code attribute, description).
KERNELS = {
    "cas": ("KERNEL_CAS", "both threads compare-exchange one flag on one cache line (contended hand-off)"),
    "rw": ("KERNEL_RW", "each thread stores to its own cache line and spins loading the other's (data passing)"),
}

#: Largest sizes accepted: beyond them a sweep would run for days or exhaust memory.
MAX_ROUND_TRIPS = 10_000_000
MAX_SAMPLES = 1_000_000

_timer = None


def _ext():
    try:
        from . import _corelat
    except ImportError as e:  # pragma: no cover - only on platforms we do not build for
        raise RuntimeError(
            f"corelat's measuring core is not available here ({e}); it supports Linux on x86-64 and "
            "aarch64. Loading and analysing result files still works."
        ) from None
    return _corelat


def timer_info():
    """The timer used to measure, choosing and calibrating it on first use.

    The hardware counter (x86 TSC, aarch64 ``cntvct_el0``) is used when it runs at a constant rate
    (CPUID's invariant-TSC bit, or the kernel's ``constant_tsc`` and ``nonstop_tsc`` flags);
    otherwise ``clock_gettime``. Set ``CORELAT_TIMER=clock`` to force the fallback.
    """
    global _timer
    if _timer is None:
        ext = _ext()
        hw = ext.hw_timer()
        forced = os.environ.get("CORELAT_TIMER", "").strip().lower()
        if forced not in ("", "hw", "clock"):
            raise InputError(f"CORELAT_TIMER={forced!r}: use 'hw' or 'clock'")
        _, flags = sysinfo.cpuinfo()
        invariant = hw["invariant"] or sysinfo.tsc_flags_ok(flags) or hw["name"] == "cntvct_el0"
        kind = forced or ("hw" if hw["available"] and invariant else "clock")
        info = ext.timer_init(kind)
        info["invariant"] = bool(invariant) if kind == "hw" else True
        info["kernel_flags_ok"] = sysinfo.tsc_flags_ok(flags)
        _timer = info
    return dict(_timer)


def allowed_cpus():
    """The CPUs this process may run on (respects taskset and cgroup cpusets), sorted."""
    return sorted(os.sched_getaffinity(0))


def resolve_cpus(cpus, minimum=2):
    """Validate a CPU selection (None, a list of ints, or a string like ``"0,2,4-7"``) → tuple."""
    allowed = allowed_cpus()
    if cpus is None:
        cpus = allowed
    elif isinstance(cpus, str):
        cpus = cpulist.parse(cpus)
    else:
        try:
            cpus = list(cpus)
        except TypeError:
            raise InputError(f"cpus must be a list of CPU ids or a string like '0,2,4-7', not {cpus!r}") from None
    out = []
    for c in cpus:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise InputError(f"CPU ids must be integers, got {c!r}")
        out.append(int(c))
    dup = sorted({c for c in out if out.count(c) > 1})
    if dup:
        raise InputError(f"CPU {cpulist.format(dup)} listed more than once")
    bad = [c for c in out if c not in allowed]
    if bad:
        online = sysinfo.read_text("/sys/devices/system/cpu/online")
        why = []
        if online:
            offline = [c for c in bad if c not in set(cpulist.parse(online))]
            if offline:
                why.append(f"{cpulist.format(offline)} not online or not present")
        raise InputError(
            f"CPU {cpulist.format(bad)} not available to this process"
            + (f" ({'; '.join(why)})" if why else "")
            + f"; allowed CPUs: {cpulist.format(allowed)}"
        )
    if len(out) < minimum:
        raise InputError(
            f"need at least {minimum} CPUs, got {len(out)}"
            + (f" (this process may only use CPU {cpulist.format(allowed)})" if len(allowed) < minimum else "")
        )
    return tuple(out)


def _positive_int(name, value, maximum, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {value!r}")
    if not minimum <= value <= maximum:
        raise InputError(f"{name} must be between {minimum} and {maximum:,}, got {value}")
    return int(value)


def check_params(kernel, round_trips, samples, warmup, timeout):
    """Validate sweep parameters; returns them normalised. Raises InputError."""
    if kernel not in KERNELS:
        raise InputError(f"unknown kernel {kernel!r}; choose one of: {', '.join(KERNELS)}")
    round_trips = _positive_int("round_trips", round_trips, MAX_ROUND_TRIPS)
    samples = _positive_int("samples", samples, MAX_SAMPLES)
    if warmup is None:
        # A tenth of the samples (at least one) lets caches, branch predictors and clock
        # frequency settle on the pair before anything is kept.
        warmup = max(1, samples // 10)
    warmup = _positive_int("warmup", warmup, MAX_SAMPLES, minimum=0)
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        raise InputError(f"timeout must be a number of seconds, got {timeout!r}") from None
    if not 0.001 <= timeout <= 3600:
        raise InputError(f"timeout must be between 0.001 and 3600 seconds, got {timeout}")
    return kernel, round_trips, samples, warmup, timeout


class PairMeasurer:
    """Measures one ordered pair of CPUs; the unit a sweep is made of.

    Tests and benchmarks substitute their own object with the same ``__call__`` to drive the sweep
    logic without hardware.
    """

    def __init__(self, kernel, round_trips, warmup, timeout, *, _stall=None):
        ext = _ext()
        self.code = getattr(ext, KERNELS[kernel][0])
        self.round_trips, self.warmup, self.timeout = round_trips, warmup, timeout
        self.ticks_per_ns = timer_info()["ticks_per_ns"]
        self._pingpong = ext.pingpong
        # Test hook: a partner that never answers, to exercise the time-out path end to end.
        self._stall = bool(os.environ.get("CORELAT_TEST_STALL_PARTNER")) if _stall is None else _stall

    def __call__(self, cpu_a, cpu_b, samples):
        """One-way latencies in ns (float64, ``samples`` long; NaN where a thread migrated)."""
        ticks, migrated = self._pingpong(
            cpu_a, cpu_b, self.code, self.round_trips, samples, self.warmup, self.timeout,
            stall_responder=self._stall,
        )
        ns = ticks / (self.ticks_per_ns * self.round_trips * 2.0)
        ns[migrated] = np.nan
        return ns


def sweep_pairs(n):
    """Index pairs (i, j), i > j, row by row: the lower triangle in printed order."""
    return [(i, j) for i in range(1, n) for j in range(i)]


def measure(
    cpus=None,
    *,
    kernel="cas",
    round_trips=1000,
    samples=300,
    warmup=None,
    timeout=1.0,
    progress=False,
    order="os",
    name=None,
    _measurer=None,
):
    """Measure the core-to-core latency matrix.

    Args:
        cpus: CPU ids to measure (list, or a string like ``"0,2,4-7"``); None for every CPU this
            process may run on (``os.sched_getaffinity(0)``: taskset and cgroup cpusets apply).
        kernel: ``"cas"`` (compare-exchange on one line) or ``"rw"`` (load/store on two lines).
        round_trips: round trips timed together as one sample.
        samples: samples kept per pair.
        warmup: samples run first and discarded per pair (default: a tenth of ``samples``).
        timeout: seconds a thread waits for its partner before the sweep stops with
            :class:`~corelat.errors.MeasurementTimeout`.
        progress: False, True (a progress bar on stderr) or a callable ``fn(done, total)``.
        order: ``"os"`` (CPU ids as given) or ``"topology"`` (package → node → L3 → core → thread).
        name: label for the result (default: the host name).

    Returns:
        A frozen :class:`~corelat.result.LatencyResult` of one-way latencies (round-trip time / 2)
        in ns. Each pair is measured once, with the lower-index CPU of the pair as the timing side,
        and mirrored to the other half of the matrix.

    Raises:
        InputError (a ValueError) for bad arguments; MeasurementTimeout (a TimeoutError) when a
        partner stops answering; KeyboardInterrupt within about 0.1 s of Ctrl-C.
    """
    cpus = resolve_cpus(cpus)
    kernel, round_trips, samples, warmup, timeout = check_params(kernel, round_trips, samples, warmup, timeout)
    if order not in ("os", "topology"):
        raise InputError(f"unknown order {order!r}; use 'os' or 'topology'")
    measurer = _measurer or PairMeasurer(kernel, round_trips, warmup, timeout)
    n = len(cpus)
    data = np.full((n, n, samples), np.nan)
    flags = np.zeros((n, n), dtype=np.uint32)
    pairs = sweep_pairs(n)
    meta = sysinfo.collect()
    meta.update(_topology_metadata())
    timer = timer_info() if _measurer is None else {"name": "test double", "ticks_per_ns": 1.0}
    bar = progress_bar = None
    started = time.monotonic()
    kernel_seconds = 0.0
    try:
        from . import progress as progress_mod

        bar = progress_bar = progress_mod.make(progress, len(pairs))
        for i, j in pairs:
            t0 = time.perf_counter()
            ns = measurer(cpus[j], cpus[i], samples)
            kernel_seconds += time.perf_counter() - t0
            data[i, j] = ns
            data[j, i] = ns
            f = PairFlag.MEASURED | (PairFlag.MIGRATED if np.isnan(ns).any() else 0)
            flags[i, j] = f
            flags[j, i] = (f & ~PairFlag.MEASURED) | PairFlag.MIRRORED
            bar.update(1)
    finally:
        if progress_bar is not None:
            progress_bar.close()
    elapsed = time.monotonic() - started
    meta.update(
        {
            "kernel": kernel,
            "kernel_description": KERNELS[kernel][1],
            "timer": timer,
            "parameters": {
                "round_trips": round_trips,
                "samples": samples,
                "warmup": warmup,
                "timeout": timeout,
            },
            "unit": "ns",
            "latency": "one-way = round-trip time / 2",
            "symmetric": True,
            "elapsed_s": elapsed,
            "kernel_s": kernel_seconds,
            "warnings": _warnings(flags),
        }
    )
    result = LatencyResult(cpus=cpus, kernel=kernel, samples=data, metadata=meta,
                           name=name or meta["hostname"], flags=flags)
    if order == "topology":
        result = result.ordered("topology")
    return result


def _topology_metadata():
    """The live machine's topology for the result (a missing or odd sysfs must not stop a sweep)."""
    from .topology import topology

    try:
        topo = topology()
    except Exception as e:  # noqa: BLE001 - topology is a label on the result, not a requirement
        return {"topology": None, "topology_summary": f"unknown ({type(e).__name__}: {e})"}
    return {"topology": topo.to_dict(), "topology_summary": topo.summary()}


def _warnings(flags):
    out = []
    migrated = int(np.count_nonzero(np.tril(flags & PairFlag.MIGRATED, -1)))
    if migrated:
        out.append(f"{migrated} pair(s) had samples dropped because a thread was not on its CPU")
    return out
