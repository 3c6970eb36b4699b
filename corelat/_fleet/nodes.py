"""Fleets: many machines measured alike, compared within groups of the same hardware.

:func:`fleet` reads the nodes' result files (or takes results) one at a time and keeps, per node,
the median latency of each pair class (:mod:`corelat._analysis.classes`) and, per group of identical
hardware, a running median matrix (:mod:`corelat._core.stats`): memory grows with the number of
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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from corelat._core import files as _files
from corelat._core import npz as _npz
from corelat._core import stats as _stats
from corelat._core.errors import InputError, InputFileNotFoundError, InputTypeError, unreadable
from corelat._core.protocol import from_file
from corelat._core.types import Nodes, Path
from corelat._analysis import classes
from corelat._fleet import kinds, readers
from corelat._fleet import runs as _runs
from corelat._fleet.hostlist import expected_nodes, match
from corelat._results import formats as _formats
from corelat._results import schema as _schema
from corelat._results.fleet import (
    MAD_THRESHOLD,
    MIN_GROUP,
    REL_THRESHOLD,
    FleetGroup,
    FleetResult,
    Outlier,
    _frozen,
    label,
)
from corelat._results.latency import MEDIAN_MEMBER, LatencyResult, thaw
from corelat._version import __version__

#: Groups without an OS topology take their classes from the median of their first this many nodes.
CLASSIFY_AFTER = 15
#: Metadata compared between a node and the rest of its group.
SETTINGS = ("governor", "boost", "kernel_release", "hypervisor", "microcode", "smt_active", "corelat_version")
ERROR_SUFFIX = ".error.json"
#: Other tools' text matrices read as nodes (``corelat.load`` reads them; the file name is the node's).
TEXT_SUFFIXES = (".csv", ".txt", ".dat", ".out")
REPORT_NAME = "fleet.json"
#: Largest node error file read.
MAX_ERROR_FILE = 1 << 20


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
        "model_known": bool(md.get("cpu_model")),
        "run": (md.get("fleet") or {}).get("run") if isinstance(md.get("fleet"), Mapping) else None,
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
        median = _stats.median(_schema.check_samples_member(header, arrays, n, path))
    md = header.get("metadata") or {}
    name = md["fleet"].get("node") if isinstance(md.get("fleet"), Mapping) else None
    return from_file(path, lambda: node_data(name or node, cpus, header.get("kernel", "?"), median, md, path))


# -- the analysis ------------------------------------------------------------------------------------------
class _Group:
    def __init__(self, gid, first):
        self.id = gid
        self.cpus = first.cpus
        self.kernel = first.kernel
        self.cpu_model = first.meta.get("cpu_model") or "unknown CPU"
        self.unknown = not first.meta.get("model_known", True)
        self.topology_summary = first.meta.get("topology_summary") or ""
        self.running = _stats.RunningMedian((len(first.cpus),) * 2)
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
        if self.unknown:
            return (f"unknown hardware ({self.cpu_model} files, grouped by CPU count); {topo}; "
                    f"{len(self.cpus)} CPUs; kernel {self.kernel}")
        return f"{self.cpu_model}; {topo}; {len(self.cpus)} CPUs; kernel {self.kernel}"

    def classify_pending(self):
        stack = np.stack([nd.median for nd in self.pending])
        med = _stats.median(stack, axis=0)
        self.codes, self.names = classes.from_structure(med, self.cpus)


class FleetBuilder:
    """Streaming analysis: :meth:`add` nodes (or :meth:`add_error`) one at a time, then :meth:`finish`."""

    def __init__(self, name="fleet", model=None):
        self.name = name
        self._model = kinds.model_of(model)
        self.run = None  # reading a folder: the run whose files are taken (see corelat._fleet.runs)
        self.stale = []
        self._subgroups = []
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
        if nd.meta.get("save_error"):
            self._warnings.append(f"{nd.node} was measured, but its file could not be written "
                                  f"({nd.meta['save_error']})")
        if not nd.meta.get("model_known", True):
            model = self._model(nd.node)
            if model:
                nd.meta = dict(nd.meta, cpu_model=model, model_known=True)
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

    def flagged(self):
        """The nodes the report would call outliers now, worst first (for a re-test before blame)."""
        saved = (list(self._notes), list(self._warnings), list(self._subgroups))
        result = self.finish()
        self._notes, self._warnings, self._subgroups = saved
        return list(dict.fromkeys(o.node for o in sorted(result.outliers, key=lambda o: -abs(o.deviation))))

    def retest(self, node, nd, error=None):
        """A node measured again: its class medians become the new attempt's; ``attempts`` keeps both."""
        rec = self._records.get(node)
        g = next((g for g in self._groups.values() if node in g.nodes), None)
        if rec is None or g is None:
            return
        first = {"date": rec.get("date"), "classes": dict(rec["classes"])}
        if nd is None or tuple(nd.cpus) != tuple(g.cpus):
            second = {"date": None, "error": error or "measured on other CPUs"}
        else:
            got = classes.class_medians(nd.median, g.index())
            second = {"date": nd.meta.get("date"), "classes": {c: got[c] for c in rec["classes"]}}
            rec["classes"] = dict(second["classes"])
        rec["attempts"] = [first, second]

    def finish(self, expect=None, missing_reasons=None, metadata=None):
        """The :class:`FleetResult`; ``expect`` names the nodes that should be there."""
        for g in self._groups.values():
            if g.pending:
                self._flush(g)
        groups, outliers, nodes = [], [], []
        if self.stale:
            runs = ", ".join(dict.fromkeys(run for run, _ in self.stale))
            self._notes.append(f"{len(self.stale)} file(s) of another run than {runs} were left out "
                               "(take them with --all-runs): " + ", ".join(f for _, f in self.stale[:10])
                               + (" ..." if len(self.stale) > 10 else ""))
        unknown = sum(len(g.nodes) for g in self._groups.values() if g.unknown)
        if unknown:
            self._notes.append(f"{unknown} node(s) of unknown hardware (other tools' files carry no CPU "
                               "model) are grouped by CPU count; name their models with --model (model=)")
        for g in self._groups.values():
            group, outs, recs = self._judge(g)
            groups.append(group)
            outliers.extend(outs)
            nodes.extend(recs)
        have = {r["node"] for r in nodes} | {e["node"] for e in self._errors}
        expected = expected_nodes(expect)
        missing, extra = match(expected or [], have)  # short names match FQDNs (Slurm lists short names)
        reasons = dict(missing_reasons or {})
        missing += [n for n in reasons if n not in have and n not in missing]
        if expected is not None and extra:
            self._notes.append(f"{len(extra)} node(s) not in the expected list: {', '.join(extra[:10])}"
                               + (" ..." if len(extra) > 10 else ""))
        md = {
            "rel_threshold": REL_THRESHOLD, "mad_threshold": MAD_THRESHOLD, "min_group": MIN_GROUP,
            "corelat_version": __version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "missing_reasons": {n: reasons[n] for n in missing if n in reasons},
            "warnings": list(self._warnings), "notes": list(self._notes),
            "subgroups": list(self._subgroups),
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
            med, sd = _stats.median_sd(values[:, k])
            medians[c] = med
            if len(recs) < MIN_GROUP or math.isnan(med):
                continue
            threshold = max(REL_THRESHOLD * med, MAD_THRESHOLD * sd)
            for i, r in enumerate(recs):
                v = values[i, k]
                if np.isfinite(v) and abs(v - med) > threshold:
                    differs = tuple((s, a, b) for s, (a, b) in r["differs"].items())
                    outliers.append(Outlier(node=r["node"], group=g.id, cls=c, value=float(v), median=med,
                                            deviation=float(v / med - 1.0), threshold=float(threshold),
                                            differs=differs))
        if g.unknown:
            outliers, subs = kinds.subgroups(outliers, len(recs))
            self._subgroups += [dict(sub, group=g.id) for sub in subs]
            for sub in subs:
                devs = ", ".join(f"{label(c)} {d:+.0%}" for c, d in sub["classes"].items())
                self._warnings.append(f"sub-group of other hardware in group {g.id} (several nodes off "
                                      f"alike, not outliers): {', '.join(sub['nodes'])} ({devs})")
        group = FleetGroup(
            id=g.id, label=g.label(), cpu_model=g.cpu_model, topology_summary=g.topology_summary,
            kernel=g.kernel, cpus=g.cpus, class_source=g.source, classes=present, nodes=tuple(g.nodes),
            values=_frozen(values), class_medians=types.MappingProxyType(medians),
            median_matrix=_frozen(g.running.result()),
        )
        return group, outliers, recs


def _usual_settings(recs):
    """{setting: the value most of the group's nodes have} (settings without a clear majority are left
    out)."""
    usual = {}
    for key in SETTINGS:
        counts = Counter(json.dumps(r["settings"].get(key)) for r in recs
                         if r["settings"].get(key) is not None)
        if not counts:
            continue
        (top, n), *rest = counts.most_common(2) + [(None, 0)]
        if n > rest[0][1]:
            usual[key] = json.loads(top)
    return usual


# -- reading a folder ----------------------------------------------------------------------------------------
def _node_from_file(path):
    base = os.path.basename(path)
    for suffix in (ERROR_SUFFIX, ".npz") + TEXT_SUFFIXES:
        if base.lower().endswith(suffix):
            return base[: -len(suffix)]
    return base


def _is_report(name):
    """fleet.json and the files corelat writes beside the nodes' (a Prometheus file): not nodes."""
    return name == REPORT_NAME or name.lower().endswith(".prom")


def folder_files(folder):
    """(sorted node files, other files) of a fleet folder: ``<node>.npz``, ``<node>.error.json``, other
    tools' text matrices (``<node>.csv``, ...); the rest is named in the report, never left out silently."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise unreadable(folder, e, "the folder ") from None
    used, others = [], []
    for n in names:
        if n.startswith(".") or _is_report(n):  # .name.tmp: a save under way
            continue
        path = os.path.join(folder, n)
        if n.lower().endswith((".npz", ERROR_SUFFIX) + TEXT_SUFFIXES) and not os.path.isdir(path):
            used.append(path)
        else:
            others.append(n)
    return used, others


def node_files(folder):
    """Sorted node files of a fleet folder (see :func:`folder_files`)."""
    return folder_files(folder)[0]


def read_error_file(path, with_run=False):
    """(node, error text) from a ``<node>.error.json`` file (and its run id, ``with_run``)."""
    d = json.loads(_files.read_bytes(path, MAX_ERROR_FILE).decode("utf-8"))
    if not isinstance(d, dict) or d.get("kind") != "fleet-node-error":
        raise ValueError("not a corelat fleet error file")
    got = str(d.get("node") or _node_from_file(path)), str(d.get("error", "unknown error"))
    return (*got, d.get("run")) if with_run else got


def _read_text(path, node):
    """Another tool's matrix as a node: ("node", NodeData), or ("note", why it is left out)."""
    try:
        result = _formats.load_text(path)
    except InputError as e:
        return "note", f"{os.path.basename(path)} left out: not a latency matrix ({e})"
    return "node", summarize(result, node=node, file=path)


def _read_path(path):
    """("node", NodeData) | ("error", (node, text)) | ("note", text) for one file of a fleet folder.
    Whatever is wrong with one file is its node's problem, never the fleet's: no exception leaves."""
    node = _node_from_file(path)
    try:
        if path.endswith(ERROR_SUFFIX):
            try:
                return "error", read_error_file(path, with_run=True)
            except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
                return "error", (node, f"unreadable error file ({type(e).__name__}: {e})")
        if path.lower().endswith(TEXT_SUFFIXES):
            return _read_text(path, node)
        nd = read_node_file(path, node)
    except InputError as e:
        return "error", (node, str(e))
    except Exception as e:  # noqa: BLE001 - a forged file (encrypted zip entries, ...)
        return "error", (node, f"unreadable file ({type(e).__name__}: {e})")
    if nd is None:
        return "note", (f"{os.path.basename(path)} holds another kind of result than a node's latency; "
                        "left out")
    return "node", nd


def _add(builder, path, got):
    what, value = got
    if builder.run is not None and what != "note":
        run = value.meta.get("run") if what == "node" else (value[2] if len(value) > 2 else None)
        if run not in builder.run:
            builder.stale.append((builder.run[0], os.path.basename(path)))
            return
    if what == "node":
        builder.add(value)
    elif what == "error":
        builder.add_error(value[0], value[1], path)
    else:
        builder.note(value)


def _add_paths(builder, paths):
    """Read files a few ahead and add them in order, so that memory holds a handful of matrices
    whatever the number of files: many files on worker processes (:mod:`corelat._fleet.readers`:
    a file's checks hold the GIL), fewer on a few threads (zlib and numpy let go of it)."""
    def add(p, got):
        _add(builder, p, got)

    if len(paths) < 2:
        for p in paths:
            add(p, _read_path(p))
    elif len(paths) >= readers.MIN_FILES and readers.workers() > 1:
        readers.read_in_order(paths, _read_path, add,
                              lambda p, why: add(p, ("error", (_node_from_file(p), why))))
    else:
        readers.read_on_threads(paths, _read_path, add)


def _note_others(builder, folder, others):
    if others:
        builder.note(f"{len(others)} file(s) in {folder} are not node results and were left out: "
                     + ", ".join(others[:10]) + (" ..." if len(others) > 10 else ""))


def fleet(
    paths_or_results: Path | LatencyResult | Iterable[Path | LatencyResult],
    expect: Nodes | None = None,
    *,
    name: str | None = None,
    model: str | Path | Mapping[str, str] | None = None,
    all_runs: bool = False,
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
    model : str, path or dict, optional
        The CPU model of nodes whose files do not say (other tools' files): one model for all of
        them, a file of lines ``NODELIST MODEL``, or a dict {node list: model}. Without one such
        files are grouped by CPU count, and several nodes of a group that are off alike are named
        as a sub-group of other hardware (``metadata["subgroups"]``) rather than as outliers.
    all_runs : bool
        Take every file of a folder. By default the files of another run than the folder's last
        one (``corelat fleet`` writes the run into each file) are named and left out.

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
    builder = FleetBuilder(name=name, model=model)
    folders, run = [], None
    for item in items:
        if isinstance(item, LatencyResult):
            builder.add(summarize(item))
        elif isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if os.path.isdir(path):
                folders.append(path)
                used, others = folder_files(path)
                builder.run = None if all_runs else _runs.folder_run(path, used, REPORT_NAME)
                run = run or (builder.run and builder.run[0])
                _add_paths(builder, used)
                builder.run = None
                _note_others(builder, path, others)
            elif os.path.exists(path):
                _add_paths(builder, [path])
            else:
                raise InputFileNotFoundError(f"{path}: no such file or folder")
        else:
            raise InputError(f"cannot read a fleet from {type(item).__name__!r}: give folders, files or "
                             "results")
    md: dict[str, Any] = {"source": folders or "results"}
    if run:
        md["run"] = {"run": run}
    return builder.finish(expect=expect, metadata=md)
