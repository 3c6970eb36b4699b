"""``corelat.measure()``: the core-to-core latency sweep.

Python validates every argument and orchestrates the sweep pair by pair; the C extension measures
one pair at a time with the GIL released. Between pairs Python looks for Ctrl-C, updates progress and
converts ticks to nanoseconds, so nothing Python does is inside a timed region.

How many samples a pair gets is decided here too. *Precision-driven* sampling (``samples=None``, the
default) measures a pair in chunks, one C call each, until the 95 % confidence interval of its median
is within ±``precision`` of the median, ``max_samples`` are taken or the pair's time budget is spent;
*fixed-size* sampling (an integer ``samples``) takes exactly ``samples`` samples. Pairs whose samples look unstable (bimodal, spread, migrated threads) are
measured once more at the end of the sweep, one at a time, and both attempts are kept.
``strategy="sample"`` measures only enough pairs of each topology block pair (see
:mod:`corelat._measure.sampling`) and estimates the rest.
"""
from __future__ import annotations

import inspect
import math
import time
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from corelat._core import stats as _stats
from corelat._core.binding import extension
from corelat._core.errors import InputError
from corelat._core.types import RESULT_ORDERS, CPUs, Kernel, Progress, ResultOrder
from corelat._measure import progress as _progress
from corelat._measure import quality as _quality
from corelat._measure import sampling as _sampling
from corelat._measure.measurers import make_measurer
from corelat._results.latency import LatencyResult, PairFlag
from corelat._system import home as _home
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import timer_info
from corelat._system.topology import topology
from corelat._system.validate import (
    ALL_KERNELS,
    CHASE_KERNELS,
    DEFAULT_MAX_SAMPLES,
    DEFAULT_MAX_TIME_PER_PAIR,
    DEFAULT_PRECISION,
    DEFAULT_TIMEOUT,
    MAX_GROWTH,
    RETEST_FRACTION,
    STRATEGIES,
    check_order,
    check_params,
    check_sampling,
    check_topology,
    resolve_cpus,
    sampling_parameters,
    size_warnings,
)


def sweep_pairs(n):
    """Index pairs (i, j), i > j, row by row: the lower triangle in printed order."""
    return [(i, j) for i in range(1, n) for j in range(i)]


class PairRun(NamedTuple):
    """One pair's measurement: all chunks together."""

    values: np.ndarray  #: ``(rows, k)`` ns; one row (symmetric kernels) or two (a → b, b → a)
    met: object  #: precision target reached (True/False); None for fixed-size sampling
    seconds: float  #: time spent, by the sweep's clock
    chunks: int  #: C calls made
    bracket: tuple | None = None  #: (low, high) ns of the timer offset (one-way kernel), or None
    flags: tuple | None = None  #: shape and migration flags per row, computed once (see _run_flags)
    home: tuple | None = None  #: per row, where the page was found (see PairMeasurer.last_home), or None


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
    home = None

    # A measurer that takes a budget stops inside a chunk when the pair's time is spent, so one slow
    # chunk (a loaded or shrunken CPU set) cannot overrun the pair's budget by its whole length.
    budgeted = bool(getattr(measurer, "budgeted", False))

    def call(k, budget=None):
        nonlocal bracket, home
        if budgeted and budget is not None:
            v = _rows(measurer(cpu_a, cpu_b, k, budget=max(budget, 1e-6)))
        else:
            v = _rows(measurer(cpu_a, cpu_b, k))
        b = getattr(measurer, "last_bracket", None)
        if b is not None:
            bracket = b if bracket is None else (max(bracket[0], b[0]), min(bracket[1], b[1]))
        h = getattr(measurer, "last_home", None)
        if h is not None:
            home = tuple(h) if home is None else tuple(map(_home.merge_reports, home, h))
        return v

    if plan.mode == "fixed":
        v = call(plan.samples)
        return _with_flags(PairRun(v, None, clock() - t_start, 1, bracket, home=home))
    chunks, taken, k = [], 0, plan.first_chunk
    met = False
    while True:
        t0 = clock()
        chunks.append(call(k, plan.max_time_per_pair - (t0 - t_start)))
        got = chunks[-1].shape[1]
        pace = max(clock() - t0, 0.0) / max(got, 1)  # seconds per sample, chunk overhead included
        taken += got
        values = chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=1)
        width = float(np.max(_quality.relative_ci(values)))
        if width <= plan.precision:
            met = True
            break
        left_samples = plan.samples - taken
        left_time = plan.max_time_per_pair - (clock() - t_start)
        if left_samples <= 0 or left_time <= 0 or got < k:
            break  # got < k: the budget ran out inside the chunk
        # The half-width shrinks as 1/sqrt(n): aim 20 % past the predicted need, so one more chunk
        # usually suffices.
        want = taken * ((width / plan.precision) ** 2 * 1.2 - 1.0) if math.isfinite(width) else taken
        k = int(min(max(want, plan.min_chunk), MAX_GROWTH * taken, left_samples))
        if pace > 0:
            k = min(k, int(left_time / pace))
        if k < min(plan.min_chunk, left_samples):
            break  # not enough time left for a useful chunk
    return _with_flags(PairRun(values, met, clock() - t_start, len(chunks), bracket, home=home))


def _with_flags(run):
    # The verdict on a run's samples is wanted three times (re-test choice, ranking, assembly).
    return run._replace(flags=tuple(_row_flags(run)))


def _run_flags(run):
    """Shape and migration flags of each row of a run (list of PairFlag)."""
    return list(run.flags) if run.flags is not None else _row_flags(run)


def _row_flags(run):
    out = []
    for row in run.values:
        f = _quality.pair_flags(row)
        if np.isnan(row).any():
            f |= PairFlag.MIGRATED
        out.append(f)
    return out


def _severity(run):
    flags = _run_flags(run)
    spread = max((_quality.relative_spread(r) for r in run.values), key=lambda x: -1 if math.isnan(x) else x)
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
    cpus: CPUs = None,
    *,
    kernel: Kernel = "cas",
    round_trips: int = 1000,
    samples: int | None = None,
    precision: float = DEFAULT_PRECISION,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    max_time_per_pair: float = DEFAULT_MAX_TIME_PER_PAIR,
    warmup: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress = False,
    order: ResultOrder | None = None,
    name: str | None = None,
    strategy: Literal["full", "sample"] = "full",
    partition: Sequence[Sequence[int]] | None = None,
    topology: Any = None,
    retest: bool | int = True,
    home: str = "initiator",
) -> LatencyResult:
    """Measure the core-to-core latency matrix.

    Parameters
    ----------
    cpus : CPUs
        CPU ids to measure (list, or a string like ``"0,2,4-7"``); None for every CPU this
        process may run on (``os.sched_getaffinity(0)``: taskset and cgroup cpusets apply).
    kernel : Kernel
        ``"cas"`` (compare-exchange on one line), ``"rw"`` (load/store on two lines),
        ``"oneway"`` (timestamped messages, both directions; needs synchronized timers),
        ``"read-clean"`` / ``"read-modified"`` (a load of a line the other CPU holds clean /
        modified, Intel MLC's HIT / HITM; both directions, one load per value; the chain is half
        the owner's L2 and ``round_trips`` does not apply).
    round_trips : int
        round trips timed together as one sample (messages per sample for
        ``"oneway"``).
    samples : int | None
        None (the default): precision-driven sampling, each pair sampled until the 95 % CI of
        its median is within ±``precision`` of it (or ``max_samples`` or ``max_time_per_pair``
        is reached); an integer: exactly that many samples per pair (fixed-size sampling, as
        core-to-core-latency does).
    precision : float
        for ``samples=None``: the target half-width of each pair's 95 % CI, a fraction of its
        median (0.0001 to 0.5; default ±2 %).
    max_samples : int
        for ``samples=None``: the most samples a pair gets (bounds the result's memory).
    max_time_per_pair : float
        for ``samples=None``: seconds each pair may take; pairs that run out are flagged
        ``TARGET_NOT_MET``.
    warmup : int | None
        samples run first and discarded, per pair (per chunk in precision-driven mode;
        default: a tenth of ``samples`` or of the first chunk).
    timeout : float
        seconds a thread waits for its partner before the sweep stops with
        :class:`~corelat._core.errors.MeasurementTimeout`.
    progress : Progress
        False, True (a progress bar on stderr) or a callable ``fn(done, total)``.
    order : {None, "os", "topology"}
        None (the default, as everywhere in corelat): the CPUs in the order given; ``"os"``: CPU
        ids ascending; ``"topology"``: package → node → L3 → core → thread (see
        :meth:`LatencyResult.ordered`; for the latency groups' order,
        ``r.ordered(corelat.structure(r))``).
    name : str | None
        label for the result (default: the host name).
    strategy : Literal['full', 'sample']
        ``"full"`` (every pair) or ``"sample"`` (enough pairs per topology block pair,
        the rest estimated and flagged ``ESTIMATED``; see :mod:`corelat._measure.sampling`).
    partition : Sequence[Sequence[int]] | None
        for ``strategy="sample"``, blocks of CPUs (a list of CPU lists) to use instead
        of the topology read from sysfs.
    topology : Any
        for ``strategy="sample"``, the topology to use instead of this machine's (a
        :class:`~corelat.Topology` or its ``records()``; for simulations).
    retest : bool | int
        re-measure at the end the pairs that look unstable (bimodal, spread, migrated):
        True (at most a tenth of the pairs, worst first), False, or a number of pairs.
    home : str
        where each pair's page lives (see :data:`corelat.HOMES`): ``"initiator"`` (first touch
        by the timing thread, the default), ``"responder"`` (first touch by the other),
        ``"node:K"`` (NUMA node K, by ``mbind``) or ``"cpu:K"`` (a third CPU K, not one of
        ``cpus``, first-touches and writes the page before every sample). Where the page really
        was is recorded in ``extras["home_node"]``.

    Returns
    -------
    LatencyResult
        A frozen :class:`~corelat._results.latency.LatencyResult` of one-way latencies in ns (round-trip time
        / 2 for ``cas`` and ``rw``, each pair measured once with the lower-index CPU timing and
        mirrored; for ``oneway`` ``samples[i, j]`` are messages from ``cpus[i]`` to ``cpus[j]``).
        ``flags`` say per pair what was measured, mirrored, estimated, re-tested and doubtful;
        ``extras`` hold ``samples_taken`` and ``dropped`` per pair, the ``first_attempt`` samples and
        ``first_flags`` of re-tested pairs, ``estimated_from`` (sample strategy, ``(n, n, 2)``: the
        CPU ids of the cell an estimate copies, -1 where measured), ``skew_bound_ns`` (oneway) and
        ``home_node`` (the NUMA node ``move_pages`` found each measured cell's page on; -1 unknown,
        -2 spread over several).
        ``warnings`` says in words what looks wrong.

    Raises
    ------
    InputError
        For bad arguments (also a ``ValueError``), also a ``home`` that cannot be met: no such
        node, a node the cpuset forbids.
    MeasurementTimeout
        When a partner stops answering (also a ``TimeoutError``).
    MeasurementError
        When the one-way kernel finds the timers out of step.
    KeyboardInterrupt
        Within about 0.1 s of Ctrl-C.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.measure("0,1", round_trips=100, samples=20)  # doctest: +SKIP
    >>> r.median.shape  # doctest: +SKIP
    (2, 2)
    """
    return run(configure(**locals()))


class SweepConfig(NamedTuple):
    """A validated, immutable description of one sweep (see :func:`configure`)."""

    cpus: tuple
    kernel: str
    round_trips: int
    warmup: int
    timeout: float
    plan: object  #: the :class:`~corelat._system.validate.SamplingPlan`
    progress: object
    order: str
    name: object
    strategy: str
    partition: object
    topology: object
    retest: object
    home: object  #: the checked :class:`~corelat._system.home.Home`


def configure(cpus, kernel, round_trips, samples, precision, max_samples, max_time_per_pair, warmup, timeout,
              progress, order, name, strategy, partition, topology, retest, home):
    """Validate :func:`measure`'s arguments (every one, before anything is measured)."""
    cpus = resolve_cpus(cpus)
    kernel, round_trips, samples, warmup, timeout = check_params(kernel, round_trips, samples, warmup, timeout)
    plan = check_sampling(samples, precision, max_samples, max_time_per_pair)
    check_order(order, allowed=RESULT_ORDERS)
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; use one of: {', '.join(STRATEGIES)}")
    if (partition is not None or topology is not None) and strategy != "sample":
        raise InputError("partition and topology are used by strategy='sample' only")
    check_topology(topology)
    if partition is not None and topology is not None:
        raise InputError("give either a partition or a topology, not both")
    _retest_limit(retest, 0)
    home = _home.check_home(home, cpus, kernel)
    return SweepConfig(tuple(cpus), kernel, round_trips, warmup, timeout, plan, progress, order, name, strategy,
                       partition, topology, retest, home)


def measure_with(measurer, cpus=None, *, clock=None, **kwargs):
    """:func:`measure` with a stand-in pair measurer (and clock): the private layer for tests and
    benchmarks. ``measurer(cpu_a, cpu_b, samples)`` returns ns; ``kwargs`` are :func:`measure`'s."""
    bound = inspect.signature(measure).bind(cpus, **kwargs)
    bound.apply_defaults()
    return run(configure(**bound.arguments), measurer=measurer, clock=clock)


def run(config, *, measurer=None, clock=None):
    """Measure as ``config`` says: the sweep, the re-tests, the assembly, the metadata."""
    classes = None
    if config.strategy == "sample":
        classes = _sampling.pair_classes(config.cpus, config.partition, config.topology)
    real = measurer is None
    if real:
        measurer = make_measurer(config.kernel, config.round_trips, config.warmup, config.timeout, home=config.home)
    symmetric = bool(getattr(measurer, "symmetric", True))
    timer = timer_info() if real else {"name": "test double", "ticks_per_ns": 1.0}
    clock_check = None
    if hasattr(measurer, "check_clocks"):
        clock_check = measurer.check_clocks(config.cpus)  # refuse before the sweep if the timers disagree
    meta = _sysinfo.collect()
    meta.update(_topology_metadata())
    sweep = _Sweep(config, measurer, clock or time.perf_counter)
    sweep.run(classes)
    n = len(config.cpus)
    estimates = sweep.sampler.estimates() if sweep.sampler is not None else {}
    blocks = None
    if estimates and not symmetric:
        blocks = _sampling.cpu_blocks(config.cpus, config.partition, config.topology)
    data, flags, extras = _assemble(n, sweep.runs, sweep.first, config.plan, symmetric)
    if estimates:
        _estimate(data, flags, extras, estimates, symmetric, blocks, config.cpus)
    if clock_check is not None:
        bound = np.full((n, n), np.nan)
        for (i, j), r in sweep.runs.items():
            if r.bracket is not None:
                bound[i, j] = bound[j, i] = max(abs(r.bracket[0]), abs(r.bracket[1]))
        extras["skew_bound_ns"] = bound
    placed = {cell: rep for p, r in sweep.runs.items() if r.home
              for cell, rep in zip(_cells(*p, symmetric), r.home)}
    home_notes = []
    if placed:
        extras["home_node"], home_notes = _home.home_record(config.home, config.cpus, placed, symmetric)
    meta.update(_metadata(config, sweep, flags, data, extras, symmetric, estimates, classes, timer, meta,
                          home_notes))
    # aarch64 picks LSE cas or an LL/SC loop at start-up; they move the line differently
    meta["cas_impl"] = getattr(extension(), "CAS_IMPL", None) if config.kernel == "cas" and real else None
    if config.kernel in CHASE_KERNELS and hasattr(measurer, "_orders"):
        meta["chain_lines"] = sorted(measurer._orders)
    if clock_check is not None:
        meta["clock_check"] = {
            "method": "smallest one-way time per direction brackets the timer offset",
            "reference": clock_check,
            "max_bound_ns": float(np.nanmax(extras["skew_bound_ns"])) if sweep.runs else None,
        }
    result = LatencyResult(cpus=config.cpus, kernel=config.kernel, samples=data, metadata=meta,
                           name=config.name or meta["hostname"], flags=flags, extras=extras)
    return result if config.order is None else result.ordered(config.order)


class _Sweep:
    """The pairs of one sweep measured in order, then the worst ones re-measured (LinkTest)."""

    def __init__(self, config, measurer, clock):
        self.config, self.measurer, self.clock = config, measurer, clock
        self.runs, self.first = {}, {}
        self.sampler = None
        self.kernel_seconds = 0.0
        self.retested, self.skipped, self.limit = 0, 0, 0
        self.elapsed = 0.0
        self.bar = None

    def _pair(self, p):
        i, j = p
        t0 = time.perf_counter()
        out = measure_pair(self.measurer, self.config.cpus[j], self.config.cpus[i], self.config.plan, self.clock)
        self.kernel_seconds += time.perf_counter() - t0
        self.bar.update(1)
        return out

    def run(self, classes):

        started = time.monotonic()
        try:
            if classes is None:
                pairs = sweep_pairs(len(self.config.cpus))
                self.bar = _progress.make(self.config.progress, len(pairs))
                for p in pairs:
                    self.runs[p] = self._pair(p)
            else:
                self._sample(classes, _progress)
            self._retest()
        finally:
            if self.bar is not None:
                self.bar.close()
        self.elapsed = time.monotonic() - started

    def _sample(self, classes, progress):
        self.sampler = _sampling.Sampler(classes)
        batch = self.sampler.next_batch()
        self.bar = progress.make(self.config.progress, len(batch))
        while batch:
            for p in batch:
                self.runs[p] = self._pair(p)
                self.sampler.report(p, _run_median(self.runs[p]))
            batch = self.sampler.next_batch()
            _grow(self.bar, len(batch))

    def _retest(self):
        # LinkTest: the pairs that look worst, measured again one at a time now that the sweep
        # no longer disturbs the machine; both attempts are kept.
        runs = self.runs
        self.limit = _retest_limit(self.config.retest, len(runs))
        candidates = [p for p, r in runs.items() if any(f & _quality.RETEST_FLAGS for f in _run_flags(r))]
        candidates.sort(key=lambda p: _severity(runs[p]), reverse=True)
        chosen = candidates[: self.limit]
        self.retested, self.skipped = len(chosen), len(candidates) - len(chosen)
        _grow(self.bar, len(chosen))
        for p in chosen:
            self.first[p] = runs[p]
            runs[p] = self._pair(p)


def _metadata(config, sweep, flags, data, extras, symmetric, estimates, classes, timer, machine, home_notes):
    """What the result records about how it was measured, and the warnings and notes."""
    plan, runs, first = config.plan, sweep.runs, sweep.first
    params = {"round_trips": config.round_trips, **sampling_parameters(plan), "warmup": config.warmup,
              "timeout": config.timeout}
    notes, info = _quality.sweep_warnings(
        flags, config.cpus, symmetric=symmetric, samples=data, precision=plan.precision,
        max_time_per_pair=plan.max_time_per_pair, retested=sweep.retested,
        estimated=len(estimates))
    notes.extend(home_notes)
    notes.extend(size_warnings(config.round_trips, plan, timer))
    skipped = sweep.skipped
    if skipped:
        notes.append(f"{skipped} more unstable CPU pair{'s were' if skipped != 1 else ' was'} not re-measured "
                     f"(retest limit {sweep.limit}; pass retest=N to re-measure more)")
    if "skew_bound_ns" in extras:
        note = _quality.directions(_stats.median(data), extras["skew_bound_ns"], config.cpus)
        if note:
            info.append(note)
    meta = {
        "kernel": config.kernel,
        "kernel_description": ALL_KERNELS[config.kernel],
        "timer": timer,
        "parameters": params,
        "sampling": {
            "mode": plan.mode,
            "strategy": config.strategy,
            "precision": plan.precision,
            "max_time_per_pair": plan.max_time_per_pair,
            "max_samples": plan.samples if plan.mode == "precision" else None,
            "first_chunk": plan.first_chunk if plan.mode == "precision" else None,
            "pairs_measured": len(runs),
            "pairs_estimated": len(estimates),
            "pairs_retested": sweep.retested,
            "pairs_target_not_met": sum(1 for r in runs.values() if r.met is False),
            "classes": len(classes) if classes is not None else None,
            "samples_taken": int(sum(r.values.shape[1] for r in runs.values())
                                 + sum(r.values.shape[1] for r in first.values())),
            "chunks": int(sum(r.chunks for r in runs.values()) + sum(r.chunks for r in first.values())),
        },
        "unit": "ns",
        "latency": _latency_meaning(config.kernel, symmetric),
        "home": {"requested": config.home.label, "method": config.home.method},
        "symmetric": symmetric,
        "elapsed_s": sweep.elapsed,
        "kernel_s": sweep.kernel_seconds,
        "warnings": notes,
        "notes": info,
        "warning_cause": _quality.shared_cause(flags, machine.get("hypervisor")),
    }
    if config.kernel in CHASE_KERNELS:
        meta["direction"] = "samples[i, j]: lines held by cpus[i], loaded by cpus[j]"
    elif not symmetric:
        meta["direction"] = "samples[i, j]: messages sent by cpus[i], received by cpus[j]"
    return meta


def _latency_meaning(kernel, symmetric):
    if kernel in CHASE_KERNELS:
        return "one load = one pass over the pointer chain / its length (a one-way transfer)"
    if symmetric:
        return "one-way = round-trip time / 2"
    return "one-way = receiver's timer at arrival - sender's timer at sending - one timer read"


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

    try:
        topo = topology()
    except Exception as e:  # noqa: BLE001 - topology is a label on the result, not a requirement
        return {"topology": None, "topology_summary": f"unknown ({type(e).__name__}: {e})"}
    return {"topology": topo.to_dict(), "topology_summary": topo.describe()}
