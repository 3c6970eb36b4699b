"""``corelat.smt()``: what SMT siblings (hyper-threads) cost each other.

For every core with two or more of the selected CPUs as SMT siblings, each pair of siblings gets:

* **latency**: ping-pong latency between the two siblings (one-way = round-trip time / 2, either
  kernel of :func:`corelat.measure`), side by side with the latency from the pair's first CPU to
  its *nearest non-sibling*: the next CPU in topology order that is on another core and shares,
  in this order of preference, its L2, its L3, its NUMA node or its package (else any other CPU).
* **a busy sibling's cost**: the throughput of a fixed loop on each sibling alone (the other one
  idle) and with both running it at once (cpuperf's same-core comparison), for two loops:
  ``alu`` (four independent 64-bit multiply-add chains: the core's multiplier, which siblings
  share) and ``mem`` (a dependent pointer chase through a private 64 KiB buffer: L1 misses that
  hit L2). The slowdown is alone / together: 2 means each thread ran at half speed.

Where no two selected CPUs are siblings (SMT absent or disabled, or a CPU selection without a
whole core) the result is empty and says why in :attr:`SMTResult.reason`; that is not an error.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import numpy as np

from corelat._core.binding import extension
from corelat._core.errors import InputError
from corelat._core.status import once_more_if_moved
from corelat._core.types import CPUs, PingPongKernel
from corelat._measure import progress as progress_mod
from corelat._measure.measurers import make_measurer
from corelat._measure.options import SweepOptions, sweep_keywords
from corelat._measure.sweep import measure_pair
from corelat._results.smt import LOOPS, SMTResult
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import timer_info
from corelat._system.topology import Topology
from corelat._system.topology import topology as read_topology
from corelat._system.validate import (
    KERNELS,
    check_params,
    resolve_cpus,
    seconds,
)

__all__ = ["LOOPS", "SMT_KERNELS", "SMTResult", "nearest_partner", "sibling_pairs", "smt", "throughput"]


#: Buffer of the memory loop, per thread: larger than any L1d, and two of them fit any L2 that SMT
#: siblings share on current x86 and POWER cores.
MEM_BYTES = 64 * 1024

MIN_DURATION, MAX_DURATION = 0.001, 60.0

#: The ping-pong kernels of :func:`corelat.measure` that measure sibling latency.
SMT_KERNELS = ("cas", "rw")

#: Where the nearest non-sibling is looked for, nearest first ("any" after these).
PARTNER_LEVELS = ("l2", "l3", "node", "package")


# ---------------------------------------------------------------------------------------------
# The result


# ---------------------------------------------------------------------------------------------
# Pair selection


def sibling_pairs(topo, cpus):
    """Every pair of SMT siblings among ``cpus``, cores in topology order, pairs within a core by
    CPU id: a list of ``(a, b)`` with ``a < b``."""
    ordered, _ = topo.order(cpus)
    rank = {c: i for i, c in enumerate(ordered)}
    groups = sorted(topo.smt_groups(cpus), key=lambda g: min(rank[c] for c in g))
    return [pair for g in groups for pair in itertools.combinations(sorted(g), 2)]


def _nearest(rows, ordered, cpu):
    me = rows[cpu]
    at = ordered.index(cpu)
    others = [c for c in ordered[at + 1:] + ordered[:at]
              if me["core"] is None or rows[c]["core"] != me["core"]]
    for level in PARTNER_LEVELS:
        if me[level] is None:
            continue
        for c in others:
            if rows[c][level] == me[level]:
                return c, level
    return (others[0], "any") if others else (None, None)


def nearest_partner(topo, cpu, cpus=None):
    """The nearest CPU to ``cpu`` among ``cpus`` (default: the topology's allowed CPUs) that is not
    on its core: ``(partner, level)``, or ``(None, None)`` if there is none.

    Nearest means sharing the L2, else the L3, else the NUMA node, else the package (``level``
    says which; ``"any"`` if none is shared). Among equally near CPUs the first one after ``cpu``
    in topology order is taken, wrapping around, so neighbouring cores pair with each other
    rather than all with the first.
    """
    cpus = list(topo.allowed if cpus is None else cpus)
    if cpu not in cpus:
        cpus.append(cpu)
    ordered, _ = topo.order(cpus)
    rows = {r["cpu"]: r for r in topo.records()}
    return _nearest(rows, list(ordered), cpu)


def _no_pairs_reason(topo, cpus):
    table = topo.records()
    if all(r["core"] is None for r in table):
        return "the topology does not say which CPUs share a core"
    multi = [r for r in table if r["siblings"] and len(r["siblings"]) > 1]
    if not multi:
        why = "every core runs one thread"
        if topo.root == "/":
            control = _sysinfo.read_text("/sys/devices/system/cpu/smt/control")
            if control in ("off", "forceoff"):
                why += f" (SMT is switched off: /sys/devices/system/cpu/smt/control is {control})"
            elif control in ("notsupported", "notimplemented"):
                why += " (the kernel reports no SMT support on these CPUs)"
        return f"no SMT siblings: {why}"
    allowed = set(topo.allowed)
    if not any(len(set(r["siblings"]) & allowed) > 1 for r in multi):
        return (f"no two CPUs this process may use are SMT siblings (allowed CPUs: "
                f"{_cpulist.format(allowed)})")
    return f"no two of the selected CPUs ({_cpulist.format(cpus)}) are SMT siblings"


# ---------------------------------------------------------------------------------------------
# Measuring


def _check_duration(duration):
    return seconds("duration", duration, MIN_DURATION, MAX_DURATION)


def throughput(cpus, loop="alu", *, duration=0.1, timeout=1.0):
    """Run a busy loop on each CPU of ``cpus`` (one pinned thread each, all starting together) for
    ``duration`` seconds: iterations per second of each thread, float64 ``(len(cpus),)``.

    ``loop`` is a name in :data:`LOOPS`. A thread moved off its CPU ends the run at once; it is run
    once more, then MeasurementError says the affinity changed. Raises InputError for bad arguments,
    MeasurementError if a thread cannot be pinned, MeasurementTimeout if the threads do not all reach
    the starting line within ``timeout`` seconds.
    """
    if loop not in LOOPS:
        raise InputError(f"unknown loop {loop!r}; choose one of: {', '.join(LOOPS)}")
    cpus = resolve_cpus(cpus, minimum=1)
    duration = _check_duration(duration)
    _, _, _, _, timeout = check_params("cas", 1, 1, 0, timeout)
    ext = extension()
    ticks_per_ns = timer_info()["ticks_per_ns"]
    iterations, ticks = once_more_if_moved(
        lambda: ext.smt_throughput(list(cpus), ext.SMT_LOOPS.index(loop), duration, timeout, MEM_BYTES),
        f"CPUs {_cpulist.format(cpus)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = iterations / (ticks / (ticks_per_ns * 1e9))
    rate[ticks == 0] = np.nan
    return rate


class _Cache:
    """Measurements reused across pairs: a non-sibling latency per CPU pair, a solo throughput per
    CPU and loop."""

    def __init__(self, measurer, busy, plan, duration):
        self.measurer, self.busy, self.plan, self.duration = measurer, busy, plan, duration
        self.nonsibling, self.alone = {}, {}
        self.dropped = 0  # latency measurements with samples dropped (a thread off its CPU)

    def latency(self, x, y):
        row = measure_pair(self.measurer, x, y, self.plan).values[0]
        self.dropped += bool(np.isnan(row).any())
        return row

    def partner_latency(self, a, partner):
        if (a, partner) not in self.nonsibling:
            self.nonsibling[(a, partner)] = self.latency(a, partner)
        return self.nonsibling[(a, partner)]

    def solo(self, loop, cpu):
        if (loop, cpu) not in self.alone:
            self.alone[(loop, cpu)] = float(self.busy([cpu], loop, self.duration)[0])
        return self.alone[(loop, cpu)]


def _padded(rows, width):
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        if r is not None:
            out[i, : len(r)] = r
    return out


def _measure_pairs(pairs, partners, measurer, busy, plan, duration, loops, progress=None, time_left=None):
    """Measure sibling pairs: latencies with ``measurer(a, b, samples)`` (ns array) as ``plan``
    (a :class:`~corelat._system.validate.SamplingPlan`) says, and throughput with ``busy(cpus, loop,
    duration)`` (iterations/s per thread). ``partners[i]`` is the non-sibling of ``pairs[i][0]``,
    or None. Non-sibling latencies and solo runs are measured once per CPU pair / CPU and reused.
    ``time_left()`` (a budget's seconds left, or None): no pair is started once it is below what a
    pair cost so far; those pairs stay NaN (``reached`` counts the pairs measured).
    Returns a dict of arrays; rows of precision-driven latencies are NaN past the samples taken."""

    k, nl = len(pairs), len(loops)
    sib, non = [None] * k, [None] * k
    alone = np.full((k, 2, nl), np.nan)
    together = np.full((k, 2, nl), np.nan)
    cache = _Cache(measurer, busy, plan, duration)
    kernel_s = 0.0
    reached = 0
    for i, ((a, b), partner) in enumerate(zip(pairs, partners)):
        if time_left is not None and time_left() <= (kernel_s / reached if reached else 0.0):
            break
        reached += 1
        t0 = time.perf_counter()
        sib[i] = cache.latency(a, b)
        if partner is not None:
            non[i] = cache.partner_latency(a, partner)
        for j, loop in enumerate(loops):
            alone[i, :, j] = [cache.solo(loop, cpu) for cpu in (a, b)]
            together[i, :, j] = busy([a, b], loop, duration)
        kernel_s += time.perf_counter() - t0
        if progress is not None:
            progress.update(1)
    width = plan.samples if plan.mode == "fixed" else max((len(r) for r in sib + non if r is not None),
                                                          default=1)
    return {"sibling": _padded(sib, width), "nonsibling": _padded(non, width), "alone": alone,
            "together": together, "kernel_s": kernel_s, "dropped": cache.dropped, "reached": reached}


def _resolve_in(cpus, allowed):
    """Validate a CPU selection against a given topology's allowed CPUs (for dumps)."""
    if cpus is None:
        return tuple(allowed)
    if isinstance(cpus, str):
        cpus = _cpulist.parse(cpus)
    try:
        cpus = list(cpus)
    except TypeError:
        raise InputError(f"cpus must be a list of CPU ids or a string like '0,2,4-7', not {cpus!r}") from None
    for c in cpus:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise InputError(f"CPU ids must be integers, got {c!r}")
    cpus = [int(c) for c in cpus]
    if len(set(cpus)) != len(cpus):
        raise InputError(f"CPU {_cpulist.format(c for c in cpus if cpus.count(c) > 1)} listed more than once")
    bad = sorted(set(cpus) - set(allowed))
    if bad:
        raise InputError(f"CPU {_cpulist.format(bad)} not allowed in this topology; allowed CPUs: "
                         f"{_cpulist.format(allowed)}")
    return tuple(cpus)


@sweep_keywords(omit=("order", "strategy", "partition", "retest", "home"))
def smt(cpus: CPUs = None, *, kernel: PingPongKernel = "cas", duration: float = 0.1,
        topology: Topology | None = None, **options: Any) -> SMTResult:
    """Measure what SMT siblings cost each other (see the module documentation).

    The latencies are measured as :func:`corelat.measure` measures a pair, with its keywords.

    Parameters
    ----------
    cpus : CPUs
        CPUs to consider (list, or a string like ``"0-7"``); None for every CPU this process
        may run on. Pairs are formed from siblings among them, partners chosen among them.
    kernel : PingPongKernel
        ``"cas"`` or ``"rw"`` (the ping-pong kernels of :func:`corelat.measure`).
    duration : float
        seconds each busy-loop run lasts (each pair runs 2 loops together, and each CPU
        runs them alone once); ``timeout`` also bounds the wait at the busy loops' start.
    topology : Topology | None
        a :class:`~corelat._system.topology.Topology` to take siblings and distances from
        (default: this machine's). CPUs must then be allowed in it.

    Returns
    -------
    SMTResult
        A frozen :class:`SMTResult`; empty, with a ``reason``, where no two selected CPUs are
        siblings.

    Raises
    ------
    InputError
        For bad arguments (also a ``ValueError``).
    MeasurementTimeout
        When a partner stops answering.
    MeasurementError
        When a measurement fails.
    KeyboardInterrupt
        Within about 0.1 s of Ctrl-C.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.smt(duration=0.01)  # doctest: +SKIP
    >>> print(r.table())  # doctest: +SKIP
    """
    return run(SweepOptions.for_smt(cpus, kernel=kernel, kernels=SMT_KERNELS, topology=topology, **options),
               duration)


def smt_with(measurer, busy, cpus=None, *, duration=0.1, **options):
    """:func:`smt` with stand-ins: ``measurer(a, b, samples)`` for the latencies (ns) and
    ``busy(cpus, loop, seconds)`` for the throughput (iterations/s per thread); the private layer
    for tests and benchmarks. ``options`` are :func:`smt`'s keywords but ``duration``."""
    options = SweepOptions.for_smt(cpus, kernels=SMT_KERNELS, **options)
    return run(options, duration, measurer=measurer, busy=busy)


def _resolve(options):
    """``options`` with the CPUs read against their topology (this machine's unless one is given),
    and that topology."""
    if options.topology is None:
        cpus = resolve_cpus(options.cpus, minimum=1)
        topo = read_topology()
        cpus = tuple(c for c in cpus if c in set(topo.cpus))  # sysfs may not know every CPU
    else:
        topo = options.topology
        cpus = _resolve_in(options.cpus, topo.allowed)
    return dataclasses.replace(options, cpus=tuple(sorted(cpus)), resolved=True), topo


def _metadata(options, topo, duration):
    meta = _sysinfo.collect()
    meta.update({
        "topology": topo.to_dict(),
        "topology_summary": topo.headline(),
        "kernel": options.kernel,
        "kernel_description": KERNELS[options.kernel][1],
        "parameters": {**options.parameters, "duration": duration, "mem_bytes": MEM_BYTES},
        "loops": dict(LOOPS),
        "unit": "ns",
        "latency": "one-way = round-trip time / 2",
        "throughput": "iterations per second per thread",
    })
    return meta


def _empty(options, topo, meta, common):
    meta["warnings"] = []
    width, nl = options.samples or 0, len(common["loops"])
    return SMTResult(pairs=np.zeros((0, 2), np.int64), partners=np.zeros(0, np.int64), partner_levels=(),
                     sibling_samples=np.zeros((0, width)), nonsibling_samples=np.zeros((0, width)),
                     alone=np.zeros((0, 2, nl)), together=np.zeros((0, 2, nl)),
                     metadata=meta, reason=_no_pairs_reason(topo, options.cpus), **common)


def run(options, duration=0.1, *, measurer=None, busy=None):
    """Measure as ``options`` (from :meth:`SweepOptions.for_smt`) say, each busy loop for
    ``duration`` seconds; ``measurer`` and ``busy`` are stand-ins for tests (see :func:`smt_with`)."""
    started = time.monotonic()  # a budget counts from here: set-up included
    duration = _check_duration(duration)
    options, topo = _resolve(options)
    cpus, loops = options.cpus, tuple(LOOPS)
    meta = _metadata(options, topo, duration)
    pairs = sibling_pairs(topo, cpus) if cpus else []
    common = {"cpus": cpus, "kernel": options.kernel, "loops": loops,
              "name": options.name or meta["hostname"]}
    if not pairs:
        return _empty(options, topo, meta, common)

    rows = {r["cpu"]: r for r in topo.records()}
    ordered = list(topo.order(cpus)[0])
    found = [_nearest(rows, ordered, a) for a, _ in pairs]
    partners = [p for p, _ in found]
    timer = timer_info() if measurer is None else {"name": "test double", "ticks_per_ns": 1.0}
    measurer = measurer or make_measurer(options.kernel, options.round_trips, options.warmup, options.timeout)
    if busy is None:
        def busy(cpu_list, loop, seconds):
            return throughput(cpu_list, loop, duration=seconds, timeout=options.timeout)

    bar = progress_mod.make(options.progress, len(pairs), desc="corelat smt")
    try:
        data = _measure_pairs(pairs, partners, measurer, busy, options.plan, duration, loops, bar,
                              None if options.budget is None else lambda: options.budget - (time.monotonic()
                                                                                            - started))
    finally:
        bar.close()
    used = time.monotonic() - started
    meta.update({"timer": timer, "elapsed_s": used, "kernel_s": data["kernel_s"],
                 "warnings": _warnings(data)})
    if options.budget is not None:
        left = len(pairs) - data["reached"]
        meta["budget"] = {"seconds": options.budget, "used_s": used, "complete": not left,
                          "pairs": len(pairs), "pairs_measured": data["reached"], "pairs_not_reached": left}
        if left:
            meta["warnings"].append(f"budget {options.budget:g} s: {left} of {len(pairs)} sibling pair(s) "
                                    "not reached (NaN)")
    return SMTResult(pairs=np.array(pairs, np.int64),
                     partners=np.array([-1 if p is None else p for p in partners], np.int64),
                     partner_levels=tuple(lv or "" for _, lv in found),
                     sibling_samples=data["sibling"], nonsibling_samples=data["nonsibling"],
                     alone=data["alone"], together=data["together"], metadata=meta, reason=None, **common)


def _warnings(data):
    out = []
    dropped = data["dropped"]
    if dropped:
        out.append(f"{dropped} latency measurement(s) had samples dropped because a thread was not on "
                   "its CPU")
    bad = int(np.isnan(data["alone"]).sum() + np.isnan(data["together"]).sum())
    if bad:
        out.append(f"{bad} throughput value(s) missing because a thread was not on its CPU")
    return out
