"""``corelat.locks()``: what locks and atomics cost, uncontended and shared (cpuperf's method).

One thread pinned to each CPU of the set runs every selected test twice, all threads starting
together at a common deadline:

* **sermin**: many short brackets of calls, each between two serializing timer reads (``lfence;
  rdtsc; lfence`` on x86), the calls per bracket chosen so a bracket spans at least 20 steps of the
  timer (some counters advance ~24 ticks at a time); the fastest bracket per call is kept, then the
  timer's own cost and the baseline's sermin are subtracted. It is the cost of one call with nothing
  in flight. A value below two timer steps per call is unresolved: it is shown as ``<`` that bound.
* **avg**: an unrolled, unserialized loop of calls for ``duration`` seconds; the call count gives the
  throughput (Mcalls/s per thread), converted to timer ticks and ns per call, the baseline's
  subtracted. Under contention this is where the cost of fighting over a cache line shows.

Every test's critical section is the same body, one increment of a counter on the lock's cache
line, so the tests compare. In the default mode each thread has its own objects, mapped and first
touched on its own CPU; with ``shared=True`` the whole set shares one object per test.

"Cycles" in the output are timer ticks: on x86 the TSC, which counts at the CPU's nominal frequency
whatever the core's actual clock (the MHz column), exactly as cpuperf reports them.

Mutual exclusion is checked on every run: each thread counts the calls it completed, and the counter
the lock protects must end equal to their sum (:attr:`LockResult.violations`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

import numpy as np

from corelat._core.binding import extension
from corelat._core.errors import InputError
from corelat._core.status import once_more_if_moved
from corelat._core.types import CPUs
from corelat._results.locks import HIDDEN_TESTS, ROW_DTYPE, TESTS, THREAD_DTYPE, LockResult, _describe
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import timer_info
from corelat._system.validate import DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT, as_list, resolve_cpus, seconds

#: Tests whose exclusion the counter cannot show: the baseline does not touch it; readers of a
#: rwlock share it by design (their increment is atomic).
_UNCHECKED = {"baseline", "lock-pthread-rwlock-rd"}

MIN_DURATION, MAX_DURATION = 0.001, 60.0


def list_tests() -> list[tuple[str, str]]:
    """The lock and atomic tests :func:`corelat.locks` can run, in run order.

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
    return list(TESTS.items())


def _matches(pattern, name):
    """Glob if the pattern has wildcards; else a substring, or its words in order (cpuperf-like:
    ``lock-mutex`` matches ``lock-pthread-mutex``)."""
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    if pattern in name:
        return True
    words = iter(name.split("-"))
    return all(w in words for w in pattern.split("-"))


def select_tests(tests=None):
    """Names of the tests to run, in run order, ``baseline`` first (it is always measured).

    ``tests`` is None (every public test), or a string or list of strings of comma-separated
    patterns: an exact name (that test only), a substring, a glob (``inc-*``), or words in order
    (``lock-mutex`` selects ``lock-pthread-mutex`` and ``lock-pthread-mutex-trylock``, as in cpuperf).
    A pattern starting with ``-`` or ``!`` excludes what it matches; with only exclusions, they
    apply to every public test. Hidden tests (``lock-none``) are chosen only by exact name.
    """
    if tests is None:
        return list(TESTS)
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
        pat = p[1:] if negative else p
        # an exact name means that test only (not lock-pthread-mutex-trylock too)
        found = {pat} if pat in TESTS or pat in HIDDEN_TESTS else {n for n in TESTS if _matches(pat, n)}
        if not pat or not found:
            raise InputError(f"no lock test matches {p!r}; known tests: {', '.join(TESTS)}")
        (exclude if negative else include).update(found)
    if not any(p[0] not in "-!" for p in patterns):
        include = set(TESTS)
    chosen = [n for n in list(TESTS) + list(HIDDEN_TESTS) if n in include - exclude]
    return ["baseline"] + [n for n in chosen if n != "baseline"]


def summarise(names, cpus, raw, ticks_per_ns, overhead_serial, resolution_ticks=1.0, shared=True):
    """Turn the C kernel's raw counts into ``(data, threads)`` structured arrays.

    ``raw`` holds uint64 arrays ``calls``, ``ticks``, ``sermin``, ``sercalls`` (and optionally
    ``serk``, calls per serialized bracket, default 1) of shape ``(len(names), len(cpus))`` and
    ``counter`` of shape ``(len(names),)``; ``names[0]`` must be ``baseline``. Per thread: Mcalls/s =
    calls / seconds; avg ticks = elapsed ticks / calls; sermin ticks = (fastest bracket -
    ``overhead_serial``) / serk; then the same thread's baseline is subtracted. Per test:
    Mcalls/s is the mean over threads, avg ticks = MHz / (Mcalls/s) (as cpuperf), sermin the mean
    over threads; the baseline row keeps its raw values.
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
    ser_raw = (sermin.astype(np.float64) - overhead_serial) / serk
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
    data["sermin_floor_ns"] = 2.0 * resolution_ticks / serk.min(axis=1) / ticks_per_ns
    data["sections"] = (calls + sercalls).sum(axis=1)
    data["counter"] = counter
    # Each thread's own lock (uncontended) or one thread: nobody else could enter, nothing to show.
    data["checked"] = [bool(shared) and n > 1 and nm not in _UNCHECKED for nm in names]
    data["exclusive"] = ~data["checked"] | (data["counter"] == data["sections"])
    return data, threads


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


def locks(
    cpus: CPUs = None,
    *,
    kernel: str | Sequence[str] | None = None,
    shared: bool = False,
    duration: float = 0.2,
    serial_duration: float | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> LockResult:
    """Measure what locks and atomics cost on a set of CPUs (cpuperf's method).

    Parameters
    ----------
    cpus : CPUs
        CPU ids (list, or a string like ``"0,2,4-7"``); None for every CPU this process may
        run on. One pinned thread per CPU; one CPU is allowed (then ``shared`` changes nothing).
    kernel : str | Sequence[str] | None
        which lock and atomic kernels to test, by name or pattern (``"lock-mutex"``,
        ``"inc-*"``, ``"!inc-*"``; see :func:`corelat.list_tests`); None for all. The baseline is
        always measured: the others are reported with it subtracted.
    shared : bool
        False: each thread its own object per test (uncontended); True: one object per test
        for the whole set (contended).
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

    Returns
    -------
    LockResult
        A frozen :class:`LockResult`. A run takes about ``len(tests) * (duration + serial_duration)``.

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
    >>> r.row("lock-pthread-mutex")["avg_ns"]  # doctest: +SKIP
    """
    cpus = resolve_cpus(cpus, minimum=1)
    names = select_tests(kernel)
    if not isinstance(shared, (bool, np.bool_)):
        raise InputError(f"shared must be True or False, got {shared!r}")
    duration = seconds("duration", duration, MIN_DURATION, MAX_DURATION)
    serial = duration / 4 if serial_duration is None else serial_duration
    serial = seconds("serial_duration", serial, MIN_DURATION / 4, MAX_DURATION)
    timeout = seconds("timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT)

    ext = extension()
    timer = timer_info()
    codes = [ext.LOCK_TESTS.index(n) for n in names]
    meta = _sysinfo.collect()
    # A thread moved off its CPU ends the run at once (threads sharing a CPU would measure each
    # other); it is run once more on freshly pinned threads, then it fails saying why. Every wait
    # of the run has one bound in C: timeout plus the longest phase (see the docstring).
    raw = once_more_if_moved(lambda: ext.locks(list(cpus), codes, bool(shared), serial, duration,
                                               timeout + max(serial, duration)),
                             f"CPUs {_cpulist.format(cpus)}")
    data, threads = summarise(names, cpus, raw, timer["ticks_per_ns"], timer["overhead_serial_ticks"],
                              timer.get("resolution_ticks", 1.0), shared)
    meta.update(
        {
            "kind": "locks",
            "timer": timer,
            "timer_mhz": timer["ticks_per_ns"] * 1e3,
            "cycles": "timer ticks (the TSC counts at the nominal frequency, not the core clock)",
            "cpus": list(cpus),
            "mode": "shared" if shared else "uncontended",
            "duration_s": duration,
            "serial_duration_s": serial,
            "timeout_s": timeout,
            "tests": {n: _describe(n) for n in names},
        }
    )
    return LockResult(cpus=tuple(int(c) for c in cpus), shared=bool(shared), duration=duration, data=data,
                      threads=threads, metadata=meta, name=meta.get("hostname", ""))
