"""Measure every node of an MPI job (mpiexec/srun) and report the node that is off.

Run it under MPI: ``mpiexec -n N corelat fleet -o DIR`` or ``srun --ntasks-per-node=1 corelat fleet -o DIR``.
The lowest rank of each node measures it (the others wait), saves ``DIR/<node>.npz`` as soon as it
is done, and rank 0 writes ``DIR/fleet.json`` and prints the fleet report. Exit status: 0 every node
has a result and none is off; 1 a node failed or did not report in time, or no node has a result;
3 outliers and nothing worse; 2 bad input (an output folder or --prometheus file that cannot be
written, before anything is measured) or no mpi4py. Under ``srun``, ``--expect`` defaults to
``SLURM_JOB_NODELIST``.
"""

import argparse
import functools
import math
import os
import shlex
import sys

from corelat._core import files as _files
from corelat._core import prometheus as _prometheus
from corelat._core.errors import InputError
from corelat._fleet.hostlist import MAX_LIST_BYTES, expected_nodes, short_name
from corelat._fleet.nodes import REPORT_NAME, fleet
from corelat._fleet.run import JOIN_TIMEOUT, mpi, run_options
from corelat._results.fleet import load_fleet
from corelat._fleet.verdict import exit_help, exit_status

from . import cmd_measure, common


def add_arguments(p):
    p.formatter_class, p.epilog = argparse.RawDescriptionHelpFormatter, exit_help("fleet")
    cmd_measure.add_measure_options(p)
    cmd_measure.add_budget_argument(p, what="each node's measurement")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="folder for the nodes' results and fleet.json (created if missing; a folder's "
                        "report takes its last run's files)")
    p.add_argument("--rerun", metavar="DIR",
                   help="measure again only the nodes of DIR's last run that --only names, into DIR, and "
                        "report the merged run")
    p.add_argument("--only", metavar="KINDS", default="failed,missing,outliers",
                   help="with --rerun: which nodes, any of failed,missing,outliers (default: all three)")
    p.add_argument("--expect", metavar="NODES",
                   help="nodes that should report: a file of names or a Slurm-style list like node[01-64] "
                        "(default under srun: SLURM_JOB_NODELIST)")
    p.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                   help="how long rank 0 waits for the nodes' results before it ends the job "
                        "(default: the sweep's worst-case time for this node's CPU count plus 5 minutes)")
    p.add_argument("--node-options", metavar="FILE",
                   help="measure options per kind of node: lines 'NODELIST OPTIONS' "
                        "(gpu[01-16] --cpus 0-31); the first line that names a node wins, the command's "
                        "options for the others")
    p.add_argument("--prometheus", metavar="FILE",
                   help="also write the verdict in Prometheus text format (node_exporter's textfile "
                        "collector), atomically")


def check_folder(folder):
    """Refuse an output folder that cannot be written, before minutes of measuring (InputError)."""
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise InputError(f"-o {folder}: not a folder (a file, a device or a FIFO is there); give a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise InputError(f"-o {folder}: cannot create the folder: {e.strerror or e}") from None
    try:
        _files.check_writable(os.path.join(folder, REPORT_NAME))
    except OSError as e:
        raise InputError(f"-o {folder}: cannot write in the folder: {e.strerror or e}") from None


def check_outputs(args):
    """Every output of the job checked before anything is measured (InputError): a verdict with
    nowhere to go is lost, and the nodes' minutes with it."""
    check_folder(args.output)
    if args.prometheus:
        common.check_output_path(args.prometheus, suffixes=(".prom",))
        _prometheus.require()


def node_options(args):
    """[(node names, SweepOptions)] from ``--node-options FILE`` (each line's options over the
    command's), all checked now: a bad line is bad input before anything is measured."""
    if not args.node_options:
        return []
    try:
        text = _files.read_bytes(args.node_options, MAX_LIST_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"--node-options {args.node_options}: cannot read it ({e})") from None
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        sub = argparse.ArgumentParser(prog=f"{args.node_options}, line {k}", add_help=False,
                                      exit_on_error=False)
        cmd_measure.add_measure_options(sub)
        sub.set_defaults(**{a.dest: getattr(args, a.dest) for a in sub._actions if hasattr(args, a.dest)})
        try:
            ns, extra = sub.parse_known_args(words[1:])
        except argparse.ArgumentError as e:
            raise InputError(f"{args.node_options}, line {k}: {e}") from None
        if extra:
            raise InputError(f"{args.node_options}, line {k}: not a measuring option: {' '.join(extra)}")
        ns.budget = getattr(args, "budget", None)  # the command's, for every node
        out.append((set(expected_nodes(words[0]) or ()), cmd_measure.request_options(ns)))
    return out


def options_for(per_node, options, node):
    """The options of the first ``--node-options`` line that names ``node`` (or its host without the
    domain: ``cn001.cluster.local`` takes the line of ``cn001``, as ``--expect`` matches it), else
    ``options``."""
    short = short_name(node)
    for names, o in per_node:
        if node in names or short in names or short in {short_name(n) for n in names}:
            return o
    return options


RERUN_KINDS = ("failed", "missing", "outliers")


def rerun_plan(args, expect):
    """(nodes to measure, runs whose files are kept, expect) of ``--rerun DIR --only KINDS``."""
    kinds = {k.strip() for k in args.only.split(",") if k.strip()}
    if not kinds or kinds - set(RERUN_KINDS):
        raise InputError(f"--only {args.only!r}: give any of {','.join(RERUN_KINDS)}")
    if args.output not in (None, args.rerun):
        raise InputError("--rerun DIR measures into DIR: drop -o")
    if not os.path.isdir(args.rerun):
        raise InputError(f"--rerun {args.rerun}: no such folder")
    if expect is None:  # the nodes the earlier report knew of, missing ones included
        expect = [r["node"] for r in fleet(args.rerun).records()] + _reported_missing(args.rerun)
    prev = fleet(args.rerun, expect=expect)
    only = set()
    only |= {e["node"] for e in prev.errors} if "failed" in kinds else set()
    only |= set(prev.missing) if "missing" in kinds else set()
    only |= {o.node for o in prev.outliers} if "outliers" in kinds else set()
    run = (prev.metadata.get("run") or {}).get("run")
    return only, ([run] if run else []), expect


def _reported_missing(folder):
    try:
        return list(load_fleet(os.path.join(folder, REPORT_NAME)).missing)
    except InputError:  # no report (the job was killed): the files say who took part
        return []


def _expect(args):
    if args.expect is not None:
        return expected_nodes(args.expect)
    nodelist = os.environ.get("SLURM_JOB_NODELIST") if os.environ.get("SLURM_STEP_ID") is not None else None
    return expected_nodes(nodelist) if nodelist else None


def run(args):

    if args.wait is not None and not (args.wait > 0 and math.isfinite(args.wait) and args.wait <= 1e7):
        raise InputError(f"--wait must be a number of seconds between 0 and 1e7 (115 days), "
                         f"got {args.wait:g}")
    options = cmd_measure.request_options(args)
    per_node = node_options(args)
    expect, only, includes = _expect(args), None, []
    if args.rerun:
        only, includes, expect = rerun_plan(args, expect)
        args.output = args.rerun
    if not args.output:
        raise InputError("give -o DIR (or --rerun DIR)")
    check_outputs(args)  # before MPI_Init: a bad output ends every rank at once, nothing measured
    try:  # MPI_Init: bounded by the join time-out, or by --wait when that is shorter
        mpi(JOIN_TIMEOUT if args.wait is None else min(JOIN_TIMEOUT, args.wait))
    except ImportError as e:
        print(f"corelat fleet: {e}", file=sys.stderr)
        return 2
    result = run_options(mpi().COMM_WORLD, options, args.output, args.wait, expect=expect,
                         options_for=functools.partial(options_for, per_node, options), only=only,
                         includes=includes, prometheus=args.prometheus)
    if result is None:  # not rank 0
        return 0
    return exit_status(result)
