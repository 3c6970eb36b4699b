"""Comparing machines (or runs): a side-by-side summary of several results.

``compare(a, b, ...)`` takes results (or paths to result files) and returns a :class:`Comparison`
whose :meth:`~Comparison.table` prints them side by side and whose :meth:`~Comparison.records`
give the same numbers as plain dicts for scripts. The example results shipped with corelat are
listed by :func:`example_files`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corelat._results.latency import LatencyResult
import math
import os
from dataclasses import dataclass

import numpy as np

from corelat._analysis.structure import structure
from corelat._core.errors import InputError
from corelat._core.protocol import Result, jsonable, prefixed
from corelat._core.types import Path, Statistic
from corelat._results.load import load
from corelat._results.matrix import held_statistic
from corelat._results.placement import PlacementResult, per_home
from corelat._system.validate import check_statistic

#: Rows of the table: (record key, label, ratio to the first result shown).
_ROWS = (
    ("cpus", "CPUs", False),
    ("kernel", "kernel", False),
    ("min", "min (ns)", True),
    ("median", "median (ns)", True),
    ("max", "max (ns)", True),
    ("smt", "SMT siblings (ns)", True),
    ("within", "within groups (ns)", True),
    ("across", "across groups (ns)", True),
    ("groups", "groups", False),
)


def example_files() -> list[str]:
    """Paths of the example results that ship with corelat.

    Returns
    -------
    list of str
        The ``corelat/examples/*.npz`` files, sorted (empty if the package holds none).

    Examples
    --------
    >>> import os, corelat
    >>> [os.path.basename(f) for f in corelat.example_files()]
    ['vm-2cpu-cas.npz', 'vm-2cpu-rw.npz']
    """
    from importlib import resources

    folder = resources.files("corelat").joinpath("examples")
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".npz"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [str(folder.joinpath(n)) for n in names]


#: What a file of each kind holds, for a message naming files that do not compare.
_KIND_TEXT = {"latency": "a latency matrix", "placement": "a placement result (a latency matrix per home)",
              "locks": "a locks result (corelat locks)", "smt": "an SMT result (corelat smt)",
              "fleet": "a fleet result", "topology": "a topology", "check": "a check report (corelat check)"}


def _comparable(obj):
    return isinstance(obj, PlacementResult) or (hasattr(obj, "statistic") and hasattr(obj, "cpus"))


def _kind_text(obj):
    kind = getattr(type(obj), "_KIND", None)
    return _KIND_TEXT.get(kind, f"a {type(obj).__name__!r}")


def _as_results(items):
    """The results of ``items`` (paths loaded); an InputError naming what each file holds where some
    are not latency matrices."""
    loaded = [load(x) if isinstance(x, (str, os.PathLike)) else x for x in items]
    if all(_comparable(r) for r in loaded):
        return loaded
    paths = [isinstance(x, (str, os.PathLike)) for x in items]
    passed = [r for r, path in zip(loaded, paths) if not path and not _comparable(r)]
    if passed:
        raise InputError(f"cannot compare {type(passed[0]).__name__!r}: pass results or paths to result "
                         "files")
    said = [f"{os.fspath(x)!r} holds {_kind_text(r)}" if isinstance(x, (str, os.PathLike))
            else f"{_kind_text(r)} is passed" for x, r in zip(items, loaded)]
    odd = sorted({_kind_text(r) for r in loaded if not _comparable(r)})
    raise InputError(f"cannot compare: {'; '.join(said)}. compare reads latency matrices (and placement "
                     f"results), and {' or '.join(odd)} does not compare with them")


def _pair_values(result, statistic):
    """Per-pair values: the lower triangle, or every measured cell for asymmetric kernels."""
    m = result.statistic(statistic)
    n = m.shape[0]
    if result.metadata.get("symmetric", True):
        cells = np.tril(np.ones((n, n), dtype=bool), -1)
    else:
        cells = ~np.eye(n, dtype=bool)
    v = m[cells]
    return v[~np.isnan(v)]


def _ratio(v, ref):
    if v is None or ref is None or not ref or math.isnan(v) or math.isnan(ref):
        return None
    return v / ref


def _fmt(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"
    return str(v)


@dataclass(frozen=True, eq=False, repr=False)
class Comparison(Result):
    """Several results side by side; made by :func:`corelat.compare`.

    Attributes
    ----------
    results : tuple of LatencyResult
        The compared results.
    names : tuple of str
        Their labels in the table (unique).
    structures : tuple of Structure
        The :func:`corelat.structure` reading of each result.
    statistic : str
        Which per-pair statistic was compared (``"median"`` by default).
    statistics : tuple of (str or None)
        The statistic each result's values are (:attr:`statistic`, or what an imported file holds).
    mixed_statistics : bool
        True when the results hold different statistics: the table and :attr:`warnings` say so.

    Examples
    --------
    >>> import corelat
    >>> c = corelat.compare(*corelat.example_files())
    >>> c.name
    '2-CPU VM, cas vs 2-CPU VM, rw'
    >>> print(c)  # doctest: +ELLIPSIS
    one-way latency in ns (median per pair; ratios to 2-CPU VM, cas)
    ...
    """

    results: tuple
    names: tuple
    structures: tuple
    statistic: str

    _FIELDS = ("results", "names", "structures", "statistic")

    @property
    def name(self) -> str:
        """The compared names joined by ``" vs "``."""
        return " vs ".join(self.names)

    @property
    def metadata(self) -> dict[str, Any]:
        """``statistic`` and each result's ``names`` -> metadata."""
        return {"statistic": self.statistic,
                "results": dict(zip(self.names, (r.metadata for r in self.results)))}

    @property
    def statistics(self) -> tuple[str | None, ...]:
        """The statistic each result's values are: :attr:`statistic` for measured results; for a
        value-only one the statistic its file records (None where it does not say)."""
        return tuple(held_statistic(r, self.statistic) for r in self.results)

    @property
    def mixed_statistics(self) -> bool:
        """True when the results hold different statistics (one that is not recorded counts as
        different): their ratios set unlike values side by side."""
        return len(set(self.statistics)) > 1

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every compared result's warnings, each prefixed with the result's name; first, where the
        results hold different statistics, a line that says so."""
        mixed = (_mixed_text(self.names, self.statistics),) if self.mixed_statistics else ()
        return mixed + prefixed(self.names, self.results, "warnings")

    @property
    def notes(self) -> tuple[str, ...]:
        """Every compared result's notes, each prefixed with the result's name."""
        return prefixed(self.names, self.results, "notes")

    def summary(self) -> dict[str, Any]:
        """The comparison in a few keys.

        Returns
        -------
        dict
            ``statistic``, ``names``, ``mixed_statistics`` and ``median``: the median over pairs of
            each result (ns; None if unknown), by name.
        """
        return {"statistic": self.statistic, "names": list(self.names),
                "mixed_statistics": self.mixed_statistics,
                "median": {rec["name"]: rec["median"] for rec in self.records()}}

    def __repr__(self):
        return self._repr(f"{len(self.results)} results by {self.statistic}")

    def records(self) -> list[dict[str, Any]]:
        """One dict per result: plain numbers (ns; None where unknown) and ratios to the first.

        Returns
        -------
        list of dict
            Keys ``name``, ``kernel``, ``cpus``, ``pairs``, ``value_only``, ``statistic`` (the
            one its values are, see :attr:`statistics`), ``min``, ``median``,
            ``max`` (over the per-pair values), ``min_pair`` and ``max_pair`` (CPU ids), ``smt``
            (sibling latency), ``within`` (inside the finest latency groups; between all cores
            when there are none), ``across`` (between the coarsest groups), ``levels``,
            ``groups`` (e.g. ``"2×16"``), ``structure`` (the plain reading), and ``ratio`` (a
            dict of the same latency keys divided by the first result's).

        Examples
        --------
        >>> import corelat
        >>> [r["kernel"] for r in corelat.compare(*corelat.example_files()).records()]
        ['cas', 'rw']
        """
        rows = []
        for r, name, st, held in zip(self.results, self.names, self.structures, self.statistics):
            v = _pair_values(r, self.statistic)
            rec = {"name": name, "kernel": r.kernel, "cpus": r.n, "pairs": int(v.size),
                   "value_only": bool(r.value_only), "statistic": held}
            if v.size:
                rec.update(min=float(v.min()), median=float(np.median(v)), max=float(v.max()))
                summ = r.summary(statistic=self.statistic)
                rec["min_pair"] = list(summ["min"]["cpus"])
                rec["max_pair"] = list(summ["max"]["cpus"])
            else:
                rec.update(min=None, median=None, max=None, min_pair=None, max_pair=None)
            rec["smt"] = st.smt_latency
            if st.levels:
                rec["within"] = st.levels[0].within
                rec["across"] = st.levels[-1].across
                rec["groups"] = " / ".join(_groups_short(lv.sizes) for lv in st.levels)
            else:
                rec["within"] = None if math.isnan(st.core_latency) else st.core_latency
                rec["across"] = None
                rec["groups"] = "none"
            rec["levels"] = len(st.levels)
            rec["structure"] = st.summary()["reading"]
            rows.append(rec)
        first = rows[0] if rows else {}
        for rec in rows:
            rec["ratio"] = {k: _ratio(rec[k], first.get(k)) for k, _, ratio in _ROWS if ratio}
        return rows

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The comparison as plain, strict-JSON data.

        Parameters
        ----------
        arrays : bool
            Accepted as every result kind accepts it; a comparison holds no arrays of its own (save
            the results it compares), so the dict is the same either way.

        Returns
        -------
        dict
            ``kind``, ``name``, ``statistic``, ``statistics`` (one per result),
            ``mixed_statistics``, ``summary``, ``records``, ``warnings``, ``notes``.
        """
        return jsonable({"kind": "comparison", "name": self.name, "statistic": self.statistic,
                         "statistics": list(self.statistics), "mixed_statistics": self.mixed_statistics,
                         "summary": self.summary(), "records": self.records(),
                         "warnings": list(self.warnings), "notes": list(self.notes)})

    def table(self) -> str:
        """Results as columns, measures as rows; ratios to the first result in parentheses.

        Returns
        -------
        str
            A line saying what the figures are, then the table.
        """
        return self._table(self.records())

    def describe(self) -> str:
        """The report: what ``print(comparison)`` shows.

        Returns
        -------
        str
            :meth:`table`, then each result's structure reading (one line each).
        """
        recs = self.records()
        readings = [f"{name}: {rec['structure']}" for name, rec in zip(self.names, recs)]
        return "\n".join([self._table(recs), "", *readings])

    def _table(self, recs):
        header = [""] + list(self.names)
        lines = [header]
        for key, label, ratio in _ROWS:
            row = [label]
            for k, rec in enumerate(recs):
                cell = _fmt(rec[key])
                q = rec["ratio"].get(key) if ratio else None
                if k > 0 and q is not None:
                    cell += f" (×{q:.2f})"
                row.append(cell)
            lines.append(row)
        widths = [max(len(str(row[c])) for row in lines) for c in range(len(header))]
        out = []
        for row in lines:
            cells = [f"{row[0]:<{widths[0]}}"] + [f"{row[c]:>{widths[c]}}" for c in range(1, len(row))]
            out.append("  ".join(cells).rstrip())
        # Imported files hold one value per pair, whatever statistic the table asks for: say which.
        held = [f"{name}: " + (f"{r.metadata['statistic']} per pair, as its file records it"
                               if r.metadata.get("statistic") else
                               "one value per pair (its file does not say which statistic)")
                for name, r in zip(self.names, self.results)
                if r.value_only and r.metadata.get("statistic") != self.statistic]
        what = "; ".join([f"{self.statistic} per pair", *held])
        note = f"one-way latency in ns ({what}; ratios to {self.names[0]})"
        out.insert(0, note)
        if self.mixed_statistics:
            out.insert(1, _mixed_text(self.names, self.statistics))
        return "\n".join(out)


def _mixed_text(names, statistics):
    held = ", ".join(f"{name}: {st or 'not recorded'}" for name, st in zip(names, statistics))
    return f"different statistics side by side ({held}): their ratios do not compare like with like"


def _groups_short(sizes):
    if len(set(sizes)) == 1:
        return f"{len(sizes)}×{sizes[0]}"
    return "+".join(str(s) for s in sizes)


def _unique_names(names):
    out, seen = [], {}
    for n in names:
        n = n or "result"
        if n in seen:
            seen[n] += 1
            n = f"{n} ({seen[n]})"
        else:
            seen[n] = 1
        out.append(n)
    return tuple(out)


def _stem(path):
    base = os.path.basename(os.fspath(path))
    stem, ext = os.path.splitext(base)
    return stem if ext.lower() in (".npz", ".csv", ".txt") else base


def labels_for(items, names=None):
    """(results, labels) for results or paths to result files.

    ``names`` win when given. Otherwise each result is labelled by its name (the host name for
    corelat files); where names collide (two runs on one host), results read from files are
    labelled by the file's name without its extension.
    """

    # A placement result (one matrix per home of the line) is compared home by home.
    entries = [(x, r, suffix) for x, one in zip(items, _as_results(items)) for r, suffix in per_home([one])]
    results = [r for _, r, _ in entries]
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != len(results):
            raise InputError(f"{len(names)} names for {len(results)} results (a placement result counts once "
                             "per home)")
        return results, _unique_names(names)
    labels = [(r.name or "result") + suffix for _, r, suffix in entries]
    counts = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    labels = [_stem(x) + suffix if counts[label] > 1 and isinstance(x, (str, os.PathLike)) else label
              for (x, _, suffix), label in zip(entries, labels)]
    return results, _unique_names(labels)


def compare(*results: LatencyResult | Path, names: Sequence[str] | None = None,
            statistic: Statistic = "median") -> Comparison:
    """Compare two or more results side by side.

    Parameters
    ----------
    *results : LatencyResult or path
        Results, or paths to result files (corelat ``.npz``, core-to-core-latency CSV, c2clat
        tables); a single list is accepted too.
    names : sequence of str, optional
        Labels (default: each result's name, or the file's name where two results share one).
    statistic : {"median", "mean", "min", "max"}
        The per-pair statistic compared.

    Returns
    -------
    Comparison

    Raises
    ------
    InputError
        For no results, an unknown statistic, a wrong number of names, or a file that cannot be
        read.

    Examples
    --------
    >>> import corelat
    >>> c = corelat.compare(*corelat.example_files())
    >>> len(c.records())
    2
    """

    if len(results) == 1 and isinstance(results[0], (list, tuple)):
        results = tuple(results[0])
    if not results:
        raise InputError("compare needs at least one result")
    check_statistic(statistic)
    loaded, names = labels_for(results, names)
    loaded = tuple(loaded)
    structures = tuple(structure(r, statistic=statistic) for r in loaded)
    return Comparison(results=loaded, names=tuple(names), structures=structures, statistic=statistic)
