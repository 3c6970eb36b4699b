"""What a result file says: summary, machine structure, agreement with the OS topology."""

import json

from .. import _text
from .._result import PairFlag


def add_arguments(p):
    p.add_argument("file", metavar="FILE", help="result file: corelat .npz, core-to-core-latency CSV, c2clat table")
    p.add_argument("--statistic", choices=("median", "mean", "min"), default="median",
                   help="per-pair statistic to read (default median)")
    p.add_argument("--matrix", action="store_true", help="also print the latency matrix")
    p.add_argument("--json", action="store_true", help="print the structure as JSON instead of text")


def report_text(result, st, statistic="median", matrix=False):
    md = result.metadata
    lines = [f"{result.name or 'result'}: {result.n} CPUs, kernel {common.kernel_text(result)}"]
    for key, label in (("cpu_model", "CPU"), ("topology_summary", "Topology"), ("hostname", "Host"),
                       ("date", "Date"), ("source", "Source")):
        if md.get(key):
            lines.append(f"{label}: {md[key]}")
    if result.value_only:
        lines.append("One value per pair (imported): no samples, no spread.")
    else:
        lines.append(f"Samples: {common.samples_text(result)}")
    lines.append(common.showing_text(result, statistic))
    lines.append("")
    lines.append(_text.latency_summary(result, statistic))
    lines.append("")
    lines.append("Structure: " + str(st))
    flags = result.flags
    for bit, what in ((PairFlag.BIMODAL, "bimodal"), (PairFlag.UNSTABLE, "unstable"),
                      (PairFlag.MIGRATED, "with migrated samples dropped")):
        count = int(((flags & bit) != 0).sum())
        if count:
            lines.append(f"{count} cells {what}")
    for note in result.notes:
        lines.append(f"note: {note}")
    for w in result.warnings:
        lines.append(f"warning: {w}")
    if matrix:
        lines.append("")
        lines.append(_text.matrix(result, statistic))
    return "\n".join(lines)


def run(args):
    from .._io import load
    from .._structure import structure

    result = load(args.file)
    st = structure(result, statistic=args.statistic)
    if args.json:
        print(json.dumps(st.to_dict(), indent=2))
    else:
        print(report_text(result, st, args.statistic, args.matrix))
    return 0
