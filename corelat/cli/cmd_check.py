"""Report what on this machine can distort latency measurements (read-only, no root needed)."""

import json
import sys

from .._check import INFO, OK, UNKNOWN, WARN, check

_MARK = {OK: "ok", INFO: "--", WARN: "!!", UNKNOWN: "??"}


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.add_argument("--interval", type=float, default=0.2, metavar="SECONDS",
                   help="how long to watch /proc/stat for busy CPUs (default 0.2)")
    p.add_argument("--no-skew", dest="skew", action="store_false",
                   help="do not measure the timer offset between CPUs")
    p.add_argument("--cpus", "-c", metavar="LIST", help="CPUs for the timer offset check (default: all allowed)")
    p.add_argument("--root", default="/", help="read sys/ and proc/ below this folder (another machine's copy)")


def report_text(items):
    """The report as text: one line per item with its mark, then why it matters."""
    width = max(len(i.name) for i in items)
    lines = ["corelat check: what can distort latency measurements here",
             "(ok: fine, --: worth knowing, !!: likely to distort results, ??: could not tell)", ""]
    for i in items:
        lines.append(f"{_MARK[i.status]} {i.name:<{width}}  {i.found}")
        lines.append(f"   {'':<{width}}  {i.why}")
    bad = [i.name for i in items if i.matters]
    lines.append("")
    lines.append(f"{len(bad)} item(s) likely to distort results: {', '.join(bad)}" if bad
                 else "nothing found that is likely to distort results")
    return "\n".join(lines)


def run(args):
    from .._errors import InputError

    if not 0 < args.interval <= 60:
        raise InputError(f"--interval must be between 0 and 60 seconds, got {args.interval}")
    cpus = None
    if args.cpus:
        from .._validate import resolve_cpus

        cpus = resolve_cpus(args.cpus)
    items = check(args.root, interval=args.interval, cpus=cpus,
                  measure_skew=None if args.skew else False)
    if args.json:
        json.dump([i.to_dict() for i in items], sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(report_text(items))
    return 0
