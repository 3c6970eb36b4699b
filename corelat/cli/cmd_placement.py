"""Measure the latency matrix once per home of the line (every NUMA node by default).

Where a cache line's memory lives changes what a transfer costs on multi-socket and many-die
machines. This measures the matrix with the pair's page on each NUMA node in turn (or on the homes
given with --homes) and says what the home changes per kind of pair.

Examples:
  corelat placement                              every node as the home, kernel cas
  corelat placement --kernel read-modified       a load of a line the other CPU wrote (HITM)
  corelat placement --homes initiator,responder  first touch by either CPU of the pair
  corelat placement -o placement.npz             keep it (corelat report / plot read it)
"""

import argparse
import sys

from corelat._analysis.structure import structure
from corelat._core import text as _text
from corelat._measure import placement as _placement
from corelat._measure.options import SweepOptions
from corelat._results.placement import PlacementResult
from corelat._system.validate import ALL_KERNELS

from . import common, outputs
from .cmd_measure import add_sampling_options, header_text, sampling_options


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = __doc__
    p.add_argument("round_trips", nargs="?", type=int, default=1000, metavar="ROUND_TRIPS",
                   help="round trips per sample (default 1000)")
    p.add_argument("samples", nargs="?", type=int, default=None, metavar="SAMPLES",
                   help="exactly this many samples per pair and home (default: precision-driven)")
    p.add_argument("--cpus", "-c", metavar="SELECTION",
                   help=f"CPUs to measure: {common.CPUS_HELP} (default: all allowed)")
    p.add_argument("--kernel", "-k", default="cas", choices=list(ALL_KERNELS),
                   help="the kernel (default cas)")
    p.add_argument("--homes", default="nodes", metavar="LIST",
                   help="'nodes' (every NUMA node, default) or homes separated by commas: initiator, "
                        "responder, node:K, cpu:K")
    common.add_timeout_argument(p)
    add_sampling_options(p)
    common.add_order_argument(p)
    p.add_argument("--matrices", action=argparse.BooleanOptionalAction, default=True,
                   help="print every home's matrix (default: on)")
    outputs.output_argument(p)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on stderr (default: when stderr is a terminal)")


def run(args):
    paths = outputs.check(args.output)
    progress = common.stderr_is_tty() if args.progress is None else args.progress
    options = SweepOptions.build(args.cpus, kernel=args.kernel, progress=progress,
                                 order=common.measure_order(args.order), **sampling_options(args))
    homes = "nodes" if args.homes.strip() == "nodes" else [h for h in args.homes.split(",") if h.strip()]
    result = _placement.run(options, homes)
    if args.order == "structure":  # one order for every home (they must share it): the first home's groups
        st = structure(result.results[0])
        result = PlacementResult(result.homes, [r.ordered(st) for r in result.results], name=result.name)
    with outputs.save(result, paths):
        _print(result, args)
    return 0


def _print(result, args):
    if args.matrices:
        header = header_text(result.results[0], "median").splitlines()
        print("\n".join(line for line in header if not line.startswith("Home of the line")))
        for label, res in zip(result.homes, result.results):
            print()
            print(f"Home {label}: {res.metadata.get('home', {}).get('method', '')}")
            print(_text.matrix(res, "median"))
        print()
    print(result.table())
    for line in common.homes_warnings_lines(result.homes, result.results):
        print(line, file=sys.stderr)
