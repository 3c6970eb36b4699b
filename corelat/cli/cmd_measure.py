"""Measure the core-to-core latency matrix of this machine."""

import argparse
import os
import sys
import time

from corelat._core import text as _text
from corelat._core.errors import InputError
from corelat._measure import sweep as _sweep
from corelat._measure.options import SweepOptions, check_budget
from corelat._results.matrix import TRIANGLE_STATISTIC, held_statistic
from corelat._system import cpulist as _cpulist
from corelat._system.validate import (
    ALL_KERNELS,
    DEFAULT_MAX_SAMPLES,
    DEFAULT_MAX_TIME_PER_PAIR,
    DEFAULT_PRECISION,
    MAX_SAMPLES,
    STRATEGIES,
    sampling_text,
)

from . import ValueAfterEquals, common, outputs


def add_arguments(p):
    add_measure_options(p)
    add_budget_argument(p)
    p.add_argument("-b", "--bench", type=bench_list, metavar="LIST",
                   help="core-to-core-latency's benchmarks, a comma list measured in turn: 1 = cas, 2 = rw, "
                        "3 = oneway (e.g. -b 1,3; kernel names work too); instead of --kernel")
    # The default of --kernel is said by run (cas): None here tells a --kernel given beside --bench.
    p.set_defaults(kernel=None)
    common.add_order_argument(p)
    common.add_statistic_argument(p, "what the matrix cells show (default: median ± half its 95%% CI) "
                                     "and a CSV holds (default: mean, core-to-core-latency's own)")
    p.set_defaults(statistic=_Unsaid("median"))
    p.add_argument("--csv", action="store_true",
                   help="print the matrix as CSV (core-to-core-latency layout) on stdout; text goes to "
                        "stderr")
    outputs.output_argument(p, data=outputs.DATA_SUFFIXES, what="the result (.csv: the matrix)")
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on stderr (default: when stderr is a terminal)")


def add_measure_options(p):
    """The options that say how to measure (shared with ``corelat fleet``)."""
    p.add_argument("round_trips", nargs="?", type=int, default=1000, metavar="ROUND_TRIPS",
                   help="round trips per sample (default 1000)")
    p.add_argument("samples", nargs="?", type=int, default=None, metavar="SAMPLES",
                   help="exactly this many samples per pair (fixed-size); default: sample each pair "
                        f"until its median is known to ±{DEFAULT_PRECISION * 100:g}%%")
    p.add_argument("--cpus", "--cores", "-c", metavar="SELECTION",
                   help=f"CPUs to measure: {common.CPUS_HELP} (default: all allowed)")
    p.add_argument("--kernel", "-k", default="cas", choices=list(ALL_KERNELS),
                   help="cas: compare-exchange on one line (default); rw: load/store on two lines; "
                        "oneway: timestamped messages, both directions (needs synchronized timers); "
                        "read-clean / read-modified: a load of a line the other CPU read / wrote last "
                        "(MLC's HIT / HITM), both directions")
    p.add_argument("--home", default="initiator", metavar="HOME",
                   help="where each pair's page lives: initiator (first touch by the timing thread, "
                        "default), responder, node:K (NUMA node K) or cpu:K (a third CPU K writes it "
                        "before every sample)")
    add_sampling_options(p)
    p.add_argument("--strategy", choices=STRATEGIES, default="full",
                   help="full: every pair (default); sample: enough pairs per topology block pair, "
                        "the rest estimated")
    p.add_argument("--retest", action=ValueAfterEquals, type=_retest_count, const=True, default=True,
                   metavar="N",
                   help="re-measure unstable pairs at the end of the sweep (the default); --retest=N: at "
                        "most N pairs (default: a tenth of the pairs, worst first). The value needs the '=' "
                        "(--retest N is refused: N would be ROUND_TRIPS)")
    p.add_argument("--no-retest", dest="retest", action="store_false",
                   help="do not re-measure unstable pairs")
    p.add_argument("--warmup", type=int, default=None, metavar="N",
                   help="samples discarded per pair before measuring (default: samples/10)")
    common.add_timeout_argument(p)


def budget_seconds(text):
    """argparse ``type=`` for ``--budget``: a positive, finite number of seconds (else exit 2 with why)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    try:
        return check_budget(seconds)
    except InputError:
        raise argparse.ArgumentTypeError(f"{text}: give a positive, finite number of seconds") from None


def add_budget_argument(p, default=None, what="the whole run"):
    """``--budget SECONDS`` (``corelat``, ``corelat fleet``; ``default`` for a command that has one)."""
    p.add_argument("--budget", type=budget_seconds, default=default, metavar="SECONDS",
                   help=f"seconds {what} may take, set-up included: one pair of every latency class "
                        "first, then more while time remains; what it leaves is estimated (--strategy "
                        "sample) or NaN and flagged NOT_REACHED, and one line says so (default: "
                        + ("no limit" if default is None else f"{default:g}") + ")")


def add_sampling_options(p):
    """How precision-driven sampling (no SAMPLES given) stops (shared with ``corelat smt``)."""
    p.add_argument("--precision", type=float, default=DEFAULT_PRECISION, metavar="FRACTION",
                   help="without SAMPLES: sample each pair until the 95%% CI of its median is within ± this "
                        f"fraction (default {DEFAULT_PRECISION})")
    p.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES, metavar="N",
                   help="without SAMPLES: at most this many samples per pair "
                        f"(default {DEFAULT_MAX_SAMPLES})")
    p.add_argument("--max-time-per-pair", type=float, default=DEFAULT_MAX_TIME_PER_PAIR, metavar="SECONDS",
                   help=f"without SAMPLES: time budget per pair (default {DEFAULT_MAX_TIME_PER_PAIR})")


def refuse_sampling_beside_samples(args):
    """SAMPLES takes exactly that many per pair: said in the command line's words when
    :func:`add_sampling_options` were given beside it, where they would not apply."""
    samples = args.samples
    if samples is None or isinstance(samples, bool) or not 1 <= samples <= MAX_SAMPLES:
        return  # none given, or one the options refuse in their own words
    given = (args.precision, args.max_samples, args.max_time_per_pair)
    if given != (DEFAULT_PRECISION, DEFAULT_MAX_SAMPLES, DEFAULT_MAX_TIME_PER_PAIR):
        raise InputError(f"SAMPLES ({samples}) takes exactly that many per pair: --precision, --max-samples "
                         "and --max-time-per-pair are for precision-driven sampling (no SAMPLES)")


def sampling_options(args):
    """The :class:`~corelat._measure.options.SweepOptions` fields that the sizes and
    :func:`add_sampling_options` set (checked beside SAMPLES first)."""
    refuse_sampling_beside_samples(args)
    return {"round_trips": args.round_trips, "samples": args.samples, "warmup": getattr(args, "warmup", None),
            "timeout": args.timeout, "precision": args.precision, "max_samples": args.max_samples,
            "max_time_per_pair": args.max_time_per_pair}


#: core-to-core-latency's bench numbers (its -b/--bench) and the kernels they are.
BENCHES = {"1": "cas", "2": "rw", "3": "oneway"}


def bench_list(text):
    """argparse ``type=`` for ``-b/--bench``: ``1,3`` (or kernel names) as the kernels, in order."""
    kernels = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        kernel = BENCHES.get(word, word if word in ALL_KERNELS else None)
        if kernel is None:
            shown = word if word.isdigit() else repr(word)
            raise argparse.ArgumentTypeError(
                f"{shown} is not a bench: " + ", ".join(f"{n} = {k}" for n, k in BENCHES.items())
                + f" (or a kernel: {', '.join(ALL_KERNELS)})")
        if kernel not in kernels:
            kernels.append(kernel)
    if not kernels:
        raise argparse.ArgumentTypeError(f"{text!r} names no bench: give e.g. -b 1 or -b 1,3")
    return kernels


def kernels(args):
    """The kernels to measure in turn: ``--bench``'s list, else ``--kernel`` (default cas)."""
    if args.bench and args.kernel is not None:
        raise InputError("-b/--bench and --kernel both choose the kernel: give one of them")
    if len(args.bench or ()) > 1:
        several = f"-b measures {len(args.bench)} ({', '.join(args.bench)}); give one bench per command"
        if args.output:
            raise InputError(f"-o saves one result: {several} to save each")
        if args.json:
            raise InputError(f"--json prints one result: {several}")
    return args.bench or [args.kernel or "cas"]


def _retest_count(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of pairs") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} pairs: give 0 or more")
    return n


def header_text(result, statistic):
    md = result.metadata
    params = md.get("parameters", {})
    timer = md.get("timer", {})
    lines = [
        f"CPU: {md.get('cpu_model') or 'unknown'}",
        f"Num cores: {result.n}",
        cpus_text(result),
        f"Num round trips per samples: {params.get('round_trips')}",
        f"Num samples: {common.samples_text(result)}{_sampling_text(md)}",
        f"Kernel: {result.kernel}: {md.get('kernel_description', '')}",
        f"Timer: {timer.get('name')} at {timer.get('frequency_hz', 0) / 1e6:.1f} MHz",
    ]
    if md.get("topology_summary"):
        lines.insert(1, f"Topology: {md['topology_summary']}")
    home = md.get("home") or {}
    if home.get("requested"):
        lines.append(f"Home of the line: {home['requested']}: {home.get('method', '')}")
    lines.append(common.showing_text(result, statistic))
    return "\n".join(lines)


def cpus_text(result):
    """``CPUs: cores (0-15 of 0-31)``: the selection as written, the CPUs it chose and those it chose
    from (``metadata["cpu_selection"]``; files before it say only the CPUs)."""
    selection = result.metadata.get("cpu_selection") or {}
    chosen, of = _cpulist.format(result.cpus), selection.get("of")
    if selection.get("selector"):
        return f"CPUs: {selection['selector']} ({chosen}" + (f" of {_cpulist.format(of)})" if of else ")")
    if of and sorted(of) == sorted(result.cpus):
        return f"CPUs: {chosen} (every allowed CPU)"
    return f"CPUs: {chosen}" + (f" (of {_cpulist.format(of)})" if of else "")


def _sampling_text(md):
    params, sampling = md.get("parameters", {}), md.get("sampling") or {}
    if sampling.get("mode") != "precision":
        return f" (fixed: {params.get('samples')} asked)"
    return f", {sampling_text(params)} per pair"


def print_warnings(result, file=None):
    """pyperf's way: one WARNING line (with a cause the warnings share, said once), then what was
    seen, each with what to do about it, in the command line's words."""
    for line in common.warnings_lines(result):
        print(line, file=file or sys.stderr)


def request_options(args, make=SweepOptions.request, **fields):
    """The :class:`~corelat._measure.options.SweepOptions` that :func:`add_measure_options` set,
    with ``fields`` (``progress``, ``order``, ...): checked but not read on this machine, or with
    ``make=SweepOptions.build`` read on it too."""
    return make(args.cpus, kernel=args.kernel, home=args.home, strategy=args.strategy, retest=args.retest,
                budget=getattr(args, "budget", None), **sampling_options(args), **fields)


def run(args):
    if args.csv and args.json:
        raise InputError("--csv and --json both print the result on stdout: choose one")
    todo = kernels(args)
    if len(todo) > 1:
        return _run_benches(args, todo)
    args.kernel = todo[0]
    paths = outputs.check(args.output, data=outputs.DATA_SUFFIXES)
    progress = common.stderr_is_tty() if args.progress is None else args.progress
    order = common.measure_order(args.order)
    options = request_options(args, SweepOptions.build, progress=progress, order=order)
    result = _sweep.run(options, spent=process_age() if options.budget is not None else 0.0)
    result = common.in_order(result, args.order)
    with outputs.save(result, paths, save_data=_saver(_csv_statistic(args))) as saved:
        _print(result, args)
        csvs = [outputs.shown(p) for p in saved.paths if p.lower().endswith(".csv")]
        csvs += ["the CSV on stdout"] * args.csv
        if csvs:
            print(f"{' and '.join(csvs)}: {_csv_text(result, _csv_statistic(args))}", file=sys.stderr)
    return nothing_measured(result)


def nothing_measured(result):
    """0, or 1 with a line on stderr where a budget ran out before any pair was measured (a partial
    result is a result: its status is a complete run's)."""
    budget = result.metadata.get("budget")
    if not budget or budget["pairs_measured"] or not budget["pairs"]:
        return 0
    print(f"corelat: nothing measured: the budget of {budget['seconds']:g} s ran out before the first pair "
          f"({budget['used_s']:.2f} s used by set-up); give a larger --budget", file=sys.stderr)
    return 1


def process_age():
    """Seconds since this process started (Python's start-up and imports: a budget counts them, so
    that ``--budget`` holds for the command as a scheduler times it); 0 where it cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in ticks since boot
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


class _Unsaid(str):
    """The default of --statistic (the median the text shows), told apart from a --statistic
    given: a CSV then holds core-to-core-latency's own statistic, the mean."""


def _csv_statistic(args):
    """The statistic a CSV holds: --statistic where given, else None (the layout's: the mean)."""
    return None if isinstance(args.statistic, _Unsaid) else str(args.statistic)


def _run_benches(args, todo):
    """core-to-core-latency's ``-b 1,3``: each bench measured and printed in turn, as it does; the
    options of every one checked on this machine before the first measures (a bad one costs no minutes)."""
    each = [argparse.Namespace(**{**vars(args), "kernel": kernel, "bench": None}) for kernel in todo]
    for one in each:
        request_options(one, SweepOptions.build)
    for i, one in enumerate(each):
        if i:
            print(file=sys.stderr if args.csv else sys.stdout)
        run(one)
    return 0


def _csv_text(result, statistic):
    """What a CSV of ``result`` holds, for the line after the text (the text shows the median
    when no --statistic is given, the CSV core-to-core-latency's mean)."""
    held = held_statistic(result, statistic or TRIANGLE_STATISTIC)
    if held == TRIANGLE_STATISTIC:
        return f"{held} per pair, core-to-core-latency's layout (--statistic NAME writes another)"
    what = f"{held} per pair" if held else "one value per pair, statistic unknown"
    return (f"{what}, said by its first line '# statistic={held or 'unknown'}' (core-to-core-latency's "
            "own files hold means)")


def _saver(statistic):
    def save_data(result, path):
        if path.lower().endswith(".csv"):
            result.to_csv(path, statistic=statistic)
        else:
            result.save(path)
    return save_data


def _print(result, args):
    text = sys.stderr if args.csv or args.json else sys.stdout
    print(header_text(result, args.statistic), file=text)
    print(file=text)
    print(_text.matrix(result, args.statistic), file=text)
    print(file=text)
    if (result.metadata.get("budget") or {}).get("pairs_measured", 1):  # a summary needs a measured pair
        print(_text.latency_summary(result, args.statistic), file=text)
    print_warnings(result)
    if args.csv:
        sys.stdout.write(result.to_csv(statistic=_csv_statistic(args)))
    elif args.json:
        common.print_json(result)
