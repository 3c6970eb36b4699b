"""Measure what locks, atomics, instructions and system calls cost on a set of CPUs, uncontended
or shared (cpuperf's method and its tests, under its names).

Examples:
  corelat locks                        every test, each thread its own lock, all allowed CPUs
  corelat locks -s -k lock-mutex 0,2   pthread mutexes shared between CPUs 0 and 2 (cpuperf: -s 0,2)
  corelat locks -s -g 0-3 -g 4-7       two groups at once, one shared object per group and test
  corelat locks -k '!inc-*' 0-3        everything but the increments (or -k=-inc-*)
  corelat locks --list                 the tests, the cpuperf test each is, why one cannot run here

CYCLES are timer ticks: on x86 the TSC, counting at the nominal frequency (the MHz column).
sermin = fastest single serialized call; avg = throughput of an unserialized loop; both with the
baseline (an empty call) subtracted, except on the baseline's own line. A sermin marked '~' is at
the timer's resolution (under 20 timer steps); '<x' is under one step.
"""

import argparse
import sys

from corelat._measure.locks import HIDDEN_TESTS, MAX_DURATION, MIN_DURATION, list_tests, locks
from corelat._results.locks_names import old_names

from . import common, outputs


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = __doc__
    p.add_argument("cpus", nargs="*", metavar="CPU",
                   help=f"CPUs, one thread each, one group: {common.CPUS_HELP}; several arguments are "
                        "joined by ',' (a removal stays inside its argument: node:0-smt) (default: all "
                        "allowed)")
    p.add_argument("-g", "--group", action="append", metavar="CPUS",
                   help="a group of CPUs (repeat for several, all run at once; instead of CPU arguments); "
                        "with -s one shared object per group")
    p.add_argument("-k", "-t", "--kernel", action="append", metavar="PATTERN",
                   help="tests to run: names, substrings, globs or words in order (lock-mutex); "
                        "-PATTERN or !PATTERN excludes; comma-separated or repeated (default: all); "
                        "-t is cpuperf's spelling")
    p.add_argument("-s", "--shared", action="store_true",
                   help="one object per test shared by the threads of a group (default: each thread its own)")
    p.add_argument("-d", "--duration", type=float, default=0.2, metavar="SECONDS",
                   help=f"throughput phase per test, {MIN_DURATION:g} to {MAX_DURATION:g} (default 0.2)")
    p.add_argument("--affinity", choices=("cpu", "group"), default="cpu",
                   help="cpu: each thread pinned to its own CPU (default; cpuperf's -a); group: each thread "
                        "on any CPU of its group, the scheduler chooses (cpuperf's default)")
    p.add_argument("-f", "--timer-mhz", type=float, metavar="MHZ",
                   help="the timer's frequency to convert ticks with (cpuperf's -f; default: calibrated)")
    common.add_timeout_argument(p)
    p.add_argument("-v", "--per-thread", action="store_true", help="also one line per thread under each test")
    p.add_argument("-H", "--no-headers", action="store_true", help="the rows only, no headers (for scripts)")
    outputs.output_argument(p)
    common.add_json_argument(p)
    p.add_argument("--list", action="store_true",
                   help="list the tests (with the cpuperf test each is, and why one cannot run here) "
                        "and exit")


def _print_list(headers):
    tests = list_tests(availability=True)
    width = max(len(t[0]) for t in tests)
    if headers:
        print(f"{'NAME':<{width}}  DESC  [cpuperf's test]")
    for name, desc, cpuperf, why in tests:
        same = "" if cpuperf == name else f"  [cpuperf: {cpuperf}]"
        old = f"  (0.1 name: {', '.join(old_names(name))})" if old_names(name) else ""
        print(f"{name:<{width}}  {desc}{same}{old}{f'  (cannot run here: {why})' if why else ''}")


def run(args):
    if args.list:
        _print_list(not args.no_headers)
        return 0
    paths = outputs.check(args.output)
    if args.group and args.cpus:
        print("corelat: error: give CPU arguments or -g groups, not both", file=sys.stderr)
        return 2
    cpus = ",".join(args.cpus) if args.cpus else None
    result = locks(cpus, kernel=args.kernel, shared=args.shared, duration=args.duration, timeout=args.timeout,
                   groups=args.group, affinity=args.affinity, timer_mhz=args.timer_mhz)
    with outputs.save(result, paths):
        if args.json:
            common.print_json(result)
        else:
            print(result.table(per_thread=args.per_thread, headers=not args.no_headers))
    broken = [n for n in result.violations if n not in HIDDEN_TESTS]
    if broken:
        print(f"corelat: error: mutual exclusion violated by {', '.join(broken)} "
              "(the protected counter differs from the calls completed)", file=sys.stderr)
        return 1
    return 0
