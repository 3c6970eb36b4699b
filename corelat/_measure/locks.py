"""``corelat.locks()``: what locks, atomics, instructions and system calls cost, uncontended and
shared (cpuperf's method and its tests, under its names).

One thread per CPU of the set (pinned to it, or with ``affinity="group"`` free to run on any CPU
of its group) runs every selected test twice, all threads starting together at a common deadline:

* **sermin**: many short brackets of calls, each between two serializing timer reads (``lfence;
  rdtsc; lfence`` on x86), the calls per bracket chosen so a bracket spans at least 20 steps of the
  timer (some counters advance ~24 ticks at a time); the fastest bracket per call is kept, then the
  timer's measured cost and the baseline's sermin are subtracted. It is the cost of one call with
  nothing in flight. Where what is left of a bracket is under one timer step the figure is shown as
  ``<`` one step per call; under 20 steps it is marked as at the timer's resolution (``~``).
* **avg**: an unrolled, unserialized loop of calls for ``duration`` seconds; the call count gives the
  throughput (Mcalls/s per thread), converted to timer ticks and ns per call, the baseline's
  subtracted. Under contention this is where the cost of fighting over a cache line shows.

Every lock's critical section is the same body, one increment of a counter on the lock's cache
line, so the tests compare. In the default mode each thread has its own objects, mapped and first
touched on its own CPU; with ``shared=True`` each group of CPUs shares one object per test.
Instruction tests run only where CPUID (x86) or HWCAP (aarch64) says the CPU has the instruction;
a test that cannot run here (an instruction the CPU lacks, a mutex protocol the C library refuses)
is a row without figures that says why.

"Cycles" in the output are timer ticks: on x86 the TSC, which counts at the CPU's nominal frequency
whatever the core's actual clock (the MHz column), exactly as cpuperf reports them.

Mutual exclusion is checked whenever two or more threads share one object (``shared=True`` with two
or more CPUs in a group): each thread counts the calls it completed, and the counter the lock
protects must end equal to their sum (:attr:`LockResult.violations`). With each thread's own objects
nobody else could enter, so nothing is checked; the table says which tests were.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Sequence

import numpy as np

from corelat._core.binding import extension
from corelat._core.errors import InputError
from corelat._core.status import once_more_if_moved
from corelat._core.types import CPUs
from corelat._results.locks import HIDDEN_TESTS, ROW_DTYPE, TESTS, THREAD_DTYPE, LockResult, _describe
from corelat._results.locks_names import ALIASES, COUNTED, cpuperf_name, other_arch
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import timer_info
from corelat._system.validate import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    MIN_TIMEOUT,
    allowed_cpus,
    as_list,
    resolve_cpus,
    seconds,
)

MIN_DURATION, MAX_DURATION = 0.001, 60.0


def list_tests(availability: bool = False) -> list[tuple[str, str]]:
    """The tests :func:`corelat.locks` can run here, in run order (instruction tests of another
    architecture left out).

    Parameters
    ----------
    availability : bool
        Also say, per test, the cpuperf test it corresponds to and why it cannot run on this
        machine ("" where it can): ``(name, description, cpuperf, why_not)`` tuples.

    Returns
    -------
    list of tuple
        ``(name, description)`` pairs; ``baseline`` (subtracted from the others) first.

    Examples
    --------
    >>> import corelat
    >>> corelat.list_tests()[0]
    ('baseline', 'call of an empty function (subtracted from the others)')
    """
    skip = other_arch()
    names = [n for n in TESTS if n not in skip]
    if not availability:
        return [(n, TESTS[n]) for n in names]
    why = unavailable()
    return [(n, TESTS[n], cpuperf_name(n), why.get(n, "")) for n in names]  # type: ignore[misc]


def unavailable(features=None):
    """Tests that cannot run on this machine (the CPU lacks the instruction, the C library refuses
    the mutex as named): name -> why. ``features``: a dict of CPUID / HWCAP words to judge instead
    of this CPU's (for tests; see the binding's ``lock_availability``)."""
    ext = extension()
    answers = zip(ext.LOCK_TESTS, ext.lock_availability(features))
    return {name: why for name, (ok, why, _) in answers if not ok}


def _matches(pattern, name):
    """Glob if the pattern has wildcards; else a substring, or its words in order (cpuperf-like:
    ``lock-mutex`` matches ``lock-pthread-mutex``)."""
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    if pattern in name:
        return True
    words = iter(name.split("-"))
    return all(w in words for w in pattern.split("-"))


def select_tests(tests=None, skip=None):
    """Names of the tests to run, in run order, ``baseline`` first (it is always measured).

    ``tests`` is None (every public test), or a string or list of strings of comma-separated
    patterns: an exact name (that test only; corelat 0.1's names select the test that replaced
    them, e.g. ``inc-atomic-relaxed`` is ``inc-atomic``), a substring, a glob (``inc-*``), or words in
    order (``lock-mutex`` selects every ``lock-pthread-mutex-*``, as in cpuperf). A pattern starting
    with ``-`` or ``!`` excludes what it matches; with only exclusions, they apply to every public
    test. Hidden tests (``lock-none``) and ``skip`` (default: instruction tests of another
    architecture) are chosen only by their exact name.
    """
    skip = other_arch() if skip is None else set(skip)
    public = [n for n in TESTS if n not in skip]
    if tests is None:
        return public
    items = as_list(tests, f"kernel must be a pattern string or a list of them, not {tests!r}")
    patterns = []
    for item in items:
        if not isinstance(item, str):
            raise InputError(f"kernel patterns must be strings, got {item!r}")
        patterns += [p.strip() for p in item.split(",") if p.strip()]
    if not patterns:
        raise InputError("empty test selection; run 'corelat locks --list' for the tests")
    include, exclude = set(), set()
    for p in patterns:
        negative = p[0] in "-!"
        pat = ALIASES.get(p[1:] if negative else p, p[1:] if negative else p)
        # an exact name means that test only (not lock-pthread-mutex-trylock too)
        found = {pat} if pat in TESTS or pat in HIDDEN_TESTS else {n for n in public if _matches(pat, n)}
        if not pat or not found:
            raise InputError(f"no lock test matches {p!r}; known tests: {', '.join(public)}")
        (exclude if negative else include).update(found)
    if not any(p[0] not in "-!" for p in patterns):
        include = set(public)
    chosen = [n for n in list(TESTS) + list(HIDDEN_TESTS) if n in include - exclude]
    return ["baseline"] + [n for n in chosen if n != "baseline"]


def summarise(names, cpus, raw, ticks_per_ns, overhead_serial, resolution_ticks=1.0, shared=True, group=0):
    """Turn the C kernel's raw counts into ``(data, threads)`` structured arrays.

    ``raw`` holds uint64 arrays ``calls``, ``ticks``, ``sermin``, ``sercalls`` (and optionally
    ``serk``, calls per serialized bracket, default 1, and ``serempty``, the fastest empty bracket
    timed beside them) of shape ``(len(names), len(cpus))`` and ``counter`` of shape
    ``(len(names),)``; ``names[0]`` must be ``baseline``. Per thread: Mcalls/s = calls / seconds; avg
    ticks = elapsed ticks / calls; sermin ticks = (fastest bracket - fastest empty bracket) / serk,
    where ``overhead_serial`` stands for the empty bracket only if ``raw`` has no ``serempty`` (callers
    before it); then the same thread's baseline is subtracted. Both minima are of the same reads, so
    the difference is a cost; a bracket that read faster than its empty one (timer noise, at most a
    step or so) counts as 0, never as a negative time (:func:`below_empty` counts them). Per test:
    Mcalls/s is the mean over threads, avg ticks = MHz / (Mcalls/s) (as cpuperf), sermin the mean
    over threads; the baseline row keeps its raw values. ``sermin_floor_ns`` is one timer step
    (``resolution_ticks``) per bracket and call; ``sermin_steps`` the test's cost over the
    baseline per bracket, in timer steps. ``group`` labels every row; ``raw["ran_on"]`` (optional)
    is the CPU each thread ended on.
    """
    if names[0] != "baseline":
        raise ValueError("the first test must be the baseline")
    nt, n = len(names), len(cpus)
    calls = np.asarray(raw["calls"], dtype=np.uint64).reshape(nt, n)
    ticks = np.asarray(raw["ticks"], dtype=np.uint64).reshape(nt, n)
    sermin = np.asarray(raw["sermin"], dtype=np.uint64).reshape(nt, n)
    sercalls = np.asarray(raw["sercalls"], dtype=np.uint64).reshape(nt, n)
    serk = np.asarray(raw["serk"], dtype=np.float64).reshape(nt, n) if "serk" in raw else np.ones((nt, n))
    serk = np.maximum(serk, 1.0)
    counter = np.asarray(raw["counter"], dtype=np.uint64).reshape(nt)
    mhz = ticks_per_ns * 1e3

    with np.errstate(divide="ignore", invalid="ignore"):
        rate = calls / (ticks / (ticks_per_ns * 1e9)) / 1e6  # Mcalls/s per thread
        avg_raw = ticks / calls.astype(np.float64)
    # The timer's cost of a bracket, taken as the bracket is (a minimum of the same two reads, on the
    # same thread, in the same phase): a calibrated mean set against a minimum went negative.
    empty = (np.asarray(raw["serempty"], dtype=np.float64).reshape(nt, n) if "serempty" in raw
             else np.full((nt, n), float(overhead_serial)))
    over = sermin.astype(np.float64) - empty
    # Last guard, not the fix: two minima of different brackets may differ by timer noise.
    ser_raw = np.maximum(over, 0.0) / serk
    is_base = np.array([nm == "baseline" for nm in names])[:, None]
    avg = np.where(is_base, avg_raw, avg_raw - avg_raw[0])
    ser = np.where(is_base, ser_raw, ser_raw - ser_raw[0])

    threads = _thread_rows(names, cpus, calls, ticks, sercalls, rate, avg_raw, avg, ser_raw, ser,
                           ticks_per_ns)
    data = np.zeros(nt, dtype=ROW_DTYPE)
    data["name"] = names
    data["mhz"] = mhz
    data["threads"] = n
    data["calls"] = calls.sum(axis=1)
    row_rate = rate.mean(axis=1)
    with np.errstate(divide="ignore"):
        row_avg_raw = mhz / row_rate
    data["mcalls_per_s"] = row_rate
    data["avg_ticks_raw"] = row_avg_raw
    data["avg_ticks"] = np.where(is_base[:, 0], row_avg_raw, row_avg_raw - row_avg_raw[0])
    data["avg_ns"] = data["avg_ticks"] / ticks_per_ns
    data["sermin_ticks_raw"] = ser_raw.mean(axis=1)
    data["sermin_ticks"] = ser.mean(axis=1)
    data["sermin_ns"] = data["sermin_ticks"] / ticks_per_ns
    # One timer step per bracket, per call: a smaller figure is below what the timer can see.
    data["sermin_floor_ns"] = resolution_ticks / serk.min(axis=1) / ticks_per_ns
    data["sermin_steps"] = data["sermin_ticks"] * serk.min(axis=1) / max(resolution_ticks, 1e-9)
    data["sections"] = (calls + sercalls).sum(axis=1)
    data["counter"] = counter
    # Each thread's own lock (uncontended) or one thread: nobody else could enter, nothing to show.
    data["checked"] = [bool(shared) and n > 1 and nm in COUNTED for nm in names]
    data["exclusive"] = ~data["checked"] | (data["counter"] == data["sections"])
    data["group"] = group
    threads["group"] = group
    threads["ran_on"] = np.tile(np.asarray(raw.get("ran_on", [-1] * n), dtype=np.int32), nt)
    return data, threads


def below_empty(raw):
    """How many threads' fastest bracket of a test read faster than the empty bracket beside it (their
    sermin counts as 0: see :func:`summarise`), and a note saying so ("" for none)."""
    if "serempty" not in raw:
        return 0, ""
    count = int((np.asarray(raw["sermin"]) < np.asarray(raw["serempty"])).sum())
    return count, ("" if not count else
                   f"sermin: {count} bracket minim{'a' if count > 1 else 'um'} of calls read faster than the "
                   "empty bracket beside {0} (two minima of different brackets: timer noise), counted as 0"
                   .format("them" if count > 1 else "it"))


def _thread_rows(names, cpus, calls, ticks, sercalls, rate, avg_raw, avg, ser_raw, ser, ticks_per_ns):
    """The per-thread table of :func:`summarise`."""
    n = len(cpus)
    threads = np.zeros(len(names) * n, dtype=THREAD_DTYPE)
    threads["name"] = np.repeat(names, n)
    threads["cpu"] = np.tile(np.asarray(cpus, dtype=np.int32), len(names))
    threads["calls"] = calls.ravel()
    threads["elapsed_ticks"] = ticks.ravel()
    threads["mcalls_per_s"] = rate.ravel()
    threads["avg_ticks_raw"] = avg_raw.ravel()
    threads["avg_ticks"] = avg.ravel()
    threads["avg_ns"] = avg.ravel() / ticks_per_ns
    threads["sercalls"] = sercalls.ravel()
    threads["sermin_ticks_raw"] = ser_raw.ravel()
    threads["sermin_ticks"] = ser.ravel()
    threads["sermin_ns"] = ser.ravel() / ticks_per_ns
    return threads


def resolve_groups(cpus=None, groups=None):
    """``(cpus, group)``: the CPUs in thread order and each thread's group number, from either a
    plain CPU selection (one group) or a list of CPU selections (cpuperf's groups; ``-g`` in the
    command). A CPU may be in one group only."""
    if groups is None:
        cpus = resolve_cpus(cpus, minimum=1)
        return cpus, [0] * len(cpus)
    if cpus is not None:
        raise InputError("give cpus or groups, not both")
    items = as_list(groups, f"groups must be a list of CPU selections, not {groups!r}")
    if not items:
        raise InputError("groups must name at least one group of CPUs")
    out, group = [], []
    for g, item in enumerate(items):
        members = resolve_cpus(item, minimum=1)
        out += members
        group += [g] * len(members)
    if len(set(out)) != len(out):
        dup = sorted({c for c in out if out.count(c) > 1})
        raise InputError(f"CPU {_cpulist.format(dup)} is in more than one group")
    return tuple(out), group


@contextlib.contextmanager
def _leader_off(cpus):
    """Run the calling thread (which polls the team, and whose settings new threads inherit before
    they pin themselves) on allowed CPUs outside the tested set, where there are any. Yields a note."""
    free = sorted(set(allowed_cpus()) - set(cpus))
    if not free or not hasattr(os, "sched_setaffinity"):
        yield "leader: no allowed CPU outside the tested ones; it shares them (it mostly sleeps)"
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, free)
    except OSError as e:
        yield f"leader: could not move off the tested CPUs ({e.strerror})"
        return
    try:
        yield f"leader: on CPU {_cpulist.format(free)}, off the tested CPUs"
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def _high_priority():
    """Best effort: nice -20 for the run (the threads inherit it from the calling thread, Linux's
    per-thread nice); refused without privilege, which is said, never an error."""
    try:
        before = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    except (OSError, AttributeError) as e:
        reason = getattr(e, "strerror", None) or e
        yield f"priority: setpriority(-20) refused ({reason}); ran at the usual priority"
        return
    try:
        yield "priority: nice -20"
    finally:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, before)


def _assemble(names, cpus, group, raw, timer, tpn, shared, why):
    """Rows per group (each with its own baseline), the tests that cannot run here as rows saying
    why, in selection order."""
    ran = [n for n in names if n not in why]
    datas, threads = [], []
    group = np.asarray(group)
    for g in sorted(set(group.tolist())):
        cols = np.flatnonzero(group == g)
        sub = {k: np.asarray(v)[:, cols] for k, v in raw.items()
               if np.ndim(v) == 2 and k != "counter_by_thread"}
        sub["counter"] = np.asarray(raw["counter_by_thread"])[:, cols].sum(axis=1)
        sub["ran_on"] = np.asarray(raw["ran_on"])[cols]
        d, t = summarise(ran, [cpus[i] for i in cols], sub, tpn, timer["overhead_serial_ticks"],
                         timer.get("resolution_ticks", 1.0), shared, group=g)
        rows = np.zeros(len(names), dtype=ROW_DTYPE)
        for i, name in enumerate(names):
            if name in why:
                rows[i] = np.zeros(1, dtype=ROW_DTYPE)[0]
                # No figures (NaN: not a number measured), but the timer's frequency is the run's.
                for k in ("mcalls_per_s", "avg_ticks_raw", "avg_ticks", "avg_ns", "sermin_ticks_raw",
                          "sermin_ticks", "sermin_ns", "sermin_floor_ns", "sermin_steps"):
                    rows[i][k] = np.nan
                rows[i]["mhz"] = tpn * 1e3
                rows[i]["name"], rows[i]["why"], rows[i]["group"] = name, why[name], g
                rows[i]["exclusive"] = True
                rows[i]["threads"] = len(cols)
            else:
                rows[i] = d[ran.index(name)]
        datas.append(rows)
        threads.append(t)
    return np.concatenate(datas), np.concatenate(threads)


def _mhz(value):
    """The ``timer_mhz`` argument: None, or a frequency from 1 MHz to 100 GHz."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"timer_mhz must be a number of MHz, got {value!r}")
    if not 1.0 <= float(value) <= 100000.0:  # also refuses NaN
        raise InputError(f"timer_mhz must be between 1 and 100000 MHz, got {float(value):g}")
    return float(value)


def locks(
    cpus: CPUs = None,
    *,
    kernel: str | Sequence[str] | None = None,
    shared: bool = False,
    duration: float = 0.2,
    serial_duration: float | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    groups: Sequence[CPUs] | None = None,
    affinity: str = "cpu",
    timer_mhz: float | None = None,
) -> LockResult:
    """Measure what locks, atomics, instructions and system calls cost on a set of CPUs (cpuperf's
    method and tests).

    Parameters
    ----------
    cpus : CPUs
        CPU ids (list, or a string like ``"0,2,4-7"``); None for every CPU this process may
        run on. One thread per CPU; one CPU is allowed (then ``shared`` changes nothing).
    kernel : str | Sequence[str] | None
        which tests to run, by name or pattern (``"lock-mutex"``, ``"inc-*"``, ``"!inc-*"``; see
        :func:`corelat.list_tests`); None for all. The baseline is always measured: the others are
        reported with it subtracted.
    shared : bool
        False: each thread its own object per test (uncontended); True: one object per test
        for each group (contended).
    duration : float
        seconds of each test's throughput (``avg``) phase, 0.001 to 60.
    serial_duration : float | None
        seconds of each test's serialized (``sermin``) phase; default a quarter
        of ``duration``.
    timeout : float
        seconds a thread waits for another seeing no progress (the others at the start of a
        phase, the thread holding a lock) before the run stops with
        :class:`~corelat._core.errors.MeasurementTimeout`, as in :func:`corelat.measure`. An unfair
        lock may keep a thread waiting while the others take it for a whole phase, so each wait
        of a lock run is allowed the longest phase's length more.
    groups : Sequence[CPUs] | None
        instead of ``cpus``: several groups of CPUs (cpuperf's groups), all run at once; with
        ``shared``, one object per test for each group; rows per group.
    affinity : str
        ``"cpu"`` (default): each thread pinned to its own CPU (cpuperf's ``-a``); ``"group"``:
        each thread may run on any CPU of its group, the scheduler chooses (cpuperf's default).
    timer_mhz : float | None
        the timer's frequency in MHz to convert ticks with (cpuperf's ``-f``), instead of the
        calibrated one.

    Returns
    -------
    LockResult
        A frozen :class:`LockResult`. A run takes about ``len(tests) * (duration + serial_duration)``.
        Tests that cannot run here are rows without figures that say why (``why``).

    Raises
    ------
    InputError
        For bad arguments (also a ``ValueError``).
    MeasurementTimeout
        When a thread waits longer than ``timeout``.
    MeasurementError
        When a thread cannot be started or pinned.
    KeyboardInterrupt
        Within about 0.1 s of Ctrl-C.

    Examples
    --------
    >>> import corelat
    >>> r = corelat.locks("0,1", kernel="lock-mutex", shared=True)  # doctest: +SKIP
    >>> r.row("lock-pthread-mutex-default")["avg_ns"]  # doctest: +SKIP
    """
    cpus, group = resolve_groups(cpus, groups)
    names = select_tests(kernel)
    if not isinstance(shared, (bool, np.bool_)):
        raise InputError(f"shared must be True or False, got {shared!r}")
    if affinity not in ("cpu", "group"):
        raise InputError(f"affinity must be 'cpu' or 'group', not {affinity!r}")
    duration = seconds("duration", duration, MIN_DURATION, MAX_DURATION)
    serial = duration / 4 if serial_duration is None else serial_duration
    serial = seconds("serial_duration", serial, MIN_DURATION / 4, MAX_DURATION)
    timeout = seconds("timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT)
    timer_mhz = _mhz(timer_mhz)

    ext = extension()
    timer = timer_info()
    why = {n: w for n, w in unavailable().items() if n in names}
    codes = [ext.LOCK_TESTS.index(n) for n in names if n not in why]
    meta = _sysinfo.collect()
    with _leader_off(cpus) as leader_note, _high_priority() as priority_note:
        # A thread moved off its CPU ends the run at once (threads sharing a CPU would measure each
        # other); it is run once more on freshly pinned threads, then it fails saying why. Every
        # wait of the run has one bound in C: timeout plus the longest phase (see the docstring).
        raw = once_more_if_moved(lambda: ext.locks(list(cpus), codes, bool(shared), serial, duration,
                                                   timeout + max(serial, duration), group=list(group),
                                                   spread=affinity == "group"),
                                 f"CPUs {_cpulist.format(cpus)}")
    tpn = timer["ticks_per_ns"] if timer_mhz is None else timer_mhz / 1e3
    data, threads = _assemble(names, cpus, group, raw, timer, tpn, shared, why)
    meta.update(
        {
            "kind": "locks",
            "timer": timer,
            "timer_mhz": timer["ticks_per_ns"] * 1e3,
            "timer_mhz_given": timer_mhz,
            "cycles": "timer ticks (the TSC counts at the nominal frequency, not the core clock)",
            "cpus": list(cpus),
            "groups": [[int(c) for c, g in zip(cpus, group) if g == k] for k in sorted(set(group))],
            "affinity": affinity,
            "affinity_note": "affinity: each thread on any CPU of its group" if affinity == "group" else "",
            "leader_note": leader_note,
            "priority_note": priority_note,
            "sermin_note": below_empty(raw)[1],
            "mode": "shared" if shared else "uncontended",
            "duration_s": duration,
            "serial_duration_s": serial,
            "timeout_s": timeout,
            "tests": {n: _describe(n) for n in names},
            "unavailable": why,
        }
    )
    return LockResult(cpus=tuple(int(c) for c in cpus), shared=bool(shared), duration=duration, data=data,
                      threads=threads, metadata=meta, name=meta.get("hostname", ""))
