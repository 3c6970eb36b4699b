"""Measure what locks and atomics cost on a set of CPUs, uncontended or shared (cpuperf's method).

Examples:
  corelat locks                     every test, each thread its own lock, all allowed CPUs
  corelat locks -s -k lock-mutex 0,2   pthread mutexes shared between CPUs 0 and 2
  corelat locks -k '!inc-*' 0-3     everything but the atomic increments (or -k=-inc-*)

CYCLES are timer ticks: on x86 the TSC, counting at the nominal frequency (the MHz column).
sermin = fastest single serialized call; avg = throughput of an unserialized loop; both with the
baseline (an empty call) subtracted, except on the baseline's own line.
"""

import argparse
import sys

from corelat._measure.locks import HIDDEN_TESTS, MAX_DURATION, MIN_DURATION, list_tests, locks

from . import common, outputs


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = __doc__
    p.add_argument("cpus", nargs="*", metavar="CPU",
                   help=f"CPUs, one thread each: {common.CPUS_HELP}; several arguments are joined by ',' "
                        "(a removal stays inside its argument: node:0-smt) (default: all allowed)")
    p.add_argument("-k", "--kernel", action="append", metavar="PATTERN",
                   help="kernels to test: names, substrings, globs or words in order (lock-mutex); "
                        "-PATTERN or !PATTERN excludes; comma-separated or repeated (default: all)")
    p.add_argument("-s", "--shared", action="store_true",
                   help="one lock per test shared by all threads (default: each thread its own)")
    p.add_argument("-d", "--duration", type=float, default=0.2, metavar="SECONDS",
                   help=f"throughput phase per test, {MIN_DURATION:g} to {MAX_DURATION:g} (default 0.2)")
    common.add_timeout_argument(p)
    p.add_argument("--per-thread", action="store_true", help="also one line per thread under each test")
    outputs.output_argument(p)
    common.add_json_argument(p)
    p.add_argument("--list", action="store_true", help="list the tests and exit")


def run(args):
    if args.list:
        tests = list_tests()
        width = max(len(n) for n, _ in tests)
        for name, desc in tests:
            print(f"{name:<{width}}  {desc}")
        return 0
    paths = outputs.check(args.output)
    cpus = ",".join(args.cpus) if args.cpus else None
    result = locks(cpus, kernel=args.kernel, shared=args.shared, duration=args.duration, timeout=args.timeout)
    with outputs.save(result, paths):
        if args.json:
            common.print_json(result)
        else:
            print(result.table(per_thread=args.per_thread))
    broken = [n for n in result.violations if n not in HIDDEN_TESTS]
    if broken:
        print(f"corelat: error: mutual exclusion violated by {', '.join(broken)} "
              "(the protected counter differs from the calls completed)", file=sys.stderr)
        return 1
    return 0
