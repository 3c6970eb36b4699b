"""Reading a machine's structure off its latency matrix.

People look at a heatmap and say "2 groups of 8 cores, 17 ns within, 85 ns across; SMT siblings
7.8 ns". :func:`structure` says it for them:

1. **SMT siblings.** For every CPU, its nearest partners are siblings when they are clearly faster
   than every other CPU (a gap of :data:`SMT_RATIO` or more) and fast in absolute terms (at most
   :data:`SMT_MAX_NS`: siblings share an L1 cache, so a hand-off between them costs a few ns; the
   40 ns clusters of an Apple M1 are fast *relative* to the rest but are separate cores). Sibling
   groups must be mutual (every member names the same group), of one size, and follow one
   numbering rule across the machine (cpu XOR 1, or cpu + N/2) unless the OS says they are cores;
   fast pairs in no such numbering are a level (tiles), and the rule fills in a sibling pair that
   a noisy CPU left ambiguous.
2. **Levels.** A group is a set of cores whose rows look alike: the same latency to every other
   core, whether faster inside than across (an L3, a socket) or slower (an E-core cluster bouncing a
   line inside its shared L2). Groups are found by row-profile similarity and a block test
   (:mod:`corelat._analysis.blocks`); coarser levels are groups of the finer level's groups, so levels nest
   and each knows its parent. A level may refine only part of its parent (the E-cores of a hybrid
   part split into clusters, the P-cores not); groups whose cores differ in kind (SMT or not, L2
   shared or not) are reported as classes. A flat, smoothly graded (a mesh, a ring) or noise-like
   matrix gives no levels; noise-like ones say so ("no reliable structure").
3. **Topology.** When the result carries the OS topology (``metadata["topology"]``), each level is
   named by the OS object it matches (L2, cluster, L3, die, NUMA node, package) or said to match
   none, and the SMT siblings are compared with the OS's cores.
4. **Artifacts.** A part of the machine that is as slow inside as across its boundary while a part
   of the same shape is fast inside is named for what it usually is: a line homed on one node's
   memory for the whole run.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from corelat._analysis import blocks as _blocks
from corelat._core.protocol import Result, jsonable, thaw
from corelat._core.types import Statistic
from corelat._system.cpulist import format as fmt
from corelat._system.home import one_home
from corelat._system.topology import Topology
from corelat._system.validate import check_topology

if TYPE_CHECKING:  # annotations only: _result, _placement and _topology import this module's callers
    from corelat._results.latency import LatencyResult
    from corelat._results.placement import PlacementResult

#: Siblings must be at least this many times faster than the CPU's fastest non-sibling. Published
#: matrices show 2x (Zen 3, 7.5 vs 15 ns) to 6x (Cascade Lake, 7 vs 43 ns); not the "order of
#: magnitude" of folklore, but far above the few percent a flat matrix varies by.
SMT_RATIO = 1.6
#: Typical sibling hand-off must be at most this (siblings share an L1: published values are 4-10 ns,
#: single pairs up to 13 ns; separate cores sharing an L3 or L2 start at 15 ns on the fastest chips).
SMT_MAX_NS = 12.5
#: Once a machine has SMT, the gap that admits further sibling groups (noisy rows).
SMT_RATIO_WEAK = 1.25
#: A sibling group may be this many times slower than the machine's typical sibling latency.
SMT_GROUP_SPREAD = 2.0
#: Largest number of hardware threads per core considered (POWER has SMT8).
SMT_MAX_THREADS = 8
#: A group's subgroups this close to as far apart as the group is from others are "as slow inside as
#: across" (the artifact test); a same-shaped group below FAST_INSIDE of it is "fast inside".
SLOW_INSIDE = 0.9
FAST_INSIDE = 0.75
#: Groups of one level whose inside latencies differ by this factor are described one by one.
LOPSIDED = 1.3

#: Topology keys compared with the latency groups, with their names in sentences.
TOPOLOGY_KEYS = (("l2", "L2 caches"), ("cluster", "clusters"), ("l3", "L3 caches"), ("die", "dies"),
                 ("node", "NUMA nodes"), ("package", "packages"))
#: Plural names of the OS objects, for the nesting phrase.
_OS_PLURAL = dict(TOPOLOGY_KEYS)
_OS_PLURAL["classes"] = "core types"


@dataclass(frozen=True)
class Level:
    """One level of grouping: a partition of all CPUs, with typical latencies in ns.

    ``within`` is the median latency between different cores of the same group that lie in different
    groups one level finer (different cores at the finest level); ``across`` the median latency
    between groups that share the next coarser group (between all groups at the coarsest level).
    ``cores`` is the number of cores per group, ``threads`` the hardware threads per core where they
    are uniform (else None).

    Levels nest: ``parent`` is the index in ``Structure.levels`` of the next coarser level (None at
    the coarsest) and ``group_parent[i]`` the index of group i's group there. ``split[i]`` is False
    where group i is the whole of its parent group (a level may refine only part of the machine: the
    E-core clusters of a hybrid part, not its P-cores). ``group_within[i]`` (with its range
    ``group_range[i]``) and ``group_across[i]`` are the two latencies for group i alone (NaN where
    it has no subgroups); ``group_cores[i]`` is the (median, min, max) latency between different
    cores anywhere inside group i (what a class of P-cores that no finer level splits is inside);
    ``rest[i]`` is True where group i is what is left when the other groups are taken out: as far
    apart inside as across while the others are fast inside (the P-cores beside two E-core
    clusters); the level is named and counted by the other groups. ``children[i]`` counts its groups one level finer (its cores at the
    finest level). ``kind`` is ``"classes"`` when the groups differ in kind of core (threads per
    core, or L2 sharing in the OS topology), with ``names`` such as ``("P-cores", "E-cores")`` where
    the OS topology tells; ``os`` names the OS objects the level matches (``("l3",)``,
    ``("node", "package")``, ``("classes",)``), empty when none or unknown.
    """

    groups: tuple
    within: float
    across: float
    cores: tuple
    threads: object = None
    parent: object = None
    group_parent: tuple = ()
    split: tuple = ()
    group_within: tuple = ()
    group_range: tuple = ()
    group_across: tuple = ()
    children: tuple = ()
    group_threads: tuple = ()
    group_cores: tuple = ()
    rest: tuple = ()
    kind: str = "groups"
    names: tuple = ()
    os: tuple = ()
    finest: bool = False

    def named(self):
        """Indices of the groups the level speaks for: those it refines (all unless ``partial``),
        less the ``rest``."""
        return [i for i in range(len(self.groups))
                if (not self.split or self.split[i]) and not (self.rest and self.rest[i])]

    @property
    def sizes(self):
        """Number of CPUs per group."""
        return tuple(len(g) for g in self.groups)

    @property
    def inverted(self):
        """True when the groups are slower inside than across (a line bounced inside a shared L2)."""
        return bool(self.within > self.across)

    @property
    def partial(self):
        """True when some groups are the whole of their parent group (only part of it is refined)."""
        return bool(self.split) and not all(self.split)

    def describe(self):
        """E.g. ``2 groups of 16 CPUs (8 cores × 2 threads): 17 ns within, 85 ns across``."""
        if self.kind == "classes":
            return self._describe_classes()
        idx = [i for i, s in enumerate(self.split) if s] if self.partial else list(range(len(self.groups)))
        groups = [self.groups[i] for i in idx]
        head = _group_phrase(groups, tuple(self.cores[i] for i in idx), self.threads)
        if self.partial:
            parents = sorted({c for i in idx for c in self.groups[i]})
            head = f"CPUs {_cpus(parents)} in {head}"
        inside = self._lopsided(idx)
        if inside:
            text = f"{head}: {_ns(self.across)} across; {inside}"
        else:
            text = f"{head}: {_ns(self.within)} within, {_ns(self.across)} across"
        if self.inverted:
            text += " (slower within than across)"
        return text

    def _lopsided(self, idx):
        """Group-by-group inside latencies when they differ (one socket's CCDs twice as far apart as
        the other's): a median would fit neither. Empty when they agree."""
        vals = [self.group_within[i] for i in idx if not math.isnan(self.group_within[i])]
        if len(vals) < 2 or max(vals) < LOPSIDED * min(vals):
            return ""
        parts = []
        for i in idx:
            w, (lo, hi) = self.group_within[i], self.group_range[i]
            if math.isnan(w):
                continue
            sub = f"its {self.children[i]} {'cores' if self.finest else 'subgroups'}"
            if w >= SLOW_INSIDE * self.group_across[i]:
                parts.append(f"within CPUs {_cpus(self.groups[i])} {sub} are ~{_ns(w)} apart, "
                             f"as far as across ({_ns(self.group_across[i])})")
            else:
                spread = f"{_num(lo)}–{_ns(hi)}" if _num(lo) != _num(hi) else _ns(w)
                parts.append(f"within CPUs {_cpus(self.groups[i])} {sub} are {spread} apart")
        return "; ".join(parts)

    def _describe_classes(self):
        parts = []
        for i, g in enumerate(self.groups):
            t = self.group_threads[i] if self.group_threads else None
            what = self.names[i] if self.names and self.names[i] else "cores"
            mixed = len(set(self.group_threads)) > 1  # threads per core only where they tell classes apart
            kind = "" if not mixed or not t else (f" × {t} threads" if t > 1 else " × 1 thread")
            parts.append(f"{self.cores[i]} {what}{kind} (CPUs {_cpus(g)})")
        text = f"{len(self.groups)} classes of cores: {_join(parts)}; {_ns(self.across)} between classes"
        inside = []
        for i, g in enumerate(self.groups):
            if not math.isnan(self.group_within[i]):
                inside.append(f"{_ns(self.group_within[i])} inside CPUs {_cpus(g)}")
            elif self.group_cores and not math.isnan(self.group_cores[i][0]):
                # A class no finer level splits (the P-cores): its cores among themselves.
                w, lo, hi = self.group_cores[i]
                spread = f" ({_num(lo)}–{_ns(hi)})" if _num(lo) != _num(hi) else ""
                inside.append(f"{_ns(w)} between the cores of CPUs {_cpus(g)}{spread}")
        if inside:
            text += ", " + ", ".join(inside)
        return text

    def to_dict(self):
        return {
            "groups": [list(g) for g in self.groups],
            "within_ns": self.within,
            "across_ns": self.across,
            "cores": list(self.cores),
            "threads": self.threads,
            "parent": self.parent,
            "group_parent": list(self.group_parent),
            "split": list(self.split),
            "group_within_ns": [_jsonable(v) for v in self.group_within],
            "group_range_ns": [[_jsonable(a), _jsonable(b)] for a, b in self.group_range],
            "group_across_ns": [_jsonable(v) for v in self.group_across],
            "children": list(self.children),
            "group_threads": list(self.group_threads),
            "group_cores_ns": [[_jsonable(v) for v in t] for t in self.group_cores],
            "rest": list(self.rest),
            "kind": self.kind,
            "names": list(self.names),
            "os": list(self.os),
            "inverted": self.inverted,
            "finest": self.finest,
            "text": self.describe(),
        }


@dataclass(frozen=True)
class TopologyComparison:
    """How the latency groups line up with the OS topology.

    ``matches`` maps a topology key (``"l3"``, ``"node"``, ``"package"``, ``"core"``) to the index of
    the level with the same partition (``"smt"`` for the core key when SMT siblings match);
    ``mismatches`` maps the keys with no matching level to a short explanation; ``unmatched_levels``
    lists levels that correspond to no topology grouping. ``agrees`` is True when nothing mismatches.
    """

    matches: dict
    mismatches: dict
    unmatched_levels: tuple
    sentence: str

    @property
    def agrees(self):
        return not self.mismatches and not self.unmatched_levels

    def to_dict(self):
        return {
            "agrees": self.agrees,
            "matches": dict(self.matches),
            "mismatches": dict(self.mismatches),
            "unmatched_levels": list(self.unmatched_levels),
            "sentence": self.sentence,
        }


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

    _FIELDS = ("name", "statistic", "cpus", "smt_pairs", "smt_latency", "levels", "core_latency", "core_range",
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
            ``core_latency_ns``, ``reliable`` and ``artifacts`` (how many).
        """
        return {
            "name": self.name,
            "cpus": len(self.cpus),
            "nesting": self.nesting(),
            "smt_pairs": len(self.smt_pairs),
            "smt_latency_ns": self.smt_latency,
            "levels": [{"groups": len(lv.groups), "within_ns": _jsonable(lv.within), "across_ns": _jsonable(lv.across),
                        "kind": lv.kind, "os": list(lv.os)} for lv in self.levels],
            "core_latency_ns": _jsonable(self.core_latency),
            "reliable": self.reliable,
            "artifacts": len(self.artifacts),
        }

    def table(self) -> str:
        """The reading as text.

        Returns
        -------
        str
            What ``str(structure)`` gives, e.g. ``"2 groups of 4 CPUs ...; SMT siblings 8.0 ns"``.
        """
        return self._text()

    def __str__(self):
        return self._text()

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

    def boundaries(self) -> dict[int, list[int]]:
        """Where each level's groups start in :meth:`order`.

        Returns
        -------
        dict
            ``{level index: [start positions]}`` (position 0 omitted).
        """
        order = self.order()
        pos = {c: i for i, c in enumerate(order)}
        out = {}
        for k, lv in enumerate(self.levels):
            starts = sorted(min(pos[c] for c in g) for g in lv.groups)
            out[k] = [s for s in starts if s > 0]
        return out

    def nesting(self) -> str:
        """The levels in a few words, coarsest to finest.

        Returns
        -------
        str
            E.g. ``"2 packages ⊃ 12 L3 caches of 8 cores ⊃ SMT pairs"`` (``""`` if flat).
        """
        parts = []
        for lv in reversed(self.levels):
            name = _OS_PLURAL.get(lv.os[0], "groups") if lv.os else ("classes" if lv.kind == "classes" else "groups")
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

    def level_lines(self) -> list[str]:
        """The levels as an indented outline, coarsest first.

        Returns
        -------
        list of str
            One line per level (empty if flat).
        """
        depth = len(self.levels)
        return [f"{'  ' * (depth - 1 - k)}{'⊃ ' if k < depth - 1 else ''}{lv.describe()}"
                for k, lv in reversed(list(enumerate(self.levels)))]

    def to_dict(self) -> dict[str, Any]:
        """The reading as plain, strict-JSON data (NaN becomes None).

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

    def _text(self):
        n = len(self.cpus)
        threads = _uniform_threads(self._cores)
        parts = []
        if len(self.levels) > 1:
            parts.append(self.nesting() + ": " + "; ".join(lv.describe() for lv in reversed(self.levels)))
        elif self.levels:
            parts.append(self.levels[0].describe())
        else:
            whole = _group_phrase((tuple(self.cpus),), (len(self._cores),), threads, whole=True)
            between = "cores" if self.smt_pairs else "CPUs"
            lo, hi = self.core_range
            spread = f" ({_num(lo)}–{_ns(hi)})" if _num(lo) != _num(hi) else ""
            if math.isnan(self.core_latency):
                parts.append(f"{whole}, no latency between {between}")
            elif self.reliable is False:
                parts.append(f"no reliable structure: the differences between pairs are within their spread "
                             f"({whole}, {_ns(self.core_latency)} between {between}{spread})")
            elif len(self._cores) > 2:
                parts.append(f"no grouping: {whole}, {_ns(self.core_latency)} between {between}{spread}")
            else:
                parts.append(f"{whole}: {_ns(self.core_latency)} between {between}")
        if self.smt_pairs:
            partial = ""
            in_smt = sum(len(p) for p in self.smt_pairs)
            if in_smt < n:
                partial = f" ({in_smt} of {n} CPUs)"
            parts.append(f"SMT siblings {_ns(self.smt_latency)}{partial}")
        elif n > 2:
            parts.append("no SMT siblings")
        text = "; ".join(parts)
        for a in (*self.artifacts, *([self.smt_note] if self.smt_note else [])):
            text += ". " + a
        if self.topology is not None:
            text += ". " + self.topology.sentence
        elif self.note:
            text += ". " + self.note
        return text


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
    result = cast("LatencyResult", one_home(result, home, hint="pass home=K (or read every home: print(result))"))
    cpus = tuple(result.cpus)
    d = _symmetric(result.statistic(statistic))
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
    core_latency = float(np.median(core_vals)) if core_vals.size else math.nan
    core_range = (float(core_vals.min()), float(core_vals.max())) if core_vals.size else (math.nan, math.nan)

    smt_vals = [d[i, j] for g in smt_groups for a, i in enumerate(g) for j in g[a + 1:] if not np.isnan(d[i, j])]
    smt_latency = float(np.median(smt_vals)) if smt_vals else None

    cd = _core_matrix(d, core_idx)
    labels = _blocks.nested_levels(cd) if len(core_idx) >= 3 and core_vals.size else []
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
        artifacts=_artifacts(level_objs, result),
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
        cd = d[np.ix_([g[0] for g in core_idx], [g[0] for g in core_idx])].copy()
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


def _make_levels(d, cpus, core_idx, core_of, labels, records):
    """:class:`Level` objects from the blocks' core labels (finest first), with their latencies."""
    if not labels:
        return []
    n = d.shape[0]
    pair_ok = (core_of[:, None] != core_of[None, :]) & ~np.isnan(d)
    threads_of = np.array([len(core_idx[c]) for c in core_of])
    cpu_labels = [lab[core_of] for lab in labels]
    same = [lab[:, None] == lab[None, :] for lab in cpu_labels]
    finer_same = [core_of[:, None] == core_of[None, :]] + same[:-1]
    parts = []
    for lab in cpu_labels:
        part = [np.flatnonzero(lab == g) for g in np.unique(lab)]
        part.sort(key=lambda g: g[0])
        parts.append(part)
    sharing = _l2_sharing(records, cpus)
    core_type = _core_types(records, cpus)
    out = []
    for k, part in enumerate(parts):
        top = k + 1 == len(parts)
        within_mask = pair_ok & same[k] & ~finer_same[k]
        across_mask = pair_ok & ~same[k] & (True if top else same[k + 1])
        gw, gr, ga, ch, gt, gc = [], [], [], [], [], []
        for g in part:
            c = d[np.ix_(g, g)][pair_ok[np.ix_(g, g)]]
            gc.append((float(np.median(c)), float(c.min()), float(c.max())) if c.size else (math.nan,) * 3)
            w = d[np.ix_(g, g)][within_mask[np.ix_(g, g)]]
            a = d[g][across_mask[g]]
            gw.append(float(np.median(w)) if w.size else math.nan)
            gr.append((float(w.min()), float(w.max())) if w.size else (math.nan, math.nan))
            ga.append(float(np.median(a)) if a.size else math.nan)
            finer = cpu_labels[k - 1] if k else core_of
            ch.append(len(set(finer[g].tolist())))
            t = set(threads_of[g].tolist())
            gt.append(t.pop() if len(t) == 1 else None)
        if top:
            gp, split = (), tuple(True for _ in part)
        else:
            up = cpu_labels[k + 1]
            ups = [np.flatnonzero(up == u) for u in np.unique(up)]
            ups.sort(key=lambda g: g[0])
            where = {int(c): i for i, g in enumerate(ups) for c in g}
            gp = tuple(where[int(g[0])] for g in part)
            split = tuple(len(g) < len(ups[p]) for g, p in zip(part, gp))
        # A partial level speaks for the groups it refines (the E-core clusters, not the P-cores).
        rows = np.zeros(n, dtype=bool)
        for g, sp in zip(part, split):
            rows[g] = sp
        w_all, a_all = d[within_mask & rows[:, None]], d[across_mask & rows[:, None]]
        refined = [i for i, sp in enumerate(split) if sp]
        kind, names = _classes([part[i] for i in refined], [gt[i] for i in refined], sharing, core_type)
        if kind == "classes" and len(refined) < len(part):
            names = tuple(names[refined.index(i)] if i in refined and names else "" for i in range(len(part)))
        groups = tuple(tuple(cpus[i] for i in g) for g in part)
        rest = _rest(part, gw, ga, ch)
        out.append(Level(
            groups=groups,
            within=float(np.median(w_all)) if w_all.size else math.nan,
            across=float(np.median(a_all)) if a_all.size else math.nan,
            cores=tuple(len(set(core_of[g].tolist())) for g in part),
            threads=_uniform_threads(core_idx) if len(core_idx) < n else None,
            parent=None if top else k + 1,
            group_parent=gp,
            split=split,
            group_within=tuple(gw),
            group_range=tuple(gr),
            group_across=tuple(ga),
            children=tuple(ch),
            group_threads=tuple(gt),
            group_cores=tuple(gc),
            kind=kind,
            names=names,
            rest=rest,
            os=(_os_matches(groups, split, kind, names, records, cpus)
                or (_os_matches(groups, tuple(sp and not r for sp, r in zip(split, rest)), kind, names, records, cpus)
                    if any(rest) else ())),
            finest=k == 0,
        ))
    return out


def _rest(part, gw, ga, ch):
    """Per group: True when it is what is left of the machine (as far apart inside as across)
    beside groups that are fast inside, none of its own shape (that would be an artifact)."""
    slow = [c > 1 and not math.isnan(w) and w >= SLOW_INSIDE * a for w, a, c in zip(gw, ga, ch)]
    fast = [not math.isnan(w) and w <= FAST_INSIDE * a for w, a in zip(gw, ga)]
    shape = [(c, len(g)) for g, c in zip(part, ch)]
    if not any(fast):
        return tuple(False for _ in part)
    return tuple(sl and not any(f and shape[j] == shape[i] for j, f in enumerate(fast))
                 for i, sl in enumerate(slow))


def _l2_sharing(records, cpus):
    """{cpu index: number of OS cores sharing its L2} from topology records, or None."""
    if not records:
        return None
    by_cpu = {r.get("cpu"): r for r in records}
    cores_of_l2 = {}
    for r in records:
        if r.get("l2") is not None and r.get("core") is not None:
            cores_of_l2.setdefault(r["l2"], set()).add(r["core"])
    out = {}
    for i, c in enumerate(cpus):
        r = by_cpu.get(c)
        if r is None or r.get("l2") is None:
            return None
        out[i] = len(cores_of_l2.get(r["l2"], ()))
    return out


def _core_types(records, cpus):
    """{cpu index: name} from records that say what kind of core each CPU is, or None.

    ``core_type`` ("core"/"atom": the ``cpus`` of /sys/devices/cpu_core and cpu_atom) names P- and
    E-cores; ``capacity`` (sysfs ``cpu_capacity``, Arm big.LITTLE) names the larger "big" and the
    rest "LITTLE". corelat's topology reader records both where sysfs has them.
    """
    if not records:
        return None
    by_cpu = {r.get("cpu"): r for r in records}
    rows = [by_cpu.get(c) or {} for c in cpus]
    types = [r.get("core_type") for r in rows]
    if all(t in ("core", "atom") for t in types) and len(set(types)) > 1:
        return {i: "P-cores" if t == "core" else "E-cores" for i, t in enumerate(types)}
    caps = [r.get("capacity") for r in rows]
    if all(isinstance(c, (int, float)) for c in caps) and len(set(caps)) > 1:
        top = max(caps)
        return {i: "big cores" if c == top else "LITTLE cores" for i, c in enumerate(caps)}
    return None


def _classes(part, group_threads, sharing, core_type=None):
    """("classes", names) when the groups hold different kinds of core, else ("groups", ())."""
    if core_type is not None and len(part) > 1:
        named = []
        for g in part:
            t = {core_type[int(i)] for i in g}
            named.append(t.pop() if len(t) == 1 else None)
        if None not in named and len(set(named)) == len(named) > 1:
            return "classes", tuple(named)
    kinds = [group_threads[i] for i in range(len(part))]
    shares = None
    if sharing is not None:
        shares = []
        for g in part:
            s = {sharing[int(i)] for i in g}
            shares.append(s.pop() if len(s) == 1 else None)
    # Classes are groups that differ from each other as a whole: one group per kind of core. Groups
    # of one kind (packages, one of them with CPUs offline) are groups even where threads differ.
    differ_threads = None not in kinds and len(set(kinds)) == len(kinds) > 1
    differ_l2 = shares is not None and None not in shares and len(set(shares)) == len(shares) > 1
    if not (differ_threads or differ_l2):
        return "groups", ()
    names = ()
    if differ_l2 and len(part) == 2:
        # Hybrid x86 parts: P-cores have an L2 of their own, E-cores share one per cluster.
        names = tuple("P-cores" if s == 1 else "E-cores" for s in shares)
        if len(set(names)) < 2:
            names = ()
    return "classes", names


def _os_matches(groups, split, kind, names, records, cpus):
    """The OS objects whose partition this level equals (on its refined part when partial)."""
    if not records:
        return ()
    sets = [frozenset(g) for g in groups]
    whole = frozenset(cpus)
    core_part = _partition(records, "core", cpus)
    out = []
    for key, _ in TOPOLOGY_KEYS:
        part = _partition(records, key, cpus)
        if part is None or part == frozenset([whole]) or part == core_part:
            continue
        if all(split):
            hit = frozenset(sets) == part
        else:  # a partial level (or one with a rest) matches on the part it names
            hit = any(split) and all(s in part for s, sp in zip(sets, split) if sp)
        if hit:
            out.append(key)
    if kind == "classes" and names:
        out.append("classes")
    return tuple(out)


def _artifacts(levels, result):
    """Sentences for parts as slow inside as across while a part of the same shape is fast inside."""
    out = []
    for lv in levels:
        shape = {}
        for i, g in enumerate(lv.groups):
            if lv.children[i] > 1 and not math.isnan(lv.group_within[i]) and not math.isnan(lv.group_across[i]):
                shape.setdefault((lv.children[i], len(g)), []).append(i)
        for same in shape.values():
            slow = [i for i in same if lv.group_within[i] >= SLOW_INSIDE * lv.group_across[i]]
            fast = [i for i in same if lv.group_within[i] <= FAST_INSIDE * lv.group_across[i]]
            if not (slow and fast):
                continue
            s, f = slow[0], fast[0]
            text = (f"CPUs {_cpus(lv.groups[s])} are as slow among their {lv.children[s]} subgroups "
                    f"(~{_ns(lv.group_within[s])}) as across to the rest, while CPUs {_cpus(lv.groups[f])}, "
                    f"of the same shape, are {_ns(lv.group_within[f])} apart inside: the signature of a line "
                    "homed on one node's memory for the whole run, which is what tools that allocate one "
                    "flag up front measure")
            if getattr(result, "value_only", True):
                text += "; corelat's own results (a fresh page per pair) should not show it"
            else:
                text += ("; corelat gives every pair a fresh page, so this result should not show it: "
                         "check the memory placement (numactl, cgroup memory binding)")
            out.append(text)
    return tuple(out)


def _symmetric(m):
    """Mean of both orientations where both exist, else the one that does; NaN diagonal."""
    m = np.array(m, dtype=np.float64)
    t = m.T
    both = ~np.isnan(m) & ~np.isnan(t)
    d = np.where(both, (m + t) / 2.0, np.where(np.isnan(m), t, m))
    np.fill_diagonal(d, np.nan)
    return d


def _smt_groups(d):
    """Index groups of SMT siblings (mutual, clearly faster than the rest, fast in absolute terms)."""
    n = d.shape[0]
    claim = {}
    for i in range(n):
        row = d[i]
        idx = np.flatnonzero(~np.isnan(row))
        if idx.size < 2:
            continue  # nothing to compare the nearest partner with
        order = idx[np.argsort(row[idx], kind="stable")]
        vals = row[order]
        for s in range(1, min(SMT_MAX_THREADS, vals.size)):
            # s siblings, then a clear gap to the fastest non-sibling
            if vals[s - 1] <= 0:
                break
            if vals[s] / vals[s - 1] >= SMT_RATIO:
                claim[i] = frozenset([i, *order[:s].tolist()])
                break
    groups = {g for i, g in claim.items() if all(claim.get(j) == g for j in g)}
    if not groups:
        return []
    # Relative speed alone cannot tell siblings from a cluster of separate cores (a Zen CCX with
    # SMT off, an Apple cluster): the whole machine decides by absolute speed. A single slower pair
    # (a noisy CPU 0) is kept as long as it stays near the machine's typical sibling latency.
    lat = {g: float(np.nanmedian([d[i, j] for i in g for j in g if i < j])) for g in groups}
    typical = float(np.median(list(lat.values())))
    if typical > SMT_MAX_NS:
        return []
    groups = {g for g in groups if lat[g] <= SMT_GROUP_SPREAD * typical}
    # Second pass, now that the machine has SMT: CPUs whose sibling gap noise narrowed below
    # SMT_RATIO still join when they and their nearest partners name each other, are as fast as the
    # other siblings and clearly (SMT_RATIO_WEAK) faster than the rest.
    size = int(np.median([len(g) for g in groups]))
    taken = {i for g in groups for i in g}
    nearest = {}
    for i in range(n):
        if i in taken:
            continue
        row = d[i]
        idx = np.flatnonzero(~np.isnan(row))
        if idx.size < size:
            continue
        order = idx[np.argsort(row[idx], kind="stable")]
        vals = row[order]
        if vals[size - 2] > SMT_GROUP_SPREAD * typical or vals[size - 1] < SMT_RATIO_WEAK * vals[size - 2]:
            continue
        nearest[i] = frozenset([i, *order[: size - 1].tolist()])
    for i, g in nearest.items():
        if all(nearest.get(j) == g for j in g):
            groups.add(g)
    return [tuple(sorted(g)) for g in groups]


def _rule_of(group):
    """(stride, size) of the numbering rule a sibling group (sorted CPU ids) follows, or None.

    Linux numbers the hardware threads of a machine one of two ways: adjacent (cpu XOR 1: 0,1 and
    2,3; SMT4 0-3) or one thread of every core first (cpu + N/2: 0,16 and 1,17). Both are
    ``{b, b + S, ..., b + (k - 1) S}`` with ``(b // S) % k == 0``.
    """
    k, b = len(group), group[0]
    stride = group[1] - b
    if stride <= 0 or (b // stride) % k or any(group[j] != b + j * stride for j in range(k)):
        return None
    return stride, k


def _rule_group(cpu, rule):
    stride, k = rule
    b = cpu - ((cpu // stride) % k) * stride
    return tuple(b + j * stride for j in range(k))


def _smt_rule(d, groups, cpus, records):
    """(sibling index groups, note): the groups that follow one numbering rule across the machine
    (or are the OS's cores), completed by the rule where a noisy pair was missed.

    Fast pairs that follow no rule are not SMT siblings (separate cores sharing an L2 in a
    scrambled numbering, a tile) unless the OS says they are cores: they are left to the levels,
    and the note says why.
    """
    if not groups:
        return groups, ""
    ids = [tuple(sorted(cpus[i] for i in g)) for g in groups]
    os_cores = _partition(records, "core", cpus) if records else None
    confirmed = [os_cores is not None and frozenset(g) in os_cores for g in ids]
    rules = [_rule_of(g) for g in ids]
    counts = {}
    for r in rules:
        if r is not None:
            counts[r] = counts.get(r, 0) + 1
    rule = max(counts, key=lambda r: (counts[r], -r[0])) if counts else None
    fits = rule is not None and (counts[rule] >= 2 or rule[1] * 2 >= len(cpus)) \
        and 3 * counts[rule] >= 2 * len(groups)
    keep = [g for g, r, ok in zip(groups, rules, confirmed) if ok or (fits and r == rule)]
    note = ""
    if not keep:
        lat = np.nanmedian([d[i, j] for g in groups for i in g for j in g if i < j])
        shown = ", ".join("(" + ",".join(map(str, g)) + ")" for g in sorted(ids)[:4])
        note = (f"CPUs {shown}{' ...' if len(ids) > 4 else ''} pair up as fast as SMT siblings "
                f"({_ns(float(lat))}) but follow no numbering rule (n and n+1, n and n+N/2) "
                "and the OS does not confirm them as cores: read as a level of pairs, not as SMT siblings")
        return [], note
    if fits:
        keep = _complete(d, keep, rule, cpus)
    return keep, note


def _complete(d, groups, rule, cpus):
    """Add the sibling groups the rule predicts among CPUs left out, where they are as fast as the
    machine's siblings and (within 10 %) the fastest partners their members have (a quantised timer
    ties CPU 28's sibling with two cores of its CCX)."""
    typical = float(np.median([np.nanmedian([d[i, j] for i in g for j in g if i < j]) for g in groups]))
    pos = {c: i for i, c in enumerate(cpus)}
    taken = {i for g in groups for i in g}
    out = list(groups)
    for c in cpus:
        if pos[c] in taken:
            continue
        want = [pos.get(x) for x in _rule_group(c, rule)]
        if None in want or taken & set(want):
            continue
        inside = d[np.ix_(want, want)][~np.eye(len(want), dtype=bool)]
        rest = np.delete(d[want], want, axis=1)
        if np.isnan(inside).any() or np.isnan(rest).all():
            continue
        if inside.max() <= SMT_GROUP_SPREAD * typical and inside.max() <= 1.1 * float(np.nanmin(rest)):
            out.append(tuple(sorted(want)))
            taken.update(want)
    return out


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


# -- topology comparison ---------------------------------------------------------------------------
def _topology_records(result, topology):
    """(records, note): the OS topology's per-CPU records, or None and why there are none."""
    if topology is not None:
        if hasattr(topology, "records"):
            return list(topology.records()), ""
        return list(topology), ""
    md = result.metadata.get("topology") if hasattr(result, "metadata") else None
    if not md:
        return None, ""
    try:
        return list(Topology.from_dict(thaw(md)).records()), ""
    except (ValueError, TypeError, KeyError) as e:
        return None, f"The result's OS topology is unreadable ({e})."


def _partition(records, key, cpus):
    """Partition of ``cpus`` (as a set of frozensets) by a record key, or None when incomplete."""
    by_cpu = {r.get("cpu"): r for r in records}
    groups = {}
    for c in cpus:
        r = by_cpu.get(c)
        if r is None or r.get(key) is None:
            return None
        v = r[key]
        if isinstance(v, (list, tuple)):
            v = tuple(v)
        groups.setdefault(v, set()).add(c)
    return frozenset(frozenset(g) for g in groups.values())


def _relation(lat, topo):
    """'equal', 'finer' (latency groups split topology groups), 'coarser', or 'different'."""
    if lat == topo:
        return "equal"
    if all(any(g <= t for t in topo) for g in lat):
        return "finer"
    if all(any(t <= g for g in lat) for t in topo):
        return "coarser"
    return "different"


def compare_topology(st, records):
    """Compare a :class:`Structure` with OS topology records (``Topology.records()``)."""
    cpus = st.cpus
    whole = frozenset([frozenset(cpus)])
    singles = frozenset(frozenset([c]) for c in cpus)
    lat_parts = [frozenset(frozenset(g) for g in lv.groups) for lv in st.levels]
    matches, mismatches, used = {}, {}, set()
    per_level = {}  # level index -> ["2 L3 caches", ...]
    said_miss = []
    core_part = _partition(records, "core", cpus)
    for key, label in TOPOLOGY_KEYS:
        part = _partition(records, key, cpus)
        if part is None or part == whole or part == singles or part == core_part:
            continue  # unknown, one group for all measured CPUs, or per core: nothing to compare
        k = next((i for i, lv in enumerate(st.levels) if key in lv.os), None)
        count = len(part)
        if k is not None:
            matches[key] = k
            used.add(k)
            lv = st.levels[k]
            idx = lv.named()
            if len(idx) < len(lv.groups):
                count = len(idx)
                label += f" in CPUs {_cpus(sorted(c for i in idx for c in lv.groups[i]))}"
            per_level.setdefault(k, []).append(f"{count} {label}")
            continue
        if not lat_parts:
            why = f"the OS reports {count} {label} but the latency shows no grouping"
        else:
            rel = _relation(lat_parts[0], part)
            if rel == "finer":
                why = f"latency groups split the OS's {count} {label} further"
            elif rel == "coarser":
                why = f"latency groups span several of the OS's {count} {label}"
            else:
                why = f"latency groups cut across the OS's {count} {label}"
        mismatches[key] = why
        said_miss.append(why)
    for k, lv in enumerate(st.levels):
        if "classes" in lv.os:
            matches.setdefault("classes", k)
            used.add(k)
            per_level.setdefault(k, []).append("core types (" + _join(list(lv.names)) + ")")
    sentences = []
    for k, what in sorted(per_level.items()):
        who = "latency groups" if len(lat_parts) == 1 else f"latency level {k + 1}"
        sentences.append(f"{who} match the OS's {_join(what)}")
    unmatched = tuple(k for k in range(len(lat_parts)) if k not in used)
    for k in unmatched:
        who = "latency groups" if len(lat_parts) == 1 else f"latency level {k + 1}"
        sentences.append(f"{who} ({len(lat_parts[k])}) match no OS grouping (L2, cluster, L3, die, NUMA node, "
                         "package)")
    # SMT siblings against the OS's cores.
    smt_part = frozenset(frozenset(c) for c in st.cores)
    if core_part is not None and core_part != singles:
        if smt_part == core_part:
            matches["core"] = "smt"
            sentences.append("SMT siblings match the OS's cores")
        else:
            why = ("the OS reports SMT siblings the latency does not show" if not st.smt_pairs
                   else "SMT siblings differ from the OS's cores")
            mismatches["core"] = why
            sentences.append(why)
    elif core_part is not None and st.smt_pairs:
        mismatches["core"] = "latency shows SMT siblings the OS does not report"
        sentences.append(mismatches["core"])
    sentences.extend(said_miss)
    if not sentences:
        sentences.append("the OS topology has no grouping to compare with")
    text = "; ".join(sentences)
    text = text[0].upper() + text[1:] + "."
    return TopologyComparison(matches=matches, mismatches=mismatches, unmatched_levels=unmatched, sentence=text)


# -- text helpers ----------------------------------------------------------------------------------
def _uniform_threads(cores):
    sizes = {len(c) for c in cores}
    return sizes.pop() if len(sizes) == 1 else None


def _group_phrase(groups, cores, threads, whole=False):
    sizes = [len(g) for g in groups]
    if whole:
        head = f"{sizes[0]} CPUs"
    elif len(set(sizes)) == 1:
        head = f"{len(groups)} groups of {sizes[0]} CPUs"
    else:
        head = f"{len(groups)} groups ({', '.join(str(s) for s in sizes)} CPUs)"
    if threads and threads > 1 and len(set(cores)) == 1:
        head += f" ({cores[0]} cores × {threads} threads)"
    elif any(c != s for c, s in zip(cores, sizes)) and len(set(cores)) == 1:
        head += f" ({cores[0]} cores)"
    return head


def _num(v):
    if v is None or math.isnan(v):
        return "?"
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def _ns(v):
    return f"{_num(v)} ns"


def _join(items):
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _cpus(ids):

    return fmt(ids)


def _jsonable(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v
