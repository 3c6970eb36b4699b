"""Reading a machine's structure off its latency matrix.

People look at a heatmap and say "2 groups of 8 cores, 17 ns within, 85 ns across; SMT siblings
7.8 ns". :func:`structure` says it for them:

1. **SMT siblings** (:mod:`corelat._analysis.siblings`). For every CPU, its nearest partners are
   siblings when they are clearly faster than every other CPU (a gap of ``SMT_RATIO`` or more) and
   fast in absolute terms (at most ``SMT_MAX_NS``: siblings share an L1 cache, so a hand-off between
   them costs a few ns; the 40 ns clusters of an Apple M1 are fast *relative* to the rest but are
   separate cores). Sibling groups must be mutual (every member names the same group), of one size,
   and follow one numbering rule across the machine (cpu XOR 1, or cpu + N/2) unless the OS says
   they are cores; fast pairs in no such numbering are a level (tiles), and the rule fills in a
   sibling pair that a noisy CPU left ambiguous.
2. **Levels** (:mod:`corelat._analysis.levels`). A group is a set of cores whose rows look alike:
   the same latency to every other core, whether faster inside than across (an L3, a socket) or
   slower (an E-core cluster bouncing a line inside its shared L2). Groups are found by row-profile
   similarity and a block test (:mod:`corelat._analysis.blocks`); coarser levels are groups of the
   finer level's groups, so levels nest and each knows its parent. A level may refine only part of
   its parent (the E-cores of a hybrid part split into clusters, the P-cores not); groups whose
   cores differ in kind (SMT or not, L2 shared or not) are reported as classes. A flat, smoothly
   graded (a mesh, a ring) or noise-like matrix gives no levels; noise-like ones say so ("no
   reliable structure").
3. **Topology** (:mod:`corelat._analysis.ostopology`). When the result carries the OS topology
   (``metadata["topology"]``), each level is named by the OS object it matches (L2, cluster, L3,
   die, NUMA node, package) or said to match none, and the SMT siblings are compared with the OS's
   cores.
4. **Artifacts** (:mod:`corelat._analysis.levels`). A part of the machine that is as slow inside as
   across its boundary while a part of the same shape is fast inside is named for what it usually
   is: a line homed on one node's memory for the whole run.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from corelat._analysis import blocks as _blocks
from corelat._analysis.levels import _artifacts, _make_levels
from corelat._analysis.ostopology import (
    TOPOLOGY_KEYS,
    TopologyComparison,
    _topology_records,
    compare_topology,
)
from corelat._analysis.phrases import _cpus, _group_phrase, _jsonable, _ns, _num, _uniform_threads
from corelat._analysis.siblings import _smt_groups, _smt_rule
from corelat._core.errors import InputError
from corelat._core.protocol import Result, jsonable
from corelat._core.types import Statistic
from corelat._system.home import one_home
from corelat._system.topology import Topology
from corelat._system.validate import check_topology

if TYPE_CHECKING:  # annotations only: _result, _placement and _topology import this module's callers
    from corelat._results.latency import LatencyResult
    from corelat._results.placement import PlacementResult


class _Boundaries(dict):
    """:attr:`Structure.boundaries`, still callable as the method it was for one release."""

    def __call__(self) -> dict[int, list[int]]:
        warnings.warn("Structure.boundaries() is deprecated: use the property Structure.boundaries "
                      "(keys 'level0', 'level1', ...; tuples), as LatencyResult.boundaries",
                      DeprecationWarning, stacklevel=2)
        return {int(k[len("level"):]): list(v) for k, v in self.items()}


#: Plural names of the OS objects, for the nesting phrase.
_OS_PLURAL = dict(TOPOLOGY_KEYS)
_OS_PLURAL["classes"] = "core types"

@dataclass(frozen=True, eq=False)
class Structure(Result):
    """What a latency matrix says about the machine; made by :func:`corelat.structure`.

    Attributes
    ----------
    cpus : tuple of int
        The result's CPUs.
    smt_pairs : list of tuple
        CPU ids behaving like SMT siblings (pairs on SMT2 machines); empty when the data shows none.
    smt_latency : float or None
        Median latency between siblings in ns (None without siblings).
    levels : list
        ``Level`` objects, finest to coarsest, each refining the next (its ``parent``); empty on
        a flat matrix.
    core_latency : float
        Median latency between different cores over the whole machine, in ns.
    core_range : tuple of float
        ``(min, max)`` latency between different cores, in ns.
    statistic : str
        The per-pair statistic the reading was made from.
    name : str
        The result's name.
    topology : object or None
        How the groups compare with the OS topology, or None when the result carries none.
    note : str
        Why the topology was not compared, when it was not (empty otherwise).
    reliable : bool or None
        False when the matrix is indistinguishable from noise (no block structure stronger than
        the pairs' own spread), True when it shows structure, None when too small to tell.
    noise_ratio : float
        The statistic behind ``reliable``.
    artifacts : tuple of str
        Sentences naming what in the data is likely an artifact of how it was measured.
    smt_note : str
        Why fast pairs were not read as SMT siblings (they follow no numbering rule and the OS
        does not confirm them as cores); empty otherwise.
    metadata : dict
        Where the reading came from.

    Examples
    --------
    Two cores of two fast siblings each, no grouping beyond them:

    >>> import corelat
    >>> m = [[0, 8, 40, 40], [8, 0, 40, 40], [40, 40, 0, 8], [40, 40, 8, 0]]
    >>> s = corelat.structure(corelat.LatencyResult.from_matrix(m))
    >>> s.smt_pairs, s.smt_latency, s.core_latency, s.levels
    ([(0, 1), (2, 3)], 8.0, 40.0, [])
    """

    cpus: tuple
    smt_pairs: list
    smt_latency: object
    levels: list
    core_latency: float
    core_range: tuple
    statistic: str = "median"
    name: str = ""
    topology: TopologyComparison | None = None
    note: str = ""
    _cores: tuple = field(default=(), init=False, repr=False)  # set by structure(): not a parameter
    reliable: object = None
    noise_ratio: float = math.nan
    artifacts: tuple = ()
    smt_note: str = ""
    metadata: dict = field(default_factory=dict, repr=False)

    _FIELDS = ("name", "statistic", "cpus", "smt_pairs", "smt_latency", "levels",
               "core_latency", "core_range",
               "reliable", "artifacts")

    @property
    def warnings(self) -> tuple[str, ...]:
        """A matrix indistinguishable from noise is a warning; everything else is read as found."""
        if self.reliable is False:
            return ("no reliable structure: the differences between pairs are within their spread",)
        return ()

    @property
    def notes(self) -> tuple[str, ...]:
        """Artifacts named in the data, and why the OS topology was not compared (when it was not)."""
        return tuple(self.artifacts) + tuple(x for x in (self.smt_note, self.note) if x)

    def records(self) -> list[dict[str, Any]]:
        """One dict per group of every level, finest level first.

        Returns
        -------
        list of dict
            ``level``, ``group``, ``cpus``, ``cores``, ``threads``, ``within_ns``, ``across_ns``,
            ``parent_level``, ``parent_group``, ``split``, ``kind``, ``name`` and ``os`` (the OS
            levels it matches).
        """
        out = []
        for k, lv in enumerate(self.levels):
            for i, g in enumerate(lv.groups):
                out.append({
                    "level": k,
                    "group": i,
                    "cpus": list(g),
                    "cores": lv.cores[i],
                    "threads": lv.group_threads[i] if lv.group_threads else None,
                    "within_ns": _jsonable(lv.group_within[i]) if lv.group_within else None,
                    "across_ns": _jsonable(lv.group_across[i]) if lv.group_across else None,
                    "parent_level": lv.parent,
                    "parent_group": lv.group_parent[i] if lv.group_parent else None,
                    "split": lv.split[i] if lv.split else True,
                    "kind": lv.kind,
                    "name": lv.names[i] if lv.names else "",
                    "os": list(lv.os),
                })
        return out

    def summary(self) -> dict[str, Any]:
        """The reading in a few keys.

        Returns
        -------
        dict
            ``name``, ``cpus`` (how many), ``nesting``, ``smt_pairs`` (how many),
            ``smt_latency_ns``, ``levels`` (groups, within and across ns per level),
            ``core_latency_ns``, ``reliable``, ``artifacts`` (how many) and ``reading`` (the
            first line of :meth:`describe`).
        """
        return {
            "name": self.name,
            "cpus": len(self.cpus),
            "nesting": self.nesting(),
            "smt_pairs": len(self.smt_pairs),
            "smt_latency_ns": self.smt_latency,
            "levels": [{"groups": len(lv.groups), "within_ns": _jsonable(lv.within),
                        "across_ns": _jsonable(lv.across),
                        "kind": lv.kind, "os": list(lv.os)} for lv in self.levels],
            "core_latency_ns": _jsonable(self.core_latency),
            "reliable": self.reliable,
            "artifacts": len(self.artifacts),
            "reading": self._reading(),
        }

    def table(self) -> str:
        """The levels as an indented outline, coarsest first, one line per level.

        Returns
        -------
        str
            One line per level, each finer level indented under the coarser one and marked
            ``⊃``; ``""`` on a flat matrix.
        """
        depth = len(self.levels)
        return "\n".join(f"{'  ' * (depth - 1 - k)}{'⊃ ' if k < depth - 1 else ''}{lv.describe()}"
                         for k, lv in reversed(list(enumerate(self.levels))))

    def describe(self) -> str:
        """The reading as text: what ``print(structure)`` shows.

        Returns
        -------
        str
            One line, e.g. ``"2 groups of 4 CPUs ...; SMT siblings 8.0 ns"``; nested levels add
            their outline (:meth:`table`) under ``"Levels, coarsest first:"``.
        """
        text = self._reading()
        if len(self.levels) > 1:  # one per line, finer ones indented under coarser ones
            outline = self.table().replace("\n", "\n  ")
            text += f"\nLevels, coarsest first:\n  {outline}"
        return text

    def __repr__(self):
        return self._repr(self.nesting() or f"{len(self.cpus)} CPUs, no grouping")

    @property
    def cores(self) -> tuple[tuple[int, ...], ...]:
        """Partition of the CPUs into cores (sibling groups and single CPUs), in CPU order."""
        return self._cores

    def order(self) -> list[int]:
        """CPU ids ordered group by group (coarsest level first), then core, then thread.

        Returns
        -------
        list of int
        """
        return _order(self.cpus, self._cores, self.levels)

    @property
    def boundaries(self) -> dict[str, tuple[int, ...]]:
        """Where each level's groups start in :meth:`order`: level name (``"level0"``, finest
        first) → start positions (0 omitted), as :attr:`LatencyResult.boundaries
        <corelat.LatencyResult.boundaries>` gives them once ordered by this structure."""
        order = self.order()
        pos = {c: i for i, c in enumerate(order)}
        out = {}
        for k, lv in enumerate(self.levels):
            starts = sorted(min(pos[c] for c in g) for g in lv.groups)
            out[f"level{k}"] = tuple(s for s in starts if s > 0)
        return _Boundaries(out)

    def nesting(self) -> str:
        """The levels in a few words, coarsest to finest.

        Returns
        -------
        str
            E.g. ``"2 packages ⊃ 12 L3 caches of 8 cores ⊃ SMT pairs"`` (``""`` if flat).
        """
        parts = []
        for lv in reversed(self.levels):
            if lv.os:
                name = _OS_PLURAL.get(lv.os[0], "groups")
            else:
                name = "classes" if lv.kind == "classes" else "groups"
            idx = lv.named()
            cores = {lv.cores[i] for i in idx}
            head = f"{len(idx)} {name}" + (f" of {cores.pop()} cores" if len(cores) == 1 else "")
            if len(idx) < len(lv.groups):
                head += f" in CPUs {_cpus(sorted(c for i in idx for c in lv.groups[i]))}"
            parts.append(head)
        if self.smt_pairs and parts:
            sizes = {len(p) for p in self.smt_pairs}
            parts.append("SMT pairs" if sizes == {2} else "SMT siblings")
        return " ⊃ ".join(parts)

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """The reading as plain, strict-JSON data (NaN becomes None).

        Parameters
        ----------
        arrays : bool
            Accepted as every result kind accepts it; a structure holds no arrays of its own (save
            the result it was read from), so the dict is the same either way.

        Returns
        -------
        dict
        """
        return jsonable({
            "name": self.name,
            "statistic": self.statistic,
            "cpus": list(self.cpus),
            "smt_pairs": [list(p) for p in self.smt_pairs],
            "smt_latency_ns": self.smt_latency,
            "levels": [lv.to_dict() for lv in self.levels],
            "nesting": self.nesting(),
            "core_latency_ns": _jsonable(self.core_latency),
            "core_range_ns": [_jsonable(v) for v in self.core_range],
            "reliable": self.reliable,
            "noise_ratio": _jsonable(self.noise_ratio),
            "artifacts": list(self.artifacts),
            "topology": None if self.topology is None else self.topology.to_dict(),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "text": str(self),
        })

    def _reading(self):
        """The structure in one line: the levels (or their absence), siblings, then the notes."""
        parts = [self._levels_phrase(), *self._smt_phrases()]
        text = "; ".join(parts)
        for a in (*self.artifacts, *([self.smt_note] if self.smt_note else [])):
            text += ". " + a
        if self.topology is not None:
            text += ". " + self.topology.sentence
        elif self.note:
            text += ". " + self.note
        return text

    def _levels_phrase(self):
        if len(self.levels) > 1:
            return self.nesting() + ": " + "; ".join(lv.describe() for lv in reversed(self.levels))
        if self.levels:
            return self.levels[0].describe()
        return self._flat_phrase()

    def _flat_phrase(self):
        """No grouping: why, with the latency between all cores."""
        threads = _uniform_threads(self._cores)
        whole = _group_phrase((tuple(self.cpus),), (len(self._cores),), threads, whole=True)
        between = "cores" if self.smt_pairs else "CPUs"
        lo, hi = self.core_range
        spread = f" ({_num(lo)}–{_ns(hi)})" if _num(lo) != _num(hi) else ""
        if math.isnan(self.core_latency):
            return f"{whole}, no latency between {between}"
        if self.reliable is False:
            return (f"no reliable structure: the differences between pairs are within their spread "
                    f"({whole}, {_ns(self.core_latency)} between {between}{spread})")
        if len(self._cores) > 2:
            return f"no grouping: {whole}, {_ns(self.core_latency)} between {between}{spread}"
        return f"{whole}: {_ns(self.core_latency)} between {between}"

    def _smt_phrases(self):
        n = len(self.cpus)
        if self.smt_pairs:
            in_smt = sum(len(p) for p in self.smt_pairs)
            partial = f" ({in_smt} of {n} CPUs)" if in_smt < n else ""
            return [f"SMT siblings {_ns(self.smt_latency)}{partial}"]
        return ["no SMT siblings"] if n > 2 else []


# -- the analysis ----------------------------------------------------------------------------------
def structure(
    result: LatencyResult | PlacementResult,
    statistic: Statistic = "median",
    topology: Topology | Iterable[Mapping[str, Any]] | None = None,
    *,
    home: int | str | None = None,
) -> Structure:
    """Infer SMT siblings and nested latency groups from a latency matrix.

    Works on measured results and on imported single-value matrices alike.

    Parameters
    ----------
    result : LatencyResult or PlacementResult
        The matrix to read; for a :class:`~corelat.PlacementResult`, the one of ``home``.
    statistic : str
        The per-pair statistic to read (``"median"``, ``"mean"``, ``"min"``, ...).
    topology : Topology or list of dict, optional
        The OS topology to compare the groups with: a :class:`Topology` (anything with
        ``.records()``) or a list of its records. None uses ``result.metadata["topology"]`` when
        present.
    home : str or int, optional
        For a :class:`~corelat.PlacementResult`: the home whose matrix to read (a label like
        ``"node:1"``, a NUMA node K or a position in ``result.homes``), as in
        :func:`corelat.plot.heatmap`.

    Returns
    -------
    Structure

    Raises
    ------
    InputError
        For an unknown statistic, a placement result without ``home``, or a ``home`` the result
        does not hold.
    InputTypeError
        For a ``topology`` that is not one.

    Examples
    --------
    >>> import numpy as np, corelat
    >>> m = np.full((8, 8), 100.0)
    >>> m[:4, :4] = m[4:, 4:] = 30.0
    >>> for i in range(0, 8, 2):
    ...     m[i, i + 1] = m[i + 1, i] = 8.0
    >>> s = corelat.structure(corelat.LatencyResult.from_matrix(m))
    >>> print(s)
    2 groups of 4 CPUs (2 cores × 2 threads): 30 ns within, 100 ns across; SMT siblings 8.0 ns
    """

    check_topology(topology)
    result = cast("LatencyResult",
                  one_home(result, home, hint="pass home=K (or read every home: print(result))"))
    cpus = tuple(result.cpus)
    d = _symmetric(_plausible(result.statistic(statistic)))
    n = len(cpus)

    records, note = _topology_records(result, topology)
    smt_groups, smt_note = _smt_rule(d, _smt_groups(d), cpus, records)
    in_group = {i for g in smt_groups for i in g}
    core_idx = sorted([tuple(sorted(g)) for g in smt_groups] + [(i,) for i in range(n) if i not in in_group],
                      key=lambda g: g[0])
    core_of = np.empty(n, dtype=np.intp)
    for k, g in enumerate(core_idx):
        core_of[list(g)] = k
    diff_core = core_of[:, None] != core_of[None, :]
    off = diff_core & ~np.isnan(d)
    core_vals = d[off & np.triu(np.ones((n, n), dtype=bool), 1)]
    del diff_core, off
    core_latency = float(np.median(core_vals, overwrite_input=True)) if core_vals.size else math.nan
    core_range = (float(core_vals.min()), float(core_vals.max())) if core_vals.size else (math.nan, math.nan)
    any_core_pair = bool(core_vals.size)
    del core_vals  # half a matrix, not needed by what follows

    smt_vals = [d[i, j] for g in smt_groups for a, i in enumerate(g) for j in g[a + 1:]
                if not np.isnan(d[i, j])]
    smt_latency = float(np.median(smt_vals)) if smt_vals else None

    cd = _core_matrix(d, core_idx)
    labels = _blocks.nested_levels(cd) if len(core_idx) >= 3 and any_core_pair else []
    ratio = _blocks.noise_ratio(cd)
    reliable: bool | None
    if smt_groups or labels:
        reliable = True
    else:
        reliable = None if math.isnan(ratio) else bool(ratio < _blocks.NOISE_RATIO)

    level_objs = _make_levels(d, cpus, core_idx, core_of, labels, records)
    st = Structure(
        cpus=cpus,
        smt_pairs=[tuple(cpus[i] for i in sorted(g)) for g in sorted(smt_groups, key=min)],
        smt_latency=smt_latency,
        levels=level_objs,
        core_latency=core_latency,
        core_range=core_range,
        statistic=statistic,
        name=result.name,
        metadata={"source": getattr(result, "name", "")},
        reliable=reliable,
        noise_ratio=ratio,
        artifacts=_artifacts(level_objs, result) + tuple(filter(None, [_blocks.too_many_cores(len(cd))])),
        smt_note=smt_note,
    )
    object.__setattr__(st, "_cores", tuple(tuple(cpus[i] for i in g) for g in core_idx))
    if records is not None:
        object.__setattr__(st, "topology", compare_topology(st, records))
    elif note:
        object.__setattr__(st, "note", note)
    return st


def _core_matrix(d, core_idx):
    """Median latency between the CPUs of every two cores (NaN diagonal, NaN where no pair was measured)."""
    m = len(core_idx)
    sizes = {len(g) for g in core_idx}
    if sizes == {1}:
        cd = d[np.ix_([g[0] for g in core_idx], [g[0] for g in core_idx])]  # a copy already
    elif len(sizes) == 1:
        idx = np.array(core_idx)
        block = d[idx[:, None, :, None], idx[None, :, None, :]].reshape(m, m, -1)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks: unmeasured pairs
            cd = np.nanmedian(block, axis=2)
    else:
        cd = np.full((m, m), np.nan)
        for a in range(m):
            for b in range(a + 1, m):
                v = d[np.ix_(core_idx[a], core_idx[b])]
                v = v[~np.isnan(v)]
                cd[a, b] = cd[b, a] = np.median(v) if v.size else np.nan
    np.fill_diagonal(cd, np.nan)
    return cd


#: Larger latencies (over 16 minutes for one hand-off) are no measurement; the reading squares log
#: latencies and averages orientations, which such values would overflow.
MAX_ANALYSED_NS = 1e12


def _plausible(m):
    """``m``, after checking that every value it holds can be read (finite, at most MAX_ANALYSED_NS)."""
    vals = m[~np.isnan(m)]
    if vals.size and not (np.isfinite(vals).all() and vals.max() <= MAX_ANALYSED_NS):
        worst = vals[~np.isfinite(vals)][0] if not np.isfinite(vals).all() else vals.max()
        raise InputError(f"a latency of {worst:g} ns cannot be read for structure (at most "
                         f"{MAX_ANALYSED_NS:g} ns); the matrix is not a measurement")
    return m


def _symmetric(m):
    """Mean of both orientations where both exist, else the one that does; NaN diagonal."""
    m = np.asarray(m, dtype=np.float64)
    t = m.T
    # In place, one matrix made: the where() of both cases made five (a 4,000-CPU file's: 640 MB).
    d = m + t  # NaN where either is
    d *= 0.5
    np.copyto(d, m, where=np.isnan(t))
    np.copyto(d, t, where=np.isnan(m))
    np.fill_diagonal(d, np.nan)
    return d


def _order(cpus, cores, levels):
    """CPU ids grouped by coarsest level, then finer levels, then core; stable in CPU order."""
    pos = {c: i for i, c in enumerate(cpus)}
    keys = {}
    for c in cpus:
        key = []
        for lv in reversed(levels):
            for g in lv.groups:
                if c in g:
                    key.append(min(pos[x] for x in g))
                    break
        for core in cores:
            if c in core:
                key.append(min(pos[x] for x in core))
                break
        key.append(pos[c])
        keys[c] = tuple(key)
    return [c for c in sorted(cpus, key=keys.__getitem__)]
