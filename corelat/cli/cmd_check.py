"""Report what on this machine can distort latency measurements (read-only, no root needed)."""

import os

from corelat._core.errors import InputError
from corelat._measure.check import MAX_INTERVAL, MIN_INTERVAL, check
from corelat._system.validate import resolve_cpus

from . import common


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--interval", type=float, default=0.2, metavar="SECONDS",
                   help="how long to watch /proc/stat for busy CPUs (default 0.2, at most 60)")
    p.add_argument("--no-skew", dest="skew", action="store_false",
                   help="do not measure the timer offset between CPUs")
    p.add_argument("--cpus", "-c", metavar="SELECTION",
                   help=f"CPUs for the timer offset check: {common.CPUS_HELP} (default: all allowed)")
    p.add_argument("--root", default="/",
                   help="read sys/ and proc/ below this folder (another machine's copy)")


def run(args):

    if not os.path.isdir(args.root):
        raise InputError(f"--root {args.root!r} is not a folder (it should hold another machine's sys/ and "
                         "proc/)")
    if not MIN_INTERVAL <= args.interval <= MAX_INTERVAL:  # check() says so too, as "interval"
        raise InputError(f"--interval must be between {MIN_INTERVAL:g} and {MAX_INTERVAL:g} seconds, "
                         f"got {args.interval:g}")
    cpus = None
    if args.cpus:

        cpus = resolve_cpus(args.cpus)
    report = check(args.root, interval=args.interval, cpus=cpus, measure_skew=None if args.skew else False)
    if args.json:
        common.print_json(report)
    else:
        print(report.table())
    return 0
