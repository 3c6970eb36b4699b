"""Pair measurers: one call measures one pair of CPUs with a C kernel and returns nanoseconds.

A sweep (:func:`corelat.measure`) is made of such calls. Every measurer follows one protocol,
:class:`Measurer`; tests and benchmarks substitute objects with the same ``__call__`` to drive the
sweep without hardware. Which C entry point a kernel calls, and which measurer builds that call's
arguments and reads its result, is one row of :data:`MEASURERS`: a new kernel is one row there,
one measurer (or an existing one reused) and one C function.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Protocol

import numpy as np

from corelat._core.binding import extension
from corelat._core.errors import InputError, MeasurementError
from corelat._core.status import once_more_if_moved
from corelat._core.types import CPUs
from corelat._system.home import Home, chain_lines, chain_order, merge_reports
from corelat._system.timer import timer_info
from corelat._system.validate import check_skew_params, resolve_cpus


# Who first touches the page, as csrc/placement.h numbers team members.
_TOUCH_INITIATOR, _TOUCH_RESPONDER, _TOUCH_THIRD = 0, 1, 2


def kernel_home(home):
    """``(node, toucher, cpu)`` for the C kernels' ``home=``, from a :class:`~corelat._system.home.Home`."""
    if home.kind == "responder":
        return (-1, _TOUCH_RESPONDER, -1)
    if home.kind == "node":
        return (home.value, _TOUCH_INITIATOR, -1)
    if home.kind == "cpu":
        return (-1, _TOUCH_THIRD, home.value)
    return (-1, _TOUCH_INITIATOR, -1)


def _once_more_if_moved(call, cpu_a, cpu_b, moves=None):
    """Run ``call()``, once more if a thread was moved off its CPU (:func:`once_more_if_moved`; the
    move is appended to ``moves``)."""
    return once_more_if_moved(call, f"CPUs {cpu_a} and {cpu_b}", moves)


def _kernel_calls(call, samples, warmup, budget, home, cpu_a, cpu_b, moves=None):
    """The outputs of the kernel calls that make ``samples`` samples: ``call(k, warmup, budget)``
    once, or, with a third CPU as the home (``cpu:K``), once per sample without warm-up: the third
    CPU writes the page once per kernel call, so every sample then starts with the line Modified
    in its cache (``budget`` is checked between the calls)."""
    if home.kind != "cpu":
        return [_once_more_if_moved(lambda: call(samples, warmup, budget), cpu_a, cpu_b, moves)]
    calls, t0 = [], time.monotonic()
    while len(calls) < samples and not (calls and budget and time.monotonic() - t0 > budget):
        calls.append(_once_more_if_moved(lambda: call(1, 0, 0.0), cpu_a, cpu_b, moves))
    return calls


def _merged_report(calls):
    report = None
    for _, r in calls:
        report = merge_reports(report, r)
    return report


class Measurer(Protocol):
    """What the sweep asks of a pair measurer (only ``__call__`` is required of a stand-in).

    ``measurer(cpu_a, cpu_b, samples)`` returns ``samples`` one-way latencies in ns (NaN for dropped
    samples): shape ``(samples,)``, or ``(2, samples)`` (row 0 ``cpu_a`` → ``cpu_b``, row 1 back)
    for a measurer with ``symmetric = False``. One with ``budgeted = True`` also takes ``budget=``
    seconds and may return fewer samples when that time ran out inside the call. Optional, read
    with ``getattr`` by the sweep: ``last_home`` (per row, where the page was found in the last
    call), ``last_bracket`` (the timer offset's bracket), ``moves`` (a list the measurer appends
    ``(pinned CPU, CPU it ran on)`` to whenever a thread moved from outside made it measure again),
    ``check_clocks(cpus)`` (run before the sweep) and ``describe()`` (what the result's metadata
    records about the kernel).
    """

    symmetric: bool
    budgeted: bool

    def __call__(self, cpu_a: int, cpu_b: int, samples: int, budget: float | None = None) -> np.ndarray: ...


class PairMeasurer:
    """Measures one pair of CPUs; the unit a sweep is made of.

    Tests and benchmarks substitute their own object with the same ``__call__`` to drive the sweep
    logic without hardware. A measurer returns ``samples`` one-way latencies in ns (NaN for dropped
    samples); one with ``symmetric = False`` returns both directions, shape ``(2, samples)``: row 0
    from ``cpu_a`` to ``cpu_b``, row 1 back. A measurer with ``budgeted = True`` also takes
    ``budget=`` seconds and may return fewer samples when that time ran out inside the call.
    """

    symmetric = True
    budgeted = True

    def __init__(self, kernel, round_trips, warmup, timeout, *, home=None, _stall=False, _freeze=0.0):
        ext = extension()
        entry = MEASURERS[kernel]
        self.kernel = kernel
        self.code = getattr(ext, entry.variant)
        self.round_trips, self.warmup, self.timeout = round_trips, warmup, timeout
        self.ticks_per_ns = timer_info()["ticks_per_ns"]
        self._pingpong = getattr(ext, entry.function)
        # test switches of the C kernels (tests/partner_cli.py sets them in a subprocess): a partner
        # that never answers but obeys abort, or one that sleeps deaf to everything, as frozen
        self._stall, self._freeze = bool(_stall), float(_freeze)
        self.home = Home("initiator") if home is None else home
        #: per row of the last call: (node the page was found on, mbind errno, move_pages errno,
        #: the timing CPU, its partner); see corelat._system.home
        self.last_home = None
        #: (pinned CPU, CPU it ran on) of every thread moved from outside, each call measured again
        self.moves = []

    def __call__(self, cpu_a, cpu_b, samples, budget=None):
        """One-way latencies in ns (float64, ``samples`` long, fewer if ``budget`` seconds ran out).

        A thread moved off its CPU ends the call at once; the pair is measured once more, then
        MeasurementError says the affinity changed."""
        where = kernel_home(self.home)

        def call(k, warmup, budget):
            return self._pingpong(cpu_a, cpu_b, self.code, self.round_trips, k, warmup, self.timeout,
                                  stall_responder=self._stall, budget=budget or 0.0, freeze=self._freeze,
                                  home=where)

        calls = _kernel_calls(call, samples, self.warmup, budget, self.home, cpu_a, cpu_b, self.moves)
        ticks = np.concatenate([t for t, _ in calls])
        self.last_home = (_merged_report(calls) + (cpu_a, cpu_b),)
        return ticks / (self.ticks_per_ns * self.round_trips * 2.0)

    @classmethod
    def build(cls, kernel, round_trips, warmup, timeout, *, home=None):
        """The measurer of ``kernel`` for a sweep's sizes (see :func:`make_measurer`)."""
        return cls(kernel, round_trips, warmup, timeout, home=home)

    def describe(self):
        """``cas_impl``: the compare-exchange the extension chose at start-up (aarch64: LSE or LL/SC)."""
        return {"cas_impl": getattr(extension(), "CAS_IMPL", None) if self.kernel == "cas" else None}


class OneWayMeasurer:
    """Measures both directions of a pair with timestamped messages (``kernel="oneway"``).

    Each message is timed alone: the sender's timer reading travels in the cache line and the
    receiver subtracts it from its own; the cost of one serializing timer read is subtracted. The
    result holds the offset between the two CPUs' timers, so every call also brackets that offset
    (the smallest difference seen in each direction bounds it, since no message arrives before it
    was sent) and refuses, with :class:`~corelat._core.errors.MeasurementError`, a pair whose timers
    provably disagree.
    """

    symmetric = False
    budgeted = True

    def __init__(self, messages, warmup, timeout, *, home=None, _stall=False, _offset_ns=0.0, _freeze=0.0):
        ext = extension()
        info = timer_info()
        if not info.get("invariant", False):
            raise InputError(
                f"kernel 'oneway' needs a timer that runs at a constant rate on every CPU; this machine's "
                f"{info.get('name')} is not invariant (no constant_tsc/nonstop_tsc): use kernel 'cas' or "
                "'rw', or CORELAT_TIMER=clock")
        self.messages, self.warmup, self.timeout = messages, warmup, timeout
        self.ticks_per_ns = info["ticks_per_ns"]
        self.overhead_ns = info.get("overhead_serial_ticks", 0.0) / self.ticks_per_ns
        # Slack for the checks: two steps of the timer (its measured resolution, which on some hosts
        # is ~24 ticks, not one) and a nanosecond of rounding.
        step_ticks = max(float(info.get("resolution_ticks", 1.0)), 1.0)
        self.tolerance_ns = 2.0 * step_ticks / self.ticks_per_ns + 1.0
        self._oneway = getattr(ext, MEASURERS["oneway"].function)
        self._stall, self._freeze = bool(_stall), float(_freeze)  # test switches, as above
        self._offset_ticks = round(_offset_ns * self.ticks_per_ns)  # test hook: a skewed clock
        self.last_bracket = None
        self.home = Home("initiator") if home is None else home
        self.last_home = None
        self.moves = []  # as PairMeasurer's

    def _run(self, cpu_a, cpu_b, messages, samples, warmup, budget=None):
        def call(k, warmup, budget):
            return self._oneway(cpu_a, cpu_b, messages, k, warmup, self.timeout, stall_responder=self._stall,
                                offset_ticks=self._offset_ticks, budget=budget or 0.0, freeze=self._freeze,
                                home=kernel_home(self.home))

        calls = _kernel_calls(call, samples, warmup, budget, self.home, cpu_a, cpu_b, self.moves)
        ab, ba = (np.concatenate([out[k] for out, _ in calls]) for k in (0, 1))
        min_ab, min_ba = (min(out[k] for out, _ in calls) for k in (2, 3))
        # one page carries both directions
        self.last_home = (tuple(_merged_report(calls)) + (cpu_a, cpu_b),) * 2
        # Offset = cpu_b's timer - cpu_a's timer, in ns: a -> b messages give offset <= min_ab,
        # b -> a messages give offset >= -min_ba.
        lo, hi = -min_ba / self.ticks_per_ns, min_ab / self.ticks_per_ns
        self.last_bracket = (lo, hi)
        check_clock_bracket(cpu_a, cpu_b, lo, hi, self.tolerance_ns)
        return ab, ba

    def __call__(self, cpu_a, cpu_b, samples, budget=None):
        """Latencies in ns, shape ``(2, samples)``: row 0 ``cpu_a`` → ``cpu_b``, row 1 back (fewer
        samples if ``budget`` seconds ran out)."""
        ab, ba = self._run(cpu_a, cpu_b, self.messages, samples, self.warmup, budget)
        return np.vstack((ab, ba)).astype(np.float64) / (self.ticks_per_ns * self.messages) - self.overhead_ns

    @classmethod
    def build(cls, kernel, round_trips, warmup, timeout, *, home=None):
        """The measurer of ``kernel`` for a sweep's sizes: ``round_trips`` messages per sample."""
        return cls(round_trips, warmup, timeout, home=home)

    def describe(self):
        return {}

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


class ChaseMeasurer:
    """Measures clean or modified line transfers (``kernel="read-clean"`` / ``"read-modified"``).

    The owner reads (clean) or writes (modified) every line of a chain; the reader then follows the
    chain, one dependent load per line, in a random single-cycle order (:func:`chain_order`). Between
    samples, untimed, the reader evicts the lines from every cache and the owner touches them again.
    A sample is the time of one pass divided by the chain's length: the cost of one load that the
    owner's cache serves. Both directions are measured (row 0: ``cpu_a`` owns, ``cpu_b`` reads).
    The chain is half the owner's L2 (:func:`chain_lines`), so the owner holds every line.
    """

    symmetric = False
    budgeted = False

    def __init__(self, kernel, warmup, timeout, *, home=None, lines=None, seed=None, _stall=False):
        ext = extension()
        if not getattr(ext, "HAVE_CHASE", 0):
            raise InputError(f"kernel {kernel!r} needs a cache-line eviction instruction (x86 clflush, "
                             "aarch64 dc civac); this architecture has none: use kernel 'cas' or 'rw'")
        entry = MEASURERS[kernel]
        self.kind = getattr(ext, entry.variant)
        self.warmup, self.timeout = warmup, timeout
        self.ticks_per_ns = timer_info()["ticks_per_ns"]
        self._chase = getattr(ext, entry.function)
        self._stall = bool(_stall)  # a test switch, as PairMeasurer's
        self.home = Home("initiator") if home is None else home
        self.lines = lines  # None: from each owner's L2
        self._rng = np.random.default_rng(seed)
        self._orders = {}
        self.last_home = None
        self.moves = []  # as PairMeasurer's

    @classmethod
    def build(cls, kernel, round_trips, warmup, timeout, *, home=None):
        """The measurer of ``kernel`` for a sweep (``round_trips`` does not apply: the chain's
        length is the owner's L2)."""
        return cls(kernel, warmup, timeout, home=home)

    def describe(self):
        """``chain_lines``: the lengths of the chains used."""
        return {"chain_lines": sorted(self._orders)}

    def order(self, owner):
        """The chain used when ``owner`` holds the lines (drawn once per chain length)."""
        n = self.lines or chain_lines(owner)
        if n not in self._orders:
            self._orders[n] = chain_order(n, self._rng).tolist()
        return self._orders[n]

    def _one(self, reader, owner, samples):
        order = self.order(owner)

        def call():
            return self._chase(reader, owner, self.kind, order, samples, self.warmup, self.timeout,
                               stall_responder=self._stall, home=kernel_home(self.home))

        ticks, report = _once_more_if_moved(call, reader, owner, self.moves)
        return ticks / (self.ticks_per_ns * len(order)), tuple(report) + (reader, owner)

    def __call__(self, cpu_a, cpu_b, samples):
        """Per-load latencies in ns, shape ``(2, samples)``: row 0 lines held by ``cpu_a`` read by
        ``cpu_b``, row 1 the other way round."""
        ab, rep_ab = self._one(cpu_b, cpu_a, samples)
        ba, rep_ba = self._one(cpu_a, cpu_b, samples)
        self.last_home = (rep_ab, rep_ba)
        return np.vstack((ab, ba))


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


def clock_skew(cpus: CPUs = None, *, messages: int = 200, samples: int = 5,
               timeout: float = 1.0) -> list[dict]:
    """Measured bound on how far each CPU's timer is from the first CPU's (the one-way kernel's check).

    Parameters
    ----------
    cpus : CPU selection, optional
        As for :func:`corelat.measure` (default: every CPU this process may use); the first is
        the reference.
    messages : int
        Timestamped messages each way per sample.
    samples : int
        Samples per CPU.
    timeout : float
        Seconds to wait for a partner before giving up.

    Returns
    -------
    list of dict
        One per CPU after the first: ``cpu``, ``reference``, and ``low_ns``, ``high_ns``: the CPU's
        timer minus the reference's lies in ``[low_ns, high_ns]``, so they differ by at most
        ``bound_ns``.

    Raises
    ------
    InputError
        For a bad selection, sizes out of range (``messages`` up to 10,000,000, ``samples`` up
        to 1,000,000, ``timeout`` 0.001 to 3600 s, as :func:`corelat.measure`), or a timer that
        is not invariant.
    MeasurementError
        When two timers provably disagree.
    MeasurementTimeout
        When a partner does not answer in time.

    Examples
    --------
    >>> import corelat
    >>> skew = corelat.clock_skew([0, 1], messages=20, samples=2)
    >>> [(s["reference"], s["cpu"]) for s in skew]
    [(0, 1)]
    """
    messages, samples, timeout = check_skew_params(messages, samples, timeout)
    cpus = resolve_cpus(cpus)
    m = OneWayMeasurer(messages, 1, timeout)
    return m.check_clocks(cpus, messages=messages, samples=samples)


class KernelEntry(NamedTuple):
    """One kernel's row of :data:`MEASURERS`."""

    function: str  #: the C entry point of the extension (``corelat._corelat``)
    variant: str | None  #: the extension constant that selects the kernel inside it, or None
    measurer: Any  #: the measurer class: builds the C call's arguments and reads its result


#: Kernel name -> the C function it calls, its variant there, and the measurer that calls it.
MEASURERS: dict[str, KernelEntry] = {
    "cas": KernelEntry("pingpong", "KERNEL_CAS", PairMeasurer),
    "rw": KernelEntry("pingpong", "KERNEL_RW", PairMeasurer),
    "oneway": KernelEntry("oneway", None, OneWayMeasurer),
    "read-clean": KernelEntry("chase", "CHASE_CLEAN", ChaseMeasurer),
    "read-modified": KernelEntry("chase", "CHASE_MODIFIED", ChaseMeasurer),
}


def make_measurer(kernel, round_trips, warmup, timeout, home=None):
    """The real pair measurer for a kernel (its :data:`MEASURERS` row); ``home`` a
    :class:`~corelat._system.home.Home`."""
    return MEASURERS[kernel].measurer.build(kernel, round_trips, warmup, timeout, home=home)
