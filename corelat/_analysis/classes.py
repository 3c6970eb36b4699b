"""Pair classes of one machine: which pairs of CPUs a fleet report compares with each other.

From the OS topology: SMT siblings, same L2 (different cores), same L3 (different L2), across L3
in one package, across packages. Where a result carries no topology (another tool's file), from the
latency structure of the group's median matrix: SMT siblings, within the groups of each level,
across the coarsest groups (or simply "between cores" when the matrix shows no grouping).

A classification is an ``(n, n)`` int8 array of indices into a tuple of class names (-1 on the
diagonal and where the class is unknown).
"""

import numpy as np

from corelat._analysis.structure import structure
from corelat._results.latency import LatencyResult

#: Topology classes, finest first.
TOPOLOGY_CLASSES = ("smt", "l2", "l3", "package", "packages")


def _labels(values):
    """Integer labels for group values; an unknown (None) value is a group of its own."""
    ids = {}
    return np.array([ids.setdefault(v, len(ids)) if v is not None else -1 - i for i, v in enumerate(values)])


_CACHE: dict = {}
_CACHE_SIZE = 32


def from_topology(records, cpus):
    """(codes, TOPOLOGY_CLASSES) from the topology's per-CPU records, or None where they do not say
    which package every CPU is in. The nodes of a fleet share their topology: answers are cached."""
    key = (tuple(cpus), tuple((r.get("cpu"), r.get("package"), r.get("l3"), r.get("l2"), r.get("core"))
                              for r in records))
    got = _CACHE.get(key, False)  # readers run on threads: one lookup, no check-then-get
    if got is False:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        got = _CACHE[key] = _from_topology(records, cpus)
    return None if got is None else (got[0].copy(), got[1])


def _from_topology(records, cpus):
    by_cpu = {r.get("cpu"): r for r in records}
    rows = [by_cpu.get(c) for c in cpus]
    if not rows or any(r is None or r.get("package") is None for r in rows):
        return None
    n = len(cpus)
    codes = np.full((n, n), TOPOLOGY_CLASSES.index("packages"), dtype=np.int8)
    # Coarse to fine: each finer level overrides the pairs it shares.
    for key, name in (("package", "package"), ("l3", "l3"), ("l2", "l2"), ("core", "smt")):
        values = [r.get(key) for r in rows]
        if all(v is None for v in values):
            continue
        lab = _labels(values)
        codes[lab[:, None] == lab[None, :]] = TOPOLOGY_CLASSES.index(name)
    np.fill_diagonal(codes, -1)
    return codes, TOPOLOGY_CLASSES


def from_structure(median, cpus):
    """(codes, names) from the latency structure of a median matrix (positions as ``cpus``)."""

    st = structure(LatencyResult.from_matrix(median, cpus))
    pos = {c: i for i, c in enumerate(cpus)}
    n = len(cpus)

    def part_labels(groups):
        lab = np.arange(n)
        for k, g in enumerate(groups):
            lab[[pos[c] for c in g]] = n + k
        return lab

    names = ["smt"] + [f"within{k + 1}" for k in range(len(st.levels))]
    names.append("across" if st.levels else "cores")
    codes = np.full((n, n), len(names) - 1, dtype=np.int8)
    for k in reversed(range(len(st.levels))):
        lv = st.levels[k]
        # A level may refine only part of the machine (the E-core clusters of a hybrid part, not
        # its P-cores): pairs in a group it leaves whole keep the coarser level's class.
        lab = part_labels([g for g, sp in zip(lv.groups, lv.split or [True] * len(lv.groups)) if sp])
        codes[lab[:, None] == lab[None, :]] = k + 1
    lab = part_labels(st.cores)
    codes[lab[:, None] == lab[None, :]] = 0
    np.fill_diagonal(codes, -1)
    return codes, tuple(names)


def index(codes, names):
    """[(class, flat indices of its cells)] for :func:`class_medians` (computed once per group)."""
    flat = codes.ravel()
    return [(name, np.flatnonzero(flat == k)) for k, name in enumerate(names)]


def class_medians(median, idx):
    """{class: median latency over its pairs} (NaN for a class with no measured pair)."""
    flat = np.asarray(median).ravel()
    out = {}
    for name, cells in idx:
        v = flat[cells]
        v = v[~np.isnan(v)]
        out[name] = float(np.median(v)) if v.size else float("nan")
    return out


def present(codes, names):
    """The class names that have at least one pair in ``codes``, in order."""
    have = set(np.unique(codes[codes >= 0]).tolist())
    return tuple(name for k, name in enumerate(names) if k in have)
