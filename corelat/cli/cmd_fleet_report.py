"""The fleet report of a folder of node results (no MPI needed): groups, outliers, errors, missing nodes.

The folder holds ``<node>.npz`` files (``corelat -o DIR/$(hostname).npz`` from a job array, ssh or
Ansible; or ``corelat fleet``'s output) and ``<node>.error.json`` files of nodes that failed.
Exit status 0 when every node has a result, 1 when a node failed or is missing, 2 for bad input.
"""

import json
import sys

from corelat._fleet.nodes import fleet

from . import common


def add_arguments(p):
    p.add_argument("folder", metavar="DIR", help="folder of node results")
    p.add_argument("--expect", metavar="NODES",
                   help="nodes that should be there: a file of names or a Slurm-style list like node[01-64]")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    p.add_argument("-o", "--output", metavar="FILE", type=common.output_file,
                   help="save the fleet result (.json or .npz)")


def run(args):

    result = fleet(args.folder, expect=args.expect)
    if args.output:
        result.save(args.output)
    if args.json:
        json.dump(result.to_dict(arrays=False), sys.stdout, indent=1, allow_nan=False)
        print()
    else:
        print(result.describe())
    if args.output:
        print(f"saved to {args.output}", file=sys.stderr)
    return 0 if not (result.errors or result.missing) else 1
