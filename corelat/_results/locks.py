"""The lock result: what locks and atomics cost on a set of CPUs, per test and per thread
(cpuperf's figures)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from corelat._core.errors import InputError
from corelat._core.protocol import SavedResult, freeze, from_file, jsonable, keyword_options, thaw
from corelat._results.locks_names import COUNTED, EXCLUSIVE, HIDDEN_TESTS, TESTS, describe
from corelat._system import cpulist as _cpulist

__all__ = ["HIDDEN_TESTS", "ROW_DTYPE", "TESTS", "THREAD_DTYPE", "LockResult"]

#: One row per test (``LockResult.data``). Ticks are timer ticks; ``*_raw`` before the baseline's
#: subtraction (the baseline row shows its raw values, as cpuperf does).
ROW_DTYPE = np.dtype(
    [
        ("name", "U48"),
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
        ("group", "i4"),  # the CPU group (0 without groups; files before groups: 0)
        ("sermin_steps", "f8"),  # the test's cost over the baseline per bracket, in timer steps
        ("why", "U200"),  # why the row has no figures (a test that cannot run here), else ""
    ]
)

#: One row per test and thread (``LockResult.threads``).
THREAD_DTYPE = np.dtype(
    [
        ("name", "U48"),
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
        ("group", "i4"),
        ("ran_on", "i4"),  # the CPU the thread ended on (-1: not known, files before groups)
    ]
)

#: Fields files written before groups lack, and what they read as.
_NEW_FIELDS = {"group": 0, "sermin_steps": np.nan, "why": "", "ran_on": -1}

#: A figure the timer allows spans at least this many timer steps per bracket.
RESOLVED_STEPS = 20


def finite_where_ran(part, a, why):
    """Whether the float column ``a`` of ``part`` (``"data"`` or ``"threads"``) holds numbers where it
    must: in every row of a test that ran. A row of a test that could not run (``why`` says why; it
    has no thread rows) has no figures, and NaN there says so; files of corelat 0.2 also hold NaN as
    that row's ``mhz``. ``why`` is the file's ``data.why`` column, or None where it has none."""
    finite = np.isfinite(a)
    if part != "data" or why is None or np.shape(why) != np.shape(a) or np.asarray(why).dtype.kind != "U":
        return bool(finite.all())
    return bool((finite | (np.asarray(why) != "")).all())


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
    >>> r = corelat.locks([0], kernel=["inc-atomic"], duration=0.01)
    >>> r.tests, r.mode, r.violations
    (('baseline', 'inc-atomic'), 'uncontended', ())
    >>> bool(r.row("inc-atomic")["calls"] > 0)
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

    @keyword_options("per_thread")
    def records(self, *, per_thread: bool = False) -> list[dict[str, Any]]:
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
            # What load() would refuse is not written: a file that cannot be read back keeps nothing.
            for k in a.dtype.names:
                if a.dtype[k].kind == "f" and not finite_where_ran(part, a[k], self.data["why"]):
                    raise InputError(f"this result cannot be saved: {part}.{k} must hold one finite value "
                                     f"per row of a test that ran (a file of it could not be loaded back)")
        return header, arrays

    @classmethod
    def _from_npz(cls, header, arrays, path):
        def build():
            parts = {}
            for part, dtype in (("data", ROW_DTYPE), ("threads", THREAD_DTYPE)):
                n = len(arrays[f"{part}.name"])
                a = np.zeros(n, dtype=dtype)
                for k in dtype.names:
                    key = f"{part}.{k}"
                    # a file written before groups: the new fields take their defaults
                    a[k] = arrays[key] if key in arrays or k not in _NEW_FIELDS else _NEW_FIELDS[k]
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

    @keyword_options("per_thread", "headers")
    def table(self, *, per_thread: bool = False, headers: bool = True) -> str:
        """cpuperf's table as text.

        Parameters
        ----------
        per_thread : bool
            Add one line per thread after each test's line (its CPU, or where it ended up).
        headers : bool
            False: the rows alone, no comment or column headers (cpuperf's ``-H``, for scripts).

        Returns
        -------
        str
            MHz, total Mcalls, Mcalls/s, average cycles and ns, serialized minimum cycles and ns,
            name and description of every test (``str(result)``), per group of CPUs.
        """
        cols = [("MHz", "TSC", 6), ("tot", "MCALLS", 10), ("avg", "MCALLS/s", 9), ("avg", "CYCLES", 8),
                ("avg", "NSECS", 8), ("sermin", "CYCLES", 8), ("sermin", "NSECS", 8)]
        timer = self.metadata.get("timer", {})
        if timer.get("name") not in (None, "tsc"):
            cols[0] = ("MHz", str(timer["name"])[:6].upper(), 6)
        namew = max([len(n) for n in self.tests] + [4])
        lead = f"{'CPU':>4}  " if per_thread else ""
        lines = []
        if headers:
            lines = self._comments() + [
                (" " * len(lead)) + " ".join(f"{a:>{w}}" for a, _, w in cols),
                lead + " ".join(f"{b:>{w}}" for _, b, w in cols) + f"  {'NAME':<{namew}}  DESC"]
        groups = sorted(set(self.data["group"].tolist()))
        for g in groups:
            if headers and len(groups) > 1:
                cpus = self.threads["cpu"][self.threads["group"] == g]
                lines.append(f"# group {g}: CPU {_cpulist.format(sorted(set(cpus.tolist())))}")
            for r in self.data[self.data["group"] == g]:
                lines += _row_lines(self, r, namew, per_thread)
        return "\n".join(lines)

    def _exclusion_line(self):
        """Which tests' counters were checked, and why the others were not ("" if none ran)."""
        ran = [r for r in self.data if not r["why"] and r["name"] != "baseline"]
        order = self.tests.index

        def names(keep):
            return ", ".join(sorted({str(r["name"]) for r in ran if keep(r)}, key=order))

        excl = names(lambda r: r["checked"] and r["name"] in EXCLUSIVE)
        counted = names(lambda r: r["checked"] and r["name"] not in EXCLUSIVE)
        alone = names(lambda r: not r["checked"] and r["name"] in COUNTED)
        no_counter = names(lambda r: not r["checked"] and r["name"] not in COUNTED)
        parts = [f"checked for {excl}"] if excl else []
        if counted:
            parts.append(f"counts checked for {counted} (several holders by design, atomic increments)")
        if alone:
            parts.append(f"not tested for {alone} (" + ("one thread per group)" if self.shared else
                                                        "each thread had its own objects)"))
        if no_counter:
            parts.append(f"not tested for {no_counter} (no shared counter)")
        return "# mutual exclusion: " + "; ".join(parts) if parts else ""

    def _comments(self):
        """The table's comment lines: what ran, what was checked, what the marks mean."""
        timer = self.metadata.get("timer", {})
        given = self.metadata.get("timer_mhz_given")
        mhz = f"{given:.0f} MHz as given (-f)" if given else \
            f"{self.metadata.get('timer_mhz', float('nan')):.0f} MHz nominal"
        ngroups = len(set(self.data["group"].tolist()))
        lines = [
            f"# {self.mode} on CPU {_cpulist.format(self.cpus)} ({len(self.cpus)} "
            f"thread{'s' if len(self.cpus) > 1 else ''}{f', {ngroups} groups' if ngroups > 1 else ''}), "
            f"{self.duration:g} s per test; CYCLES are timer ticks ({timer.get('name', '?')} at "
            f"{mhz}), baseline subtracted except on its own line"]
        for key in ("affinity_note", "leader_note", "priority_note", "sermin_note"):
            if self.metadata.get(key):
                lines.append(f"# {self.metadata[key]}")
        exclusion = self._exclusion_line()
        if exclusion:
            lines.append(exclusion)
        steps = self.data["sermin_steps"]
        if any(np.isfinite(steps) & (steps < RESOLVED_STEPS) & (self.data["name"] != "baseline")):
            lines.append(f"# sermin: '~' = at the timer's resolution (under {RESOLVED_STEPS} timer steps per "
                         "bracket over the baseline); '<x' = under one timer step, x is that step per call")
        return lines

    def __repr__(self):
        return self._repr(f"{self.mode}, CPUs {_cpulist.format(self.cpus)}, {len(self.tests)} tests, "
                          f"{self.duration:g} s each")


def _rows(records, dtype):
    """A structured array of ``dtype`` from records (None, JSON's NaN, back to NaN); fields files
    written before groups lack take their defaults."""
    a = np.zeros(len(records), dtype=dtype)
    names = cast("tuple[str, ...]", dtype.names)
    for i, rec in enumerate(records):
        a[i] = tuple(_NEW_FIELDS[k] if k not in rec and k in _NEW_FIELDS else
                     np.nan if rec[k] is None else rec[k] for k in names)
    return a


def _fmt(v, w, digits):
    return f"{v:>{w}.{digits}f}" if np.isfinite(v) else f"{'-':>{w}}"


def _ser(r, key, scale, w, digits):
    """A sermin cell: the figure, '~'-marked at the timer's resolution, or '<' one step when below."""
    v = r[key]
    if r["name"] == "baseline" or not np.isfinite(v):
        return _fmt(v, w, digits)
    floor = r["sermin_floor_ns"]
    steps = r["sermin_steps"]
    if (np.isfinite(steps) and steps < 1) or r["sermin_ns"] < floor:
        return f"{'<' + format(floor * scale, f'.{digits}f'):>{w}}"
    if np.isfinite(steps) and steps < RESOLVED_STEPS:
        return f"{format(v, f'.{digits}f') + '~':>{w}}"
    return _fmt(v, w, digits)


def _thread_ser(v, ns, r, scale, w, digits):
    """A thread's sermin cell, judged by its test's timer step and steps (as the test's line)."""
    if r["name"] == "baseline" or not np.isfinite(v):
        return _fmt(v, w, digits)
    if ns < r["sermin_floor_ns"]:
        return f"{'<' + format(r['sermin_floor_ns'] * scale, f'.{digits}f'):>{w}}"
    if np.isfinite(r["sermin_steps"]) and r["sermin_steps"] < RESOLVED_STEPS:
        return f"{format(v, f'.{digits}f') + '~':>{w}}"
    return _fmt(v, w, digits)


def _row_lines(result, r, namew, per_thread):
    """A test's line (and its threads' lines) of the table."""
    name = str(r["name"])
    if r["why"]:
        cells = [f"{'-':>{w}}" for w in (6, 10, 9, 8, 8, 8, 8)]
        return [(f"{'-':>4}  " if per_thread else "") + " ".join(cells)
                + f"  {name:<{namew}}  {describe(name)} [cannot run here: {r['why']}]"]
    cells = [_fmt(r["mhz"], 6, 0), _fmt(r["calls"] / 1e6, 10, 2), _fmt(r["mcalls_per_s"], 9, 2),
             _fmt(r["avg_ticks"], 8, 1), _fmt(r["avg_ns"], 8, 2),
             _ser(r, "sermin_ticks", r["mhz"] / 1e3, 8, 1), _ser(r, "sermin_ns", 1.0, 8, 2)]
    flag = "" if r["exclusive"] else "  [MUTUAL EXCLUSION VIOLATED]"
    lines = [(f"{'-':>4}  " if per_thread else "") + " ".join(cells)
             + f"  {name:<{namew}}  {describe(name)}{flag}"]
    if per_thread:
        th = result.threads
        for t in th[(th["name"] == name) & (th["group"] == r["group"])]:
            cells = [_fmt(r["mhz"], 6, 0), _fmt(t["calls"] / 1e6, 10, 2), _fmt(t["mcalls_per_s"], 9, 2),
                     _fmt(t["avg_ticks"], 8, 1), _fmt(t["avg_ns"], 8, 2),
                     _thread_ser(t["sermin_ticks"], t["sermin_ns"], r, r["mhz"] / 1e3, 8, 1),
                     _thread_ser(t["sermin_ns"], t["sermin_ns"], r, 1.0, 8, 2)]
            moved = t["ran_on"] >= 0 and t["ran_on"] != t["cpu"]
            where = f"{int(t['cpu'])}>{int(t['ran_on'])}" if moved else int(t["cpu"])
            lines.append(f"{where!s:>4}  " + " ".join(cells) + f"  {name}")
    return lines


def _describe(name):
    return describe(name)
