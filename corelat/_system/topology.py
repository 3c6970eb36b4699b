"""CPU topology of a Linux machine, read from sysfs.

``topology()`` reads ``/sys/devices/system/cpu`` and ``/sys/devices/system/node`` below a root
folder (``"/"`` for the running system, or an unpacked dump of another machine) and returns a
``Topology``: for every online logical CPU its package, die, cluster, core, L2 and L3 cache groups,
NUMA node and SMT siblings, and whether this process may run on it.

Only the standard library is used and nothing needs root privileges. Files that are missing (old
kernels, offline CPUs) simply leave the field ``None``; files that are present but unreadable or
malformed do the same and raise a ``TopologyWarning``. The reader never guesses: a field it cannot
read is ``None``. The reading itself is :mod:`corelat._system.sysfs`; this module holds the
``Topology`` value, its ordering and its text.

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
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from corelat._core.errors import InputError, InputTypeError
from corelat._core.protocol import SavedResult, from_file, jsonable
from corelat._core.types import Path
from corelat._system import topotext as _text
from corelat._system import sysinfo as _sysinfo
from corelat._system.sysfs import _read, _Reader

__all__ = ["Topology", "TopologyWarning", "topology"]

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


# --------------------------------------------------------------------------------------------
# The result


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
            (:meth:`headline`).
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
                "smt": max(map(len, cores.values())) if cores else None, "text": self.headline()}

    def headline(self) -> str:
        """One line describing the machine (the first line of :meth:`describe`).

        Returns
        -------
        str
            For example ``"2 packages × 8 cores × 2 threads, 2 NUMA nodes, 2 L3"``, or for a
            heterogeneous machine ``"1 package, 14 cores (6 with 2 threads), 20 CPUs, 1 NUMA
            node, 1 L3"``. Offline CPUs and a restricted affinity are mentioned at the end.
        """
        return _text.headline(self._rows, self._offline)

    def describe(self) -> str:
        """The text report: the headline, then the machine as a tree (see :meth:`table`).

        Returns
        -------
        str
            What ``print(topology)`` and ``str(topology)`` show.
        """
        return self.table()

    def table(self) -> str:
        """The machine as an indented tree: package, NUMA node, L3, (shared L2,) core, CPUs.

        Returns
        -------
        str
            The :meth:`headline`, then the tree; CPUs this process may not run on are in parentheses.
        """
        lines = [f"Topology of {self._root}: {self.headline()}"]
        ordered, _ = self.order(self.cpus)
        lines.extend(_text.tree(self._rows, self._by_cpu, ordered))
        if len(self.allowed) != len(self._rows):
            lines.append("  (CPUs in parentheses are not allowed for this process)")
        return "\n".join(lines)

    def __repr__(self):
        return self._repr(f"root {self._root!r}, {self.headline()}")

    def __eq__(self, other):
        if not isinstance(other, Topology):
            return NotImplemented
        return (self._root, self._rows, self._offline) == (other._root, other._rows, other._offline)

    __hash__ = None

    # -- serialisation ----------------------------------------------------------------------

    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """A JSON-serialisable dict holding everything (see :meth:`from_dict`).

        Parameters
        ----------
        arrays : bool
            Accepted as every saved kind accepts it; a topology holds no arrays (its rows are
            small), so the dict is the same either way.

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
