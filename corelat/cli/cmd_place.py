"""Where to put K threads: the K CPUs of a result whose pairs are fastest (or, --spread, slowest).

FILE is a corelat .npz, a core-to-core-latency CSV or a c2clat file. Prints the CPUs, the worst,
median and best pair latency among them beside those of the naive choice (the first K CPUs of the
file), and lines to paste: taskset, numactl, OMP_PLACES, srun and corelat's own --cpus. One CPU per
core unless --smt. Exit status: 0, 2 bad input (a file that is not a latency matrix, K too large).
"""

from corelat._analysis.place import pair_latencies, place
from corelat._core.errors import InputTypeError
from corelat._results.latency import LatencyResult
from corelat._results.load import load


def add_arguments(p):
    p.add_argument("file", metavar="FILE", help="a latency result (.npz, core-to-core-latency CSV, c2clat)")
    p.add_argument("--threads", "-k", type=int, required=True, metavar="K", help="how many CPUs to choose")
    p.add_argument("--spread", action="store_true",
                   help="keep the CPUs apart (the smallest pair latency largest: bandwidth) instead of "
                        "close together (the worst pair smallest: threads that share data)")
    p.add_argument("--smt", action="store_true", help="allow SMT siblings of one core among the chosen")


def _ns(v):
    return "n/a" if v != v else f"{v:.1f} ns"


def run(args):
    result = load(args.file)
    if not isinstance(result, LatencyResult):
        raise InputTypeError(f"{args.file} holds a {type(result).__name__}, not a latency matrix")
    chosen = place(result, args.threads, goal="spread" if args.spread else "close", smt=args.smt)
    naive = tuple(result.cpus[:args.threads])
    how = "apart" if args.spread else "close together"
    print(f"{len(chosen.cpus)} CPUs {how} of the {result.n} in {result.name or args.file}"
          f"{'' if args.smt else ', one per core'}:")
    print(f"  CPUs {chosen.selector}")
    rows = [("chosen", (chosen.worst, chosen.median, chosen.best)),
            (f"first {len(naive)}", pair_latencies(result, naive))]
    print(f"  {'':<10} {'worst':>10} {'median':>10} {'best':>10}   (pair latency)")
    for label, stats in rows:
        print(f"  {label:<10} " + " ".join(f"{_ns(v):>10}" for v in stats))
    print()
    for line in (chosen.taskset, chosen.numactl, chosen.omp_places, chosen.srun,
                 f"corelat --cpus {chosen.selector}"):
        print(line)
    return 0
