"""Draw a result's heatmap (or its sample distributions) to an image file; several files side by side."""

import contextlib
import math
import os
import re
import sys

from corelat._analysis.compare import labels_for
from corelat._core import files as _atomic
from corelat._core.errors import InputError
from corelat._core.extras import install_command
from corelat._fleet.nodes import fleet
from corelat._report import check_statistic_held
from corelat._results.fleet import FleetResult
from corelat._results.load import load
from corelat._results.placement import PlacementResult
from corelat._system.home import one_home

from . import common, outputs

_FORMATS = (".png", ".svg", ".pdf")


def add_arguments(p):
    # "*": the files that --names or --pairs swallowed are given back (see _files)
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="result file(s): corelat .npz, core-to-core-latency CSV, c2clat table, a fleet.json "
                        "or a folder of node results; several files are drawn side by side on one colour "
                        "scale")
    p.add_argument("-o", "--output", metavar="OUT", type=common.output_file,
                   help="image to write (.png, .svg or .pdf; default: the input's name with .png, in the "
                        "current folder, e.g. a.png for a.npz; a file there already is not replaced)")
    p.add_argument("--kind", choices=("heatmap", "violin", "hist"), default="heatmap",
                   help="heatmap (default), or per-pair sample distributions as violins or histograms")
    common.add_order_argument(p, "heatmap")
    common.add_statistic_argument(p, "what the heatmap cells show (default median)")
    p.add_argument("--annotate", action="store_true", default=None,
                   help="write every cell's value (default: only where cells are big enough)")
    p.add_argument("--no-annotate", dest="annotate", action="store_false", help="never write cell values")
    p.add_argument("--pairs", nargs="+", metavar="A,B",
                   help="CPU pairs for --kind violin/hist, e.g. 0,1 0,8 (default: a chosen spread)")
    common.add_names_argument(p, "titles for the files, in order (default: their names; file names where two "
                                 "collide)")
    p.add_argument("--dpi", type=int, default=110, help="resolution of PNG output (default 110)")
    p.add_argument("--home", metavar="HOME", type=common.home_arg,
                   help="for a file of `corelat placement`: draw this home only (node:K, K, responder, ...); "
                        "default: every home side by side")
    p.add_argument("--node", metavar="NAME",
                   help="for a fleet report (fleet.json): draw this node's matrix over its group's median "
                        "(default: the fleet's heat table)")


_PAIR = re.compile(r"\s*\d+\s*,\s*\d+\s*$")


def _files(args):
    """The files, with those that ``--pairs`` or ``--names`` took (``--pairs 0,1 a.npz``)."""
    args.pairs, extra = common.trailing_files(args.pairs, lambda w: bool(_PAIR.match(w)))
    args.files = [*args.files, *extra]
    return common.files_and_names(args)


def _pairs(texts):
    out = []
    for t in texts or ():
        try:
            a, b = (int(x) for x in t.split(","))
        except ValueError:
            raise InputError(f"--pairs: {t!r} is not two CPU ids like 0,1") from None
        out.append((a, b))
    return out or None


def _check_input(args, results):
    for r in results:  # a file without samples has no std: say so, not an all-grey map
        check_statistic_held(r, args.statistic)
    if len(results) > 1 and args.kind != "heatmap":
        raise InputError("several files are compared as heatmaps only; drop --kind or give one file")


def run(args):

    if not 20 <= args.dpi <= 1200:
        raise InputError(f"--dpi {args.dpi}: use a value between 20 and 1200")
    args.files, names = _files(args)
    if len(args.files) > 1 and args.home is not None:
        raise InputError("--home draws one home of a single file of `corelat placement`; give one file")
    out = args.output or default_name(args)
    common.check_output_path(out, suffixes=_FORMATS)
    if args.output is None:
        _refuse_replacing(out)
    if len(args.files) == 1:
        results, names = [_load_one(args)], None
    else:
        results, names = labels_for(args.files, names)
    _check_input(args, results)
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window
        import matplotlib.pyplot as plt

        from .. import plot
    except ImportError as e:
        # Exit status 2, like any other input the command cannot use; 1 means a measurement failed.
        print(f"corelat: error: {no_matplotlib(e)}", file=sys.stderr)
        return 2
    fig = _draw(plot, results, names, args)
    try:
        _write(fig, out, args)
    finally:
        plt.close(fig)
    print(f"saved to {outputs.shown(out)}", file=sys.stderr)
    return 0


def _draw(plot, results, names, args):
    if isinstance(results[0], FleetResult):
        return plot.fleet(results[0], node=args.node)
    if isinstance(results[0], PlacementResult):
        return plot.placement(results[0], order=args.order, statistic=args.statistic, annotate=args.annotate)
    if len(results) > 1:
        return plot.compare(results, names=names, order=args.order, statistic=args.statistic,
                            annotate=args.annotate)
    if args.kind == "heatmap":
        return plot.heatmap(results[0], order=args.order, statistic=args.statistic,
                            annotate=args.annotate).figure
    return plot.distribution(results[0], pairs=_pairs(args.pairs), kind=args.kind).figure


def _write(fig, out, args):
    """Through the one atomic writer: a full disk or ulimit -f leaves an old image as it was."""
    fmt = os.path.splitext(out)[1].lower().lstrip(".")
    _check_pixels(fig, args.dpi, fmt)
    claimed = False
    try:
        claimed = args.output is None and _claim(out)
        _atomic.atomic_write(out, lambda f: fig.savefig(f, dpi=args.dpi, format=fmt))
    except BaseException:
        if claimed:
            with contextlib.suppress(OSError):
                os.unlink(out)  # the empty file _claim made, not the image of anyone else
        raise


#: The largest raster image written: 100 megapixels are 400 MB of RGBA before compression (a 1,000-CPU
#: heatmap at --dpi 1200, 310 megapixels, was killed for memory in 6 GiB).
MAX_PIXELS = 100_000_000


def _check_pixels(fig, dpi, fmt):
    if fmt in ("svg", "svgz", "pdf", "eps", "ps"):
        return  # vector formats: the dpi only sets the resolution of embedded images
    width, height = fig.get_size_inches()
    pixels = width * dpi * height * dpi
    if pixels > MAX_PIXELS:
        most = int(math.sqrt(MAX_PIXELS / (width * height)))
        raise InputError(f"--dpi {dpi} makes an image of {width * dpi:,.0f} x {height * dpi:,.0f} pixels "
                         f"({pixels / 1e6:,.0f} megapixels); at most {MAX_PIXELS / 1e6:,.0f} megapixels "
                         f"are written: use --dpi {most} or less, or an .svg or .pdf file")


def no_matplotlib(e):
    """Why matplotlib is not there: not installed (how to install it), or installed but failing to
    load (under a low ``ulimit -v`` its libraries do not map), where installing would not help."""
    if isinstance(e, ModuleNotFoundError) and (e.name or "").partition(".")[0] == "matplotlib":
        return f"corelat plot needs matplotlib; install it with: {install_command('plot')}"
    why = " ".join(str(e).split())
    return (f"corelat plot needs matplotlib, which is installed but did not load ({why}); is the "
            "address-space limit (ulimit -v) too low, or the install broken?")


def _load_one(args):
    # A folder of node results is a fleet, as for `corelat report DIR`.
    result = fleet(args.files[0]) if os.path.isdir(args.files[0]) else load(args.files[0])
    if isinstance(result, FleetResult):  # fleet.json: its heat table, or one node's ratio map
        return result
    # A placement file: every home side by side, or the one --home names.
    if args.home is not None or args.kind != "heatmap" or not isinstance(result, PlacementResult):
        result = one_home(result, args.home, hint=f"give --home HOME to draw one of them as {args.kind}")
    return result


def default_name(args):
    """The picture's name when no -o is given: the input's (``a.npz`` -> ``a.png``; a folder's name;
    several inputs ``a-vs-b.png``), with what else was asked (``a-hist.png``, ``a-node_1.png``)."""
    stems = [os.path.splitext(os.path.basename(os.path.normpath(f)))[0] for f in args.files]
    name = "-vs-".join(stems)[:120]
    if args.kind != "heatmap":
        name += f"-{args.kind}"
    for extra in (args.home, args.node):
        if extra is not None:
            name += f"-{extra}"
    return common_name(name) + ".png"


def _refuse_replacing(out):
    """A picture that -o did not name never replaces a file (a.png of an earlier plot)."""
    if os.path.lexists(out):
        raise InputError(f"{outputs.shown(out)} exists: corelat plot replaces only a file named with -o "
                         f"(give -o {outputs.shown(out)} to replace it, or -o another name)")


def _claim(out):
    """Make ``out`` as a new empty file, or fail if one is there now: the check of
    :func:`_refuse_replacing` again, without the window between a check and the write."""
    try:
        os.close(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
    except FileExistsError:
        _refuse_replacing(out)
        raise
    return True


def common_name(name):
    """A file-system friendly stem from a result name."""
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(name))
    return keep.strip("._") or "corelat"
