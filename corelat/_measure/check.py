"""``corelat.check()``: what on this machine can distort a latency measurement.

A read-only report, like ``pyperf system show``: frequency governor and boost, SMT, isolated CPUs,
hypervisor, load and busy CPUs, the kernel's clock source and whether the TSC is invariant, and (on
the live machine) a measured bound on how far the CPUs' timers are apart. Every item says what it
found and whether that matters; an item that cannot be read says so instead of guessing. Nothing
needs root.

Every reader takes a ``root`` folder (``"/"`` for the running system, or a copy of ``/sys`` and
``/proc`` from another machine), so each one can be tested on a fake tree.
"""

from __future__ import annotations

import os
import time

from corelat._core.errors import InputError, InputTypeError, MeasurementError
from corelat._core.types import CPUs, Path
from corelat._measure.measurers import clock_skew
from corelat._results.check import CheckReport
from corelat._system import sysinfo as _sysinfo
from corelat._system.conditions import (
    OK,
    UNKNOWN,
    WARN,
    CheckItem,
    check_boost,
    check_busy,
    check_clocksource,
    check_governor,
    check_hypervisor,
    check_isolated,
    check_load,
    check_smt,
    check_timer_resolution,
    check_tsc,
)
from corelat._system.timer import timer_info
from corelat._system.validate import seconds

#: The watch of ``/proc/stat`` for busy CPUs, in seconds: its counters advance in ticks of 10 ms
#: (USER_HZ), so a shorter watch sees nothing; a minute tells as much as any longer watch.
MIN_INTERVAL, MAX_INTERVAL = 0.01, 60.0


def check_timer_skew(cpus=None):
    """Measured bound on the timer offset between CPUs (live machine only; runs the one-way check)."""

    try:
        records = clock_skew(cpus)
        name = timer_info().get("name")
    except InputError as e:
        return CheckItem("timer_skew", UNKNOWN, f"not measured: {e}",
                         "the one-way kernel cannot be used here")
    except MeasurementError as e:
        return CheckItem("timer_skew", WARN, str(e),
                         "the CPUs' timers disagree: one-way latencies would be wrong, so the one-way "
                         "kernel refuses; round-trip kernels (cas, rw) are unaffected")
    except Exception as e:  # noqa: BLE001 - an item that cannot be measured says so
        return CheckItem("timer_skew", UNKNOWN, f"not measured ({type(e).__name__}: {e})",
                         "cannot tell whether the CPUs' timers agree")
    return judge_timer_skew(records, name)


#: A timer-offset bound is harmless below this share of the latencies it would distort.
SKEW_SHARE = 0.1
#: A typical fast transfer (SMT siblings, a shared L3) that one-way results should resolve.
TYPICAL_FAST_NS = 20.0


def judge_timer_skew(records, name=None):
    """The timer_skew item from the one-way check's records, judged against the latencies it would
    distort: a bound is fine only below a tenth of the smallest latency measured (and of a typical
    20 ns transfer), since a smaller offset cannot be told apart from a real direction difference.
    (The fastest-message bracket's bound is never below the offset-free latency, so it always warns:
    that method cannot certify the timers that closely.)"""
    bound = max(r["bound_ns"] for r in records)
    ref = records[0]["reference"]
    # low/high bracket the offset by the two directions' fastest messages: their half-sum is the
    # offset-free latency of that pair.
    latencies = [(r["high_ns"] - r["low_ns"]) / 2 for r in records if r["high_ns"] >= r["low_ns"]]
    smallest = min(latencies) if latencies else None
    limit = SKEW_SHARE * min([TYPICAL_FAST_NS] + ([smallest] if smallest else []))
    found = (f"{name or 'the timers'} of {len(records) + 1} CPUs agree with CPU {ref}'s within {bound:.0f} ns"
             + (f", against one-way latencies from {smallest:.0f} ns" if smallest is not None else ""))
    details = [dict(r) for r in records]
    if bound <= limit:
        return CheckItem("timer_skew", OK, found + " (no message arrived before it was sent)",
                         "one-way latencies can be trusted up to that bound", details)
    return CheckItem(
        "timer_skew", WARN, found + f": more than {limit:.1f} ns, a tenth of "
        + ("the smallest latency" if smallest is not None and smallest < TYPICAL_FAST_NS
           else f"a typical {TYPICAL_FAST_NS:.0f} ns SMT/L3 transfer"),
        f"one-way direction differences below {2 * bound:.0f} ns cannot be told apart from a timer offset: "
        "read the one-way kernel's (a→b + b→a) / 2, or use the round-trip kernels (cas, rw), which need no "
        "common clock", details)


def check(root: Path = "/", *, interval: float = 0.2, cpus: CPUs = None,
          measure_skew: bool | None = None) -> CheckReport:
    """The report: a :class:`CheckReport` of :class:`CheckItem`, one per thing that can distort measurements.

    Parameters
    ----------
    root : Path
        ``"/"`` for this machine, or a folder holding another machine's ``sys`` and ``proc``.
    interval : float
        seconds between the two reads of ``/proc/stat`` for busy CPUs and steal time, 0.01 to 60.
    cpus : CPUs
        CPUs for the timer-skew measurement (default: all this process may use).
    measure_skew : bool | None
        measure the timer offset bound between CPUs (default: only when ``root`` is
        ``"/"``; it runs the one-way kernel's check, a few milliseconds).

    Raises
    ------
    InputError
        For an ``interval`` out of range, or a ``measure_skew`` that is neither None nor a bool.

    Examples
    --------
    >>> import corelat
    >>> report = corelat.check(interval=0.05)  # doctest: +SKIP
    >>> [item.name for item in report if item.matters]  # doctest: +SKIP
    """
    interval = seconds("interval", interval, MIN_INTERVAL, MAX_INTERVAL)
    if measure_skew is not None and not isinstance(measure_skew, bool):
        raise InputTypeError(f"measure_skew must be True, False or None, got {measure_skew!r:.60}")
    return run_checks(root, interval=interval, cpus=cpus, measure_skew=measure_skew)


def run_checks(root="/", *, interval=0.2, cpus=None, measure_skew=None, sleep=time.sleep):
    """:func:`check` with a stand-in ``sleep`` (the private layer for tests)."""
    items = [
        check_governor(root),
        check_boost(root),
        check_smt(root),
        check_isolated(root),
        check_hypervisor(root),
        check_load(root),
        check_busy(root, interval, sleep=sleep),
        check_clocksource(root),
        check_tsc(root),
    ]
    if measure_skew is None:
        measure_skew = os.path.abspath(root) == "/"
    if measure_skew:
        items.append(check_timer_resolution())
        items.append(check_timer_skew(cpus))
    live = os.path.abspath(root) == "/"
    return CheckReport(items, metadata={"root": os.fspath(root)}, name=_sysinfo.hostname() if live else
                       os.path.basename(os.path.normpath(os.fspath(root))))
