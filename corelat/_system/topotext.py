"""The text of a :class:`~corelat._system.topology.Topology`: its one-line headline and its tree.

The functions take the topology's per-CPU rows (see :mod:`corelat._system.sysfs`), so the value
class keeps what it holds and this module what it prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from corelat._system import cpulist as _cpulist

Row = Mapping[str, Any]  # one CPU of a topology (see corelat._system.sysfs)
Rows = Sequence[Row]


def plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _label(value):
    return "?" if value is None else value


# --------------------------------------------------------------------------------------------
# The headline


def _cores(rows: Rows) -> dict[Any, list[int]]:
    """``{core: [cpu, ...]}`` for the CPUs whose core is known."""
    cores: dict[Any, list[int]] = {}
    for r in rows:
        if r["core"] is not None:
            cores.setdefault(r["core"], []).append(r["cpu"])
    return cores


def _package_cores(rows: Rows) -> dict[Any, set[Any]]:
    """``{package: {core, ...}}`` for the CPUs whose package is known (a package may list no core)."""
    packages: dict[Any, set[Any]] = {}
    for r in rows:
        if r["package"] is not None:
            packages.setdefault(r["package"], set())
            if r["core"] is not None:
                packages[r["package"]].add(r["core"])
    return packages


def _uniform_shape(rows, packages, cores):
    """``"2 packages × 8 cores × 2 threads"`` when every CPU's package and core are known and all
    packages and cores look alike; None otherwise."""
    threads = {len(c) for c in cores.values()}
    per_package = {len(c) for c in packages.values()}
    complete = all(r["package"] is not None and r["core"] is not None for r in rows)
    if not (rows and complete and len(threads) == 1 and len(per_package) == 1):
        return None
    (t,) = threads
    (c,) = per_package
    return f"{plural(len(packages), 'package')} × {plural(c, 'core')} × {plural(t, 'thread')}"


def _cores_text(cores: dict[Any, list[int]]) -> str:
    """``"14 cores × 2 threads"``, or on a heterogeneous machine ``"14 cores (6 with 2 threads)"``."""
    counts: dict[int, int] = {}
    for members in cores.values():
        counts[len(members)] = counts.get(len(members), 0) + 1
    text = plural(len(cores), "core")
    if len(counts) == 1:
        (t,) = counts
        return text + f" × {plural(t, 'thread')}"
    detail = ", ".join(f"{n} with {plural(t, 'thread')}" for t, n in sorted(counts.items()) if t > 1)
    return text + f" ({detail})"


def _shape(rows: Rows) -> list[str]:
    """The first parts of the headline: packages, cores and threads (and CPUs when they differ)."""
    packages, cores = _package_cores(rows), _cores(rows)
    uniform = _uniform_shape(rows, packages, cores)
    if uniform is not None:
        return [uniform]
    parts = [plural(len(packages), "package") if packages else "packages unknown"]
    if cores:
        parts.append(_cores_text(cores))
    parts.append(plural(len(rows), "CPU"))
    return parts


def _caches_and_limits(rows: Rows, offline: Sequence[int]) -> list[str]:
    """The last parts of the headline: NUMA nodes, L3 groups, offline CPUs, a restricted affinity."""
    node_ids = {r["node"] for r in rows if r["node"] is not None}
    parts = [plural(len(node_ids), "NUMA node") if node_ids else "NUMA nodes unknown"]
    l3s = {r["l3"] for r in rows if r["l3"] is not None}
    parts.append(f"{len(l3s)} L3" if l3s else "no L3 known")
    if offline:
        parts.append(f"{len(offline)} offline")
    allowed = sum(1 for r in rows if r["allowed"])
    if allowed != len(rows):
        parts.append(f"{allowed} of {len(rows)} CPUs allowed")
    return parts


def headline(rows: Rows, offline: Sequence[int]) -> str:
    """One line describing the machine (see ``Topology.headline``)."""
    return ", ".join(_shape(rows) + _caches_and_limits(rows, offline))


# --------------------------------------------------------------------------------------------
# The tree


def _cache_groups(rows: Rows) -> tuple[dict[str, dict[Any, list[int]]], set[Any]]:
    """``({"l2": {l2: cpus}, "l3": {l3: cpus}}, {L2 groups shared by more than one core})``."""
    members: dict[str, dict[Any, list[int]]] = {"l2": {}, "l3": {}}
    l2_cores: dict[Any, set[Any]] = {}
    for r in rows:
        for level, groups in members.items():
            if r[level] is not None:
                groups.setdefault(r[level], []).append(r["cpu"])
        if r["l2"] is not None and r["core"] is not None:
            l2_cores.setdefault(r["l2"], set()).add(r["core"])
    return members, {l2 for l2, cores in l2_cores.items() if len(cores) > 1}


def _new_levels(path, previous):
    """For each level of ``path`` (package, node, L3, shared L2, core), whether the tree opens a
    new branch there: that level or one above it differs from the previous CPU's. A CPU with no
    shared L2 shows no L2 line, so that level opens nothing and passes nothing down."""
    changed = previous is None
    new = []
    for level, value in enumerate(path):
        if level == 3 and value is None:
            new.append(False)
            continue
        changed = changed or value != previous[level]
        new.append(changed)
    return new


def _cpu_lines(r, path, previous, members, by_cpu):
    """The lines the tree gains at one CPU: the branches it opens, and its core when that is new."""
    new = _new_levels(path, previous)
    lines = []
    if new[0]:
        lines.append(f"  package {_label(r['package'])}")
    if new[1]:
        lines.append(f"    NUMA node {_label(r['node'])}")
    if new[2]:
        cpus = _cpulist.format(members["l3"][r["l3"]]) if r["l3"] is not None else "?"
        lines.append(f"      L3 (CPUs {cpus})")
    indent = "        "
    if path[3] is not None:
        if new[3]:
            lines.append(f"{indent}L2 (CPUs {_cpulist.format(members['l2'][path[3]])})")
        indent += "  "
    if new[4]:
        siblings = r["siblings"] or (r["cpu"],)
        shown = ", ".join(str(c) if by_cpu[c]["allowed"] else f"({c})" for c in siblings)
        lines.append(f"{indent}core {_label(r['core_id'])}: CPU {shown}")
    return lines


def tree(rows: Rows, by_cpu: Mapping[int, Row], ordered: Sequence[int]) -> list[str]:
    """The indented tree of the CPUs in ``ordered``: package, NUMA node, L3, (shared L2,) core."""
    members, shared_l2s = _cache_groups(rows)
    lines = []
    previous: Any = None
    for cpu in ordered:
        r = by_cpu[cpu]
        shared_l2 = r["l2"] if r["l2"] in shared_l2s else None
        core = r["core"] if r["core"] is not None else -1 - cpu  # unknown: a core of its own
        path = (r["package"], r["node"], r["l3"], shared_l2, core)
        lines.extend(_cpu_lines(r, path, previous, members, by_cpu))
        previous = path
    return lines
