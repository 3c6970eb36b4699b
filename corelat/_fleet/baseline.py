"""A fleet judged against a reference (``corelat fleet-report DIR --baseline REF``).

The groups find a node that is off its peers, but never judge a group of fewer than
:data:`~corelat._results.fleet.MIN_GROUP` nodes: a node with another CPU model, or short of a few
CPUs, is a group of one and passed. Against a reference every node with a result is judged, alone
or not, by :func:`corelat.verify`: each node's file is read again, one at a time (memory holds one
matrix), and its verdict goes into the fleet result's ``metadata["baseline"]``.
"""

from __future__ import annotations

import dataclasses
import os

from corelat._analysis.judge import verify
from corelat._core.errors import InputError
from corelat._results.fleet import BASELINE_NOT_JUDGED, BASELINE_OFF, BASELINE_OK
from corelat._results.load import load
from corelat._results.reference import Reference
from corelat._results.verdict import EXIT_OFF, EXIT_OK


def reference(path, option="--baseline"):
    """The Reference in ``path``; InputError naming ``option`` when it holds another kind of result."""
    ref = load(path)
    if not isinstance(ref, Reference):
        raise InputError(f"{option} {path}: holds a {type(ref).__name__}, not a reference (make one with "
                         "'corelat reference FILE... -o REF.npz')")
    return ref


def _verdict(rec, ref):
    """{"status", "exit_status", "line"} of one node's record: its file judged against ``ref``."""
    node = rec["node"]
    if not rec.get("file"):
        return {"status": BASELINE_NOT_JUDGED, "exit_status": 1,
                "line": f"{node}: not judged (its result is not in a file)"}
    try:
        v = verify(rec["file"], ref, name=node)
    except InputError as e:  # another kernel, a file gone since: this node's, never the fleet's
        return {"status": BASELINE_NOT_JUDGED, "exit_status": 1, "line": f"{node}: not judged ({e})"}
    status = {EXIT_OK: BASELINE_OK, EXIT_OFF: BASELINE_OFF}.get(v.exit_status, BASELINE_NOT_JUDGED)
    return {"status": status, "exit_status": v.exit_status, "line": v.line}


def judge(result, baseline, *, file=None):
    """``result`` (a FleetResult) with every node judged against ``baseline`` (a Reference or the path
    of a reference file; ``file``: where a Reference given was read from). ``metadata["baseline"]``
    holds the reference's ``name`` and ``file`` and, per node, ``{"status": "ok" | "off" |
    "not judged", "exit_status", "line"}``."""
    if isinstance(baseline, Reference):
        ref = baseline
        file = None if file is None else os.fspath(file)
    else:
        file = os.fspath(baseline)
        ref = reference(file)
    name = ref.name or (os.path.splitext(os.path.basename(file))[0] if file else "the reference")
    nodes = {rec["node"]: _verdict(rec, ref) for rec in result.nodes}
    md = dict(result.metadata)
    md["baseline"] = {"reference": name, "file": file, "cpu_model": ref.cpu_model, "cpus": len(ref.cpus),
                      "classes": list(ref.classes), "nodes": nodes}
    return dataclasses.replace(result, metadata=md)
