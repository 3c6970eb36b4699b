"""The lock result: what locks and atomics cost on a set of CPUs, per test and per thread
(cpuperf's figures)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from corelat._core.errors import InputError
from corelat._core.protocol import SavedResult, freeze, from_file, jsonable, thaw
from corelat._system import cpulist as _cpulist

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


@dataclass(frozen=True, eq=False, repr=False)
class LockResult(SavedResult):
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
        set_(self, "metadata", freeze(thaw(self.metadata)))
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

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The result as plain, strict-JSON data (NaN becomes None); :meth:`from_dict` reads it back.

        Parameters
        ----------
        arrays : bool
            Accepted as every result kind accepts it; a lock result's arrays are its records, so
            the dict is the same either way.

        Returns
        -------
        dict
            ``kind``, ``name``, ``cpus``, ``shared``, ``duration``, ``summary``, ``records`` (one
            per test), ``threads`` (one per test and CPU), ``warnings``, ``notes``, ``metadata``.
        """
        return jsonable({"kind": self._KIND, "name": self.name, "cpus": list(self.cpus),
                         "shared": self.shared, "duration": self.duration, "summary": self.summary(),
                         "records": self.records(), "threads": self.records(per_thread=True),
                         "warnings": list(self.warnings), "notes": list(self.notes),
                         "metadata": self.metadata})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LockResult:
        """A result from what :meth:`to_dict` gave, after a trip through JSON or not.

        Parameters
        ----------
        d : dict
            ``to_dict()`` output.

        Returns
        -------
        LockResult

        Raises
        ------
        InputError
            When ``d`` is not a lock result's dict.
        """
        if not isinstance(d, Mapping) or d.get("kind") != cls._KIND:
            raise InputError("not the dict of a lock result (LockResult.to_dict())")
        return cls(cpus=tuple(d["cpus"]), shared=d["shared"], duration=d["duration"],
                   data=_rows(d["records"], ROW_DTYPE), threads=_rows(d["threads"], THREAD_DTYPE),
                   metadata=d.get("metadata", {}), name=d.get("name", ""))

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

    def describe(self) -> str:
        """cpuperf's table, one line per test: what ``print(result)`` shows (``table()``).

        Returns
        -------
        str
        """
        return self.table()

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
            checked = "checked for " + ", ".join(tested) + "; " if tested else ""
            lines.insert(1, f"# mutual exclusion: {checked}not tested for {', '.join(untested)} ({why})")
        for r in self.data:
            name = str(r["name"])
            cells = [fmt(r["mhz"], 6, 0), fmt(r["calls"] / 1e6, 10, 2), fmt(r["mcalls_per_s"], 9, 2),
                     fmt(r["avg_ticks"], 8, 1), fmt(r["avg_ns"], 8, 2),
                     ser(r, "sermin_ticks", r["mhz"] / 1e3, 8, 1), ser(r, "sermin_ns", 1.0, 8, 2)]
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


def _rows(records, dtype):
    """A structured array of ``dtype`` from records (None, JSON's NaN, back to NaN)."""
    a = np.zeros(len(records), dtype=dtype)
    for i, rec in enumerate(records):
        a[i] = tuple(np.nan if rec[k] is None else rec[k] for k in cast("tuple[str, ...]", dtype.names))
    return a


def _describe(name):
    return TESTS.get(name) or HIDDEN_TESTS[name]
