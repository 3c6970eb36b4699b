"""The fleet result: many machines measured alike, their groups of identical hardware and their outliers."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from corelat._core import files as _files
from corelat._core import npz as _npz
from corelat._core.errors import InputError, InputKeyError, SaveError, unreadable
from corelat._core.protocol import SavedResult, deprecated, freeze, from_file, jsonable, keyword_options, same
from corelat._core.types import Path
from corelat._results import schema as _schema
from corelat._results import fleet_text as _fleet_text
from corelat._results.fleet_names import BASELINE_NOT_JUDGED, BASELINE_OFF, label
from corelat._results.fleet_names import BASELINE_OK as BASELINE_OK
from corelat._results.fleet_names import MAD_THRESHOLD as MAD_THRESHOLD
from corelat._results.fleet_names import MIN_GROUP as MIN_GROUP
from corelat._results.fleet_names import REL_THRESHOLD as REL_THRESHOLD
from corelat._results.fleet_text import ns as _ns
from corelat._results.latency import thaw

#: File layout version of fleet results (``.json`` / ``.npz``).
FORMAT_VERSION = 1

KIND = "fleet"

#: Largest fleet.json read.
MAX_JSON = 256 << 20
#: Metadata flag of a saved report whose node files are relative to the report's folder.
_RELATIVE = "files_relative_to_report"


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

    def to_dict(self, *, arrays=True):
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
        text = (f"{self.node}: {label(self.cls)} {_ns(self.value)} vs group {self.group}'s "
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
                   median=float(d["median"]), deviation=float(d["deviation"]),
                   threshold=float(d["threshold"]), differs=tuple(tuple(x) for x in d.get("differs", ())))


@dataclass(frozen=True, eq=False)
class FleetResult(SavedResult):
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
        # Read-only rows: a fleet result is a value, like the groups and outliers it holds.
        for part in ("nodes", "errors"):
            object.__setattr__(self, part, tuple(freeze(thaw(r)) for r in getattr(self, part)))
        object.__setattr__(self, "missing", tuple(self.missing))

    def group_of(self, node: str) -> FleetGroup:
        """The hardware group a node belongs to (``group_of(node).id`` is what ``group=`` takes).

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

    @property
    def baseline(self) -> Mapping[str, Any] | None:
        """The reference every node was judged against (``corelat fleet-report --baseline``), or None.

        ``reference`` (its name), ``file``, ``cpu_model``, ``cpus``, ``classes`` and ``nodes``:
        per node ``{"status": "ok" | "off" | "not judged", "exit_status", "line"}``.
        """
        b = self.metadata.get("baseline")
        return b if isinstance(b, Mapping) else None

    def _baseline_nodes(self, status):
        b = self.baseline
        return [n for n, v in (b or {}).get("nodes", {}).items() if v.get("status") == status]

    @deprecated("FleetResult.group(node) is deprecated: use group_of(node)")
    def group(self, node: str) -> FleetGroup:
        """Deprecated (use :meth:`group_of`): the hardware group a node belongs to.

        Parameters
        ----------
        node : str
            A node name with a result.

        Returns
        -------
        FleetGroup
        """
        return self.group_of(node)

    @keyword_options("group")
    def records(self, *, group: int | None = None) -> list[dict[str, Any]]:
        """One dict per node, errors and missing ones included.

        Parameters
        ----------
        group : int, optional
            Only the nodes of this hardware group (default: every node; errors and missing nodes
            belong to no group).

        Returns
        -------
        list of dict
            ``node``, ``status`` (``"ok"``, ``"outlier"``, ``"error"``, ``"missing"``), ``group``,
            ``classes``, ``outlier_classes``, ``differs``, ``error``, ``file``; with a baseline
            also ``baseline`` (``"ok"``, ``"off"``, ``"not judged"``; None: no result) and
            ``baseline_line``.
        """
        flagged: dict[str, list[str]] = {}
        for o in self.outliers:
            flagged.setdefault(o.node, []).append(o.cls)
        out = []
        for rec in self.nodes:
            out.append({"node": rec["node"], "status": "outlier" if rec["node"] in flagged else "ok",
                        "group": rec["group"], "classes": dict(rec["classes"]),
                        "outlier_classes": flagged.get(rec["node"], []), "differs": thaw(rec["differs"]),
                        "error": None, "file": rec["file"]})
        b = self.baseline
        if b is not None:
            verdicts = b.get("nodes", {})
            for r in out:
                v = verdicts.get(r["node"]) or {}
                r["baseline"], r["baseline_line"] = v.get("status"), v.get("line")
        if group is not None:
            return [r for r in out if r["group"] == group]
        for e in self.errors:
            out.append({"node": e["node"], "status": "error", "group": None, "classes": {},
                        "outlier_classes": [], "differs": {}, "error": e["error"], "file": e.get("file", "")})
        for name in self.missing:
            out.append({"node": name, "status": "missing", "group": None, "classes": {},
                        "outlier_classes": [], "differs": {},
                        "error": self.metadata.get("missing_reasons", {}).get(name), "file": ""})
        if b is not None:
            for r in out:
                r.setdefault("baseline", None)
                r.setdefault("baseline_line", None)
        return out

    def summary(self) -> dict[str, Any]:
        """The fleet in counts.

        Returns
        -------
        dict
            ``nodes`` (with a result), ``groups``, ``outliers`` (nodes), ``errors``, ``missing``,
            and ``ok`` (True when nothing is off and at least one node has a result); with a
            baseline also ``baseline_off`` and ``baseline_not_judged`` (nodes), which ``ok`` counts.
        """
        off = len({o.node for o in self.outliers})
        out = {"nodes": len(self.nodes), "groups": len(self.groups), "outliers": off,
               "errors": len(self.errors), "missing": len(self.missing)}
        bad = off or self.errors or self.missing
        if self.baseline is not None:
            out["baseline_off"] = len(self._baseline_nodes(BASELINE_OFF))
            out["baseline_not_judged"] = len(self._baseline_nodes(BASELINE_NOT_JUDGED))
            bad = bad or out["baseline_off"] or out["baseline_not_judged"]
        out["ok"] = bool(self.nodes) and not bad
        return out

    @keyword_options("arrays")
    def to_dict(self, *, arrays: bool = True) -> dict[str, Any]:
        """Everything, as plain, strict-JSON data (see :meth:`from_dict`).

        Parameters
        ----------
        arrays : bool
            Include the groups' tables and median matrices (what :meth:`from_dict` needs); False
            leaves the figures only (``from_dict`` then needs them as ``group_arrays=``).

        Returns
        -------
        dict
        """
        return jsonable({
            "format": _npz.FORMAT_NAME, "kind": KIND, "fleet_version": FORMAT_VERSION, "name": self.name,
            "metadata": thaw(self.metadata), "summary": self.summary(),
            "groups": [g.to_dict(arrays=arrays) for g in self.groups],
            "nodes": [thaw(r) for r in self.nodes],
            "outliers": [o.to_dict() for o in self.outliers],
            "errors": [dict(e) for e in self.errors],
            "missing": list(self.missing),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        })

    @classmethod
    @keyword_options("group_arrays")
    def from_dict(cls, d: Mapping[str, Any], *,
                  group_arrays: Mapping[int, tuple[Any, Any]] | None = None) -> FleetResult:
        """Rebuild a fleet result from :meth:`to_dict` output.

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned.
        group_arrays : dict, optional
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
            what = (f"a {_npz.short(d.get('kind'))} result" if isinstance(d, Mapping)
                    else f"a JSON {type(d).__name__}")
            raise InputError(f"{what}, not a fleet report (corelat reads its other results from .npz files)")
        if int(d.get("fleet_version", 0)) > FORMAT_VERSION:
            raise InputError(f"a fleet result of layout {d.get('fleet_version')}: upgrade corelat")
        groups = []
        for g in d["groups"]:
            v, m = (group_arrays or {}).get(int(g["id"]), (None, None))
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
        return _resolved(from_file(path, lambda: cls.from_dict(header, group_arrays={
            int(g["id"]): (arrays[f"group{g['id']}_values"], arrays[f"group{g['id']}_median"])
            for g in header.get("groups", [])})), path)

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
        if not path.lower().endswith((".json", ".npz")):
            raise InputError(f"save a fleet result as .json or .npz, not {path!r}")
        # Node files relative to the report's folder: it still finds them read from anywhere else.
        base = os.path.dirname(os.path.abspath(path))
        stored = self._with_files(lambda f: os.path.relpath(os.path.abspath(f), base), relative=True)
        if path.lower().endswith(".json"):
            write_bytes(path, json.dumps(stored.to_dict(), indent=1, allow_nan=False).encode())
        else:
            SavedResult.save(stored, path)

    def _with_files(self, change, relative):
        """This result with every node's and error's ``file`` changed (empty ones kept)."""
        def one(d):
            return {**d, "file": change(d["file"])} if d.get("file") else d

        md = {k: v for k, v in self.metadata.items() if k != _RELATIVE}
        md.update({_RELATIVE: True} if relative else {})
        return dataclasses.replace(self, nodes=tuple(one(thaw(r)) for r in self.nodes),
                                   errors=tuple(one(dict(e)) for e in self.errors), metadata=md)

    # -- text --------------------------------------------------------------------------------------------
    @keyword_options("group")
    def table(self, *, group: int | None = None) -> str:
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
        return _fleet_text.table(self, group)

    @keyword_options("max_rows")
    def describe(self, *, max_rows: int = 40) -> str:
        """The fleet report in words.

        Parameters
        ----------
        max_rows : int
            At most this many node rows per table; the rest are counted.

        Returns
        -------
        str
            What ``print(result)`` and ``corelat fleet-report`` show: the groups, outliers,
            errors, missing nodes and the nodes × classes tables (:meth:`table`).
        """
        return _fleet_text.describe(self, max_rows)

    def __repr__(self):
        s = self.summary()
        return self._repr(f"{s['nodes']} nodes in {s['groups']} groups, {s['outliers']} outliers, "
                          f"{s['errors']} errors, {s['missing']} missing")


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically; a SaveError naming the path where it cannot, as every save."""
    try:
        _files.atomic_write(path, lambda f: f.write(data))
    except OSError as e:
        failed = e if isinstance(e, SaveError) else SaveError(e.errno, e.strerror or str(e), os.fspath(path))
        raise failed from None


def _resolved(result, path):
    """``result`` read from ``path``, its node files (stored relative to ``path``'s folder) made paths
    that work from here."""
    if not result.metadata.get(_RELATIVE):
        return result
    base = os.path.dirname(os.path.abspath(os.fspath(path)))
    return result._with_files(lambda f: os.path.normpath(os.path.join(base, str(f))), relative=False)


def load_fleet(path):
    """Read a fleet result saved by :meth:`FleetResult.save` (``.json`` or ``.npz``); node files stored
    relative to the report's folder come back as paths that work from here."""
    path = os.fspath(path)
    try:
        if _npz.is_npz(path):
            header, arrays = _npz.read(path)
            return FleetResult._from_file(header, arrays, path)
        d = _npz.parse_json(_files.read_bytes(path, MAX_JSON).decode("utf-8"), path, "the file")
        return _resolved(FleetResult.from_dict(_schema.check_kind(KIND, d, path)), path)
    except InputError as e:
        raise type(e)(e if str(e).startswith(path) else f"{path}: {e}") from None
    except OSError as e:
        raise unreadable(path, e) from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{path}: corrupt or unreadable fleet result ({type(e).__name__}: {e})") from None
