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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from corelat._core.errors import InputError
from corelat._core.status import once_more_if_moved
from corelat._core.types import CPUs
from corelat._results.latency import _freeze, thaw
from corelat._results.protocol import Result, from_file, jsonable
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo
from corelat._system.timer import extension, timer_info
from corelat._system.validate import DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT, as_list, resolve_cpus, seconds

#: Public tests in run order: name -> description (cpuperf's DESC column).
TESTS = {
    "baseline": "call of an empty function (subtracted from the others)",
    "inc-atomic-relaxed": "atomic fetch-add, relaxed order",
    "inc-atomic-seqcst": "atomic fetch-add, sequentially consistent",
    "lock-cas-spin": "test-and-test-and-compare-exchange spinlock with pause, inc, unlock",
    "lock-ticket-spin": "ticket spinlock, inc, unlock",
    "lock-pthread-spin": "pthread_spin_lock, inc, unlock",
    "lock-pthread-mutex": "pthread_mutex_lock, inc, unlock",
    "lock-pthread-mutex-trylock": "spin on pthread_mutex_trylock, inc, unlock",
    "lock-pthread-rwlock-wr": "pthread_rwlock_wrlock, inc, unlock",
    "lock-pthread-rwlock-rd": "pthread_rwlock_rdlock, atomic inc (readers share), unlock",
}

#: Tests that exist for testing corelat itself; selected only by their exact name.
HIDDEN_TESTS = {
    "lock-none": "no lock at all, inc: broken on purpose, its counter loses updates when shared",
}

#: Tests whose exclusion the counter cannot show: the baseline does not touch it; readers of a
#: rwlock share it by design (their increment is atomic).
_UNCHECKED = {"baseline", "lock-pthread-rwlock-rd"}

MIN_DURATION, MAX_DURATION = 0.001, 60.0

#: One row per test (``LockResult.data``). Ticks are timer ticks; ``*_raw`` before the baseline's
#: subtraction (the baseline row shows its raw values, as cpuperf does).
ROW_DTYPE = np.dtype(
    [
        ("name", "U32"),
        ("mhz", "f8"),  # timer frequency
        ("threads", "i4"),
        ("calls", "u8"),  # throughput-phase calls, all threads
        ("mcalls_per_s", "f8"),  # per thread, mean over threads
        ("avg_ticks_raw", "f8"),
        ("avg_ticks", "f8"),
        ("avg_ns", "f8"),
        ("sermin_ticks_raw", "f8"),  # timer overhead subtracted, mean over threads
        ("sermin_ticks", "f8"),
        ("sermin_ns", "f8"),
        ("sermin_floor_ns", "f8"),  # two timer steps per call: smaller sermin values are unresolved
        ("sections", "u8"),  # completed calls of both phases, all threads
        ("counter", "u8"),  # the protected counter(s) at the end
        ("checked", "?"),  # exclusion could be tested: shared objects, 2+ threads, an exclusive lock
        ("exclusive", "?"),  # not checked, or counter == sections
    ]
)

#: One row per test and thread (``LockResult.threads``).
THREAD_DTYPE = np.dtype(
    [
        ("name", "U32"),
        ("cpu", "i4"),
        ("calls", "u8"),
        ("elapsed_ticks", "u8"),
        ("mcalls_per_s", "f8"),
        ("avg_ticks_raw", "f8"),
        ("avg_ticks", "f8"),
        ("avg_ns", "f8"),
        ("sercalls", "u8"),
        ("sermin_ticks_raw", "f8"),
        ("sermin_ticks", "f8"),
        ("sermin_ns", "f8"),
    ]
)


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


def _describe(name):
    return TESTS.get(name) or HIDDEN_TESTS[name]


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
        if pat in TESTS or pat in HIDDEN_TESTS:
            found = {pat}  # an exact name means that test only (not lock-pthread-mutex-trylock too)
        else:
            found = {n for n in TESTS if _matches(pat, n)}
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

    threads = np.zeros(nt * n, dtype=THREAD_DTYPE)
    threads["name"] = np.repeat(names, n)
    threads["cpu"] = np.tile(np.asarray(cpus, dtype=np.int32), nt)
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


@dataclass(frozen=True, eq=False, repr=False)
class LockResult(Result):
    """What locks and atomics cost on a set of CPUs: an immutable value.

    Made by :func:`corelat.locks` or :func:`corelat.load`.

    Attributes
    ----------
    cpus : tuple of int
        The CPUs, one measuring thread each.
    shared : bool
        True if the threads shared one object per test, False if each had its own.
    duration : float
        Seconds of each test's throughput phase.
    data : numpy.ndarray
        Structured array, one row per test, baseline first (fields: see :meth:`records`).
    threads : numpy.ndarray
        Structured array, one row per test and thread.
    metadata : Mapping
        Read-only mapping: system information, the timer, the parameters.
    name : str
        A label (the host name by default).

    Examples
    --------
    >>> import corelat
    >>> r = corelat.locks([0], kernel=["inc-atomic-relaxed"], duration=0.01)
    >>> r.tests, r.mode, r.violations
    (('baseline', 'inc-atomic-relaxed'), 'uncontended', ())
    >>> bool(r.row("inc-atomic-relaxed")["calls"] > 0)
    True
    """

    cpus: tuple
    shared: bool
    duration: float
    data: np.ndarray
    threads: np.ndarray
    metadata: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""

    _KIND = "locks"
    _FIELDS = ("cpus", "shared", "duration", "data", "threads", "metadata", "name")

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "cpus", tuple(int(c) for c in self.cpus))
        set_(self, "shared", bool(self.shared))
        set_(self, "duration", float(self.duration))
        for name in ("data", "threads"):
            a = np.array(getattr(self, name), copy=True)
            a.setflags(write=False)
            set_(self, name, a)
        for name, dtype in (("data", ROW_DTYPE), ("threads", THREAD_DTYPE)):
            if getattr(self, name).dtype != dtype:
                raise InputError(f"{name} must be a structured array of {dtype}")
        set_(self, "metadata", _freeze(thaw(self.metadata)))
        set_(self, "name", str(self.name))

    @property
    def tests(self) -> tuple[str, ...]:
        """Test names in run order."""
        return tuple(str(n) for n in self.data["name"])

    @property
    def mode(self) -> str:
        """``"shared"`` or ``"uncontended"``."""
        return "shared" if self.shared else "uncontended"

    def row(self, name: str) -> np.void:
        """The row of one test in :attr:`data`.

        Parameters
        ----------
        name : str
            A test name, one of :attr:`tests`.

        Returns
        -------
        numpy.void
            A structured record (``calls``, ``avg_ns``, ``sermin_ns``, ...).

        Raises
        ------
        InputError
            When the result holds no such test.
        """
        hits = np.flatnonzero(self.data["name"] == name)
        if not len(hits):
            raise InputError(f"no test {name!r} in this result; it has {', '.join(self.tests)}")
        return self.data[hits[0]]

    @property
    def violations(self) -> tuple[str, ...]:
        """Names of tests whose protected counter differs from the calls completed (broken locks)."""
        return tuple(str(r["name"]) for r in self.data if not r["exclusive"])

    def records(self, per_thread: bool = False) -> list[dict[str, Any]]:
        """One dict per test, or per test and CPU.

        Parameters
        ----------
        per_thread : bool
            One dict per test and CPU (the threads' own figures) instead of one per test.

        Returns
        -------
        list of dict
            The fields of :attr:`data` (or :attr:`threads`): ``name``, ``calls``,
            ``mcalls_per_s``, ``avg_ticks``, ``avg_ns``, ``sermin_ticks``, ``sermin_ns``, ...;
            NaN stays NaN (:meth:`to_dict` makes it None).
        """
        rows = self.threads if per_thread else self.data
        return [{k: r[k].item() for k in cast("tuple[str, ...]", rows.dtype.names)} for r in rows]

    def summary(self) -> dict[str, Any]:
        """The costs in a few keys.

        Returns
        -------
        dict
            ``mode``, ``cpus``, ``duration``, ``avg_ns`` and ``sermin_ns`` (per test name) and
            ``violations``.
        """
        return {"mode": self.mode, "cpus": list(self.cpus), "duration": self.duration,
                "avg_ns": {str(r["name"]): float(r["avg_ns"]) for r in self.data},
                "sermin_ns": {str(r["name"]): float(r["sermin_ns"]) for r in self.data},
                "violations": list(self.violations)}

    def to_dict(self) -> dict[str, Any]:
        """The result as plain, strict-JSON data (NaN becomes None).

        Returns
        -------
        dict
            ``kind``, ``name``, ``cpus``, ``shared``, ``duration``, ``summary``, ``records`` (one
            per test), ``threads`` (one per test and CPU), ``warnings``, ``notes``, ``metadata``.
        """
        return jsonable({"kind": self._KIND, "name": self.name, "cpus": list(self.cpus), "shared": self.shared,
                         "duration": self.duration, "summary": self.summary(), "records": self.records(),
                         "threads": self.records(per_thread=True), "warnings": list(self.warnings),
                         "notes": list(self.notes), "metadata": self.metadata})

    def _to_npz(self):
        header = {"name": self.name, "shared": self.shared, "duration": self.duration,
                  "metadata": thaw(self.metadata)}
        # Structured arrays go field by field: plain arrays only, so no pickle is ever needed.
        arrays = {"cpus": np.asarray(self.cpus, dtype=np.int64)}
        for part in ("data", "threads"):
            a = getattr(self, part)
            arrays.update({f"{part}.{k}": a[k] for k in a.dtype.names})
        return header, arrays

    @classmethod
    def _from_npz(cls, header, arrays, path):
        def build():
            parts = {}
            for part, dtype in (("data", ROW_DTYPE), ("threads", THREAD_DTYPE)):
                n = len(arrays[f"{part}.name"])
                a = np.zeros(n, dtype=dtype)
                for k in dtype.names:
                    a[k] = arrays[f"{part}.{k}"]
                parts[part] = a
            return cls(cpus=tuple(int(c) for c in arrays["cpus"]), shared=bool(header["shared"]),
                       duration=float(header["duration"]), metadata=header.get("metadata", {}),
                       name=header.get("name", ""), **parts)

        return from_file(path, build)

    def table(self, per_thread: bool = False) -> str:
        """cpuperf's table as text.

        Parameters
        ----------
        per_thread : bool
            Add one line per CPU after each test's line.

        Returns
        -------
        str
            MHz, total Mcalls, Mcalls/s, average cycles and ns, serialized minimum cycles and ns,
            name and description of every test (``str(result)``).
        """
        cols = [("MHz", "TSC", 6), ("tot", "MCALLS", 10), ("avg", "MCALLS/s", 9), ("avg", "CYCLES", 8),
                ("avg", "NSECS", 8), ("sermin", "CYCLES", 8), ("sermin", "NSECS", 8)]
        timer = self.metadata.get("timer", {})
        if timer.get("name") not in (None, "tsc"):
            cols[0] = ("MHz", str(timer["name"])[:6].upper(), 6)
        namew = max([len(n) for n in self.tests] + [4])
        cpuw = 4
        lead = f"{'CPU':>{cpuw}}  " if per_thread else ""
        top = (" " * len(lead)) + " ".join(f"{a:>{w}}" for a, _, w in cols)
        sub = lead + " ".join(f"{b:>{w}}" for _, b, w in cols) + f"  {'NAME':<{namew}}  DESC"

        def fmt(v, w, digits):
            return f"{v:>{w}.{digits}f}" if np.isfinite(v) else f"{'-':>{w}}"

        comment = (
            f"# {self.mode} on CPU {_cpulist.format(self.cpus)} ({len(self.cpus)} "
            f"thread{'s' if len(self.cpus) > 1 else ''}), "
            f"{self.duration:g} s per test; CYCLES are timer ticks ({timer.get('name', '?')} at "
            f"{self.metadata.get('timer_mhz', float('nan')):.0f} MHz nominal), baseline subtracted "
            "except on its own line"
        )
        def ser(r, key, scale, w, digits):
            # Below two timer steps per call the figure is a floor, not a cost: show the bound.
            floor = r["sermin_floor_ns"] if "sermin_floor_ns" in r.dtype.names else 0.0
            if np.isfinite(r[key]) and r["name"] != "baseline" and r["sermin_ns"] < floor:
                return f"{'<' + format(floor * scale, f'.{digits}f'):>{w}}"
            return fmt(r[key], w, digits)

        tested = [str(r["name"]) for r in self.data if r["checked"]]
        untested = [str(r["name"]) for r in self.data if not r["checked"] and r["name"] != "baseline"]
        lines = [comment, top, sub]
        if untested:
            why = ("each thread had its own lock" if not self.shared else
                   "one thread" if len(self.cpus) < 2 else "readers share the lock by design")
            lines.insert(1, f"# mutual exclusion: {'checked for ' + ', '.join(tested) + '; ' if tested else ''}"
                            f"not tested for {', '.join(untested)} ({why})")
        for r in self.data:
            name = str(r["name"])
            cells = [fmt(r["mhz"], 6, 0), fmt(r["calls"] / 1e6, 10, 2), fmt(r["mcalls_per_s"], 9, 2),
                     fmt(r["avg_ticks"], 8, 1), fmt(r["avg_ns"], 8, 2), ser(r, "sermin_ticks", r["mhz"] / 1e3, 8, 1),
                     ser(r, "sermin_ns", 1.0, 8, 2)]
            flag = "" if r["exclusive"] else "  [MUTUAL EXCLUSION VIOLATED]"
            lines.append((f"{'-':>{cpuw}}  " if per_thread else "") + " ".join(cells)
                         + f"  {name:<{namew}}  {_describe(name)}{flag}")
            if per_thread:
                for t in self.threads[self.threads["name"] == name]:
                    cells = [fmt(r["mhz"], 6, 0), fmt(t["calls"] / 1e6, 10, 2), fmt(t["mcalls_per_s"], 9, 2),
                             fmt(t["avg_ticks"], 8, 1), fmt(t["avg_ns"], 8, 2), fmt(t["sermin_ticks"], 8, 1),
                             fmt(t["sermin_ns"], 8, 2)]
                    lines.append(f"{int(t['cpu']):>{cpuw}}  " + " ".join(cells) + f"  {name}")
        return "\n".join(lines)

    def __repr__(self):
        return self._repr(f"{self.mode}, CPUs {_cpulist.format(self.cpus)}, {len(self.tests)} tests, "
                          f"{self.duration:g} s each")


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
    return LockResult(cpus=tuple(int(c) for c in cpus), shared=bool(shared), duration=duration, data=data, threads=threads,
                      metadata=meta, name=meta.get("hostname", ""))
