"""Reading a machine's CPU topology out of sysfs files: parsing their text, a reader that collects
problems instead of raising, grouping CPUs by the sets sysfs lists, and the rows
:func:`~corelat._system.topology.topology` makes a :class:`~corelat._system.topology.Topology` from.
"""

from __future__ import annotations

import os
import re

from corelat._core import files as _files
from corelat._core.errors import InputFileNotFoundError
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo

_CPU_DIR = os.path.join("sys", "devices", "system", "cpu")
_NODE_DIR = os.path.join("sys", "devices", "system", "node")
_CPU_NAME = re.compile(r"cpu(\d+)\Z")
_NODE_NAME = re.compile(r"node(\d+)\Z")
_INDEX_NAME = re.compile(r"index(\d+)\Z")
_HEX_WORD = re.compile(r"[0-9a-fA-F]+\Z")
_MAX_CPU = 1 << 22  # far above any kernel's NR_CPUS; larger ids mean a corrupt file
# CPU ids that the parsed lists a reader shares may hold in all: many CPUs list the same set (the
# package's, the L3's), and a 4,096-CPU machine's per-CPU copies of them were 750 MB. Far above the few
# times the CPU count that a real machine's distinct lists hold.
_SHARED_IDS = 1 << 18
# Hybrid x86 parts list their P- and E-cores as two PMUs, each with the CPUs it covers.
_CORE_TYPES = (("core", os.path.join("sys", "devices", "cpu_core", "cpus")),
               ("atom", os.path.join("sys", "devices", "cpu_atom", "cpus")))


# --------------------------------------------------------------------------------------------
# Parsing sysfs text


def _clean(text):
    """Strip the whitespace and trailing NUL bytes that sysfs files may carry."""
    return text.strip(" \t\r\n\0")


def _parse_int(text):
    """Parse a decimal id such as ``"3"`` or ``"-1"``; raise ValueError if malformed."""
    text = _clean(text)
    if not re.fullmatch(r"-?\d+", text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def _parse_cpulist(text):
    """Parse a sysfs CPU list such as ``"0-3,8,10-11"`` (``""`` is the empty set)."""
    return frozenset(_cpulist.parse(_clean(text), empty=True, max_cpu=_MAX_CPU))


def _parse_cpumask(text):
    """Parse a hex CPU mask such as ``"00000000,0000ff00"`` (32-bit words, most significant first)."""
    text = _clean(text)
    words = text.split(",")
    if not text or not all(_HEX_WORD.match(w) for w in words):
        raise ValueError(f"bad CPU mask {text!r}")
    digits = "".join(words).lstrip("0")
    if len(digits) * 4 > _MAX_CPU:
        raise ValueError("CPU mask too long")
    value = int(digits or "0", 16)
    bits = bin(value)[:1:-1]  # least significant bit first
    return frozenset(i for i, b in enumerate(bits) if b == "1")


class _Reader:
    """Reads sysfs files below a root, collecting warnings instead of raising."""

    def __init__(self, root):
        self.root = root
        self.problems = []
        # (parse, text) -> parsed value: CPUs that list the same text share one set (within
        # _SHARED_IDS), which _Grouping then joins in one step.
        self._shared = {}
        self._shared_ids = 0

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def problem(self, path, what):
        self.problems.append(f"{path}: {what}; treating it as unknown")

    def text(self, path):
        """The file's text; None if absent (silently) or unreadable (with a warning)."""
        try:
            # Bounded and regular files only: a dump's file linked to /dev/zero or a FIFO is refused.
            data = _files.read_bytes(path, _files.MAX_SYSFS_BYTES)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self.problem(path, f"cannot read ({exc.strerror or exc})")
            return None
        try:
            return data.decode("ascii")
        except UnicodeDecodeError:
            self.problem(path, "not ASCII text")
            return None

    def parsed(self, path, parse):
        text = self.text(path)
        if text is None:
            return None
        key = (parse, text)
        if key in self._shared:
            return self._shared[key]
        try:
            value = parse(text)
        except ValueError as exc:
            self.problem(path, f"malformed ({exc})")
            return None
        size = len(value) if isinstance(value, frozenset) else 1
        if self._shared_ids + size <= _SHARED_IDS:
            self._shared[key] = value
            self._shared_ids += size
        return value

    def int(self, *parts):
        return self.parsed(self.path(*parts), _parse_int)

    def word(self, *parts):
        text = self.text(self.path(*parts))
        return None if text is None else _clean(text)

    def cpuset(self, folder, list_name, mask_name):
        """A CPU set from ``list_name``, else from the hex ``mask_name``; None if neither reads."""
        cpus = self.parsed(os.path.join(folder, list_name), _parse_cpulist)
        if cpus is None and mask_name:
            cpus = self.parsed(os.path.join(folder, mask_name), _parse_cpumask)
        return cpus

    def listdir(self, path):
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self.problem(path, f"cannot list ({exc.strerror or exc})")
            return None

    @staticmethod
    def numbered(names, pattern):
        """``{number: name}`` for the names matching ``pattern`` (e.g. cpu12 -> 12)."""
        out = {}
        for name in names or ():
            m = pattern.match(name)
            if m:
                out[int(m.group(1))] = name
        return out


# --------------------------------------------------------------------------------------------
# Grouping


class _UnionFind:
    def __init__(self, items):
        self.parent = {x: x for x in items}

    def find(self, x):
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra  # the root stays the smallest member


class _Grouping:
    """CPUs grouped by the sets of CPUs sysfs says share a resource with each, joined as each CPU's
    set is read and then dropped: keeping every CPU's set costs the CPU count squared (a 4,096-CPU
    machine's CPUs each list the 2,048 of their package or L3). A set the reader shares between CPUs
    (the same text) is walked once; the next CPUs that list it join the first one."""

    def __init__(self, cpus):
        self._uf = _UnionFind(cpus)
        self._known = set()
        self.listed = set()  # the CPUs whose own file gave a set
        self._walked = {}  # id(set) -> (set, the CPU that listed it first); bounded as _Reader's
        self._walked_ids = 0

    def add(self, cpu, members):
        """Join ``cpu`` with ``members`` (a set of CPU ids, or None: nothing said)."""
        if members is None:
            return
        uf, known = self._uf, self._known
        self.listed.add(cpu)
        known.add(cpu)
        walked = self._walked.get(id(members))
        if walked is not None and walked[0] is members:
            uf.union(cpu, walked[1])
            return
        for other in members:
            if other in uf.parent:
                known.add(other)
                uf.union(cpu, other)
        if self._walked_ids + len(members) <= _SHARED_IDS:
            self._walked[id(members)] = (members, cpu)
            self._walked_ids += len(members)

    def labels(self, keys=None):
        """``{cpu: smallest CPU of its group}``; ``keys`` optionally maps CPUs without a set to a
        hashable identity. CPUs known to nobody get None."""
        uf, known = self._uf, self._known
        if keys:
            first = {}
            for cpu in uf.parent:
                key = keys.get(cpu)
                if key is None or cpu in self.listed:
                    continue
                known.add(cpu)
                if key in first:
                    uf.union(first[key], cpu)
                else:
                    first[key] = cpu
        return {cpu: (uf.find(cpu) if cpu in known else None) for cpu in uf.parent}


def _caches(reader, cpu_dir):
    """``[(level, type, folder)]`` for the CPU's ``cache/indexK`` folders."""
    cache_dir = os.path.join(cpu_dir, "cache")
    out = []
    for _, name in sorted(reader.numbered(reader.listdir(cache_dir), _INDEX_NAME).items()):
        index_dir = os.path.join(cache_dir, name)
        level = reader.parsed(os.path.join(index_dir, "level"), _parse_int)
        if level in (2, 3):
            out.append((level, reader.word(index_dir, "type"), index_dir))
    return out


def _pick_cache(caches, level, types):
    """The folder of the cache of ``level`` whose type comes first in ``types``.

    Caches are chosen by their ``level`` and ``type`` files, never by index number. ``None`` in
    ``types`` stands for any other type (ranked after the named ones).
    """
    best = None
    for cache_level, kind, index_dir in caches:
        if cache_level != level:
            continue
        if kind in types:
            rank = types.index(kind)
        elif None in types:
            rank = len(types)
        else:
            continue
        if best is None or rank < best[0]:
            best = (rank, index_dir)
    return None if best is None else best[1]


# --------------------------------------------------------------------------------------------
# Reading


def _read_online(reader, cpu_root, cpu_names):
    online = reader.parsed(os.path.join(cpu_root, "online"), _parse_cpulist)
    if online is not None:
        return set(online)
    online = set()
    for cpu, name in cpu_names.items():
        state = reader.parsed(os.path.join(cpu_root, name, "online"), _parse_int)
        if state != 0:  # no file: not hot-pluggable (often cpu0), so online
            online.add(cpu)
    return online


def _read_nodes(reader, cpus, cpu_root, cpu_names):
    """``{cpu: tuple of node ids}`` for each online CPU (empty tuple: unknown)."""
    node_root = reader.path(_NODE_DIR)
    if not os.path.isdir(node_root):
        return {cpu: (0,) for cpu in cpus}  # a kernel without NUMA support: one node
    nodes = {cpu: [] for cpu in cpus}
    for node, name in sorted(reader.numbered(reader.listdir(node_root), _NODE_NAME).items()):
        members = reader.cpuset(os.path.join(node_root, name), "cpulist", "cpumap")
        for cpu in members or ():
            if cpu in nodes:  # node lists may include offline CPUs
                nodes[cpu].append(node)
    for cpu in cpus:
        if not nodes[cpu] and cpu in cpu_names:
            # Not in any node folder (e.g. its node is offline): the cpuN/nodeM link still says
            # which node the kernel assigns it to.
            links = reader.numbered(reader.listdir(os.path.join(cpu_root, cpu_names[cpu])), _NODE_NAME)
            nodes[cpu] = sorted(links)
    return {cpu: tuple(v) for cpu, v in nodes.items()}


def _list_cpus(reader, live):
    """``(cpu_root, {cpu: folder name} or None, online CPU ids)``; None: no cpu folder at all."""
    cpu_root = reader.path(_CPU_DIR)
    names = reader.listdir(cpu_root)
    if names is None:
        if not live:
            raise InputFileNotFoundError(f"{cpu_root} not found: is the root a Linux sysfs dump?")
        reader.problems.append(f"{cpu_root} not found; CPU topology unknown")
        return cpu_root, None, set(range(_sysinfo.cpu_count() or 1))
    cpu_names = reader.numbered(names, _CPU_NAME)
    return cpu_root, cpu_names, _read_online(reader, cpu_root, cpu_names)


def _read_package_set(reader, topo):
    """The package's CPU set from the lists, for CPUs whose package id is missing or invalid."""
    members = reader.cpuset(topo, "package_cpus_list", "package_cpus")
    if members is None:
        members = reader.cpuset(topo, "core_siblings_list", "core_siblings")
    return members


#: The levels grouped by the CPU sets that sysfs lists (see :func:`_read_cpu`).
_SET_LEVELS = ("package", "core", "cluster", "l2", "l3")


def _read_cpu(reader, cpu_dir, cpu, groups):
    """The raw sysfs ids of one CPU folder, as a dict (None where a file is missing); the CPU sets
    it lists go straight into ``groups`` (``{level: _Grouping}``), not into the dict."""
    topo = os.path.join(cpu_dir, "topology")
    info = {
        "package_id": reader.int(topo, "physical_package_id"),
        "die_id": reader.int(topo, "die_id"),
        "core_id": reader.int(topo, "core_id"),
    }
    core_set = reader.cpuset(topo, "core_cpus_list", "core_cpus")
    if core_set is None:
        core_set = reader.cpuset(topo, "thread_siblings_list", "thread_siblings")
    groups["core"].add(cpu, core_set)
    groups["cluster"].add(cpu, reader.cpuset(topo, "cluster_cpus_list", "cluster_cpus"))
    # Arm big.LITTLE (and some x86) give each CPU a relative capacity; 1024 is the largest.
    info["capacity"] = reader.int(cpu_dir, "cpu_capacity")
    if info["package_id"] is None or info["package_id"] < 0:
        groups["package"].add(cpu, _read_package_set(reader, topo))
    caches = _caches(reader, cpu_dir)
    for key, level, types in (("l2", 2, ("Unified", "Data")), ("l3", 3, ("Unified", None))):
        index_dir = _pick_cache(caches, level, types)
        if index_dir is not None:
            groups[key].add(cpu, reader.cpuset(index_dir, "shared_cpu_list", "shared_cpu_map"))
    return info


def _read_core_types(reader):
    """``{cpu: core type}`` from the hybrid-CPU lists (Intel P/E cores); empty when there are none."""
    core_type = {}
    for kind, rel in _CORE_TYPES:
        for cpu in reader.parsed(reader.path(rel), _parse_cpulist) or ():
            core_type[cpu] = kind
    return core_type


def _packages(cpus, ids, grouping):
    """``{cpu: package}``: sysfs ids when every CPU that says anything gives a valid one, else
    group by the package lists (``grouping``, of the CPUs without a valid id)."""
    informed = [c for c in cpus if ids[c] is not None or c in grouping.listed]
    if all(ids[c] is not None and ids[c] >= 0 for c in informed):
        return ids
    valid = {c: ids[c] for c in cpus if ids[c] is not None and ids[c] >= 0}
    groups = grouping.labels(valid)
    rank = {g: i for i, g in enumerate(sorted({g for g in groups.values() if g is not None}))}
    return {c: (None if g is None else rank[g]) for c, g in groups.items()}


def _non_negative(values):
    """The same mapping with negative ids (sysfs's "unknown") turned into None."""
    return {c: (v if v is not None and v >= 0 else None) for c, v in values.items()}


def _core_members(cpus, core):
    """``{core: [cpu, ...]}`` in CPU order, the SMT siblings of each core."""
    members = {}
    for cpu in cpus:
        if core[cpu] is not None:
            members.setdefault(core[cpu], []).append(cpu)
    return members


def _read(reader, live):
    """Read everything; returns (rows, offline CPU ids)."""
    cpu_root, cpu_names, online = _list_cpus(reader, live)
    found = cpu_names is not None
    cpu_names = cpu_names or {}
    cpus = sorted(online)
    offline = tuple(sorted(set(cpu_names) - online))
    groups = {level: _Grouping(cpus) for level in _SET_LEVELS}
    raw = {
        cpu: _read_cpu(reader, os.path.join(cpu_root, cpu_names[cpu]), cpu, groups) if cpu in cpu_names
        else {}
        for cpu in cpus
    }

    def field(name):
        return {cpu: raw[cpu].get(name) for cpu in cpus}

    core_type = _read_core_types(reader)
    package = _packages(cpus, field("package_id"), groups["package"])
    die = _non_negative(field("die_id"))
    core_id = _non_negative(field("core_id"))
    core_keys = {
        c: (package[c], die[c], core_id[c]) for c in cpus if package[c] is not None and core_id[c] is not None
    }
    core = groups["core"].labels(core_keys)
    cluster = groups["cluster"].labels()
    l2 = groups["l2"].labels()
    l3 = groups["l3"].labels()
    nodes = _read_nodes(reader, cpus, cpu_root, cpu_names) if found else {}
    members = _core_members(cpus, core)
    allowed = set(os.sched_getaffinity(0)) if live and hasattr(os, "sched_getaffinity") else online

    rows = []
    for cpu in cpus:
        siblings = tuple(members[core[cpu]]) if core[cpu] is not None else None
        node_ids = nodes.get(cpu, ())
        rows.append(
            {
                "cpu": cpu,
                "package": package[cpu],
                "die": die[cpu],
                "cluster": cluster[cpu],
                "core": core[cpu],
                "core_id": core_id[cpu],
                "l2": l2[cpu],
                "l3": l3[cpu],
                "node": node_ids[0] if node_ids else None,
                "nodes": node_ids,
                "siblings": siblings,
                "thread": siblings.index(cpu) if siblings else None,
                "allowed": cpu in allowed,
                "core_type": core_type.get(cpu),
                "capacity": raw[cpu].get("capacity"),
            }
        )
    return rows, offline
