"""A fleet's verdict for monitoring: the exit status and the Prometheus text format.

Exit status (``corelat fleet`` and ``corelat fleet-report``): :data:`EXIT_OK` when every node has
a result and none is an outlier; :data:`EXIT_PROBLEM` when a node failed or is missing, or no node
has a result at all; :data:`EXIT_OUTLIERS` when the only thing wrong is outliers (a problem wins
over outliers); 2 stays bad input. Judged against a baseline (``--baseline REF``), a node off the
reference counts as an outlier (3) and a node that could not be judged against it (a class of the
reference not measured) as a problem (1).
"""

from __future__ import annotations

import datetime
import math
import os

from corelat._results.fleet import write_bytes

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_OUTLIERS = 3


def exit_status(result):
    """0, 1 or 3 for a :class:`~corelat.FleetResult` (see the module documentation)."""
    s = result.summary()
    if result.errors or result.missing or not result.nodes or s.get("baseline_not_judged"):
        return EXIT_PROBLEM
    return EXIT_OUTLIERS if result.outliers or s.get("baseline_off") else EXIT_OK


# -- Prometheus text format -------------------------------------------------------------------------------
def _label(value):
    """A label value escaped as the text format wants (backslash, double quote, newline)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kw):
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in kw.items()) + "}"


def _number(v):
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def _timestamp(date):
    try:
        return datetime.datetime.fromisoformat(str(date)).timestamp()
    except ValueError:
        return float("nan")


def prometheus_text(result):
    """The fleet's verdict in the Prometheus text exposition format (for node_exporter's textfile
    collector): per node and class its median, its group's median and an outlier flag; counts of
    nodes by status; the run's time and the exit status."""
    flagged = {(o.node, o.cls) for o in result.outliers}
    metrics = {
        "corelat_fleet_class_median_ns": ("gauge", "Median one-way latency of a node's pair class, ns.", []),
        "corelat_fleet_group_class_median_ns": ("gauge", "The node's group's median of that class, ns.", []),
        "corelat_fleet_outlier": ("gauge", "1 when the node's class is an outlier in its group.", []),
    }
    for g in result.groups:
        for k, node in enumerate(g.nodes):
            for c, v in zip(g.classes, g.values[k]):
                lab = _labels(node=node, group=g.id, **{"class": c})
                metrics["corelat_fleet_class_median_ns"][2].append(f"{lab} {_number(v)}")
                metrics["corelat_fleet_group_class_median_ns"][2].append(
                    f"{lab} {_number(g.class_medians[c])}")
                metrics["corelat_fleet_outlier"][2].append(f"{lab} {int((node, c) in flagged)}")
    s = result.summary()
    metrics["corelat_fleet_nodes"] = ("gauge", "Nodes of the fleet by status.", [
        f'{{status="{k}"}} {s[k]}' for k in ("nodes", "outliers", "errors", "missing")])
    metrics["corelat_fleet_failed_nodes"] = ("gauge", "Nodes whose measurement or file failed.",
                                             [f" {s['errors']}"])
    metrics["corelat_fleet_missing_nodes"] = ("gauge", "Expected nodes without a result.",
                                              [f" {s['missing']}"])
    metrics["corelat_fleet_run_timestamp_seconds"] = (
        "gauge", "When the fleet report was made (Unix time).",
        [f" {_number(_timestamp(result.metadata.get('date')))}"])
    metrics["corelat_fleet_exit_status"] = ("gauge", "0 all good, 1 errors or missing nodes, 3 outliers.",
                                            [f" {exit_status(result)}"])
    lines = []
    for name, (kind, help_text, samples) in metrics.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        lines += [name + sample for sample in samples]
    return "\n".join(lines) + "\n"


def write_prometheus(result, path):
    """Write :func:`prometheus_text` to ``path`` atomically (the collector never reads half a file)."""
    write_bytes(os.fspath(path), prometheus_text(result).encode("utf-8"))
