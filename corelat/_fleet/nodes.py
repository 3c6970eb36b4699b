"""Fleets: many machines measured alike, compared within groups of the same hardware.

:func:`fleet` reads the nodes' result files (or takes results) one at a time and keeps, per node,
the median latency of each pair class (:mod:`corelat._fleet.classes`) and, per group of identical
hardware, a running median matrix (:mod:`corelat._fleet.stats`): memory grows with the number of
nodes only by a few numbers each. A node is an *outlier* in a class when its class median deviates
from its group's median by more than ``max(REL_THRESHOLD, MAD_THRESHOLD robust standard deviations)``;
the report names the node, the class, both values, the deviation and the settings in which the node
differs from the rest of its group. :func:`corelat.measure_fleet` measures a fleet over MPI and
ends in the same analysis.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import types
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from corelat._core import files as _files
from corelat._core import text as _text
from corelat._core.errors import InputError, InputFileNotFoundError, InputKeyError, InputTypeError, unreadable
from corelat._core.types import Nodes, Path
from corelat._fleet import classes
from corelat._fleet.hostlist import expected_nodes
from corelat._fleet.stats import RunningMedian, nan_median, robust
from corelat._results import npz as _npz
from corelat._results import schema as _schema
from corelat._results.latency import MEDIAN_MEMBER, LatencyResult, thaw
from corelat._results.protocol import Result, from_file, jsonable, same
from corelat._version import __version__

#: A class median deviating by more than this fraction of the group's median can be an outlier...
REL_THRESHOLD = 0.10
#: ... when it also deviates by more than this many robust standard deviations (1.4826 × MAD).
MAD_THRESHOLD = 4.0
#: Groups smaller than this are reported, but no node in them is called an outlier.
MIN_GROUP = 3
#: Groups without an OS topology take their classes from the median of their first this many nodes.
CLASSIFY_AFTER = 15
#: Metadata compared between a node and the rest of its group.
SETTINGS = ("governor", "boost", "kernel_release", "hypervisor", "microcode", "smt_active", "corelat_version")
#: File layout version of fleet results (``.json`` / ``.npz``).
FORMAT_VERSION = 1
KIND = "fleet"
ERROR_SUFFIX = ".error.json"
REPORT_NAME = "fleet.json"
#: Largest fleet.json and node error file read.
MAX_JSON, MAX_ERROR_FILE = 256 << 20, 1 << 20
#: Threads reading a fleet folder's files.
READERS = min(4, os.cpu_count() or 1)

_MAD_SCALE = 1.4826  # MAD of a normal distribution × this = its standard deviation


# -- what one node contributes ------------------------------------------------------------------------
@dataclass
class NodeData:
    """One node's summary: what the analysis keeps of a result (and what MPI ranks send)."""

    node: str
    cpus: tuple
    kernel: str
    median: np.ndarray
    meta: dict
    codes: object = None  # (n, n) int8 topology classes, or None
    file: str = ""

    def key(self):
        fp = "structure" if self.codes is None else hashlib.sha1(self.codes.tobytes()).hexdigest()[:12]
        return (self.meta.get("cpu_model") or "unknown CPU", self.meta.get("topology_summary") or "",
                self.kernel, self.cpus, fp)


def _microcode(md):
    fleet_md = md.get("fleet") or {}
    return fleet_md.get("microcode", md.get("microcode"))


def _topology_rows(topo):
    """Per-CPU rows of a result's ``metadata["topology"]`` (the Topology's dict form), or None."""
    if not isinstance(topo, Mapping) or topo.get("format") != "corelat.topology":
        return None
    rows = topo.get("cpus")
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, Mapping) for r in rows):
        return None
    return rows


def node_data(node, cpus, kernel, median, md, file=""):
    """A :class:`NodeData` from a result's parts (CPUs sorted so the matrices of a group line up)."""
    cpus = [int(c) for c in cpus]
    median = np.asarray(median, dtype=np.float64)
    if cpus != sorted(cpus):
        order = np.argsort(cpus, kind="stable")
        median = median[np.ix_(order, order)]
        cpus = sorted(cpus)
    rows = _topology_rows(md.get("topology"))
    got = classes.from_topology(rows, cpus) if rows is not None else None
    codes = None if got is None else got[0]
    settings = {k: thaw(md.get(k)) for k in SETTINGS}
    settings["microcode"] = _microcode(md)
    meta = {
        "cpu_model": md.get("cpu_model") or md.get("source"),
        "topology_summary": md.get("topology_summary") if codes is not None else None,
        "hostname": md.get("hostname"),
        "date": md.get("date"),
        "warnings": len(md.get("warnings") or ()),
        "settings": settings,
    }
    return NodeData(node=str(node), cpus=tuple(cpus), kernel=str(kernel), median=median, meta=meta,
                    codes=codes, file=file)


def summarize(result, node=None, file=""):
    """The :class:`NodeData` of a :class:`~corelat.LatencyResult`."""
    md = result.metadata
    if node is None:
        node = (md.get("fleet") or {}).get("node") or result.name or md.get("hostname") or "node"
    return node_data(node, result.cpus, result.kernel, result.median, md, file)


def _summary_members(available):
    """The arrays a node's summary needs: its median matrix where the file has one, else (older
    files, and those of one value per pair) the samples, decompressed and sorted: slower."""
    return ("cpus", "flags", MEDIAN_MEMBER if MEDIAN_MEMBER in available else "samples")


def read_node_file(path, node):
    """The :class:`NodeData` of a corelat latency file, read straight from its arrays and header
    (None when the file holds another kind of result); InputError when it is unreadable or
    inconsistent. Header, CPUs and flags are checked as :func:`corelat.load` checks them; where the
    file holds its median matrix, that is read and checked instead of the raw samples."""
    header, arrays = _npz.read(path, only=_summary_members)
    if header["kind"] != LatencyResult._KIND:
        return None
    header = _schema.check_header(header, path)
    cpus, _ = _schema.check_cpus_flags(arrays, path)
    n = len(cpus)
    if MEDIAN_MEMBER in arrays:
        median = arrays[MEDIAN_MEMBER]
        if median.shape != (n, n) or median.dtype.kind != "f":
            raise InputError(f"{path}: median has shape {median.shape} ({median.dtype}); expected ({n}, {n}) "
                             "numbers")
        median = median.astype(np.float64, copy=False)
        _schema.check_samples(median, path, _schema.latency_floor(header))
    else:
        median = nan_median(_schema.check_samples_member(header, arrays, n, path))
    md = header.get("metadata") or {}
    name = md["fleet"].get("node") if isinstance(md.get("fleet"), Mapping) else None
    return from_file(path, lambda: node_data(name or node, cpus, header.get("kernel", "?"), median, md, path))


# -- the result -----------------------------------------------------------------------------------------
def _frozen(a, dtype=np.float64):
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


def _nan_to_none(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _list_to_matrix(rows):
    a = np.array([[np.nan if x is None else x for x in row] for row in rows], dtype=np.float64)
    return a.reshape((0, 0)) if a.size == 0 else a


@dataclass(frozen=True, eq=False)
class FleetGroup:
    """Nodes of the same hardware (CPU model, topology, kernel, CPUs) and what is typical for them.

    ``values`` is the nodes × classes table of class medians (ns), in the order of ``nodes`` and
    ``classes``; ``class_medians`` the group's median per class; ``median_matrix`` the running
    median of the nodes' matrices (rows and columns: ``cpus``).
    """

    id: int
    label: str
    cpu_model: str
    topology_summary: str
    kernel: str
    cpus: tuple
    class_source: str
    classes: tuple
    nodes: tuple
    values: np.ndarray = field(repr=False)
    class_medians: types.MappingProxyType = field(repr=False)
    median_matrix: np.ndarray = field(repr=False)

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(same(getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__)

    def to_dict(self, arrays=True):
        d = {
            "id": self.id, "label": self.label, "cpu_model": self.cpu_model,
            "topology_summary": self.topology_summary, "kernel": self.kernel, "cpus": list(self.cpus),
            "class_source": self.class_source, "classes": list(self.classes), "nodes": list(self.nodes),
            "class_medians": {k: _nan_to_none(v) for k, v in self.class_medians.items()},
        }
        if arrays:
            d["values"] = jsonable(self.values)
            d["median_matrix"] = jsonable(self.median_matrix)
        return d

    @classmethod
    def from_dict(cls, d, values=None, median_matrix=None):
        values = _list_to_matrix(d["values"]) if values is None else values
        median_matrix = _list_to_matrix(d["median_matrix"]) if median_matrix is None else median_matrix
        return cls(
            id=int(d["id"]), label=str(d["label"]), cpu_model=str(d["cpu_model"]),
            topology_summary=str(d["topology_summary"]), kernel=str(d["kernel"]),
            cpus=tuple(int(c) for c in d["cpus"]), class_source=str(d["class_source"]),
            classes=tuple(d["classes"]), nodes=tuple(d["nodes"]),
            values=_frozen(np.reshape(values, (len(d["nodes"]), len(d["classes"])))),
            class_medians=types.MappingProxyType(
                {k: float("nan") if v is None else float(v) for k, v in d["class_medians"].items()}),
            median_matrix=_frozen(np.reshape(median_matrix, (len(d["cpus"]),) * 2)),
        )


@dataclass(frozen=True)
class Outlier:
    """A node whose class median is off its group's: ``deviation`` is ``value / median - 1``;
    ``differs`` lists ``(setting, node's value, group's usual value)``."""

    node: str
    group: int
    cls: str
    value: float
    median: float
    deviation: float
    threshold: float
    differs: tuple = ()

    def describe(self):
        text = (f"{self.node}: {classes.label(self.cls)} {_ns(self.value)} vs group {self.group}'s "
                f"{_ns(self.median)} ({self.deviation:+.0%}; threshold ±{_ns(self.threshold)})")
        if self.differs:
            text += "; differs in " + ", ".join(f"{k} {v!r} (group: {g!r})" for k, v, g in self.differs)
        return text

    def to_dict(self):
        return {"node": self.node, "group": self.group, "class": self.cls, "value": self.value,
                "median": self.median, "deviation": self.deviation, "threshold": self.threshold,
                "differs": [list(x) for x in self.differs]}

    @classmethod
    def from_dict(cls, d):
        return cls(node=d["node"], group=int(d["group"]), cls=d["class"], value=float(d["value"]),
                   median=float(d["median"]), deviation=float(d["deviation"]), threshold=float(d["threshold"]),
                   differs=tuple(tuple(x) for x in d.get("differs", ())))


def _ns(v):
    return _text.number(v, " ns")


@dataclass(frozen=True, eq=False)
class FleetResult(Result):
    """The fleet report: groups of identical hardware, per-node class medians, outliers, errors and
    missing nodes. Made by :func:`corelat.fleet` and :func:`corelat.measure_fleet`.

    Attributes
    ----------
    groups : tuple
        A ``FleetGroup`` per hardware group (with the nodes × classes ``values`` table and the
        group's ``median_matrix``).
    nodes : tuple of dict
        One per node that has a result: ``node``, ``group``, ``file``, ``hostname``, ``classes``
        (``{class: median ns}``), ``settings`` and ``differs`` (``{setting: [node's, group's]}``).
    outliers : tuple
        ``Outlier`` objects, by group, node and class.
    errors : tuple of dict
        ``{"node", "error", "file"}`` of the nodes whose measurement or file failed.
    missing : tuple of str
        Names of expected nodes without a result or an error.
    name : str
        A label (the folder read, or ``"fleet"``).
    metadata : Mapping
        Thresholds, where the data came from, corelat version, date, reasons for missing nodes.

    Examples
    --------
    >>> import corelat
    >>> f = corelat.fleet(corelat.example_files())
    >>> f.summary()
    {'nodes': 2, 'groups': 2, 'outliers': 0, 'errors': 0, 'missing': 0, 'ok': True}
    >>> [(r["node"], r["status"]) for r in f.records()]
    [('vm-2cpu-cas', 'ok'), ('vm-2cpu-rw', 'ok')]
    """

    groups: tuple
    nodes: tuple
    outliers: tuple
    errors: tuple
    missing: tuple
    name: str = "fleet"
    metadata: Mapping[str, Any] = field(default_factory=dict)

    _KIND = KIND
    _FIELDS = ("groups", "nodes", "outliers", "errors", "missing", "name", "metadata")

    def __post_init__(self):
        object.__setattr__(self, "metadata", types.MappingProxyType(thaw(self.metadata)))

    def group(self, node: str) -> FleetGroup:
        """The hardware group a node belongs to.

        Parameters
        ----------
        node : str
            A node name with a result.

        Returns
        -------
        FleetGroup
            Its ``id``, ``label``, ``nodes``, ``classes``, ``values`` and ``median_matrix``.

        Raises
        ------
        KeyError
            When the fleet has no result of that node.
        """
        for g in self.groups:
            if node in g.nodes:
                return g
        raise InputKeyError(f"no node {node!r} with a result in this fleet")

    def records(self) -> list[dict[str, Any]]:
        """One dict per node, errors and missing ones included.

        Returns
        -------
        list of dict
            ``node``, ``status`` (``"ok"``, ``"outlier"``, ``"error"``, ``"missing"``), ``group``,
            ``classes``, ``outlier_classes``, ``differs``, ``error``, ``file``.
        """
        flagged: dict[str, list[str]] = {}
        for o in self.outliers:
            flagged.setdefault(o.node, []).append(o.cls)
        out = []
        for rec in self.nodes:
            out.append({"node": rec["node"], "status": "outlier" if rec["node"] in flagged else "ok",
                        "group": rec["group"], "classes": dict(rec["classes"]),
                        "outlier_classes": flagged.get(rec["node"], []), "differs": dict(rec["differs"]),
                        "error": None, "file": rec["file"]})
        for e in self.errors:
            out.append({"node": e["node"], "status": "error", "group": None, "classes": {},
                        "outlier_classes": [], "differs": {}, "error": e["error"], "file": e.get("file", "")})
        for name in self.missing:
            out.append({"node": name, "status": "missing", "group": None, "classes": {}, "outlier_classes": [],
                        "differs": {}, "error": self.metadata.get("missing_reasons", {}).get(name), "file": ""})
        return out

    def summary(self) -> dict[str, Any]:
        """The fleet in counts.

        Returns
        -------
        dict
            ``nodes`` (with a result), ``groups``, ``outliers`` (nodes), ``errors``, ``missing``,
            and ``ok`` (True when nothing is off).
        """
        off = len({o.node for o in self.outliers})
        return {"nodes": len(self.nodes), "groups": len(self.groups), "outliers": off,
                "errors": len(self.errors), "missing": len(self.missing),
                "ok": not (off or self.errors or self.missing)}

    def to_dict(self, arrays: bool = True) -> dict[str, Any]:
        """Everything, as plain, strict-JSON data (see :meth:`from_dict`).

        Parameters
        ----------
        arrays : bool
            Include the groups' tables and median matrices.

        Returns
        -------
        dict
        """
        return jsonable({
            "format": _npz.FORMAT_NAME, "kind": KIND, "fleet_version": FORMAT_VERSION, "name": self.name,
            "metadata": thaw(self.metadata), "summary": self.summary(),
            "groups": [g.to_dict(arrays) for g in self.groups],
            "nodes": [thaw(r) for r in self.nodes],
            "outliers": [o.to_dict() for o in self.outliers],
            "errors": [dict(e) for e in self.errors],
            "missing": list(self.missing),
        })

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], arrays: Mapping[int, tuple[Any, Any]] | None = None) -> FleetResult:
        """Rebuild a fleet result from :meth:`to_dict` output.

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned.
        arrays : dict, optional
            Group id -> ``(values, median matrix)``, when they are stored apart (``.npz``).

        Returns
        -------
        FleetResult

        Raises
        ------
        InputError
            When ``d`` is not a fleet result, or one of a newer layout.
        """
        if not isinstance(d, Mapping) or d.get("kind") != KIND:
            what = f"a {_npz.short(d.get('kind'))} result" if isinstance(d, Mapping) else f"a JSON {type(d).__name__}"
            raise InputError(f"{what}, not a fleet report (corelat reads its other results from .npz files)")
        if int(d.get("fleet_version", 0)) > FORMAT_VERSION:
            raise InputError(f"a fleet result of layout {d.get('fleet_version')}: upgrade corelat")
        groups = []
        for g in d["groups"]:
            v, m = (arrays or {}).get(int(g["id"]), (None, None))
            groups.append(FleetGroup.from_dict(g, v, m))
        nodes = tuple({**r, "classes": {k: float("nan") if v is None else v for k, v in r["classes"].items()}}
                      for r in d["nodes"])
        return cls(groups=tuple(groups), nodes=nodes,
                   outliers=tuple(Outlier.from_dict(o) for o in d["outliers"]),
                   errors=tuple(dict(e) for e in d["errors"]), missing=tuple(d["missing"]),
                   name=d.get("name", "fleet"), metadata=d.get("metadata", {}))

    @classmethod
    def load(cls, path: Path) -> FleetResult:
        """Read a fleet result written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            A ``.json`` or ``.npz`` file.

        Returns
        -------
        FleetResult

        Raises
        ------
        InputError
            For a missing, corrupt or other kind of file.
        """
        return load_fleet(path)

    def _to_npz(self):
        header = self.to_dict(arrays=False)
        for k in ("format", "kind"):
            header.pop(k)
        arrays = {}
        for g in self.groups:
            arrays[f"group{g.id}_values"] = np.asarray(g.values)
            arrays[f"group{g.id}_median"] = np.asarray(g.median_matrix)
        return header, arrays

    @classmethod
    def _from_npz(cls, header, arrays, path):
        if header.get("kind") != KIND:
            raise InputError(f"{path}: holds a {header.get('kind')!r} result, not a fleet result")
        return from_file(path, lambda: cls.from_dict(header, {
            int(g["id"]): (arrays[f"group{g['id']}_values"], arrays[f"group{g['id']}_median"])
            for g in header.get("groups", [])}))

    def save(self, path: Path) -> None:
        """Write the result (atomically).

        Parameters
        ----------
        path : str or os.PathLike
            ``*.json`` (one JSON document) or ``*.npz`` (a JSON header plus arrays, no pickle).

        Raises
        ------
        InputError
            For another file ending.
        SaveError
            When the file cannot be written; a file already there is left as it was.

        Examples
        --------
        >>> import os, tempfile, corelat
        >>> f = corelat.fleet(corelat.example_files())
        >>> path = os.path.join(tempfile.mkdtemp(), "fleet.json")
        >>> f.save(path)
        >>> corelat.FleetResult.load(path) == f
        True
        """
        path = os.fspath(path)
        if path.lower().endswith(".json"):
            write_bytes(path, json.dumps(self.to_dict(), indent=1, allow_nan=False).encode())
        elif path.lower().endswith(".npz"):
            super().save(path)
        else:
            raise InputError(f"save a fleet result as .json or .npz, not {path!r}")

    # -- text --------------------------------------------------------------------------------------------
    def table(self) -> str:
        """The fleet report as text.

        Returns
        -------
        str
            What ``str(result)`` gives and ``corelat fleet-report`` prints (:meth:`report`).
        """
        return self.report()

    def node_table(self, group: int | None = None) -> str:
        """The nodes × classes table as text, per group.

        Parameters
        ----------
        group : int, optional
            Only this group's table (default: every group's).

        Returns
        -------
        str
            Class medians in ns; ``*`` marks an outlier.
        """
        flagged = {(o.node, o.cls) for o in self.outliers}
        out = []
        for g in self.groups:
            if group is not None and g.id != group:
                continue
            header = ["node"] + [classes.short_label(c) for c in g.classes]
            rows = [["(median)"] + [_text.number(g.class_medians[c]) + " " for c in g.classes]]
            for k, node in enumerate(g.nodes):
                rows.append([node] + [_text.number(v) + ("*" if (node, c) in flagged else " ")
                                      for c, v in zip(g.classes, g.values[k])])
            out.append(f"group {g.id}: {g.label}")
            out.extend("  " + line for line in _text.table(header, rows, left=(0,)).splitlines())
            out.append("")
        return "\n".join(out).rstrip()

    def report(self, max_rows: int = 40) -> str:
        """The fleet report in words.

        Parameters
        ----------
        max_rows : int
            At most this many node rows per table; the rest are counted.

        Returns
        -------
        str
            What ``print(result)`` and ``corelat fleet-report`` show.
        """
        s = self.summary()
        nodes = s["nodes"]
        title = "Fleet" if self.name in ("", "fleet") else f"Fleet {self.name}"
        head = [(f"{title}: {nodes} node{'s' * (nodes != 1)} in {s['groups']} "
                 f"group{'s' * (s['groups'] != 1)}; {_count(s['outliers'], 'outlier')}, "
                 f"{_count(s['errors'], 'error')}, {s['missing'] or 'none'} missing")]
        md = self.metadata
        head.append(f"(an outlier's class median is off its group's median by more than "
                    f"max({md.get('rel_threshold', REL_THRESHOLD):.0%}, "
                    f"{md.get('mad_threshold', MAD_THRESHOLD):g} robust SD); groups of fewer than "
                    f"{md.get('min_group', MIN_GROUP)} nodes are not judged)")
        lines = head + [""]
        for g in self.groups:
            meds = ", ".join(f"{classes.label(c)} {_ns(g.class_medians[c])}" for c in g.classes)
            lines.append(f"Group {g.id} ({len(g.nodes)} node{'s' * (len(g.nodes) != 1)}): {g.label}")
            lines.append(f"  classes from {g.class_source}; medians: {meds or 'none'}")
        lines.append("")
        if self.outliers:
            lines.append("Outliers:")
            lines.extend("  " + o.describe() for o in self.outliers)
        else:
            lines.append("Outliers: none")
        others = [r for r in self.nodes if r["differs"] and r["node"] not in {o.node for o in self.outliers}]
        if others:
            lines.append("Settings that differ from the node's group (no latency outlier):")
            for r in others:
                lines.append("  " + r["node"] + ": " + ", ".join(
                    f"{k} {v!r} (group: {g!r})" for k, (v, g) in r["differs"].items()))
        if self.errors:
            lines.append("Errors:")
            lines.extend(f"  {e['node']}: {e['error']}" for e in self.errors)
        if self.missing:
            reasons = md.get("missing_reasons", {})
            lines.append("Missing:")
            lines.extend(f"  {n}: {reasons.get(n, 'expected, but no result and no error')}" for n in self.missing)
        for w in self.warnings:
            lines.append(f"warning: {w}")
        for n in self.notes:
            lines.append(f"note: {n}")
        if self.groups:
            lines.append("")
            if all(len(g.nodes) <= max_rows for g in self.groups):
                lines.append("Class medians per node (ns; * outlier):")
                lines.append(self.node_table())
            else:
                lines.append(f"(per-node table: more than {max_rows} nodes in a group; see .node_table())")
        return "\n".join(lines).rstrip()

    def __repr__(self):
        s = self.summary()
        return self._repr(f"{s['nodes']} nodes in {s['groups']} groups, {s['outliers']} outliers, "
                          f"{s['errors']} errors, {s['missing']} missing")


def _count(n, word):
    return f"no {word}s" if n == 0 else f"{n} {word}{'s' * (n != 1)}"


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically (InputError naming the path when it cannot be written)."""
    try:
        _files.atomic_write(path, lambda f: f.write(data))
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None


def load_fleet(path):
    """Read a fleet result saved by :meth:`FleetResult.save` (``.json`` or ``.npz``)."""
    path = os.fspath(path)
    try:
        if _npz.is_npz(path):
            header, arrays = _npz.read(path)
            return FleetResult._from_npz(header, arrays, path)
        text = _files.read_bytes(path, MAX_JSON).decode("utf-8")
        return FleetResult.from_dict(_npz.parse_json(text, path, "the file"))
    except InputError as e:
        raise type(e)(e if str(e).startswith(path) else f"{path}: {e}") from None
    except OSError as e:
        raise unreadable(path, e) from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{path}: corrupt or unreadable fleet result ({type(e).__name__}: {e})") from None


# -- the analysis ------------------------------------------------------------------------------------------
class _Group:
    def __init__(self, gid, first):
        self.id = gid
        self.cpus = first.cpus
        self.kernel = first.kernel
        self.cpu_model = first.meta.get("cpu_model") or "unknown CPU"
        self.topology_summary = first.meta.get("topology_summary") or ""
        self.running = RunningMedian((len(first.cpus),) * 2)
        self.pending = []
        self.nodes = []
        if first.codes is not None:
            self.codes, self.names, self.source = first.codes, classes.TOPOLOGY_CLASSES, "the OS topology"
        else:
            self.codes, self.names, self.source = None, (), "the latency structure"

    def index(self):
        if getattr(self, "_index", None) is None:
            self._index = classes.index(self.codes, self.names)
        return self._index

    def label(self):
        topo = self.topology_summary or "no OS topology"
        return f"{self.cpu_model}; {topo}; {len(self.cpus)} CPUs; kernel {self.kernel}"

    def classify_pending(self):
        stack = np.stack([nd.median for nd in self.pending])
        med = nan_median(stack, axis=0)
        self.codes, self.names = classes.from_structure(med, self.cpus)


class FleetBuilder:
    """Streaming analysis: :meth:`add` nodes (or :meth:`add_error`) one at a time, then :meth:`finish`."""

    def __init__(self, name="fleet"):
        self.name = name
        self._groups = {}
        self._records = {}
        self._errors = []
        self._warnings = []
        self._notes = []
        self._seen = set()

    def _unique(self, node):
        base, k = node, 1
        while node in self._seen:
            k += 1
            node = f"{base} ({k})"
        if k > 1:
            self._warnings.append(f"two results for node {base!r}: the second is called {node!r}")
        self._seen.add(node)
        return node

    def add(self, nd):
        """Take one node's :class:`NodeData` (or a LatencyResult)."""
        if isinstance(nd, LatencyResult):
            nd = summarize(nd)
        nd.node = self._unique(nd.node)
        key = nd.key()
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = _Group(len(self._groups) + 1, nd)
        g.running.add(nd.median)
        g.nodes.append(nd.node)
        if g.codes is None:
            g.pending.append(nd)
            if len(g.pending) >= CLASSIFY_AFTER:
                self._flush(g)
        else:
            self._record(g, nd)

    def add_error(self, node, error, file=""):
        """A node whose measurement (or file) failed."""
        self._errors.append({"node": self._unique(str(node)), "error": str(error), "file": file})

    def note(self, text):
        self._notes.append(text)

    def warn(self, text):
        self._warnings.append(text)

    def _flush(self, g):
        g.classify_pending()
        for nd in g.pending:
            self._record(g, nd)
        g.pending = []

    def _record(self, g, nd):
        self._records[nd.node] = {
            "node": nd.node, "group": g.id, "file": nd.file, "hostname": nd.meta.get("hostname"),
            "date": nd.meta.get("date"), "result_warnings": nd.meta.get("warnings", 0),
            "classes": classes.class_medians(nd.median, g.index()),
            "settings": dict(nd.meta.get("settings") or {}),
        }

    def finish(self, expect=None, missing_reasons=None, metadata=None):
        """The :class:`FleetResult`; ``expect`` names the nodes that should be there."""
        for g in self._groups.values():
            if g.pending:
                self._flush(g)
        groups, outliers, nodes = [], [], []
        for g in self._groups.values():
            group, outs, recs = self._judge(g)
            groups.append(group)
            outliers.extend(outs)
            nodes.extend(recs)
        have = {r["node"] for r in nodes} | {e["node"] for e in self._errors}
        expected = expected_nodes(expect)
        missing = [n for n in (expected or []) if n not in have]
        reasons = dict(missing_reasons or {})
        missing += [n for n in reasons if n not in have and n not in missing]
        if expected is not None:
            extra = sorted(have - set(expected))
            if extra:
                self._notes.append(f"{len(extra)} node(s) not in the expected list: {', '.join(extra[:10])}"
                                   + (" ..." if len(extra) > 10 else ""))
        md = {
            "rel_threshold": REL_THRESHOLD, "mad_threshold": MAD_THRESHOLD, "min_group": MIN_GROUP,
            "corelat_version": __version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "missing_reasons": {n: reasons[n] for n in missing if n in reasons},
            "warnings": list(self._warnings), "notes": list(self._notes),
        }
        md.update(metadata or {})
        return FleetResult(groups=tuple(groups), nodes=tuple(nodes), outliers=tuple(outliers),
                           errors=tuple(self._errors), missing=tuple(missing), name=self.name, metadata=md)

    def _judge(self, g):
        recs = [self._records[n] for n in g.nodes]
        present = classes.present(g.codes, g.names)
        values = np.array([[r["classes"][c] for c in present] for r in recs], dtype=np.float64)
        values = values.reshape(len(recs), len(present))
        medians, outliers = {}, []
        usual = _usual_settings(recs)
        for r in recs:
            r["differs"] = {k: [v, usual[k]] for k, v in r["settings"].items()
                            if k in usual and v is not None and v != usual[k]}
            r["classes"] = {c: r["classes"][c] for c in present}
        for k, c in enumerate(present):
            med, mad = robust(values[:, k])
            medians[c] = med
            if len(recs) < MIN_GROUP or math.isnan(med):
                continue
            threshold = max(REL_THRESHOLD * med, MAD_THRESHOLD * _MAD_SCALE * mad)
            for i, r in enumerate(recs):
                v = values[i, k]
                if np.isfinite(v) and abs(v - med) > threshold:
                    differs = tuple((s, a, b) for s, (a, b) in r["differs"].items())
                    outliers.append(Outlier(node=r["node"], group=g.id, cls=c, value=float(v), median=med,
                                            deviation=float(v / med - 1.0), threshold=float(threshold),
                                            differs=differs))
        group = FleetGroup(
            id=g.id, label=g.label(), cpu_model=g.cpu_model, topology_summary=g.topology_summary,
            kernel=g.kernel, cpus=g.cpus, class_source=g.source, classes=present, nodes=tuple(g.nodes),
            values=_frozen(values), class_medians=types.MappingProxyType(medians),
            median_matrix=_frozen(g.running.result()),
        )
        return group, outliers, recs


def _usual_settings(recs):
    """{setting: the value most of the group's nodes have} (settings without a clear majority are left out)."""
    usual = {}
    for key in SETTINGS:
        counts = Counter(json.dumps(r["settings"].get(key)) for r in recs if r["settings"].get(key) is not None)
        if not counts:
            continue
        (top, n), *rest = counts.most_common(2) + [(None, 0)]
        if n > rest[0][1]:
            usual[key] = json.loads(top)
    return usual


# -- reading a folder ----------------------------------------------------------------------------------------
def _node_from_file(path):
    base = os.path.basename(path)
    for suffix in (ERROR_SUFFIX, ".npz", ".csv", ".txt"):
        if base.lower().endswith(suffix):
            return base[: -len(suffix)]
    return base


def node_files(folder):
    """Sorted result and error files of a fleet folder (``<node>.npz``, ``<node>.error.json``)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise unreadable(folder, e, "the folder ") from None
    return [os.path.join(folder, n) for n in names
            if n.endswith((".npz", ERROR_SUFFIX)) and not n.startswith(".")]  # .name.tmp: a save under way


def read_error_file(path):
    """(node, error text) from a ``<node>.error.json`` file."""
    d = json.loads(_files.read_bytes(path, MAX_ERROR_FILE).decode("utf-8"))
    if not isinstance(d, dict) or d.get("kind") != "fleet-node-error":
        raise ValueError("not a corelat fleet error file")
    return str(d.get("node") or _node_from_file(path)), str(d.get("error", "unknown error"))


def _read_path(path):
    """("node", NodeData) | ("error", (node, text)) | ("note", text) for one file of a fleet folder."""
    node = _node_from_file(path)
    if path.endswith(ERROR_SUFFIX):
        try:
            return "error", read_error_file(path)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            return "error", (node, f"unreadable error file ({e})")
    try:
        nd = read_node_file(path, node)
    except InputError as e:
        return "error", (node, str(e))
    if nd is None:
        return "note", f"{os.path.basename(path)} holds another kind of result than a node's latency; left out"
    return "node", nd


def _add(builder, path, got):
    what, value = got
    if what == "node":
        builder.add(value)
    elif what == "error":
        builder.add_error(value[0], value[1], path)
    else:
        builder.note(value)


def _add_paths(builder, paths):
    """Read files on a few threads (zlib and numpy let go of the GIL) a few files ahead, and add
    them in order, so that memory holds a handful of matrices whatever the number of files."""
    if len(paths) < 2:
        for p in paths:
            _add(builder, p, _read_path(p))
        return
    window = deque()
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        for p in paths:
            window.append((p, pool.submit(_read_path, p)))
            if len(window) > 2 * READERS:
                q, fut = window.popleft()
                _add(builder, q, fut.result())
        while window:
            q, fut = window.popleft()
            _add(builder, q, fut.result())


def fleet(
    paths_or_results: Path | LatencyResult | Iterable[Path | LatencyResult],
    expect: Nodes | None = None,
    *,
    name: str | None = None,
) -> FleetResult:
    """Compare many machines: group them by hardware and name the nodes that are off.

    Parameters
    ----------
    paths_or_results : folder, path, LatencyResult, or a list of them
        A folder is read like ``corelat fleet`` writes it: every ``<node>.npz`` and
        ``<node>.error.json`` in it. Files are read one at a time (memory stays small for
        thousands of nodes); a file that cannot be read becomes an error of its node.
    expect : str, path or list, optional
        The nodes that should be there: a list of names, a file of names, or a Slurm-style list
        like ``"node[01-64]"``. Nodes without a result are reported as missing.
    name : str, optional
        A label for the report (default: the folder's name).

    Returns
    -------
    FleetResult

    Raises
    ------
    InputError
        For a path that does not exist or an argument that is neither a path nor a result.

    Examples
    --------
    >>> import corelat
    >>> print(corelat.fleet(corelat.example_files()))  # doctest: +ELLIPSIS
    Fleet: 2 nodes in 2 groups; no outliers, no errors, none missing
    ...
    """
    items = paths_or_results
    if isinstance(items, (str, os.PathLike, LatencyResult)):
        items = [items]
    try:
        items = list(items)
    except TypeError:
        raise InputTypeError(f"cannot read a fleet from {type(items).__name__!r}: give folders, files or "
                             "results") from None
    if name is None:
        first = items[0] if len(items) == 1 else None
        name = os.path.basename(os.path.normpath(os.fspath(first))) if isinstance(first, (str, os.PathLike)) \
            else "fleet"
    builder = FleetBuilder(name=name)
    folders = []
    for item in items:
        if isinstance(item, LatencyResult):
            builder.add(summarize(item))
        elif isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if os.path.isdir(path):
                folders.append(path)
                _add_paths(builder, node_files(path))
            elif os.path.exists(path):
                _add_paths(builder, [path])
            else:
                raise InputFileNotFoundError(f"{path}: no such file or folder")
        else:
            raise InputError(f"cannot read a fleet from {type(item).__name__!r}: give folders, files or results")
    return builder.finish(expect=expect, metadata={"source": folders or "results"})
