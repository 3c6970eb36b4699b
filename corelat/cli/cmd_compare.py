"""Compare result files side by side (corelat .npz, core-to-core-latency CSV, c2clat tables)."""

import json

from corelat._analysis.compare import compare

from . import common


def add_arguments(p):
    # "*": the files that --names swallowed are given back by common.files_and_names
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="result files to compare (the first is the reference)")
    common.add_names_argument(p, "labels for the files, in order (default: their names)")
    common.add_statistic_argument(p, "per-pair statistic to compare (default median)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON records")


def run(args):

    files, names = common.files_and_names(args)
    cmp_ = compare(*files, names=names, statistic=args.statistic)
    if args.json:
        print(json.dumps(cmp_.to_dict(), indent=2))
    else:
        print(cmp_.describe())
    return 0
