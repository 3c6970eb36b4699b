"""What a result file says: summary, machine structure, agreement with the OS topology; or the report
to share, one offline HTML page or a PDF (``--html``, ``--pdf``) of a result, several compared, a fleet."""

import json
import os
import sys

import numpy as np

from corelat._analysis.structure import structure
from corelat._core import text as _text
from corelat._core.errors import InputError, MissingDependencyError
from corelat._core.stats import median_err
from corelat._fleet.nodes import fleet
from corelat._measure.quality import _pairs
from corelat._report import check_statistic_held, write_report
from corelat._results.latency import LatencyResult, PairFlag
from corelat._results.load import load
from corelat._results.placement import PlacementResult
from corelat._system.home import one_home

from . import common


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="result file: corelat .npz, core-to-core-latency CSV or text output, c2clat table, "
                        "a fleet.json or a folder of node results; with --html or --pdf also several "
                        "files (compared)")
    p.add_argument("--html", metavar="OUT", type=common.output_file,
                   help="write the report as one self-contained HTML page (opens offline, e.g. from a mail)")
    p.add_argument("--pdf", metavar="OUT", type=common.output_file,
                   help="write the report as a PDF (same sections, paginated)")
    p.add_argument("--paper", choices=("a4", "letter"), default="a4", help="the PDF's page size (default a4)")
    common.add_statistic_argument(p, "per-pair statistic to read (default median)")
    p.add_argument("--matrix", action="store_true", help="also print the latency matrix")
    p.add_argument("--pairs", action="store_true",
                   help="also list the flagged pairs (bimodal, unstable, re-tested with both attempts, "
                        "estimated)")
    p.add_argument("--json", action="store_true", help="print the structure as JSON instead of text")
    p.add_argument("--home", metavar="HOME", type=common.home_arg,
                   help="for a file of `corelat placement`: report this home's matrix in full (node:K, K, "
                        "responder, ...); default: what the homes change and each home's structure")


#: Flags worth a line in --pairs, in the order they are listed.
_FLAG_WORDS = ((PairFlag.BIMODAL, "bimodal"), (PairFlag.UNSTABLE, "unstable"),
               (PairFlag.MIGRATED, "samples dropped (thread off its CPU)"),
               (PairFlag.TARGET_NOT_MET, "precision not reached"), (PairFlag.RETESTED, "re-tested"),
               (PairFlag.ESTIMATED, "estimated"))


def _flag_counts(result):

    out = []
    for bit, what in _FLAG_WORDS[:3]:
        pairs = _pairs(result.flags, bit, result.cpus)
        if pairs:
            out.append(f"{len(pairs)} CPU pair{'s' if len(pairs) != 1 else ''} {what}")
    return out


def _words(flag):
    return ", ".join(what for bit, what in _FLAG_WORDS if flag & bit)


def pairs_text(result, statistic="median"):
    """One line per pair with a flag worth a look: its value now, and its first attempt if re-tested."""
    m = result.statistic(statistic)
    e = {"median": result.err, "mean": result.sem}.get(statistic)
    first, first_flags = result.extras.get("first_attempt"), result.extras.get("first_flags")
    source = result.extras.get("estimated_from")
    symmetric = result.metadata.get("symmetric", True)
    arrow = "-" if symmetric else "→"
    lines = []
    for i in range(result.n):
        for j in range(result.n):
            f = int(result.flags[i, j])
            if i == j or (symmetric and j > i) or not f & sum(bit for bit, _ in _FLAG_WORDS):
                continue
            pair = f"{result.cpus[i]}{arrow}{result.cpus[j]}"
            if f & PairFlag.ESTIMATED:
                a, b = (int(x) for x in source[i, j]) if source is not None else (-1, -1)
                lines.append(f"  {pair}: estimated" + (f", copied from {a}{arrow}{b}" if a >= 0 else ""))
                continue
            value = _text.value_err(float(m[i, j]), None if e is None else float(e[i, j]))
            line = f"  {pair}: {_words(f)}: {value} ns ({int(result.count[i, j])} samples)"
            if f & PairFlag.RETESTED and first is not None:
                s = first[i, j]
                s = s[~np.isnan(s)]
                if s.size:
                    fm, fe = float(np.median(s)), float(median_err(s[np.newaxis])[0])
                    why = _words(int(first_flags[i, j])) if first_flags is not None else ""
                    line += (f"; first attempt {_text.value_err(fm, fe)} ns "
                             f"({s.size} samples{', ' + why if why else ''})")
            lines.append(line)
    if not lines:
        return "No pair is flagged: none bimodal, unstable, re-tested, estimated or short of its precision."
    return ("Pairs with a flag (" + statistic + "; first attempts of re-tested pairs beside them):\n"
            + "\n".join(lines))


def report_text(result, st, statistic="median", matrix=False, pairs=False):
    md = result.metadata
    lines = [f"{result.name or 'result'}: {result.n} CPUs, kernel {common.kernel_text(result)}"]
    for key, label in (("cpu_model", "CPU"), ("topology_summary", "Topology"), ("hostname", "Host"),
                       ("date", "Date"), ("source", "Source")):
        if md.get(key):
            lines.append(f"{label}: {md[key]}")
    home = md.get("home") or {}
    if home.get("requested", "initiator") != "initiator":
        lines.append(f"Home of the line: {home['requested']}: {home.get('method', '')}")
    if result.value_only:
        lines.append("One value per pair (imported): no samples, no spread.")
    else:
        lines.append(f"Samples: {common.samples_text(result)}")
    lines.append(common.showing_text(result, statistic))
    lines.append("")
    lines.append(_text.latency_summary(result, statistic))
    lines.append("")
    lines.append("Structure: " + st.describe())
    lines += _flag_counts(result)
    lines += common.warnings_lines(result)
    if pairs:
        lines.append("")
        lines.append(pairs_text(result, statistic))
    if matrix:
        lines.append("")
        lines.append(_text.matrix(result, statistic))
    return "\n".join(lines)


def _to_dict(result):
    try:
        return result.to_dict(arrays=False)  # a fleet's tables and matrices are not for the terminal
    except TypeError:
        return result.to_dict()


def placement_text(result, structures, statistic="median"):
    """A placement file: what the homes change, then each home's structure and warnings."""
    lines = [result.describe(), ""]
    for label in result.homes:
        lines.append(f"Home {label} ({statistic}): {structures[label]}")
    lines += common.homes_warnings_lines(result.homes, result.results)
    lines.append("")
    lines.append("One home in full: corelat report FILE --home HOME (e.g. --home " + result.homes[0] + ")")
    return "\n".join(lines)


def _write_reports(args):
    """--html/--pdf: the report of the files (one result, several compared, or a fleet)."""
    for out, suffixes in ((args.html, (".html", ".htm")), (args.pdf, (".pdf",))):
        if out is not None:
            common.check_output_path(out, suffixes=suffixes)
    what = args.files[0] if len(args.files) == 1 else args.files
    if isinstance(what, str) and not os.path.isdir(what):
        what = load(what)  # once, for both formats
    for out in (args.html, args.pdf):
        if out is not None:
            try:
                write_report(what, out, statistic=args.statistic, paper=args.paper)
            except MissingDependencyError as e:  # exit 2, like `corelat plot` without matplotlib
                print(f"corelat: error: {' '.join(str(e).split())}", file=sys.stderr)
                return 2
            print(f"report written to {out}", file=sys.stderr)
    return 0


def run(args):

    if args.html is not None or args.pdf is not None:
        return _write_reports(args)
    if len(args.files) > 1:
        raise InputError("several files make a report to share: give --html OUT or --pdf OUT "
                         "(or compare them in the terminal with corelat compare)")
    # A folder of node results is read as --html reads it: a fleet (what corelat fleet-report prints).
    result = fleet(args.files[0]) if os.path.isdir(args.files[0]) else load(args.files[0])
    check_statistic_held(result, args.statistic)
    if isinstance(result, PlacementResult) and args.home is None:
        sts = {label: structure(res, statistic=args.statistic)
               for label, res in zip(result.homes, result.results)}
        if args.json:
            print(json.dumps({"summary": result.summary(),
                              "homes": {k: st.to_dict() for k, st in sts.items()}},
                             indent=2))
        else:
            print(placement_text(result, sts, args.statistic))
        return 0
    if not isinstance(result, (LatencyResult, PlacementResult)):  # a fleet report, SMT or lock result
        if args.json:
            print(json.dumps(_to_dict(result), indent=2, allow_nan=False))
        else:
            print(result.describe())
        return 0
    result = one_home(result, args.home)
    st = structure(result, statistic=args.statistic)
    if args.json:
        print(json.dumps(st.to_dict(), indent=2))
    else:
        print(report_text(result, st, args.statistic, pairs=args.pairs))
        if args.matrix:  # line by line: a 4,000-CPU matrix's text is never held whole
            print()
            for line in _text.matrix_lines(result, args.statistic):
                print(line)
    return 0
