"""Helpers shared by CLI commands: output paths, the terminal."""

import inspect
import json
import os
import sys

import numpy as np

from corelat._analysis.structure import structure
from corelat._core.errors import InputError
from corelat._core.text import counts as fmt_counts
from corelat._core.types import DEFAULT_ORDER, ORDERS, STATISTICS
from corelat._measure.quality import for_cli
from corelat._results.latency import PairFlag
from corelat._system.validate import DEFAULT_TIMEOUT

from . import outputs
from .outputs import check_output_path, output_file  # noqa: F401 (the commands' names for them)

#: ``--cpus`` help (measure, smt, placement, check; the CPU arguments of locks): the grammar of
#: :mod:`corelat._system.selectors` in one breath. Written out in the README's "Choosing CPUs".
CPUS_HELP = ("a CPU list (0,2,4-7; strides 0-15:2) or a topology selection: all; cores (first thread of "
             "each core); smt (the other threads); package, die, node, l3, l2 (first CPU of each); "
             "GROUP:K (every CPU of group K; package:K and node:K are the kernel's numbers, the others "
             "count from 0); joined left to right by + or , (union) and - (removal), e.g. "
             "node:0+node:1-smt; '-' between two numbers is a range. A selection with a word keeps "
             "topology order")


def home_arg(text):
    """``--home`` of report and plot: a home label (``node:1``, ``responder``) or a NUMA node number."""
    text = text.strip()
    return int(text) if text.isdigit() else text


#: Suffixes of the files compare and plot read: a word of --names that ends so is taken for a file.
_RESULT_SUFFIXES = (".npz", ".csv", ".txt", ".json", ".out", ".log", ".dat")


def add_names_argument(p, help):
    """``--names``: labels for the files, as ``--names a b`` or ``--names a,b``, before or after the
    files (see :func:`files_and_names`)."""
    p.add_argument("--names", nargs="+", metavar="NAME", help=help + "; --names a,b or --names a b")


def _a_file(word):
    return word.lower().endswith(_RESULT_SUFFIXES) or os.path.exists(word)


def trailing_files(words, is_value):
    """(values, files): the words an option of ``nargs="+"`` took, less the trailing ones that are
    not its values (``--names a b A.npz B.npz``: argparse gives all four to --names)."""
    words = list(words or ())
    k = len(words)
    while k > 1 and not is_value(words[k - 1]):
        k -= 1
    return words[:k], words[k:]


def files_and_names(args):
    """``args.files`` with the files that ``--names`` swallowed, and the names (None: not given).
    One word with commas is a comma list, the words after it files; otherwise the trailing words
    that are files (a result file's suffix, or a path that exists) are files."""
    names, files = args.names, list(args.files)
    if names:
        if "," in names[0]:
            names, extra = [n.strip() for n in names[0].split(",")], names[1:]
        else:
            names, extra = trailing_files(names, lambda w: not _a_file(w))
        files += extra
    if not files:
        raise InputError("give the result files (FILE ...)")
    return files, names


def add_order_argument(p, what="matrix"):
    """``--order``: every order of :data:`~corelat._core.types.ORDERS`, the one default."""
    p.add_argument("--order", choices=ORDERS, default=DEFAULT_ORDER,
                   help=f"{what} order: CPU ids ascending (os), package/node/L3/core (topology; a file "
                        "without "
                        "one falls back to structure) or the latency groups corelat finds (structure); "
                        "default: "
                        "as measured")


def measure_order(order):
    """The order a measurement takes (``"structure"`` is applied after it: :func:`in_order`)."""
    return None if order == "structure" else order


def in_order(result, order):
    """``result`` in the ``--order`` asked for: the latency structure's order is found by the
    analysis and handed to the result, which never analyses itself."""
    return result.ordered(structure(result)) if order == "structure" else result


def add_statistic_argument(p, help="per-pair statistic to show (default median)"):
    """``--statistic``: every statistic of :data:`~corelat._core.types.STATISTICS`, median by default."""
    p.add_argument("--statistic", choices=STATISTICS, default="median", help=help)


def add_timeout_argument(p):
    """``--timeout``: the one time-out of every measuring command, and its one default."""
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="give up when a thread waits this long for another (a partner, a lock, the others) "
                        f"seeing no progress (default {DEFAULT_TIMEOUT:g})")


def add_output_arguments(p, what="the result"):
    """``-o FILE`` (a corelat .npz that ``corelat.load`` reads back, or a report; once per file) and
    ``--json``."""
    outputs.output_argument(p, what=what)
    add_json_argument(p, what)


def add_json_argument(p, what="the result"):
    """``--json``: the result as JSON on stdout instead of text."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of text")


def print_json(result):
    """``result.to_dict()`` as JSON on stdout: the figures, without the raw arrays where the kind
    can leave them out (``arrays=False``). ``--json`` is for reading the figures; n² pairs × k
    samples of text on a big machine would bury them, and ``-o`` keeps the samples."""
    takes_arrays = "arrays" in inspect.signature(result.to_dict).parameters
    d = result.to_dict(arrays=False) if takes_arrays else result.to_dict()
    json.dump(d, sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def save(result, path):
    """Save ``result`` to ``path`` (or to every path of a list) and say so on stderr."""
    with outputs.save(result, [path] if isinstance(path, str) else path):
        pass


#: What the ± after a value is, per statistic shown (statistics without one show no ±).
PLUS_MINUS = {
    "median": "median ± half-width of its 95% confidence interval",
    "mean": "mean ± standard error",
    "min": "minimum (no ±: the minimum has no interval)",
    "max": "maximum (no ±: the maximum has no interval)",
    "std": "standard deviation of the samples (no ±)",
}


def kernel_text(result):
    """The kernel, and for imported files whose format does not record it, that it is unknown."""
    if result.kernel == "unknown" and result.metadata.get("source"):
        return f"unknown (imported {result.metadata['source']}, which does not record it)"
    return result.kernel


def measured_text(result):
    """What the values are: round-trip time / 2, or the one-way kernel's timed message."""
    md = result.metadata
    if result.kernel in ("read-clean", "read-modified"):
        return "the cost of one load in ns (row CPU holds the lines, column CPU loads them)"
    if not md.get("symmetric", True):
        return ("one-way latency in ns: receiver's timer at arrival - sender's timer at sending "
                "(row CPU sends, column CPU receives)")
    if result.value_only:
        said = md.get("statistic") or "statistic unknown"
        return f"one value per pair in ns, as the file holds it ({said})"
    return "latency = round-trip time / 2 in ns"


def showing_text(result, statistic):
    """The header's ``Showing ...`` line: what was measured, and which statistic (and ±) is shown."""
    if result.value_only:
        return f"Showing {measured_text(result)}; no samples, so no ±"
    return f"Showing {measured_text(result)}: {PLUS_MINUS.get(statistic, statistic)}"


def samples_text(result):
    """Samples per pair as the statistics count them: ``98-106 (median 104) per pair``.

    Counted are the samples each measured pair keeps (not warm-ups, not samples dropped because a
    thread left its CPU, not the first attempts of re-tested pairs), so this is what the ± rests on."""

    measured = (np.asarray(result.flags) & PairFlag.MEASURED) != 0
    counts = np.asarray(result.count)[measured]
    return f"{fmt_counts(counts[counts > 0])} per pair"


def warnings_lines(result):
    """Notes, then the WARNING block, in the command line's words; a shared cause said once."""

    lines = [f"note: {for_cli(n)}" for n in result.notes]
    if result.warnings:
        cause = result.metadata.get("warning_cause")
        lines.append("WARNING: this result may be unreliable" + (f" ({cause})" if cause else ""))
        lines += [f"* {for_cli(w)}" for w in result.warnings]
    return lines


def homes_warnings_lines(homes, results):
    """Notes and the WARNING block of a placement run's results, in the command line's words: what
    every home shares said once, the rest after its home (``* [node:1] ...``)."""

    def said_once(kind):
        texts = [[for_cli(t) for t in getattr(r, kind)] for r in results]
        shared = [t for t in texts[0] if all(t in ts for ts in texts[1:])]
        return shared + [f"[{h}] {t}" for h, ts in zip(homes, texts) for t in ts if t not in shared]

    lines = [f"note: {n}" for n in said_once("notes")]
    warnings = said_once("warnings")
    if warnings:
        causes = {r.metadata.get("warning_cause") for r in results if r.warnings}
        cause = causes.pop() if len(causes) == 1 else None
        lines.append("WARNING: this result may be unreliable" + (f" ({cause})" if cause else ""))
        lines += [f"* {w}" for w in warnings]
    return lines


def stderr_is_tty():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
