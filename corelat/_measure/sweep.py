"""``corelat.measure()``: the core-to-core latency sweep.

Python validates every argument (once, in :class:`~corelat._measure.options.SweepOptions`) and
orchestrates the sweep pair by pair; the C extension measures one pair at a time with the GIL
released. Between pairs Python looks for Ctrl-C, updates progress and converts ticks to
nanoseconds, so nothing Python does is inside a timed region.

How many samples a pair gets is decided here too. *Precision-driven* sampling (``samples=None``, the
default) measures a pair in chunks, one C call each, until the 95 % confidence interval of its median
is within ±``precision`` of the median, ``max_samples`` are taken or the pair's time budget is spent;
*fixed-size* sampling (an integer ``samples``) takes exactly ``samples`` samples. Pairs whose samples
look unstable (bimodal, spread, migrated threads) are measured once more at the end of the sweep, one
at a time, and both attempts are kept. ``strategy="sample"`` measures only enough pairs of each
topology block pair (see :mod:`corelat._measure.sampling`) and estimates the rest.

What happens to the process from outside is said, not hidden: a pair measured while the process was
stopped and continued (Ctrl-Z then ``fg``, SIGSTOP then SIGCONT) is measured again, its samples holding
the stop; a pair whose thread was moved off its CPU (``taskset -p``) is measured again on freshly
pinned threads, and the result's warnings and ``extras["moved"]`` say so.
"""
from __future__ import annotations

import math
import signal
import threading
import time
from typing import Any, NamedTuple

import numpy as np

from corelat._core.errors import MeasurementTimeout
from corelat._core.types import CPUs
from corelat._measure import assemble as _assemble
from corelat._measure import progress as _progress
from corelat._measure import quality as _quality
from corelat._measure import sampling as _sampling
from corelat._measure.measurers import make_measurer
from corelat._measure.options import SweepOptions, retest_limit, sweep_keywords
from corelat._results.latency import LatencyResult, PairFlag
from corelat._system import home as _home
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import timer_info
from corelat._system.validate import MAX_GROWTH


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
    flags: tuple | None = None  #: shape and migration flags per row, computed once (see row_flags)
    home: tuple | None = None  #: per row, where the page was found (see PairMeasurer.last_home), or None


def _rows(v):
    v = np.asarray(v, dtype=np.float64)
    return v[None, :] if v.ndim == 1 else v


class _PairCalls:
    """The calls of one pair to its measurer, with what they report beside the samples: the timer
    offset's bracket (narrowed call by call) and where the page was (merged)."""

    def __init__(self, measurer, cpu_a, cpu_b):
        self.measurer, self.cpu_a, self.cpu_b = measurer, cpu_a, cpu_b
        # A measurer that takes a budget stops inside a chunk when the pair's time is spent, so one
        # slow chunk (a loaded or shrunken CPU set) cannot overrun the pair's budget by its length.
        self.budgeted = bool(getattr(measurer, "budgeted", False))
        self.bracket = self.home = None

    def __call__(self, k, budget=None):
        if self.budgeted and budget is not None:
            v = _rows(self.measurer(self.cpu_a, self.cpu_b, k, budget=max(budget, 1e-6)))
        else:
            v = _rows(self.measurer(self.cpu_a, self.cpu_b, k))
        b = getattr(self.measurer, "last_bracket", None)
        if b is not None:
            old = self.bracket
            self.bracket = b if old is None else (max(old[0], b[0]), min(old[1], b[1]))
        h = getattr(self.measurer, "last_home", None)
        if h is not None:
            self.home = tuple(h) if self.home is None else tuple(map(_home.merge_reports, self.home, h))
        return v

    def run(self, values, met, seconds, chunks):
        return _with_flags(PairRun(values, met, seconds, chunks, self.bracket, home=self.home))


def _next_chunk(plan, taken, width, left_samples, left_time, pace):
    """Samples in the next chunk: the half-width shrinks as 1/sqrt(n), so aim 20 % past the
    predicted need (one more chunk usually suffices), within the growth cap, the samples left and
    the time left at the pace seen so far."""
    want = taken * ((width / plan.precision) ** 2 * 1.2 - 1.0) if math.isfinite(width) else taken
    k = int(min(max(want, plan.min_chunk), MAX_GROWTH * taken, left_samples))
    if pace > 0:
        k = min(k, int(left_time / pace))
    return k


def measure_pair(measurer, cpu_a, cpu_b, plan, clock=time.perf_counter):
    """Measure one pair as ``plan`` says; returns a :class:`PairRun`.

    Precision-driven: a first chunk of ``plan.first_chunk`` samples, then chunks sized from how far
    the relative CI half-width still is from the target (it shrinks as 1/sqrt(n)), at most
    ``MAX_GROWTH`` times the samples so far, never fewer than ``plan.min_chunk`` and never more than
    the time left allows at the pace seen so far. Stops when every direction's CI is within
    ``plan.precision``, or when the samples cap or the time budget would be passed.
    """
    t_start = clock()
    call = _PairCalls(measurer, cpu_a, cpu_b)
    if plan.mode == "fixed":
        v = call(plan.samples)
        return call.run(v, None, clock() - t_start, 1)
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
        met = width <= plan.precision
        left_samples = plan.samples - taken
        left_time = plan.max_time_per_pair - (clock() - t_start)
        if met or left_samples <= 0 or left_time <= 0 or got < k:
            break  # got < k: the budget ran out inside the chunk
        k = _next_chunk(plan, taken, width, left_samples, left_time, pace)
        if k < min(plan.min_chunk, left_samples):
            break  # not enough time left for a useful chunk
    return call.run(values, met, clock() - t_start, len(chunks))


def _with_flags(run):
    # The verdict on a run's samples is wanted three times (re-test choice, ranking, assembly).
    return run._replace(flags=tuple(_assemble.row_flags(run)))


def _severity(run):
    flags = _assemble.row_flags(run)
    spread = max((_quality.relative_spread(r) for r in run.values), key=lambda x: -1 if math.isnan(x) else x)
    return (any(f & PairFlag.BIMODAL for f in flags), 0.0 if math.isnan(spread) else spread)


def _run_median(run):
    with np.errstate(all="ignore"):
        meds = [np.nanmedian(r) if np.isfinite(r).any() else np.nan for r in run.values]
    return float(np.mean(meds))


#: How many times a pair is measured again because the process was stopped and continued while it
#: was measured (a user who keeps pressing Ctrl-Z gets the last attempt, with a warning).
STOP_RETRIES = 3


class _Stops:
    """Counts the times the process was continued after a stop (SIGCONT: Ctrl-Z then ``fg``, SIGSTOP
    then SIGCONT) while a sweep runs. Python handles signals in the main thread only, so the count is
    kept there, and only where SIGCONT has its default action (a program's own handler is left alone);
    elsewhere it stays 0 and the C side's waits, which do not count a stop as a partner's silence,
    are what keeps the sweep going."""

    def __init__(self):
        self.count = 0
        self._old = None

    def _seen(self, signum, frame):
        self.count += 1

    def __enter__(self):
        sig = getattr(signal, "SIGCONT", None)
        main = threading.current_thread() is threading.main_thread()
        if sig is not None and main and signal.getsignal(sig) == signal.SIG_DFL:
            self._old = signal.signal(sig, self._seen)
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGCONT, self._old)
            self._old = None


@sweep_keywords()
def measure(cpus: CPUs = None, **options: Any) -> LatencyResult:
    """Measure the core-to-core latency matrix.

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
    t0 = time.perf_counter()
    built = SweepOptions.build(cpus, **options)  # reading the CPUs and their homes: a budget's set-up too
    return run(built, spent=time.perf_counter() - t0)


def measure_with(measurer, cpus=None, *, clock=None, first=None, **options):
    """:func:`measure` with a stand-in pair measurer (and clock): the private layer for tests and
    benchmarks. ``measurer(cpu_a, cpu_b, samples)`` returns ns; ``clock()`` gives seconds (the
    pairs' time caps and the budget read it); ``first`` as :func:`run` takes it; ``options`` are
    :class:`~corelat._measure.options.SweepOptions` fields (:func:`measure`'s keywords)."""
    return run(SweepOptions.build(cpus, **options), measurer=measurer, clock=clock, first=first)


def run(options, *, measurer=None, clock=None, first=None, spent=0.0):
    """Measure as ``options`` (a resolved :class:`~corelat._measure.options.SweepOptions`) say: the
    sweep, the re-tests, the assembly, the metadata.

    ``first`` (optional): the pairs a caller needs before the others, ``{class: [(cpu_a, cpu_b),
    ...]}`` (any class labels, a reference's, in the order of need; each class's CPU pairs most
    needed first). They are measured first, interleaved (the first pair of every class, then the
    second, ...); then, under a budget, one pair of every latency class of the sweep, then more.
    Pairs of CPUs not measured are left out; the order of a result's cells does not change.
    ``spent``: seconds already spent that count against ``options.budget`` (a command's start-up)."""
    clock = clock or time.perf_counter
    started = clock()  # the budget counts from here: set-up (topology, calibration) included
    if not options.resolved:
        options = options.resolve()
    classes = None  # before anything is measured: a partition that does not fit the CPUs is refused
    if options.strategy == "sample":
        classes = _sampling.pair_classes(options.cpus, options.partition, options.topology)
    real = measurer is None
    if real:
        measurer = make_measurer(options.kernel, options.round_trips, options.warmup, options.timeout,
                                 home=options.home)
    timer = timer_info() if real else {"name": "test double", "ticks_per_ns": 1.0}
    clock_check = None
    if hasattr(measurer, "check_clocks"):
        clock_check = measurer.check_clocks(options.cpus)  # refuse before the sweep if the timers disagree
    meta = _sysinfo.collect()
    meta.update(_assemble.topology_metadata())
    budget = None if options.budget is None else _Budget(options.budget, started, clock, spent)
    sweep = _Sweep(options, classes, measurer, clock, budget=budget,
                   needed=_sampling.index_pairs(options.cpus, first))
    sweep.run()
    data, flags, extras, placed = _matrices(options, sweep, clock_check is not None)
    described = _measurer_metadata(measurer)
    moved, warnings, notes = _interference(options, sweep)
    meta.update(_assemble.metadata(options, sweep, flags, data, extras, sweep.symmetric, sweep.estimates,
                                   sweep.classes, timer, meta, placed))
    meta.update(described)
    meta["sampling"]["pairs_moved"] = len(sweep.moved)
    meta["sampling"]["pairs_stopped"] = len(sweep.stopped)
    if moved is not None:
        extras["moved"] = moved
    meta["warnings"].extend(warnings)
    meta["notes"].extend(notes)
    if clock_check is not None:
        meta["clock_check"] = {
            "method": "smallest one-way time per direction brackets the timer offset",
            "reference": clock_check,
            "max_bound_ns": float(np.nanmax(extras["skew_bound_ns"])) if sweep.runs else None,
        }
    if budget is not None:
        meta["budget"] = budget.record(sweep, len(options.cpus))
        meta["notes"].append(budget_line(meta["budget"]))
    result = LatencyResult(cpus=options.cpus, kernel=options.kernel, samples=data, metadata=meta,
                           name=options.name or meta["hostname"], flags=flags, extras=extras)
    return result if options.order is None else result.ordered(options.order)


def _interference(options, sweep):
    """What was done to the process from outside while it measured, and what the sweep did about it:
    threads moved off their CPUs (the ``extras["moved"]`` matrix, or None, and a warning) and stops (a
    note, or a warning when a pair's last attempt still held one); returns (moved, warnings, notes)."""
    cpus = options.cpus

    def ids(p):
        return (cpus[p[0]], cpus[p[1]])

    moved, warnings = None, []
    if sweep.moved:
        n = len(cpus)
        moved = np.zeros((n, n), dtype=np.int32)
        for (i, j), moves in sweep.moved.items():
            moved[i, j] = moved[j, i] = len(moves)
        warnings.append(_quality.moved_warning({ids(p): m for p, m in sweep.moved.items()}))
    stop_warnings, notes = _quality.stop_lines([ids(p) for p in sweep.stopped],
                                               [ids(p) for p in sweep.stopped_kept], STOP_RETRIES + 1)
    return moved, warnings + stop_warnings, notes


def _measurer_metadata(measurer):
    """What the kernel itself says about the sweep (``cas_impl``: aarch64 picks LSE cas or an LL/SC
    loop at start-up, which move the line differently; ``chain_lines`` of the chase kernels)."""
    meta = {"cas_impl": None}
    describe = getattr(measurer, "describe", None)
    if describe is not None:
        meta.update(describe())
    return meta


def _matrices(options, sweep, clock_checked):
    """The result's samples, flags and extras from the sweep's runs (and its estimates), and where
    the pages were found, per cell."""
    n, symmetric = len(options.cpus), sweep.symmetric
    data, flags, extras = _assemble.assemble(n, sweep.runs, sweep.first, options.plan, symmetric)
    if sweep.estimates:
        blocks = (None if symmetric
                  else _sampling.cpu_blocks(options.cpus, options.partition, options.topology))
        _assemble.estimate(data, flags, extras, sweep.estimates, symmetric, blocks, options.cpus)
    for i, j in sweep.not_reached:  # their cells stay NaN, as assemble left them
        flags[i, j] = flags[j, i] = PairFlag.NOT_REACHED
    if clock_checked:
        bound = np.full((n, n), np.nan)
        for (i, j), r in sweep.runs.items():
            if r.bracket is not None:
                bound[i, j] = bound[j, i] = max(abs(r.bracket[0]), abs(r.bracket[1]))
        extras["skew_bound_ns"] = bound
    placed = {cell: rep for p, r in sweep.runs.items() if r.home
              for cell, rep in zip(_assemble.cells(*p, symmetric), r.home)}
    return data, flags, extras, placed


def budget_line(record):
    """The one line a budgeted result says about its budget (``metadata["budget"]``)."""
    b, used = record["seconds"], record["used_s"]
    head = f"budget {b:g} s ({used:.3g} s used)"
    if record["complete"]:
        left = record.get("retests_left", 0)
        retests = f"; {left} re-test{'s' if left != 1 else ''} left for want of time" if left else ""
        return (f"{head}: every pair done ({record['pairs_measured']} measured, "
                f"{record['pairs_estimated']} estimated{retests})")
    return (f"{head}: a partial result, {record['pairs_measured']} of {record['pairs']} pairs measured, "
            f"{record['pairs_estimated']} estimated, {record['pairs_not_reached']} not reached (NaN, "
            f"flagged NOT_REACHED); a larger budget measures more")


#: The share of a budget kept for what follows the time-capped pairs: a kernel's last chunk ends
#: past its cap by up to a sample's check (about 20 ms on a 2-CPU VM), then the assembly and the
#: metadata (benchmarks/budget.py measures what is left of it).
BUDGET_RESERVE = 0.02


class _Budget:
    """The seconds a whole sweep may take, counted by the sweep's clock from the start of its set-up
    (``spent``: seconds already spent before it, a command's start-up).

    A pair is started only while the time left covers what a pair cost so far (their mean), and a
    precision-driven pair's time cap is the time left, both less :data:`BUDGET_RESERVE`; a
    fixed-size pair is not cut (its samples are what was asked)."""

    def __init__(self, seconds, started, clock, spent=0.0):
        self.seconds, self.started, self.clock = seconds, started - spent, clock
        self.costs = []  #: seconds each pair took, by the clock, its Python between chunks included
        self.cut = False  #: True once a pair was left for want of time
        self.retests_left = 0  #: re-tests of measured pairs left for want of time (the result stays whole)

    def left(self):
        return self.seconds * (1.0 - BUDGET_RESERVE) - (self.clock() - self.started)

    def allows(self, retest=False):
        """True if there is time for one more pair (else remembers that the budget cut the sweep, or,
        for a re-test of a pair already measured, only that it was left)."""
        left = self.left()
        if left > 0 and left >= (sum(self.costs) / len(self.costs) if self.costs else 0.0):
            return True
        if not retest:
            self.cut = True
        return False

    def plan(self, plan):
        """``plan`` with its time per pair capped by the time left."""
        if plan.mode != "precision":
            return plan
        return plan._replace(max_time_per_pair=min(plan.max_time_per_pair, max(self.left(), 1e-6)))

    def record(self, sweep, n):
        """What ``metadata["budget"]`` says: the budget, the time used, the counts of pairs."""
        pairs = n * (n - 1) // 2
        return {"seconds": self.seconds, "used_s": self.clock() - self.started, "complete": not self.cut,
                "pairs": pairs, "pairs_measured": len(sweep.runs), "pairs_estimated": len(sweep.estimates),
                "pairs_not_reached": len(sweep.not_reached), "pairs_retested": sweep.retested,
                "retests_left": self.retests_left,
                "classes": len(sweep.order_classes) if sweep.order_classes else None,
                "classes_reached": sweep.classes_reached()}


class _Sweep:
    """The pairs of one sweep measured in order, then the worst ones re-measured (LinkTest); under a
    budget, ordered to fit and stopped when time runs out."""

    def __init__(self, options, classes, measurer, clock, *, budget=None, needed=()):
        self.options, self.classes, self.measurer, self.clock = options, classes, measurer, clock
        self.budget, self.needed = budget, list(needed)
        #: the classes that order a budgeted sweep (the sample strategy's, else the topology's)
        self.order_classes = classes
        if classes is None and budget is not None:
            self.order_classes = _sampling.pair_classes(options.cpus)
        #: the pairs neither measured nor estimated (a budget ran out first)
        self.not_reached = []
        self.symmetric = bool(getattr(measurer, "symmetric", True))
        self.runs, self.first = {}, {}
        self.sampler = None
        self.estimates = {}
        self.kernel_seconds = 0.0
        self.retested, self.skipped, self.limit = 0, 0, 0
        self.elapsed = 0.0
        self.bar = None
        self.done = 0
        self.stops = _Stops()
        #: pair -> times measured again after a stop; the pairs whose last attempt still held one
        self.stopped, self.stopped_kept = {}, set()
        #: pair -> [(pinned CPU, CPU it ran on)] of threads moved from outside (each a new attempt)
        self.moved = {}

    def _pair(self, p):
        i, j = p
        cpus = self.options.cpus
        moves = getattr(self.measurer, "moves", None)
        before = len(moves) if moves is not None else 0
        t0 = self.clock()
        out = self._through_stops(p, cpus[j], cpus[i])
        if self.budget is not None:
            self.budget.costs.append(self.clock() - t0)
        if moves is not None and len(moves) > before:
            self.moved.setdefault(p, []).extend(moves[before:])
        self.done += 1
        self.bar.update(1)
        return out

    def _through_stops(self, p, cpu_a, cpu_b):
        """One pair's run, measured again when the process was stopped and continued meanwhile: its
        samples hold the stop, and a time-out then was no partner's fault."""
        for attempt in range(STOP_RETRIES + 1):
            stops = self.stops.count
            t0 = time.perf_counter()
            plan = self.options.plan if self.budget is None else self.budget.plan(self.options.plan)
            try:
                out = measure_pair(self.measurer, cpu_a, cpu_b, plan, self.clock)
            except MeasurementTimeout:
                if self.stops.count == stops or attempt == STOP_RETRIES:
                    raise
            finally:
                self.kernel_seconds += time.perf_counter() - t0
            if self.stops.count == stops:
                return out
            self.stopped[p] = attempt + 1
        self.stopped_kept.add(p)
        return out

    def _reserve(self, pairs):
        # the re-tests that many measured pairs may bring, counted in the progress total from the start
        return min(retest_limit(self.options.retest, pairs), pairs)

    def run(self):
        started = time.monotonic()
        try:
            with self.stops:
                if self.classes is None:
                    pairs = self._ordered(sweep_pairs(len(self.options.cpus)))
                    self.bar = _progress.make(self.options.progress, len(pairs) + self._reserve(len(pairs)))
                    for p in pairs:
                        if not self._time_for_one():
                            break
                        self.runs[p] = self._pair(p)
                else:
                    self._sample()
                self._retest()
        finally:
            if self.bar is not None:
                if self.budget is not None and self.budget.cut:
                    _progress.shrink(self.bar, self.done)  # the bar ends where the budget did
                self.bar.close()
        self.elapsed = time.monotonic() - started
        if self.sampler is not None:
            self.estimates = self.sampler.estimates()
        self.not_reached = [p for p in sweep_pairs(len(self.options.cpus))
                            if p not in self.runs and p not in self.estimates]

    def _time_for_one(self, retest=False):
        return self.budget is None or self.budget.allows(retest)

    def _ordered(self, pairs):
        """``pairs`` as measured: as given, or, under a budget or with pairs needed first, the
        needed pairs, then one pair of every class, then a second, ..."""
        if self.budget is None and not self.needed:
            return pairs
        if self.order_classes is None:  # no budget: the needed pairs, then the others in sweep order
            class_of = dict.fromkeys(pairs, "all")
        else:
            class_of = {p: key for key, ps in self.order_classes.items() for p in ps}
        return _sampling.budget_order(pairs, class_of, self.needed)

    def classes_reached(self):
        """How many of the ordering classes have a measured pair (None without classes)."""
        if not self.order_classes:
            return None
        return sum(1 for ps in self.order_classes.values() if any(p in self.runs for p in ps))

    def _may_measure(self):
        """The sample strategy's bound on the pairs it measures: those measured, and every pair not
        yet measured of a class that is not settled."""
        s = self.sampler
        left = sum(sum(1 for p in pairs if p not in s.values)
                   for key, pairs in s.classes.items() if not s.settled(key))
        return s.measured + left

    def _sample(self):
        self.sampler = _sampling.Sampler(self.classes, first=self.needed)
        bound = self._may_measure()
        self.bar = _progress.make(self.options.progress, bound + self._reserve(bound))
        batch = self.sampler.next_batch()
        while batch:
            for p in self._ordered(batch):
                if not self._time_for_one():
                    return  # the budget is spent: what was measured stands for its classes
                self.runs[p] = self._pair(p)
                self.sampler.report(p, _run_median(self.runs[p]))
            batch = self.sampler.next_batch()
            bound = self._may_measure()
            _progress.shrink(self.bar, bound + self._reserve(bound))

    def _retest(self):
        # LinkTest: the pairs that look worst, measured again one at a time now that the sweep
        # no longer disturbs the machine; both attempts are kept.
        runs = self.runs
        self.limit = retest_limit(self.options.retest, len(runs))
        candidates = [p for p, r in runs.items()
                      if any(f & _quality.RETEST_FLAGS for f in _assemble.row_flags(r))]
        candidates.sort(key=lambda p: _severity(runs[p]), reverse=True)
        chosen = candidates[: self.limit]
        self.retested, self.skipped = len(chosen), len(candidates) - len(chosen)
        _progress.shrink(self.bar, self.done + len(chosen))
        for k, p in enumerate(chosen):
            if not self._time_for_one(retest=True):
                self.retested, self.skipped = k, len(candidates) - k
                self.budget.retests_left = len(chosen) - k
                break
            self.first[p] = runs[p]
            runs[p] = self._pair(p)
