"""CPU topology of a Linux machine, read from sysfs.

``topology()`` reads ``/sys/devices/system/cpu`` and ``/sys/devices/system/node`` below a root
folder (``"/"`` for the running system, or an unpacked dump of another machine) and returns a
``Topology``: for every online logical CPU its package, die, cluster, core, L2 and L3 cache groups,
NUMA node and SMT siblings, and whether this process may run on it.

Only the standard library is used and nothing needs root privileges. Files that are missing (old
kernels, offline CPUs) simply leave the field ``None``; files that are present but unreadable or
malformed do the same and raise a ``TopologyWarning``. The reader never guesses: a field it cannot
read is ``None``.

Group labels
------------
Fields that name a group are labels: what matters is which CPUs share a value.

* ``package``: the sysfs ``physical_package_id``; where the kernel reports ``-1`` (POWER, some VMs)
  packages are taken from ``package_cpus_list``/``core_siblings_list`` and numbered 0, 1, ... in
  the order of their smallest CPU.
* ``node``: the sysfs NUMA node id (``nodeN``); every CPU is node 0 when the dump or system has no
  ``node/`` folder at all.
* ``core``, ``cluster``, ``l2``, ``l3``: the smallest online CPU of the group.
* ``die``: the sysfs ``die_id`` (unique within its package only).
"""

from __future__ import annotations

import operator
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from corelat._core import files as _files
from corelat._core.errors import InputError, InputFileNotFoundError, InputTypeError
from corelat._core.protocol import SavedResult, from_file, jsonable
from corelat._core.types import Path
from corelat._system import cpulist as _cpulist
from corelat._system import sysinfo as _sysinfo

__all__ = ["Topology", "TopologyWarning", "topology"]

_CPU_DIR = os.path.join("sys", "devices", "system", "cpu")
_NODE_DIR = os.path.join("sys", "devices", "system", "node")
_CPU_NAME = re.compile(r"cpu(\d+)\Z")
_NODE_NAME = re.compile(r"node(\d+)\Z")
_INDEX_NAME = re.compile(r"index(\d+)\Z")
_HEX_WORD = re.compile(r"[0-9a-fA-F]+\Z")
_MAX_CPU = 1 << 22  # far above any kernel's NR_CPUS; larger ids mean a corrupt file
_MAX_WARNINGS = 20  # per topology() call; the rest are summarised in one warning
_FORMAT = "corelat.topology"
_VERSION = 1
_ROW_KEYS = (
    "cpu",
    "package",
    "die",
    "cluster",
    "core",
    "core_id",
    "l2",
    "l3",
    "node",
    "nodes",
    "siblings",
    "thread",
    "allowed",
    "core_type",
    "capacity",
)
# Hybrid x86 parts list their P- and E-cores as two PMUs, each with the CPUs it covers.
_CORE_TYPES = (("core", os.path.join("sys", "devices", "cpu_core", "cpus")),
               ("atom", os.path.join("sys", "devices", "cpu_atom", "cpus")))
_LEVELS = ("package", "node", "l3", "core")


class TopologyWarning(UserWarning):
    """A sysfs file was present but could not be read or parsed; its field is ``None``.

    A :class:`UserWarning`; the same text is in the topology's ``warnings``.

    Examples
    --------
    >>> import warnings, corelat
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", corelat.TopologyWarning)  # make unreadable files fatal
    ...     topo = corelat.topology()  # doctest: +SKIP
    """


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
        try:
            return parse(text)
        except ValueError as exc:
            self.problem(path, f"malformed ({exc})")
            return None

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


def _group_by_sets(cpus, sets, keys=None):
    """Label each CPU with the smallest CPU of its group.

    ``sets`` maps a CPU to the set of CPUs sysfs says share the resource with it (or None);
    ``keys`` optionally maps CPUs without a set to a hashable identity. CPUs known to nobody get
    None.
    """
    uf = _UnionFind(cpus)
    known = set()
    for cpu in cpus:
        members = sets.get(cpu)
        if members is None:
            continue
        known.add(cpu)
        for other in members:
            if other in uf.parent:
                known.add(other)
                uf.union(cpu, other)
    if keys:
        first = {}
        for cpu in cpus:
            key = keys.get(cpu)
            if key is None or sets.get(cpu) is not None:
                continue
            known.add(cpu)
            if key in first:
                uf.union(first[key], cpu)
            else:
                first[key] = cpu
    return {cpu: (uf.find(cpu) if cpu in known else None) for cpu in cpus}


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


def topology(root: Path = "/") -> Topology:
    """Read the CPU topology of a Linux system from sysfs.

    Parameters
    ----------
    root : str or os.PathLike
        The file-system root holding ``sys/devices/system/cpu``: ``"/"`` (the default) for the
        running system, or the folder of an unpacked sysfs dump.

    Returns
    -------
    Topology
        One record per online CPU. On the running system ``allowed`` is the process's CPU affinity
        (``os.sched_getaffinity(0)``); for a dump every online CPU is allowed.

    Raises
    ------
    FileNotFoundError
        If ``root`` has no ``sys/devices/system/cpu`` folder (on the running system a warning is
        given instead and CPUs ``0 .. os.cpu_count()-1`` are reported without topology).

    Warns
    -----
    TopologyWarning
        For each file that exists but cannot be read or parsed; the field it feeds is ``None``.

    Examples
    --------
    >>> import corelat
    >>> topo = corelat.topology()
    >>> topo.cpus == tuple(sorted(topo.cpus))
    True
    """
    root_str = os.fspath(root) if isinstance(root, (str, bytes, os.PathLike)) else None
    if not isinstance(root_str, str):
        raise InputTypeError(f"root must be a str or path, not {type(root).__name__}")
    live = os.path.realpath(root_str) == os.path.realpath(os.sep)
    reader = _Reader(root_str)
    try:
        rows, offline = _read(reader, live)
    finally:
        problems = reader.problems
        for message in problems[:_MAX_WARNINGS]:
            warnings.warn(message, TopologyWarning, stacklevel=2)
        if len(problems) > _MAX_WARNINGS:
            warnings.warn(
                f"{len(problems) - _MAX_WARNINGS} more unreadable or malformed sysfs files below {root_str}",
                TopologyWarning,
                stacklevel=2,
            )
    return Topology(rows, root=root_str, offline=offline, problems=problems)


def _read(reader, live):
    """Read everything; returns (rows, offline CPU ids)."""
    cpu_root = reader.path(_CPU_DIR)
    names = reader.listdir(cpu_root)
    if names is None:
        if not live:
            raise InputFileNotFoundError(f"{cpu_root} not found: is the root a Linux sysfs dump?")
        reader.problems.append(f"{cpu_root} not found; CPU topology unknown")
        cpu_names = {}
        online = set(range(os.cpu_count() or 1))
    else:
        cpu_names = reader.numbered(names, _CPU_NAME)
        online = _read_online(reader, cpu_root, cpu_names)
    cpus = sorted(online)
    offline = tuple(sorted(set(cpu_names) - online))

    raw = {}
    for cpu in cpus:
        info = raw[cpu] = {}
        if cpu not in cpu_names:
            continue
        cpu_dir = os.path.join(cpu_root, cpu_names[cpu])
        topo = os.path.join(cpu_dir, "topology")
        info["package_id"] = reader.int(topo, "physical_package_id")
        info["die_id"] = reader.int(topo, "die_id")
        info["core_id"] = reader.int(topo, "core_id")
        info["core_set"] = reader.cpuset(topo, "core_cpus_list", "core_cpus")
        if info["core_set"] is None:
            info["core_set"] = reader.cpuset(topo, "thread_siblings_list", "thread_siblings")
        info["cluster_set"] = reader.cpuset(topo, "cluster_cpus_list", "cluster_cpus")
        # Arm big.LITTLE (and some x86) give each CPU a relative capacity; 1024 is the largest.
        info["capacity"] = reader.int(cpu_dir, "cpu_capacity")
        if info["package_id"] is None or info["package_id"] < 0:
            info["package_set"] = reader.cpuset(topo, "package_cpus_list", "package_cpus")
            if info["package_set"] is None:
                info["package_set"] = reader.cpuset(topo, "core_siblings_list", "core_siblings")
        caches = _caches(reader, cpu_dir)
        for key, level, types in (("l2", 2, ("Unified", "Data")), ("l3", 3, ("Unified", None))):
            index_dir = _pick_cache(caches, level, types)
            if index_dir is not None:
                members = reader.cpuset(index_dir, "shared_cpu_list", "shared_cpu_map")
                info[key] = None if members is None else members | {cpu}

    def field(name):
        return {cpu: raw[cpu].get(name) for cpu in cpus}

    core_type = {}
    for kind, rel in _CORE_TYPES:
        for cpu in reader.parsed(reader.path(rel), _parse_cpulist) or ():
            core_type[cpu] = kind

    # Packages: sysfs ids when every CPU that says anything gives a valid one, else group by lists.
    ids = field("package_id")
    sets = field("package_set")
    informed = [c for c in cpus if ids[c] is not None or sets[c] is not None]
    if all(ids[c] is not None and ids[c] >= 0 for c in informed):
        package = ids
    else:
        valid = {c: ids[c] for c in cpus if ids[c] is not None and ids[c] >= 0}
        groups = _group_by_sets(cpus, sets, valid)
        rank = {g: i for i, g in enumerate(sorted({g for g in groups.values() if g is not None}))}
        package = {c: (None if g is None else rank[g]) for c, g in groups.items()}

    die = {c: (d if d is not None and d >= 0 else None) for c, d in field("die_id").items()}
    core_id = {c: (v if v is not None and v >= 0 else None) for c, v in field("core_id").items()}
    core_keys = {
        c: (package[c], die[c], core_id[c]) for c in cpus if package[c] is not None and core_id[c] is not None
    }
    core = _group_by_sets(cpus, field("core_set"), core_keys)
    cluster = _group_by_sets(cpus, field("cluster_set"))
    l2 = _group_by_sets(cpus, field("l2"))
    l3 = _group_by_sets(cpus, field("l3"))
    nodes = _read_nodes(reader, cpus, cpu_root, cpu_names) if names is not None else {}

    members = {}
    for cpu in cpus:
        if core[cpu] is not None:
            members.setdefault(core[cpu], []).append(cpu)

    if live and hasattr(os, "sched_getaffinity"):
        allowed = set(os.sched_getaffinity(0))
    else:
        allowed = online

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


# --------------------------------------------------------------------------------------------
# The result


def _plural(n, word, plural=None):
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _sort_key(row):
    key = []
    for level in ("package", "node", "l3", "l2", "core"):
        value = row[level]
        key.append((1, 0) if value is None else (0, value))
    key.append(row["cpu"])
    return tuple(key)


class Topology(SavedResult):
    """The CPU topology of one machine: a record per online logical CPU.

    Build one with :func:`corelat.topology` or :meth:`Topology.from_dict`. A ``Topology`` is a
    value: it does not change after construction, compares equal to another with the same
    content, and round-trips through JSON with :meth:`to_dict` / :meth:`from_dict`;
    ``len(topology)`` is the number of online CPUs.

    Parameters
    ----------
    rows : list of dict
        Rows as :meth:`records` gives them.
    root : str
        The folder the rows were read from.
    offline : sequence of int
        Ids of offline CPUs.
    problems : sequence of str
        The files that could not be read or parsed.
    name : str, optional
        A label (default: the host name for ``"/"``, else the folder's name).

    Examples
    --------
    >>> import json, corelat
    >>> topo = corelat.topology()
    >>> len(topo) == len(topo.cpus) > 0
    True
    >>> corelat.Topology.from_dict(json.loads(json.dumps(topo.to_dict()))) == topo
    True
    """

    __slots__ = ("_by_cpu", "_l3_index", "_name", "_offline", "_problems", "_root", "_rows")
    _KIND = "topology"

    def __init__(self, rows, *, root, offline=(), problems=(), name=None):
        # Rows as topology() makes them; users call that or from_dict() instead.
        self._root = str(root)
        self._problems = tuple(str(p) for p in problems)
        if name is None:
            name = _sysinfo.hostname() if os.path.realpath(self._root) == os.path.realpath(os.sep) else \
                os.path.basename(os.path.normpath(self._root)) or self._root
        self._name = str(name)
        self._rows = tuple(dict(r) for r in sorted(rows, key=lambda r: r["cpu"]))
        self._by_cpu = {r["cpu"]: r for r in self._rows}
        if len(self._by_cpu) != len(self._rows):
            raise InputError("duplicate CPU ids in topology rows")
        self._offline = tuple(sorted(offline))
        self._l3_index = {}  # L3 label -> its index in topological order, for describe_cpu
        for r in sorted(self._rows, key=_sort_key):
            if r["l3"] is not None:
                self._l3_index.setdefault(r["l3"], len(self._l3_index))

    # -- basic properties -------------------------------------------------------------------

    @property
    def name(self) -> str:
        """A label: the host name for the running system, the folder's name for a dump."""
        return self._name

    @property
    def metadata(self) -> dict[str, Any]:
        """``root`` and ``warnings`` (the files that could not be read or parsed)."""
        return {"root": self._root, "warnings": self._problems}

    @property
    def root(self) -> str:
        """The root folder the topology was read from (``"/"`` for the running system)."""
        return self._root

    @property
    def cpus(self) -> tuple[int, ...]:
        """Ids of the online logical CPUs, ascending."""
        return tuple(self._by_cpu)

    @property
    def allowed(self) -> tuple[int, ...]:
        """Ids of the online CPUs this process may run on (its affinity), ascending."""
        return tuple(r["cpu"] for r in self._rows if r["allowed"])

    @property
    def offline(self) -> tuple[int, ...]:
        """Ids of CPUs that sysfs lists but that are offline, ascending."""
        return self._offline

    def __len__(self):
        """The number of online CPUs."""
        return len(self._rows)

    def records(self) -> list[dict[str, Any]]:
        """One dict per online CPU, sorted by CPU id.

        Returns
        -------
        list of dict
            Keys ``cpu``, ``package``, ``die``, ``cluster``, ``core``, ``core_id`` (sysfs value),
            ``l2``, ``l3``, ``node`` (None if unknown), ``nodes`` (tuple of all NUMA nodes listing
            the CPU, normally one), ``siblings`` (tuple of the SMT siblings including the CPU
            itself), ``thread`` (index of the CPU among its siblings), ``allowed``, ``core_type``
            and ``capacity``. Group fields are labels; unknown values are None.

        Examples
        --------
        >>> import corelat
        >>> row = corelat.topology().records()[0]
        >>> row["cpu"] in row["siblings"]
        True
        """
        return [dict(r) for r in self._rows]

    def _row(self, cpu):
        if isinstance(cpu, bool):
            raise InputTypeError(f"CPU ids must be integers, got {cpu!r}")
        try:
            cpu = operator.index(cpu)  # int, NumPy integers, ...
        except TypeError:
            raise InputTypeError(f"CPU ids must be integers, got {cpu!r}") from None
        try:
            return self._by_cpu[cpu]
        except KeyError:
            raise InputError(f"CPU {cpu} is not an online CPU of this topology") from None

    def _check_cpus(self, cpus):
        out = [self._row(cpu)["cpu"] for cpu in cpus]
        if len(set(out)) != len(out):
            raise InputError("duplicate CPU ids")
        return out

    # -- derived views ----------------------------------------------------------------------

    def smt_groups(self, cpus: Iterable[int] | None = None) -> list[tuple[int, ...]]:
        """SMT sibling groups among some CPUs.

        Parameters
        ----------
        cpus : iterable of int, optional
            CPU ids (default: all online CPUs).

        Returns
        -------
        list of tuple
            One tuple per core that has at least two of the given CPUs, holding those CPUs in
            ascending order; sorted by first CPU. Empty on a machine without SMT.

        Raises
        ------
        InputError
            For ids that are not online CPUs or appear twice.
        """
        chosen = self.cpus if cpus is None else sorted(self._check_cpus(cpus))
        groups: dict[Any, list[int]] = {}
        for cpu in chosen:
            core = self._by_cpu[cpu]["core"]
            if core is not None:
                groups.setdefault(core, []).append(cpu)
        return sorted(tuple(g) for g in groups.values() if len(g) >= 2)

    def order(self, cpus: Iterable[int]) -> tuple[tuple[int, ...], dict[str, list[int]]]:
        """Sort CPU ids by package, NUMA node, L3, core and thread.

        Within an L3, cores that share an L2 (clusters of small cores) are kept together. CPUs
        whose information is unknown at a level sort after the known ones at that level, in OS
        order.

        Parameters
        ----------
        cpus : iterable of int
            The CPU ids to sort.

        Returns
        -------
        (tuple of int, dict)
            The ordered CPUs, and for each level ``"package"``, ``"node"``, ``"l3"`` and ``"core"``
            the list of indices into the ordered tuple where a new group of that level starts
            (0 excluded): where a heatmap of the ordered CPUs can draw separating lines.

        Raises
        ------
        InputError
            For ids that are not online CPUs or appear twice.
        InputTypeError
            For ids that are not integers.

        Examples
        --------
        >>> import corelat
        >>> topo = corelat.topology()
        >>> order, bounds = topo.order(reversed(topo.cpus))
        >>> sorted(order) == list(topo.cpus), sorted(bounds)
        (True, ['core', 'l3', 'node', 'package'])
        """
        rows = sorted((self._by_cpu[c] for c in self._check_cpus(cpus)), key=_sort_key)
        boundaries = {
            level: [i for i in range(1, len(rows)) if rows[i][level] != rows[i - 1][level]]
            for level in _LEVELS
        }
        return tuple(r["cpu"] for r in rows), boundaries

    def describe_cpu(self, cpu: int) -> str:
        """A short label for one CPU, e.g. ``"P0 N0 L3#0 C3 T1"``.

        Parameters
        ----------
        cpu : int
            An online CPU id.

        Returns
        -------
        str
            P: package, N: NUMA node, L3#: index of its L3 among the machine's L3s (in
            topological order), C: sysfs core id, T: thread index within the core; ``?`` where
            unknown.

        Raises
        ------
        InputError
            For an id that is not an online CPU.
        """
        row = self._row(cpu)

        def show(value):
            return "?" if value is None else str(value)

        l3 = self._l3_index.get(row["l3"])
        return (
            f"P{show(row['package'])} N{show(row['node'])} L3#{show(l3)}"
            f" C{show(row['core_id'])} T{show(row['thread'])}"
        )

    def summary(self) -> dict[str, Any]:
        """The machine in counts.

        Returns
        -------
        dict
            ``packages``, ``cores``, ``cpus``, ``nodes``, ``l3``, ``offline``, ``allowed``, ``smt``
            (largest number of threads on a core; None if unknown) and ``text``
            (:meth:`describe`).
        """
        rows = self._rows
        cores: dict[Any, list[int]] = {}
        for r in rows:
            if r["core"] is not None:
                cores.setdefault(r["core"], []).append(r["cpu"])

        def count(level):
            return len({r[level] for r in rows if r[level] is not None})

        return {"packages": count("package"), "cores": len(cores), "cpus": len(rows), "nodes": count("node"),
                "l3": count("l3"), "offline": len(self._offline), "allowed": len(self.allowed),
                "smt": max(map(len, cores.values())) if cores else None, "text": self.describe()}

    def describe(self) -> str:
        """One line describing the machine.

        Returns
        -------
        str
            For example ``"2 packages × 8 cores × 2 threads, 2 NUMA nodes, 2 L3"``, or for a
            heterogeneous machine ``"1 package, 14 cores (6 with 2 threads), 20 CPUs, 1 NUMA
            node, 1 L3"``. Offline CPUs and a restricted affinity are mentioned at the end.
        """
        rows = self._rows
        packages: dict[Any, set[Any]] = {}
        cores: dict[Any, list[int]] = {}
        for r in rows:
            if r["package"] is not None:
                packages.setdefault(r["package"], set())
                if r["core"] is not None:
                    packages[r["package"]].add(r["core"])
            if r["core"] is not None:
                cores.setdefault(r["core"], []).append(r["cpu"])
        threads = {len(c) for c in cores.values()}
        per_package = {len(c) for c in packages.values()}
        complete = all(r["package"] is not None and r["core"] is not None for r in rows)
        parts = []
        if rows and complete and len(threads) == 1 and len(per_package) == 1:
            (t,) = threads
            (c,) = per_package
            parts.append(
                f"{_plural(len(packages), 'package')} × {_plural(c, 'core')} × {_plural(t, 'thread')}"
            )
        else:
            parts.append(_plural(len(packages), "package") if packages else "packages unknown")
            if cores:
                counts: dict[int, int] = {}
                for members in cores.values():
                    counts[len(members)] = counts.get(len(members), 0) + 1
                text = _plural(len(cores), "core")
                if len(counts) == 1:
                    (t,) = counts
                    text += f" × {_plural(t, 'thread')}"
                else:
                    detail = ", ".join(
                        f"{n} with {_plural(t, 'thread')}" for t, n in sorted(counts.items()) if t > 1
                    )
                    text += f" ({detail})"
                parts.append(text)
            parts.append(_plural(len(rows), "CPU"))
        node_ids = {r["node"] for r in rows if r["node"] is not None}
        parts.append(_plural(len(node_ids), "NUMA node") if node_ids else "NUMA nodes unknown")
        l3s = {r["l3"] for r in rows if r["l3"] is not None}
        parts.append(f"{len(l3s)} L3" if l3s else "no L3 known")
        if self._offline:
            parts.append(f"{len(self._offline)} offline")
        allowed = sum(1 for r in rows if r["allowed"])
        if allowed != len(rows):
            parts.append(f"{allowed} of {len(rows)} CPUs allowed")
        return ", ".join(parts)

    def table(self) -> str:
        """The machine as an indented tree: package, NUMA node, L3, (shared L2,) core, CPUs.

        Returns
        -------
        str
            What ``str(topology)`` gives; CPUs this process may not run on are in parentheses.
        """
        lines = [f"Topology of {self._root}: {self.describe()}"]
        ordered, _ = self.order(self.cpus)
        members: dict[str, dict[Any, list[int]]] = {"l2": {}, "l3": {}}
        l2_cores: dict[Any, set[Any]] = {}
        for r in self._rows:
            for level, groups in members.items():
                if r[level] is not None:
                    groups.setdefault(r[level], []).append(r["cpu"])
            if r["l2"] is not None and r["core"] is not None:
                l2_cores.setdefault(r["l2"], set()).add(r["core"])

        def label(value):
            return "?" if value is None else value

        previous: Any = None
        for cpu in ordered:
            r = self._by_cpu[cpu]
            shared_l2 = r["l2"] if len(l2_cores.get(r["l2"], ())) > 1 else None
            core = r["core"] if r["core"] is not None else -1 - cpu  # unknown: a core of its own
            path = (r["package"], r["node"], r["l3"], shared_l2, core)
            changed = previous is None
            if changed or path[0] != previous[0]:
                lines.append(f"  package {label(r['package'])}")
                changed = True
            if changed or path[1] != previous[1]:
                lines.append(f"    NUMA node {label(r['node'])}")
                changed = True
            if changed or path[2] != previous[2]:
                cpus = _cpulist.format(members["l3"][r["l3"]]) if r["l3"] is not None else "?"
                lines.append(f"      L3 (CPUs {cpus})")
                changed = True
            indent = "        "
            if shared_l2 is not None:
                if changed or path[3] != previous[3]:
                    lines.append(f"{indent}L2 (CPUs {_cpulist.format(members['l2'][shared_l2])})")
                    changed = True
                indent += "  "
            if changed or path[4] != previous[4]:
                siblings = r["siblings"] or (cpu,)
                shown = ", ".join(str(c) if self._by_cpu[c]["allowed"] else f"({c})" for c in siblings)
                lines.append(f"{indent}core {label(r['core_id'])}: CPU {shown}")
            previous = path
        if len(self.allowed) != len(self._rows):
            lines.append("  (CPUs in parentheses are not allowed for this process)")
        return "\n".join(lines)

    def __str__(self):  # describe() is a one-line summary here (see docs/results.md)
        return self.table()

    def __repr__(self):
        return self._repr(f"root {self._root!r}, {self.describe()}")

    def __eq__(self, other):
        if not isinstance(other, Topology):
            return NotImplemented
        return (self._root, self._rows, self._offline) == (other._root, other._rows, other._offline)

    __hash__ = None

    # -- serialisation ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict holding everything (see :meth:`from_dict`).

        Returns
        -------
        dict
            ``kind``, ``format``, ``version``, ``name``, ``root``, ``summary``, ``offline``,
            ``warnings``, ``notes`` and ``cpus`` (the :meth:`records`, tuples as lists).
        """
        return jsonable({
            "kind": self._KIND,
            "format": _FORMAT,
            "version": _VERSION,
            "name": self._name,
            "root": self._root,
            "summary": self.summary(),
            "offline": list(self._offline),
            "warnings": list(self._problems),
            "notes": [],
            "cpus": [dict(r) for r in self._rows],
        })

    def _to_npz(self):
        return {"topology": self.to_dict()}, {}

    @classmethod
    def _from_npz(cls, header, arrays, path):
        return from_file(path, lambda: cls.from_dict(header["topology"]))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Topology:
        """Rebuild a Topology from :meth:`to_dict` output (e.g. after a JSON round trip).

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned.

        Returns
        -------
        Topology

        Raises
        ------
        InputError
            If ``d`` is not such a dict.
        """
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise InputError("not a corelat topology dict")
        if d.get("version") != _VERSION:
            raise InputError(f"unsupported topology dict version {d.get('version')!r}")
        try:
            rows = []
            for item in d["cpus"]:
                row = {k: item.get(k) for k in _ROW_KEYS}
                if not isinstance(row["cpu"], int):
                    raise InputTypeError(f"bad CPU id {row['cpu']!r}")
                row["nodes"] = tuple(row["nodes"] or ())
                if row["siblings"] is not None:
                    row["siblings"] = tuple(row["siblings"])
                row["allowed"] = bool(row["allowed"])
                rows.append(row)
            return cls(rows, root=d["root"], offline=d.get("offline", ()), problems=d.get("warnings", ()),
                       name=d.get("name"))
        except (KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"malformed topology dict: {exc!r}") from None
