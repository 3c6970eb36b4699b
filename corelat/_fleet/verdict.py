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

from corelat._core import prometheus as _prometheus
from corelat._results.fleet import BASELINE_NOT_JUDGED, BASELINE_OFF, MIN_GROUP

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_OUTLIERS = 3

_FLEET_HELP = """\
Exit status:
  0  every node has a result and none is an outlier in its group
  3  a node is an outlier in its group, and nothing worse
  1  a node failed or did not report in time, or no node has a result
  2  bad input (an output folder or --prometheus file that cannot be written, checked before
     anything is measured), or no mpi4py
130  interrupted

Any other status is the MPI launcher's: the job was ended from outside, and this run's verdict was
not made. A rank killed (kill -9, the OOM killer): 9 under MPICH's mpiexec, 137 (128 + 9) under Open
MPI's mpirun and srun. The job sent SIGTERM (scancel, a time limit): 143 (128 + 15) or 15; rank 0
writes a partial fleet.json and --prometheus file first. 'corelat fleet-report DIR' then gives the
verdict of what the folder holds: exit 1, naming the nodes of the run that have no result; with
--baseline REF it also judges every node against a reference.
"""

_REPORT_HELP = """\
Exit status:
  0  every node has a result, none is an outlier in its group, none is off the --baseline
  3  a node is an outlier in its group or off the --baseline, and nothing worse
  1  a node failed or is missing, no node has a result, or the --baseline could not judge a
     node (a class of the reference not measured)
  2  bad input (a folder, node list or reference that cannot be read, an output that cannot be
     written)
130  interrupted
"""


def exit_help(command):
    """The exit codes of ``corelat fleet`` or ``corelat fleet-report``, for their ``--help``."""
    return _FLEET_HELP if command == "fleet" else _REPORT_HELP


def exit_status(result):
    """0, 1 or 3 for a :class:`~corelat.FleetResult` (see the module documentation)."""
    s = result.summary()
    if result.errors or result.missing or not result.nodes or s.get("baseline_not_judged"):
        return EXIT_PROBLEM
    return EXIT_OUTLIERS if result.outliers or s.get("baseline_off") else EXIT_OK


# -- Prometheus text format -------------------------------------------------------------------------------
#: A node's status in the Prometheus file: one series per node and status, 1 for the node's.
NODE_OK, NODE_OFF, NODE_FAILED, NODE_MISSING, NODE_NOT_JUDGED = "ok", "off", "failed", "missing", "not judged"
NODE_STATUSES = (NODE_OK, NODE_OFF, NODE_FAILED, NODE_MISSING, NODE_NOT_JUDGED)


def node_statuses(result):
    """{node: status} of every node of the fleet, failed and missing ones included: ``off`` (an
    outlier in its group, or off the baseline), ``failed``, ``missing``, ``not judged`` (against the
    baseline, a class of the reference not measured; without one, a node of a group of fewer than
    ``min_group`` nodes, which no peer judges) or ``ok``."""
    out = {}
    baseline = result.baseline
    verdicts = (baseline or {}).get("nodes", {})
    flagged = {o.node for o in result.outliers}
    small = {n for g in result.groups if len(g.nodes) < result.metadata.get("min_group", MIN_GROUP)
             for n in g.nodes}
    for rec in result.nodes:
        node = rec["node"]
        judged = (verdicts.get(node) or {}).get("status")
        if node in flagged or judged == BASELINE_OFF:
            out[node] = NODE_OFF
        elif judged == BASELINE_NOT_JUDGED or (baseline is None and node in small):
            out[node] = NODE_NOT_JUDGED
        else:
            out[node] = NODE_OK
    for e in result.errors:
        out[e["node"]] = NODE_FAILED
    for node in result.missing:
        out.setdefault(node, NODE_MISSING)
    return out


def _timestamp(date):
    try:
        return datetime.datetime.fromisoformat(str(date)).timestamp()
    except ValueError:
        return float("nan")


def registry(result):
    """The fleet's verdict as a ``prometheus_client`` CollectorRegistry (for node_exporter's textfile
    collector): per node and class its median, its group's median and an outlier flag; per node its
    status (:func:`node_statuses`, labelled with the baseline's reference where there is one); counts
    of nodes by status; the run's time and the exit status."""
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    flagged = {(o.node, o.cls) for o in result.outliers}
    per_class = ["node", "group", "class"]
    median = Gauge("corelat_fleet_class_median_ns", "Median one-way latency of a node's pair class, ns.",
                   per_class, registry=reg)
    group_median = Gauge("corelat_fleet_group_class_median_ns",
                         "The node's group's median of that class, ns.", per_class, registry=reg)
    outlier = Gauge("corelat_fleet_outlier", "1 when the node's class is an outlier in its group.", per_class,
                    registry=reg)
    for g in result.groups:
        for k, node in enumerate(g.nodes):
            for c, v in zip(g.classes, g.values[k]):
                key = (node, str(g.id), c)
                median.labels(*key).set(float(v))
                group_median.labels(*key).set(float(g.class_medians[c]))
                outlier.labels(*key).set(int((node, c) in flagged))
    baseline = result.baseline
    labels = ["node", "status"] + (["reference"] if baseline is not None else [])
    extra = (str(baseline.get("reference")),) if baseline is not None else ()
    status = Gauge("corelat_fleet_node_status", "1 for the node's status: ok, off (an outlier in its group "
                   "or off the baseline), failed, missing, not judged (a class of the baseline not "
                   "measured; without a baseline, a group too small to judge).", labels, registry=reg)
    for node, got in node_statuses(result).items():
        for st in NODE_STATUSES:
            status.labels(node, st, *extra).set(int(st == got))
    s = result.summary()
    nodes = Gauge("corelat_fleet_nodes", "Nodes of the fleet by status.", ["status"], registry=reg)
    for k in ("nodes", "outliers", "errors", "missing"):
        nodes.labels(k).set(s[k])
    Gauge("corelat_fleet_failed_nodes", "Nodes whose measurement or file failed.",
          registry=reg).set(s["errors"])
    Gauge("corelat_fleet_missing_nodes", "Expected nodes without a result.", registry=reg).set(s["missing"])
    Gauge("corelat_fleet_run_timestamp_seconds", "When the fleet report was made (Unix time).",
          registry=reg).set(_timestamp(result.metadata.get("date")))
    Gauge("corelat_fleet_exit_status", "0 all good, 1 errors, missing or not judged nodes, 3 outliers or "
          "nodes off the baseline.", registry=reg).set(exit_status(result))
    return reg


def prometheus_text(result):
    """The fleet's verdict in the Prometheus text exposition format (see :func:`registry`)."""
    return _prometheus.text(registry(result))


def write_prometheus(result, path):
    """Write :func:`prometheus_text` to ``path`` atomically (the collector never reads half a file); a
    SaveError where it cannot, an InputError naming the pip command where prometheus_client is missing."""
    _prometheus.require()
    _prometheus.write(registry(result), path)
