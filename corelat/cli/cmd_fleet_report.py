"""The fleet report of a folder of node results (no MPI needed): groups, outliers, errors, missing nodes.

The folder holds ``<node>.npz`` files (``corelat -o DIR/$(hostname).npz`` from a job array, ssh or
Ansible; or ``corelat fleet``'s output), ``<node>.error.json`` files of nodes that failed, and other
tools' matrices (``<node>.csv``: core-to-core-latency, c2clat). With --baseline REF (a reference made
by 'corelat reference'), every node is also judged against it, lone nodes and groups too small to
judge included.
"""

import argparse
import json
import sys

from corelat._core import prometheus as _prometheus
from corelat._fleet import baseline as _baseline
from corelat._fleet.nodes import fleet
from corelat._fleet.verdict import exit_help, exit_status, write_prometheus

from . import common


def add_report_options(p):
    """Options shared by ``corelat fleet`` and ``corelat fleet-report``."""
    p.add_argument("--model", metavar="MODEL|FILE",
                   help="CPU model of the nodes whose files do not say (other tools' files): one model for "
                        "all, or a file of lines 'NODELIST MODEL' (node[01-08] AMD Ryzen 9 5950X)")
    p.add_argument("--prometheus", metavar="FILE",
                   help="also write the verdict in Prometheus text format (node_exporter's textfile "
                        "collector), atomically")


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = exit_help("fleet-report")
    p.add_argument("folder", metavar="DIR", help="folder of node results")
    p.add_argument("--expect", metavar="NODES",
                   help="nodes that should be there: a file of names or a Slurm-style list like node[01-64]")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    p.add_argument("-o", "--output", metavar="FILE", type=common.output_file,
                   help="save the fleet result (.json or .npz)")
    p.add_argument("--baseline", metavar="REF",
                   help="also judge every node against this reference ('corelat reference FILE... -o "
                        "REF.npz'), lone nodes and small groups included: a node off it exits 3, a node "
                        "it cannot judge 1")
    p.add_argument("--all-runs", action="store_true",
                   help="take every file of the folder (default: files of another run than the folder's "
                        "last one are named and left out)")
    add_report_options(p)


def run(args):

    if args.prometheus:  # before reading hundreds of files: a verdict with nowhere to go is lost
        common.check_output_path(args.prometheus, suffixes=(".prom",))
        _prometheus.require()
    ref = _baseline.reference(args.baseline) if args.baseline else None
    result = fleet(args.folder, expect=args.expect, model=args.model, all_runs=args.all_runs)
    if ref is not None:
        result = _baseline.judge(result, ref, file=args.baseline)
    if args.output:
        result.save(args.output)
    if args.prometheus:
        write_prometheus(result, args.prometheus)
    if args.json:
        json.dump(result.to_dict(arrays=False), sys.stdout, indent=1, allow_nan=False)
        print()
    else:
        print(result.describe())
    if args.output:
        print(f"saved to {args.output}", file=sys.stderr)
    return exit_status(result)
