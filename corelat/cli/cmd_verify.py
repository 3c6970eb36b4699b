"""Judge this machine (or a result FILE) against a reference, and say so in one line.

Without FILE, measures this machine's CPUs that the reference has, with the sampling strategy (a few
pairs of every latency class, not the full sweep), and judges the result; with FILE (a corelat .npz, a
core-to-core-latency CSV, a c2clat file), judges that file and measures nothing. The one line on stdout
is made for 'scontrol update nodename=... state=drain reason=...' and NHC.

Exit status:
  0  every class of the reference is within its tolerance
  3  a class is off, or the machine's shape is not the reference's (CPUs missing, another CPU model)
  1  could not measure, or a class of the reference has no measured pair here
  2  bad input (REF not a reference, a file that cannot be read, an output that cannot be written)
130  interrupted
"""

import argparse
import os
import time

from corelat._analysis.judge import judged_cpus, node_name, verify
from corelat._core import prometheus as _textfile
from corelat._fleet import baseline as _baseline
from corelat._core.errors import InputError, MeasurementError
from corelat._measure import sweep as _sweep
from corelat._results.load import load
from corelat._results.verdict import EXIT_NOT_JUDGED
from corelat._system.sysinfo import hostname as _hostname
from corelat._system.validate import KERNELS, allowed_cpus

from . import common
from .cmd_measure import add_budget_argument

#: The default budget of measuring this machine: inside Slurm's and NHC's usual time-outs for a
#: prolog or a health check (tens of seconds), and every class of a big machine still gets pairs
#: (benchmarks/budget.py: a simulated 128-CPU two-socket machine used 7.7 s of a 30 s budget).
DEFAULT_BUDGET = 20.0

#: Exit status of bad input (the command's own, as every corelat command's).
EXIT_BAD_INPUT = 2


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = __doc__[__doc__.index("Exit status:"):]
    p.add_argument("file", nargs="?", metavar="FILE",
                   help="a result to judge (default: measure this machine)")
    p.add_argument("--against", metavar="REF", required=True,
                   help="the reference (made by 'corelat reference FILE... -o REF.npz')")
    p.add_argument("--name", metavar="NODE",
                   help="what the line calls this machine (default: $SLURMD_NODENAME where set, else the "
                        "host name; with FILE, the host name it records, else its name)")
    p.add_argument("--prometheus", metavar="FILE",
                   help="also write the verdict for node_exporter's textfile collector (a .prom file, "
                        "written atomically, on every exit status)")
    p.add_argument("-o", "--output", metavar="FILE", type=common.output_file,
                   help="save the verdict (.npz; corelat.load reads it back)")
    common.add_json_argument(p, "the verdict")
    p.add_argument("--line", action="store_true",
                   help="print only the verdict's one line (the first line of the text either way)")
    common.add_timeout_argument(p)
    add_budget_argument(p, default=DEFAULT_BUDGET, what="measuring this machine (without FILE)")


def _check_outputs(args):
    """Every output checked before anything is measured: a verdict with nowhere to go is lost."""
    if args.prometheus:
        common.check_output_path(args.prometheus, suffixes=(".prom",))
        _textfile.require()
    if args.output:
        common.check_output_path(args.output, suffixes=(".npz",))


def _reference(path):
    return _baseline.reference(path, option="--against")


def measure_options(ref, args):
    """The keywords of the measurement of this machine: the reference's kernel (cas where it is another
    tool's file, which does not record its kernel), the sampling strategy. The hook where a time budget
    (``budget=``) joins them."""
    kernel = ref.kernel if ref.kernel in KERNELS else "cas"
    return {"kernel": kernel, "strategy": "sample", "timeout": args.timeout, "progress": False,
            "budget": getattr(args, "budget", DEFAULT_BUDGET)}


def _measure(ref, args):
    cpus = judged_cpus(ref, allowed_cpus())
    if len(cpus) < 2:
        raise MeasurementError(f"{len(cpus)} of the reference's {len(ref.cpus)} CPUs can be used here "
                               "(a latency needs two); nothing measured")
    return _sweep.measure(cpus, **measure_options(ref, args))


def run(args):
    _check_outputs(args)
    # Slurm's name for the node where it runs one (a host name may be the FQDN, cn007.cluster.local)
    here = os.environ.get("SLURMD_NODENAME") or _hostname() or "this machine"
    node = args.name or (_stem(args.file) if args.file else here)
    ref_name = _stem(args.against)
    try:
        ref = _reference(args.against)
        ref_name = ref.name or ref_name
        if args.file:
            result = load(args.file)
            node = args.name or node_name(result, args.file)
        else:
            result = _measure(ref, args)
        verdict = verify(result, args.against, name=node)
    except InputError:
        _prometheus(args, node, ref_name, EXIT_BAD_INPUT)
        raise
    except (MeasurementError, OSError, RuntimeError) as e:
        _prometheus(args, node, ref_name, EXIT_NOT_JUDGED)
        print(f"{node}: could not measure ({common.outputs.message(e)})")
        return EXIT_NOT_JUDGED
    _prometheus(args, node, ref_name, verdict.exit_status, verdict)
    if args.output:
        common.save(verdict, args.output)
    if args.json:
        common.print_json(verdict)
    else:
        print(verdict.line if args.line else verdict.describe())
    return verdict.exit_status


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def _prometheus(args, node, reference, status, verdict=None):
    """The verdict in node_exporter's textfile format: per class its ratio to the reference and whether
    it is within; overall the exit status, ok, and when it was judged. Written atomically
    (prometheus_client writes a temporary file beside it and renames it over the old one)."""
    if not args.prometheus:
        return
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    labels = ["node", "reference"]
    ratio = Gauge("corelat_verify_class_ratio", "A latency class's median on this node over the reference's "
                  "centre (NaN: not measured).", [*labels, "class"], registry=registry)
    within = Gauge("corelat_verify_class_within", "1 when the class is within its tolerance, 0 when off or "
                   "not measured.", [*labels, "class"], registry=registry)
    tolerance = Gauge("corelat_verify_class_tolerance", "The tolerance applied to the class (a fraction).",
                      [*labels, "class"], registry=registry)
    for c in verdict.classes if verdict is not None else ():
        key = (node, reference, c.cls)
        ratio.labels(*key).set(c.ratio)
        within.labels(*key).set(1 if c.within else 0)
        tolerance.labels(*key).set(c.tolerance)
    Gauge("corelat_verify_exit_status", "0 within, 3 off (a class or the shape), 1 could not measure or "
          "judge, 2 bad input.", labels, registry=registry).labels(node, reference).set(status)
    Gauge("corelat_verify_ok", "1 when every class is within its tolerance.", labels,
          registry=registry).labels(node, reference).set(1 if status == 0 else 0)
    Gauge("corelat_verify_timestamp_seconds", "When the verdict was made (Unix time).", labels,
          registry=registry).labels(node, reference).set(time.time())
    try:
        _textfile.write(registry, args.prometheus)
    except OSError as e:
        raise InputError(f"cannot write {args.prometheus}: {e.strerror or e}") from None
