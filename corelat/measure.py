"""``corelat.measure()``: the core-to-core latency sweep.

Python validates every argument and orchestrates the sweep pair by pair; the C extension measures
one pair at a time with the GIL released. Between pairs Python looks for Ctrl-C, updates progress and
converts ticks to nanoseconds, so nothing Python does is inside a timed region.

How many samples a pair gets is decided here too. *Precision-driven* sampling (the default) measures
a pair in chunks, one C call each, until the 95 % confidence interval of its median is within
±``precision`` of the median or the pair's time budget is spent; *fixed-size* sampling takes exactly
``samples`` samples. Pairs whose samples look unstable (bimodal, spread, migrated threads) are
measured once more at the end of the sweep, one at a time, and both attempts are kept.
``strategy="sample"`` measures only enough pairs of each topology block pair (see
:mod:`corelat.sampling`) and estimates the rest.
"""

import math
import os
import time
from typing import NamedTuple

import numpy as np

from . import cpulist, quality, sampling, sysinfo
from .errors import InputError, MeasurementError
from .result import LatencyResult, PairFlag

#: Ping-pong kernels: name -> (C kernel code attribute, description).
KERNELS = {
    "cas": ("KERNEL_CAS", "both threads compare-exchange one flag on one cache line (contended hand-off)"),
    "rw": ("KERNEL_RW", "each thread stores to its own cache line and spins loading the other's (data passing)"),
}
#: Asymmetric kernels, measured in both directions: name -> description.
ONEWAY_KERNELS = {
    "oneway": "the sender stores its timer reading, the receiver subtracts it from its own "
              "(one-way, both directions; needs timers synchronized across CPUs)",
}
#: Every kernel measure() accepts: name -> description.
ALL_KERNELS = {**{k: v[1] for k, v in KERNELS.items()}, **ONEWAY_KERNELS}

#: Sweep strategies: every pair, or enough pairs per topology block pair (the rest estimated).
STRATEGIES = ("full", "sample")

#: Fixed-size sampling: samples per pair when ``samples`` is given without ``precision``.
DEFAULT_SAMPLES = 300
#: Precision-driven sampling (the default): target half-width of the median's 95 % CI, relative.
DEFAULT_PRECISION = 0.02
#: ... time budget per pair in seconds (all chunks together) ...
DEFAULT_MAX_TIME_PER_PAIR = 0.2
#: ... and at most this many samples per pair (bounds the result's memory: n² × this × 8 bytes).
DEFAULT_MAX_SAMPLES = 1000
#: Samples in a pair's first chunk, and the fewest in a later one (each chunk is one C call with
#: its own threads, buffer and warm-up, so chunks are not made smaller than this).
FIRST_CHUNK = 32
MIN_CHUNK = 16
#: A later chunk holds at most this many times the samples taken so far. Each chunk starts a new
#: pair of threads, which on a loaded machine waits milliseconds for its CPUs, so chunks are few
#: and large; the cap keeps one noisy first estimate from overshooting far.
MAX_GROWTH = 3
#: ``retest=True`` re-measures at most this share of the measured pairs (at least one).
RETEST_FRACTION = 0.1

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
    """Validate sweep parameters; returns them normalised. Raises InputError.

    ``samples`` may be None (precision-driven sampling chooses); it is returned as None then.
    """
    if kernel not in ALL_KERNELS:
        raise InputError(f"unknown kernel {kernel!r}; choose one of: {', '.join(ALL_KERNELS)}")
    round_trips = _positive_int("round_trips", round_trips, MAX_ROUND_TRIPS)
    if samples is not None:  # None: the sampling mode decides (see check_sampling)
        samples = _positive_int("samples", samples, MAX_SAMPLES)
    if warmup is None:
        # A tenth of the samples (at least one) lets caches, branch predictors and clock
        # frequency settle on the pair before anything is kept. Precision-driven sampling warms
        # up before every chunk, so a tenth of a first chunk.
        warmup = max(1, (samples or FIRST_CHUNK) // 10)
    warmup = _positive_int("warmup", warmup, MAX_SAMPLES, minimum=0)
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        raise InputError(f"timeout must be a number of seconds, got {timeout!r}") from None
    if not 0.001 <= timeout <= 3600:
        raise InputError(f"timeout must be between 0.001 and 3600 seconds, got {timeout}")
    return kernel, round_trips, samples, warmup, timeout


class SamplingPlan(NamedTuple):
    """How many samples each pair gets (see :func:`check_sampling`)."""

    mode: str  #: "fixed" or "precision"
    samples: int  #: fixed: samples per pair; precision: the most samples per pair
    precision: float = None  #: target half-width of the median's CI, relative to the median
    max_time_per_pair: float = None  #: seconds per pair, all chunks together
    first_chunk: int = FIRST_CHUNK
    min_chunk: int = MIN_CHUNK


def check_sampling(samples=None, precision="auto", max_time_per_pair=None):
    """Validate the sampling arguments of :func:`measure` and return a :class:`SamplingPlan`.

    ``precision="auto"`` means precision-driven with :data:`DEFAULT_PRECISION` unless ``samples`` is
    given, which asks for exactly that many (the fixed-size mode of core-to-core-latency and of
    corelat before precision-driven sampling). ``precision=None`` is fixed-size
    (:data:`DEFAULT_SAMPLES` unless ``samples`` says otherwise). A number is precision-driven, with
    ``samples`` as the most samples per pair.
    """
    if isinstance(precision, str):
        if precision != "auto":
            raise InputError(f"precision must be a fraction like 0.02, None or 'auto', not {precision!r}")
        precision = DEFAULT_PRECISION if samples is None else None
    if samples is not None:
        samples = _positive_int("samples", samples, MAX_SAMPLES)
    if precision is None:
        if max_time_per_pair is not None:
            raise InputError("max_time_per_pair applies to precision-driven sampling: give precision too")
        return SamplingPlan("fixed", samples or DEFAULT_SAMPLES)
    if isinstance(precision, bool):
        raise InputError(f"precision must be a fraction like 0.02, got {precision!r}")
    try:
        precision = float(precision)
    except (TypeError, ValueError):
        raise InputError(f"precision must be a fraction like 0.02, got {precision!r}") from None
    if not 0.0001 <= precision <= 0.5:
        raise InputError(f"precision must be between 0.0001 and 0.5 (a fraction of the median), got {precision}")
    if max_time_per_pair is None:
        max_time_per_pair = DEFAULT_MAX_TIME_PER_PAIR
    try:
        max_time_per_pair = float(max_time_per_pair)
    except (TypeError, ValueError):
        raise InputError(f"max_time_per_pair must be a number of seconds, got {max_time_per_pair!r}") from None
    if not 0.001 <= max_time_per_pair <= 3600:
        raise InputError(f"max_time_per_pair must be between 0.001 and 3600 seconds, got {max_time_per_pair}")
    cap = samples or DEFAULT_MAX_SAMPLES
    return SamplingPlan("precision", cap, precision, max_time_per_pair,
                        first_chunk=min(FIRST_CHUNK, cap), min_chunk=min(MIN_CHUNK, cap))


class PairMeasurer:
    """Measures one pair of CPUs; the unit a sweep is made of.

    Tests and benchmarks substitute their own object with the same ``__call__`` to drive the sweep
    logic without hardware. A measurer returns ``samples`` one-way latencies in ns (NaN for dropped
    samples); one with ``symmetric = False`` returns both directions, shape ``(2, samples)``: row 0
    from ``cpu_a`` to ``cpu_b``, row 1 back.
    """

    symmetric = True

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


class OneWayMeasurer:
    """Measures both directions of a pair with timestamped messages (``kernel="oneway"``).

    Each message is timed alone: the sender's timer reading travels in the cache line and the
    receiver subtracts it from its own; the cost of one serializing timer read is subtracted. The
    result holds the offset between the two CPUs' timers, so every call also brackets that offset
    (the smallest difference seen in each direction bounds it, since no message arrives before it
    was sent) and refuses, with :class:`~corelat.errors.MeasurementError`, a pair whose timers
    provably disagree.
    """

    symmetric = False

    def __init__(self, messages, warmup, timeout, *, _stall=None, _offset_ns=0.0):
        ext = _ext()
        info = timer_info()
        if not info.get("invariant", False):
            raise InputError(
                f"kernel 'oneway' needs a timer that runs at a constant rate on every CPU; this machine's "
                f"{info.get('name')} is not invariant (no constant_tsc/nonstop_tsc): use kernel 'cas' or 'rw', "
                "or CORELAT_TIMER=clock")
        self.messages, self.warmup, self.timeout = messages, warmup, timeout
        self.ticks_per_ns = info["ticks_per_ns"]
        self.overhead_ns = info.get("overhead_serial_ticks", 0.0) / self.ticks_per_ns
        # Slack for the checks: two timer ticks and a nanosecond of rounding.
        self.tolerance_ns = 2.0 / self.ticks_per_ns + 1.0
        self._oneway = ext.oneway
        self._stall = bool(os.environ.get("CORELAT_TEST_STALL_PARTNER")) if _stall is None else _stall
        self._offset_ticks = round(_offset_ns * self.ticks_per_ns)  # test hook: a skewed clock
        self.last_bracket = None

    def _run(self, cpu_a, cpu_b, messages, samples, warmup):
        ab, ba, migrated, min_ab, min_ba = self._oneway(
            cpu_a, cpu_b, messages, samples, warmup, self.timeout,
            stall_responder=self._stall, offset_ticks=self._offset_ticks,
        )
        # Offset = cpu_b's timer - cpu_a's timer, in ns: a -> b messages give offset <= min_ab,
        # b -> a messages give offset >= -min_ba.
        lo, hi = -min_ba / self.ticks_per_ns, min_ab / self.ticks_per_ns
        self.last_bracket = (lo, hi)
        check_clock_bracket(cpu_a, cpu_b, lo, hi, self.tolerance_ns)
        return ab, ba, migrated

    def __call__(self, cpu_a, cpu_b, samples):
        """Latencies in ns, shape ``(2, samples)``: row 0 ``cpu_a`` → ``cpu_b``, row 1 back."""
        ab, ba, migrated = self._run(cpu_a, cpu_b, self.messages, samples, self.warmup)
        ns = np.vstack((ab, ba)).astype(np.float64) / (self.ticks_per_ns * self.messages) - self.overhead_ns
        ns[:, migrated] = np.nan
        return ns

    def check_clocks(self, cpus, messages=200, samples=5):
        """Bracket every CPU's timer offset against ``cpus[0]`` before a sweep; raise if one is off.

        Returns a list of ``{"cpu", "reference", "low_ns", "high_ns", "bound_ns"}``: the CPU's timer
        minus the reference's lies in ``[low_ns, high_ns]``, so they differ by at most ``bound_ns``.
        """
        out = []
        ref = cpus[0]
        for c in cpus[1:]:
            self._run(ref, c, min(messages, self.messages), samples, 1)
            lo, hi = self.last_bracket
            out.append({"cpu": int(c), "reference": int(ref), "low_ns": lo, "high_ns": hi,
                        "bound_ns": max(abs(lo), abs(hi))})
        return out


def check_clock_bracket(cpu_a, cpu_b, low_ns, high_ns, tolerance_ns=1.0):
    """Raise MeasurementError when ``[low_ns, high_ns]``, the bracket of cpu_b's timer minus cpu_a's,
    proves that the two timers disagree (by more than ``tolerance_ns``)."""
    advice = ("the one-way kernel needs timers synchronized across CPUs; use kernel 'cas' or 'rw' "
              "(round trips need no common clock)")
    if low_ns > high_ns + tolerance_ns:
        raise MeasurementError(
            f"CPUs {cpu_a} and {cpu_b}: a message and its answer took {high_ns - low_ns:.0f} ns together, "
            f"less than nothing: the timers do not advance consistently across these CPUs; {advice}")
    if low_ns > tolerance_ns or high_ns < -tolerance_ns:
        ahead, behind, by = (cpu_b, cpu_a, low_ns) if low_ns > 0 else (cpu_a, cpu_b, -high_ns)
        raise MeasurementError(
            f"CPUs {cpu_a} and {cpu_b}: the timer of CPU {ahead} is ahead of CPU {behind}'s by at least "
            f"{by:.0f} ns (messages arrived before they were sent); {advice}")


def clock_skew(cpus=None, *, messages=200, samples=5, timeout=1.0):
    """Measured bound on how far each CPU's timer is from the first CPU's (the one-way kernel's check).

    Returns the records of :meth:`OneWayMeasurer.check_clocks`. Raises InputError when the timer is
    not invariant, MeasurementError when two timers provably disagree.
    """
    cpus = resolve_cpus(cpus)
    m = OneWayMeasurer(messages, 1, timeout)
    return m.check_clocks(cpus, messages=messages, samples=samples)


def make_measurer(kernel, round_trips, warmup, timeout):
    """The real pair measurer for a kernel (PairMeasurer, or OneWayMeasurer for ``"oneway"``)."""
    if kernel == "oneway":
        return OneWayMeasurer(round_trips, warmup, timeout)
    return PairMeasurer(kernel, round_trips, warmup, timeout)


def sweep_pairs(n):
    """Index pairs (i, j), i > j, row by row: the lower triangle in printed order."""
    return [(i, j) for i in range(1, n) for j in range(i)]


class PairRun(NamedTuple):
    """One pair's measurement: all chunks together."""

    values: np.ndarray  #: ``(rows, k)`` ns; one row (symmetric kernels) or two (a → b, b → a)
    met: object  #: precision target reached (True/False); None for fixed-size sampling
    seconds: float  #: time spent, by the sweep's clock
    chunks: int  #: C calls made
    bracket: object = None  #: (low, high) ns of the timer offset (one-way kernel), or None
    flags: tuple = None  #: shape and migration flags per row, computed once (see _run_flags)


def _rows(v):
    v = np.asarray(v, dtype=np.float64)
    return v[None, :] if v.ndim == 1 else v


def measure_pair(measurer, cpu_a, cpu_b, plan, clock=time.perf_counter):
    """Measure one pair as ``plan`` says; returns a :class:`PairRun`.

    Precision-driven: a first chunk of ``plan.first_chunk`` samples, then chunks sized from how far
    the relative CI half-width still is from the target (it shrinks as 1/sqrt(n)), at most
    ``MAX_GROWTH`` times the samples so far, never fewer than ``plan.min_chunk`` and never more than
    the time left allows at the pace seen so far. Stops when every direction's CI is within ``plan.precision``, or when
    the samples cap or the time budget would be passed.
    """
    t_start = clock()
    bracket = None

    def call(k):
        nonlocal bracket
        v = _rows(measurer(cpu_a, cpu_b, k))
        b = getattr(measurer, "last_bracket", None)
        if b is not None:
            bracket = b if bracket is None else (max(bracket[0], b[0]), min(bracket[1], b[1]))
        return v

    if plan.mode == "fixed":
        v = call(plan.samples)
        return _with_flags(PairRun(v, None, clock() - t_start, 1, bracket))
    chunks, taken, k = [], 0, plan.first_chunk
    met = False
    while True:
        t0 = clock()
        chunks.append(call(k))
        pace = max(clock() - t0, 0.0) / k  # seconds per sample, chunk overhead included
        taken += k
        values = chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=1)
        width = float(np.max(quality.relative_ci(values)))
        if width <= plan.precision:
            met = True
            break
        left_samples = plan.samples - taken
        left_time = plan.max_time_per_pair - (clock() - t_start)
        if left_samples <= 0 or left_time <= 0:
            break
        # The half-width shrinks as 1/sqrt(n): aim 20 % past the predicted need, so one more chunk
        # usually suffices.
        want = taken * ((width / plan.precision) ** 2 * 1.2 - 1.0) if math.isfinite(width) else taken
        k = int(min(max(want, plan.min_chunk), MAX_GROWTH * taken, left_samples))
        if pace > 0:
            k = min(k, int(left_time / pace))
        if k < min(plan.min_chunk, left_samples):
            break  # not enough time left for a useful chunk
    return _with_flags(PairRun(values, met, clock() - t_start, len(chunks), bracket))


def _with_flags(run):
    # The verdict on a run's samples is wanted three times (re-test choice, ranking, assembly).
    return run._replace(flags=tuple(_row_flags(run)))


def _run_flags(run):
    """Shape and migration flags of each row of a run (list of PairFlag)."""
    return list(run.flags) if run.flags is not None else _row_flags(run)


def _row_flags(run):
    out = []
    for row in run.values:
        f = quality.pair_flags(row)
        if np.isnan(row).any():
            f |= PairFlag.MIGRATED
        out.append(f)
    return out


def _severity(run):
    flags = _run_flags(run)
    spread = max((quality.relative_spread(r) for r in run.values), key=lambda x: -1 if math.isnan(x) else x)
    return (any(f & PairFlag.BIMODAL for f in flags), 0.0 if math.isnan(spread) else spread)


def _run_median(run):
    with np.errstate(all="ignore"):
        meds = [np.nanmedian(r) if np.isfinite(r).any() else np.nan for r in run.values]
    return float(np.mean(meds))


def _grow(bar, k):
    # Progress totals grow when the sample strategy or the re-tests add pairs.
    if k and hasattr(bar, "total") and bar.total is not None:
        bar.total += k
        if hasattr(bar, "refresh"):
            bar.refresh()


def _retest_limit(retest, measured):
    if retest is True:
        return max(1, math.ceil(RETEST_FRACTION * measured))
    if retest is False or retest is None:
        return 0
    if isinstance(retest, (int, np.integer)) and retest >= 0:
        return int(retest)
    raise InputError(f"retest must be True, False or a number of pairs, got {retest!r}")


def measure(
    cpus=None,
    *,
    kernel="cas",
    round_trips=1000,
    samples=None,
    warmup=None,
    timeout=1.0,
    progress=False,
    order="os",
    name=None,
    precision="auto",
    max_time_per_pair=None,
    strategy="full",
    partition=None,
    topology=None,
    retest=True,
    _measurer=None,
    _clock=None,
):
    """Measure the core-to-core latency matrix.

    Args:
        cpus: CPU ids to measure (list, or a string like ``"0,2,4-7"``); None for every CPU this
            process may run on (``os.sched_getaffinity(0)``: taskset and cgroup cpusets apply).
        kernel: ``"cas"`` (compare-exchange on one line), ``"rw"`` (load/store on two lines) or
            ``"oneway"`` (timestamped messages, both directions; needs synchronized timers).
        round_trips: round trips timed together as one sample (messages per sample for
            ``"oneway"``).
        samples: with ``precision`` left at ``"auto"``, giving ``samples`` asks for exactly that
            many per pair (fixed-size sampling); with a ``precision``, the most samples per pair.
        warmup: samples run first and discarded, per pair (per chunk in precision-driven mode;
            default: a tenth of ``samples`` or of the first chunk).
        timeout: seconds a thread waits for its partner before the sweep stops with
            :class:`~corelat.errors.MeasurementTimeout`.
        progress: False, True (a progress bar on stderr) or a callable ``fn(done, total)``.
        order: ``"os"`` (CPU ids as given) or ``"topology"`` (package → node → L3 → core → thread).
        name: label for the result (default: the host name).
        precision: ``"auto"`` (default: precision-driven at ±2 % unless ``samples`` is given),
            a fraction (sample each pair until the 95 % CI of its median is within ± that fraction
            of the median), or None (fixed-size: ``samples``, default 300).
        max_time_per_pair: seconds each pair may take in precision-driven mode (default 0.2);
            pairs that run out are flagged ``TARGET_NOT_MET``.
        strategy: ``"full"`` (every pair) or ``"sample"`` (enough pairs per topology block pair,
            the rest estimated and flagged ``ESTIMATED``; see :mod:`corelat.sampling`).
        partition: for ``strategy="sample"``, blocks of CPUs (a list of CPU lists) to use instead
            of the topology read from sysfs.
        topology: for ``strategy="sample"``, the topology to use instead of this machine's (a
            :class:`~corelat.topology.Topology` or its ``table()`` records; for simulations).
        retest: re-measure at the end the pairs that look unstable (bimodal, spread, migrated):
            True (at most a tenth of the pairs, worst first), False, or a number of pairs.

    Returns:
        A frozen :class:`~corelat.result.LatencyResult` of one-way latencies in ns (round-trip time
        / 2 for ``cas`` and ``rw``, each pair measured once with the lower-index CPU timing and
        mirrored; for ``oneway`` ``samples[i, j]`` are messages from ``cpus[i]`` to ``cpus[j]``).
        ``flags`` say per pair what was measured, mirrored, estimated, re-tested and doubtful;
        ``extras`` hold ``samples_taken`` and ``dropped`` per pair, the ``first_attempt`` samples and
        ``first_flags`` of re-tested pairs, ``estimated_from`` (sample strategy, ``(n, n, 2)``: the
        CPU ids of the cell an estimate copies, -1 where measured) and ``skew_bound_ns`` (oneway).
        ``warnings`` says in words what looks wrong.

    Raises:
        InputError (a ValueError) for bad arguments; MeasurementTimeout (a TimeoutError) when a
        partner stops answering; MeasurementError when the one-way kernel finds the timers out of
        step; KeyboardInterrupt within about 0.1 s of Ctrl-C.
    """
    cpus = resolve_cpus(cpus)
    kernel, round_trips, samples, warmup, timeout = check_params(kernel, round_trips, samples, warmup, timeout)
    plan = check_sampling(samples, precision, max_time_per_pair)
    if order not in ("os", "topology"):
        raise InputError(f"unknown order {order!r}; use 'os' or 'topology'")
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; use one of: {', '.join(STRATEGIES)}")
    if (partition is not None or topology is not None) and strategy != "sample":
        raise InputError("partition and topology are used by strategy='sample' only")
    if partition is not None and topology is not None:
        raise InputError("give either a partition or a topology, not both")
    _retest_limit(retest, 0)  # validate before measuring
    n = len(cpus)
    classes = sampling.pair_classes(cpus, partition, topology) if strategy == "sample" else None
    measurer = _measurer or make_measurer(kernel, round_trips, warmup, timeout)
    symmetric = bool(getattr(measurer, "symmetric", True))
    clock = _clock or time.perf_counter
    meta = sysinfo.collect()
    meta.update(_topology_metadata())
    timer = timer_info() if _measurer is None else {"name": "test double", "ticks_per_ns": 1.0}
    clock_check = None
    if hasattr(measurer, "check_clocks"):
        clock_check = measurer.check_clocks(cpus)  # refuse before the sweep if the timers disagree

    runs, first = {}, {}
    sampler = None
    bar = None
    started = time.monotonic()
    kernel_seconds = 0.0
    from . import progress as progress_mod

    def run_pair(p):
        nonlocal kernel_seconds
        i, j = p
        t0 = time.perf_counter()
        run = measure_pair(measurer, cpus[j], cpus[i], plan, clock)
        kernel_seconds += time.perf_counter() - t0
        bar.update(1)
        return run

    try:
        if strategy == "full":
            pairs = sweep_pairs(n)
            bar = progress_mod.make(progress, len(pairs))
            for p in pairs:
                runs[p] = run_pair(p)
        else:
            sampler = sampling.Sampler(classes)
            batch = sampler.next_batch()
            bar = progress_mod.make(progress, len(batch))
            while batch:
                for p in batch:
                    runs[p] = run_pair(p)
                    sampler.report(p, _run_median(runs[p]))
                batch = sampler.next_batch()
                _grow(bar, len(batch))
        # LinkTest: the pairs that look worst, measured again one at a time now that the sweep
        # no longer disturbs the machine; both attempts are kept.
        limit = _retest_limit(retest, len(runs))
        candidates = [p for p, r in runs.items() if any(f & quality.RETEST_FLAGS for f in _run_flags(r))]
        candidates.sort(key=lambda p: _severity(runs[p]), reverse=True)
        chosen, skipped = candidates[:limit], len(candidates) - min(limit, len(candidates))
        _grow(bar, len(chosen))
        for p in chosen:
            first[p] = runs[p]
            runs[p] = run_pair(p)
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.monotonic() - started
    estimates = sampler.estimates() if sampler is not None else {}
    blocks = sampling.cpu_blocks(cpus, partition, topology) if estimates and not symmetric else None

    data, flags, extras = _assemble(n, runs, first, plan, symmetric)
    if estimates:
        _estimate(data, flags, extras, estimates, symmetric, blocks, cpus)
    if clock_check is not None:
        bound = np.full((n, n), np.nan)
        for (i, j), run in runs.items():
            if run.bracket is not None:
                bound[i, j] = bound[j, i] = max(abs(run.bracket[0]), abs(run.bracket[1]))
        extras["skew_bound_ns"] = bound

    params = {"round_trips": round_trips, "samples": plan.samples, "warmup": warmup, "timeout": timeout}
    if plan.mode == "precision":
        params.update(precision=plan.precision, max_time_per_pair=plan.max_time_per_pair)
    notes = quality.warnings(
        flags, cpus, symmetric=symmetric, samples=data, precision=plan.precision,
        max_time_per_pair=plan.max_time_per_pair, retested=len(chosen),
        estimated=len(estimates), hypervisor=meta.get("hypervisor"))
    if skipped:
        notes.append(f"{skipped} more unstable pair(s) were not re-measured (retest limit {limit}; "
                     "pass retest=N to re-measure more)")
    meta.update(
        {
            "kernel": kernel,
            "kernel_description": ALL_KERNELS[kernel],
            "timer": timer,
            "parameters": params,
            "sampling": {
                "mode": plan.mode,
                "strategy": strategy,
                "precision": plan.precision,
                "max_time_per_pair": plan.max_time_per_pair,
                "max_samples": plan.samples if plan.mode == "precision" else None,
                "first_chunk": plan.first_chunk if plan.mode == "precision" else None,
                "pairs_measured": len(runs),
                "pairs_estimated": len(estimates),
                "pairs_retested": len(chosen),
                "pairs_target_not_met": sum(1 for r in runs.values() if r.met is False),
                "classes": len(classes) if classes is not None else None,
                "samples_taken": int(sum(r.values.shape[1] for r in runs.values())
                                     + sum(r.values.shape[1] for r in first.values())),
                "chunks": int(sum(r.chunks for r in runs.values()) + sum(r.chunks for r in first.values())),
            },
            "unit": "ns",
            "latency": "one-way = round-trip time / 2" if symmetric else
                       "one-way = receiver's timer at arrival - sender's timer at sending - one timer read",
            "symmetric": symmetric,
            "elapsed_s": elapsed,
            "kernel_s": kernel_seconds,
            "warnings": notes,
        }
    )
    if not symmetric:
        meta["direction"] = "samples[i, j]: messages sent by cpus[i], received by cpus[j]"
    if clock_check is not None:
        meta["clock_check"] = {
            "method": "smallest one-way time per direction brackets the timer offset",
            "reference": clock_check,
            "max_bound_ns": float(np.nanmax(extras["skew_bound_ns"])) if runs else None,
        }
    result = LatencyResult(cpus=cpus, kernel=kernel, samples=data, metadata=meta,
                           name=name or meta["hostname"], flags=flags, extras=extras)
    if order == "topology":
        result = result.ordered("topology")
    return result


def _cells(i, j, symmetric):
    """Matrix cells of a pair's rows: (i, j) for symmetric kernels; (j→i, i→j) for one-way runs,
    whose row 0 is cpus[j] → cpus[i]."""
    return [(i, j)] if symmetric else [(j, i), (i, j)]


def _assemble(n, runs, first, plan, symmetric):
    k = plan.samples if plan.mode == "fixed" else max([r.values.shape[1] for r in runs.values()] + [1])
    data = np.full((n, n, k), np.nan)
    flags = np.zeros((n, n), dtype=np.uint32)
    taken = np.zeros((n, n), dtype=np.int32)
    dropped = np.zeros((n, n), dtype=np.int32)

    def fill(store, fl, p, run, extra_bits=0):
        i, j = p
        for (r, c), row, f in zip(_cells(i, j, symmetric), run.values, _run_flags(run)):
            f = PairFlag.MEASURED | f | extra_bits
            if run.met is False:
                f |= PairFlag.TARGET_NOT_MET
            store[r, c, : row.size] = row
            fl[r, c] = f
            if store is data:
                taken[r, c] = row.size
                dropped[r, c] = int(np.isnan(row).sum())
            if symmetric:
                store[c, r] = store[r, c]
                fl[c, r] = (f & ~PairFlag.MEASURED) | PairFlag.MIRRORED
                if store is data:
                    taken[c, r], dropped[c, r] = taken[r, c], dropped[r, c]

    for p, run in runs.items():
        fill(data, flags, p, run, PairFlag.RETESTED if p in first else 0)
    extras = {"samples_taken": taken, "dropped": dropped}
    if first:
        k1 = max(r.values.shape[1] for r in first.values())
        first_data = np.full((n, n, k1), np.nan)
        first_flags = np.zeros((n, n), dtype=np.uint32)
        for p, run in first.items():
            fill(first_data, first_flags, p, run)
        extras["first_attempt"] = first_data
        extras["first_flags"] = first_flags
    return data, flags, extras


def _estimate(data, flags, extras, estimates, symmetric, blocks, cpus):
    """Copy each unmeasured pair's cells from its class representative; flag them ESTIMATED.

    ``extras["estimated_from"][r, c]`` holds the CPU ids (not positions, which reordering the
    result changes) of the cell that was copied."""
    n = data.shape[0]
    source = np.full((n, n, 2), -1, dtype=np.int64)
    for (i, j), (p, q) in estimates.items():
        if symmetric or blocks[i] == blocks[p]:
            pairs = [((i, j), (p, q)), ((j, i), (q, p))]
        else:  # one-way: keep the direction between the same blocks
            pairs = [((i, j), (q, p)), ((j, i), (p, q))]
        for (r, c), (sr, sc) in pairs:
            data[r, c] = data[sr, sc]
            flags[r, c] = PairFlag.ESTIMATED
            source[r, c] = (cpus[sr], cpus[sc])
    extras["estimated_from"] = source


def _topology_metadata():
    """The live machine's topology for the result (a missing or odd sysfs must not stop a sweep)."""
    from .topology import topology

    try:
        topo = topology()
    except Exception as e:  # noqa: BLE001 - topology is a label on the result, not a requirement
        return {"topology": None, "topology_summary": f"unknown ({type(e).__name__}: {e})"}
    return {"topology": topo.to_dict(), "topology_summary": topo.summary()}
