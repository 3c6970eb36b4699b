"""Measure what SMT siblings (hyper-threads) cost each other.

For every pair of SMT siblings among the CPUs: the ping-pong latency between them next to the
latency from the same CPU to its nearest CPU on another core, and how much slower a fixed
arithmetic loop (alu) and a fixed L2-resident pointer chase (mem) run when the sibling runs the
same loop. Where no two CPUs are siblings it says so and exits 0.

Examples:
  corelat smt                      every sibling pair of the allowed CPUs
  corelat smt --kernel rw 200 50   load/store kernel, 200 round trips x 50 samples per pair
  corelat smt --cpus 0-3,16-19     only siblings among these CPUs
"""

import argparse
import sys

from corelat._measure import smt as _smt
from corelat._measure.options import SweepOptions
from corelat._measure.smt import MAX_DURATION, MIN_DURATION, SMT_KERNELS
from corelat._system.validate import DEFAULT_PRECISION

from . import common, outputs
from .cmd_measure import add_sampling_options, sampling_options


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = __doc__
    p.add_argument("round_trips", nargs="?", type=int, default=1000, metavar="ROUND_TRIPS",
                   help="round trips per latency sample (default 1000)")
    p.add_argument("samples", nargs="?", type=int, default=None, metavar="SAMPLES",
                   help="exactly this many latency samples per pair (fixed-size); default: sample each "
                        f"pair until its median is known to ±{DEFAULT_PRECISION * 100:g}%%")
    p.add_argument("--cpus", "-c", metavar="SELECTION",
                   help=f"CPUs to consider: {common.CPUS_HELP} (default: all allowed)")
    p.add_argument("--kernel", "-k", default="cas", choices=list(SMT_KERNELS),
                   help="cas: compare-exchange on one line (default); rw: load/store on two lines")
    p.add_argument("--duration", "-d", type=float, default=0.1, metavar="SECONDS",
                   help=f"length of each busy-loop run, {MIN_DURATION:g} to {MAX_DURATION:g} (default 0.1)")
    p.add_argument("--warmup", type=int, default=None, metavar="N",
                   help="latency samples discarded per pair before measuring (default: samples/10)")
    common.add_timeout_argument(p)
    add_sampling_options(p)
    outputs.output_argument(p)
    common.add_json_argument(p)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on stderr (default: when stderr is a terminal)")


def run(args):
    paths = outputs.check(args.output)
    progress = common.stderr_is_tty() if args.progress is None else args.progress
    options = SweepOptions.for_smt(args.cpus, kernel=args.kernel, kernels=SMT_KERNELS, progress=progress,
                                   **sampling_options(args))
    result = _smt.run(options, args.duration)
    with outputs.save(result, paths):
        if args.json:
            common.print_json(result)
        else:
            print(result.table())
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr)
    return 0
