"""Draw a result's heatmap (or its sample distributions) to an image file; several files side by side."""

import math
import os
import sys

from corelat._analysis.compare import labels_for
from corelat._core import files as _files
from corelat._core.errors import InputError
from corelat._core.extras import install_command
from corelat._report import check_statistic_held
from corelat._results.fleet import FleetResult
from corelat._results.load import load
from corelat._results.placement import PlacementResult
from corelat._system.home import one_home

from . import common, outputs

_FORMATS = (".png", ".svg", ".pdf")


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="result file(s): corelat .npz, core-to-core-latency CSV, c2clat table; "
                        "several files are drawn side by side on one colour scale")
    p.add_argument("-o", "--output", metavar="OUT", type=common.output_file,
                   help="image to write (.png, .svg or .pdf; default: NAME.png in the current folder)")
    p.add_argument("--kind", choices=("heatmap", "violin", "hist"), default="heatmap",
                   help="heatmap (default), or per-pair sample distributions as violins or histograms")
    common.add_order_argument(p, "heatmap")
    common.add_statistic_argument(p, "what the heatmap cells show (default median)")
    p.add_argument("--annotate", action="store_true", default=None,
                   help="write every cell's value (default: only where cells are big enough)")
    p.add_argument("--no-annotate", dest="annotate", action="store_false", help="never write cell values")
    p.add_argument("--pairs", nargs="+", metavar="A,B",
                   help="CPU pairs for --kind violin/hist, e.g. 0,1 0,8 (default: a chosen spread)")
    p.add_argument("--names", nargs="+", metavar="NAME",
                   help="titles for the files, in order (default: their names; file names where two collide)")
    p.add_argument("--dpi", type=int, default=110, help="resolution of PNG output (default 110)")
    p.add_argument("--home", metavar="HOME", type=common.home_arg,
                   help="for a file of `corelat placement`: draw this home only (node:K, K, responder, ...); "
                        "default: every home side by side")
    p.add_argument("--node", metavar="NAME",
                   help="for a fleet report (fleet.json): draw this node's matrix over its group's median "
                        "(default: the fleet's heat table)")


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
    if len(args.files) > 1 and args.home is not None:
        raise InputError("--home draws one home of a single file of `corelat placement`; give one file")
    if len(args.files) == 1:
        results, names = [_load_one(args)], None
    else:
        results, names = labels_for(args.files, args.names)
    out = args.output or (common_name(results[0].name or args.files[0]) + ".png")
    common.check_output_path(out, suffixes=_FORMATS)
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
    if isinstance(results[0], FleetResult):
        fig = plot.fleet(results[0], node=args.node)
    elif isinstance(results[0], PlacementResult):
        fig = plot.placement(results[0], order=args.order, statistic=args.statistic, annotate=args.annotate)
    elif len(results) > 1:
        fig = plot.compare(results, names=names, order=args.order, statistic=args.statistic,
                           annotate=args.annotate)
    elif args.kind == "heatmap":
        fig = plot.heatmap(results[0], order=args.order, statistic=args.statistic,
                           annotate=args.annotate).figure
    else:
        fig = plot.distribution(results[0], pairs=_pairs(args.pairs), kind=args.kind).figure
    try:  # through the one atomic writer: a full disk or ulimit -f leaves an old image as it was
        fmt = os.path.splitext(out)[1].lower().lstrip(".")
        _check_pixels(fig, args.dpi, fmt)
        _files.atomic_write(out, lambda f: fig.savefig(f, dpi=args.dpi, format=fmt))
    finally:
        plt.close(fig)
    print(f"saved to {outputs.shown(out)}", file=sys.stderr)
    return 0


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
    result = load(args.files[0])
    if isinstance(result, FleetResult):  # fleet.json: its heat table, or one node's ratio map
        return result
    # A placement file: every home side by side, or the one --home names.
    if args.home is not None or args.kind != "heatmap" or not isinstance(result, PlacementResult):
        result = one_home(result, args.home, hint=f"give --home HOME to draw one of them as {args.kind}")
    return result


def common_name(name):
    """A file-system friendly stem from a result name."""
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(name))
    return keep.strip("._") or "corelat"
