"""Reading a machine's structure off its latency matrix.

People look at a heatmap and say "2 groups of 8 cores, 17 ns within, 85 ns across; SMT siblings
7.8 ns". :func:`structure` says it for them:

1. **SMT siblings.** For every CPU, its nearest partners are siblings when they are clearly faster
   than every other CPU (a gap of :data:`SMT_RATIO` or more) and fast in absolute terms (at most
   :data:`SMT_MAX_NS`: siblings share an L1 cache, so a hand-off between them costs a few ns; the
   40 ns clusters of an Apple M1 are fast *relative* to the rest but are separate cores). Sibling
   groups must be mutual (every member names the same group).
2. **Levels.** Cores (sibling groups, or single CPUs) are clustered hierarchically with average
   linkage on their median latency. A level is a cut of that tree at a clear gap between merge
   heights (:data:`GAP_RATIO`), kept only when the data support it: most cores sit in multi-core
   groups, and latency across groups is clearly higher than within (:data:`LEVEL_RATIO`, and the
   bulk of the two distributions do not overlap). A flat or smoothly graded matrix (a mesh, a
   ring) gives no levels.
3. **Topology.** When the result carries the OS topology (``metadata["topology"]``), the latency
   groups are compared with the L3, NUMA and package partitions, and the SMT siblings with the OS's
   cores.
"""

import math
from dataclasses import dataclass, field

import numpy as np

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
#: Consecutive merge heights of the core tree must differ by this factor to mark a level.
GAP_RATIO = 1.25
#: Typical latency across groups must be this many times the typical latency within them.
LEVEL_RATIO = 1.3
#: With fewer pairs than this on either side (3-4 cores), noise alone makes 1.5x gaps: ask for 2x.
LEVEL_FEW_PAIRS = 4
LEVEL_RATIO_FEW = 2.0
#: At least this share of the cores must be in groups of two or more for a level to count.
LEVEL_COVERAGE = 0.5
#: The quantile of within-group latencies that must stay below the same lower quantile of across.
LEVEL_OVERLAP_Q = 0.1

#: Topology keys compared with the latency groups, with their names in sentences.
TOPOLOGY_KEYS = (("l3", "L3 caches"), ("node", "NUMA nodes"), ("package", "packages"))


@dataclass(frozen=True)
class Level:
    """One level of grouping: a partition of all CPUs, with typical latencies in ns.

    ``within`` is the median latency between different cores of the same group; ``across`` the
    median latency between groups that share the next coarser group (between all groups at the
    coarsest level). ``cores`` is the number of cores per group, ``threads`` the hardware threads
    per core where they are uniform (else None).
    """

    groups: tuple
    within: float
    across: float
    cores: tuple
    threads: object = None

    @property
    def sizes(self):
        """Number of CPUs per group."""
        return tuple(len(g) for g in self.groups)

    def describe(self):
        """E.g. ``2 groups of 16 CPUs (8 cores × 2 threads): 17 ns within, 85 ns across``."""
        return f"{_group_phrase(self.groups, self.cores, self.threads)}: " \
               f"{_ns(self.within)} within, {_ns(self.across)} across"

    def to_dict(self):
        return {
            "groups": [list(g) for g in self.groups],
            "within_ns": self.within,
            "across_ns": self.across,
            "cores": list(self.cores),
            "threads": self.threads,
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


@dataclass(frozen=True)
class Structure:
    """What a latency matrix says about the machine; see :func:`structure`.

    Attributes:
        cpus: the result's CPUs.
        smt_pairs: tuples of CPU ids behaving like SMT siblings (pairs on SMT2 machines); empty when
            the data shows none.
        smt_latency: median latency between siblings in ns (None without siblings).
        levels: :class:`Level` objects, finest to coarsest; empty on a flat matrix.
        core_latency: median latency between different cores over the whole machine, in ns.
        core_range: (min, max) latency between different cores, in ns.
        topology: a :class:`TopologyComparison`, or None when the result carries no topology.
        note: why the topology was not compared, when it was not (empty otherwise).
    """

    cpus: tuple
    smt_pairs: list
    smt_latency: object
    levels: list
    core_latency: float
    core_range: tuple
    statistic: str = "median"
    name: str = ""
    topology: object = None
    note: str = ""
    _cores: tuple = field(default=(), repr=False)

    @property
    def cores(self):
        """Partition of the CPUs into cores (sibling groups and single CPUs), in CPU order."""
        return self._cores

    def order(self):
        """CPU ids ordered group by group (coarsest level first), then core, then thread."""
        return _order(self.cpus, self._cores, self.levels)

    def boundaries(self):
        """``{level index: [start positions]}`` of groups in :meth:`order` (position 0 omitted)."""
        order = self.order()
        pos = {c: i for i, c in enumerate(order)}
        out = {}
        for k, lv in enumerate(self.levels):
            starts = sorted(min(pos[c] for c in g) for g in lv.groups)
            out[k] = [s for s in starts if s > 0]
        return out

    def to_dict(self):
        """Plain, JSON-serialisable fields."""
        return {
            "name": self.name,
            "statistic": self.statistic,
            "cpus": list(self.cpus),
            "smt_pairs": [list(p) for p in self.smt_pairs],
            "smt_latency_ns": self.smt_latency,
            "levels": [lv.to_dict() for lv in self.levels],
            "core_latency_ns": self.core_latency,
            "core_range_ns": list(self.core_range),
            "topology": None if self.topology is None else self.topology.to_dict(),
            "text": str(self),
        }

    def __str__(self):
        n = len(self.cpus)
        threads = _uniform_threads(self._cores)
        parts = []
        if self.levels:
            parts.extend(lv.describe() for lv in self.levels)
        else:
            whole = _group_phrase((tuple(self.cpus),), (len(self._cores),), threads, whole=True)
            between = "cores" if self.smt_pairs else "CPUs"
            if math.isnan(self.core_latency):
                parts.append(f"{whole}, no latency between {between}")
            elif len(self._cores) > 2:
                lo, hi = self.core_range
                spread = f" ({_num(lo)}–{_ns(hi)})" if _num(lo) != _num(hi) else ""
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
        if self.topology is not None:
            text += ". " + self.topology.sentence
        elif self.note:
            text += ". " + self.note
        return text


# -- the analysis ----------------------------------------------------------------------------------
def structure(result, statistic="median", topology=None):
    """Infer SMT siblings and latency groups from a :class:`~corelat._result.LatencyResult`.

    Works on measured results and on imported single-value matrices alike. ``topology`` overrides the
    OS topology to compare with: a ``Topology`` (anything with ``.records()``), a list of its records, or
    None to use ``result.metadata["topology"]`` when present.
    """
    cpus = tuple(result.cpus)
    d = _symmetric(result.statistic(statistic))
    n = len(cpus)

    smt_groups = _smt_groups(d)
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

    levels = _levels(d, core_idx, core_of)

    to_ids = lambda gs: tuple(tuple(cpus[i] for i in g) for g in gs)
    cores_ids = to_ids(core_idx)
    threads = _uniform_threads(core_idx) if smt_groups else None
    level_objs = [
        Level(groups=to_ids(part), within=within, across=across,
              cores=tuple(len({core_of[i] for i in g}) for g in part), threads=threads)
        for part, within, across in levels
    ]

    st = Structure(
        cpus=cpus,
        smt_pairs=[tuple(cpus[i] for i in sorted(g)) for g in sorted(smt_groups, key=min)],
        smt_latency=smt_latency,
        levels=level_objs,
        core_latency=core_latency,
        core_range=core_range,
        statistic=statistic,
        name=result.name,
        _cores=cores_ids,
    )
    records, note = _topology_records(result, topology)
    if records is not None:
        object.__setattr__(st, "topology", compare_topology(st, records))
    elif note:
        object.__setattr__(st, "note", note)
    return st


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


def _levels(d, core_idx, core_of):
    """[(partition as index tuples, within, across)] finest to coarsest, only well-supported cuts."""
    m = len(core_idx)
    if m < 3:
        return []
    # Distances between cores: median over their CPU pairs. Missing pairs take the overall median so
    # the tree can still be built; they do not enter the within/across statistics.
    cd = np.full((m, m), np.nan)
    for a in range(m):
        for b in range(a + 1, m):
            block = d[np.ix_(core_idx[a], core_idx[b])]
            v = block[~np.isnan(block)]
            cd[a, b] = cd[b, a] = np.median(v) if v.size else np.nan
    valid = cd[np.triu(np.ones((m, m), dtype=bool), 1)]
    valid = valid[~np.isnan(valid)]
    if valid.size == 0 or valid.min() <= 0:
        return []
    cd = np.where(np.isnan(cd), np.median(valid), cd)
    np.fill_diagonal(cd, 0.0)

    # scipy's hierarchical clustering: a well-tested, O(m^2) implementation of average linkage with
    # a documented, monotone merge order; a hand-written one would be slower at 192+ cores and a
    # place for subtle bugs (ties, inversions), and scipy is already a dependency.
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    z = linkage(squareform(cd, checks=False), method="average")
    heights = z[:, 2]
    n = d.shape[0]
    same_core = core_of[:, None] == core_of[None, :]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    pair_ok = upper & ~same_core & ~np.isnan(d)

    # Candidate cuts: every clear gap between consecutive merge heights (CPU labels per cut).
    cuts = []
    for k in range(m - 2):
        lo, hi = heights[k], heights[k + 1]
        if lo > 0 and hi / lo >= GAP_RATIO:
            labels_core = fcluster(z, t=math.sqrt(lo * hi), criterion="distance")
            if 2 <= labels_core.max() < m:
                cuts.append(labels_core)

    accepted = []
    prev = core_of  # CPU -> group id at the previous accepted level (cores at first)
    for k, labels_core in enumerate(cuts):
        sizes = np.bincount(labels_core)[1:]
        if sizes[sizes >= 2].sum() < LEVEL_COVERAGE * m:
            continue
        lab = labels_core[core_of]
        same = lab[:, None] == lab[None, :]
        # Validate on the pairs this cut decides: within = same group but different groups one
        # level finer; across = different groups that the next candidate cut joins (all
        # different groups at the last one), so a coarser level cannot vouch for a noisy finer one.
        w = d[pair_ok & same & (prev[:, None] != prev[None, :])]
        across = pair_ok & ~same
        if k + 1 < len(cuts):
            nxt = cuts[k + 1][core_of]
            across &= nxt[:, None] == nxt[None, :]
        a = d[across]
        if w.size == 0 or a.size == 0:
            continue
        few = min(w.size, a.size) < LEVEL_FEW_PAIRS
        if np.median(a) < (LEVEL_RATIO_FEW if few else LEVEL_RATIO) * np.median(w):
            continue
        if np.quantile(w, 1 - LEVEL_OVERLAP_Q) >= np.quantile(a, LEVEL_OVERLAP_Q):
            continue
        accepted.append(lab)
        prev = lab

    out = []
    for k, lab in enumerate(accepted):
        same = lab[:, None] == lab[None, :]
        within = d[pair_ok & same]
        if k + 1 < len(accepted):
            nxt = accepted[k + 1]
            across = d[pair_ok & ~same & (nxt[:, None] == nxt[None, :])]
        else:
            across = d[pair_ok & ~same]
        part = [tuple(np.flatnonzero(lab == g)) for g in np.unique(lab)]
        part.sort(key=lambda g: g[0])
        out.append(([tuple(int(i) for i in g) for g in part],
                    float(np.median(within)) if within.size else math.nan,
                    float(np.median(across)) if across.size else math.nan))
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
        from ._topology import Topology
    except ImportError:
        return None, "The result carries an OS topology, but this corelat cannot read it (no corelat.topology)."
    try:
        from ._result import thaw

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
    for key, label in TOPOLOGY_KEYS:
        part = _partition(records, key, cpus)
        if part is None or part == whole:
            continue  # unknown, or one group for all measured CPUs: nothing to compare
        k = next((i for i, lp in enumerate(lat_parts) if lp == part), None)
        count = len(part)
        if k is not None:
            matches[key] = k
            used.add(k)
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
    sentences = []
    for k, what in sorted(per_level.items()):
        who = "latency groups" if len(lat_parts) == 1 else f"latency level {k + 1}"
        sentences.append(f"{who} match the OS's {_join(what)}")
    unmatched = tuple(k for k in range(len(lat_parts)) if k not in used)
    for k in unmatched:
        who = "latency groups" if len(lat_parts) == 1 else f"latency level {k + 1}"
        sentences.append(f"{who} ({len(lat_parts[k])}) match no L3 cache, NUMA node or package grouping")
    # SMT siblings against the OS's cores.
    core_part = _partition(records, "core", cpus)
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
