"""Measure every node of an MPI job (mpiexec/srun) and report the node that is off.

Run it under MPI: ``mpiexec -n N corelat fleet -o DIR`` or ``srun --ntasks-per-node=1 corelat fleet -o DIR``.
The lowest rank of each node measures it (the others wait), saves ``DIR/<node>.npz`` as soon as it
is done, and rank 0 writes ``DIR/fleet.json`` and prints the fleet report. Exit status 0 when every
node has a result, 1 when a node failed or did not report in time, 2 for bad input or no mpi4py.
"""

import math
import sys

from corelat._core.errors import InputError
from corelat._fleet.hostlist import expected_nodes
from corelat._fleet.run import mpi, run_options

from . import cmd_measure


def add_arguments(p):
    cmd_measure.add_measure_options(p)
    p.add_argument("-o", "--output", metavar="DIR", required=True,
                   help="folder for the nodes' results and fleet.json (created if missing; use a new one "
                        "per run)")
    p.add_argument("--expect", metavar="NODES",
                   help="nodes that should report: a file of names or a Slurm-style list like node[01-64]")
    p.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                   help="how long rank 0 waits for the nodes' results before it ends the job "
                        "(default: the sweep's worst-case time for this node's CPU count plus 5 minutes)")


def run(args):

    try:
        mpi()
    except ImportError as e:
        print(f"corelat fleet: {e}", file=sys.stderr)
        return 2

    if args.wait is not None and not (args.wait > 0 and math.isfinite(args.wait)):
        raise InputError(f"--wait must be a positive number of seconds, got {args.wait:g}")
    options = cmd_measure.request_options(args)
    expect = expected_nodes(args.expect)
    result = run_options(mpi().COMM_WORLD, options, args.output, args.wait, expect=expect)
    if result is None:  # not rank 0
        return 0
    return 0 if not (result.errors or result.missing) else 1
