"""Make a reference (what a known-good machine looks like) from one result or several of alike machines.

Each FILE is a corelat .npz, a core-to-core-latency CSV or a c2clat file. From one file, each latency
class's centre is its pairs' median; from several (a fleet group), the median of the machines' class
medians, with a tolerance from their spread, never below --floor. 'corelat verify --against REF' judges
a machine against it. Exit status: 0 written, 2 bad input (a file that is not a latency result, machines
that are not alike).
"""

import os

from corelat._analysis.baseline import DEFAULT_FLOOR, reference

from . import common


def percent(text):
    value = float(text.strip().rstrip("%").strip())
    return value / 100.0


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="results of known-good machines of one kind")
    p.add_argument("-o", "--output", metavar="REF.npz", type=common.output_file, required=True,
                   help="the reference file to write")
    p.add_argument("--name", help="what verdicts call the reference (default: the output file's name "
                                  "without .npz)")
    p.add_argument("--floor", type=percent, default=DEFAULT_FLOOR, metavar="PERCENT",
                   help=f"the least tolerance of every class, in percent (default {100 * DEFAULT_FLOOR:g}: "
                        "one quiet machine must not make a razor-thin band)")
    common.add_json_argument(p, "the reference")


def run(args):
    common.check_output_path(args.output, suffixes=(".npz",))
    name = args.name or os.path.splitext(os.path.basename(args.output))[0]
    ref = reference(args.files, floor=args.floor, name=name)
    common.save(ref, args.output)
    if args.json:
        common.print_json(ref)
    else:
        print(ref.describe())
    return 0
