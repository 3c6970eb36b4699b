"""The report's figures, drawn by the public :mod:`corelat.plot` functions (matplotlib is imported
when a report is written: the ``report`` extra)."""

from __future__ import annotations

import io
import math

import numpy as np

from corelat import plot as cplot
from corelat._core.extras import require
from corelat._report.model import Figure
from corelat.plot._axes import fit_colorbar_label
from corelat.plot._order import _ordered
from corelat.plot._words import _statistic_words

#: Resolution of the figures embedded in the HTML page (a 192-CPU heatmap is then ~1,100 pixels wide).
PNG_DPI = 100
#: Rows of the fleet's heat table in the report (the per-node table holds every node).
MAX_FLEET_ROWS = 40
#: Outlier nodes whose ratio map a fleet report draws (each is one figure; the rest are in the table).
MAX_RATIO_MAPS = 6


def pyplot():
    """matplotlib's pyplot on the Agg canvas (a report never opens a window)."""
    mpl = require("matplotlib", "report", "the report")
    mpl.use("Agg", force=False)
    return require("matplotlib.pyplot", "report", "the report")


def backend_pdf():
    return require("matplotlib.backends.backend_pdf", "report", "the PDF report")


def _side(n):
    return 6.0 if n <= 16 else (8.0 if n <= 96 else 9.5)


def heatmap(result, statistic="median", order="topology"):
    """The heatmap with the group lines, and what the page needs to show each cell's value."""
    plt = pyplot()
    side = _side(result.n)
    fig, ax = plt.subplots(figsize=(side + 1.7, side), layout="constrained")
    cplot.heatmap(result, order=order, statistic=statistic, ax=ax)
    fig.set_dpi(PNG_DPI)
    fig.canvas.draw()  # the axes' final place, in the pixels of the PNG made from this drawing
    ordered, _, _ = _ordered(result, order)
    # the cells as drawn: beyond plot.MAX_DRAWN_CELLS CPUs, the medians of blocks of pairs
    drawn = np.ma.filled(np.ma.asarray(ax.images[0].get_array(), dtype=float), np.nan)
    block = math.ceil(result.n / drawn.shape[0])
    box = ax.get_window_extent()
    width, height = fig.canvas.get_width_height()
    hover = {
        "cpus": [int(c) for c in ordered.cpus],
        "values": [None if not math.isfinite(v) else round(v, 1) for v in drawn.ravel().tolist()],
        "block": block,
        "box": [box.x0 / width, 1.0 - box.y1 / height, box.width / width, box.height / height],
        "arrow": "→" if not result.metadata.get("symmetric", True) else "–",
        "unit": "ns",
    }
    caption = (f"{_statistic_words(result, statistic)}; lines between the groups of the topology"
               " (or of the latency structure where none is recorded).")
    if block > 1:
        caption += f" Each cell is the median of a {block} × {block} block of pairs."
    buf = io.BytesIO()
    plt.imsave(buf, np.asarray(fig.canvas.buffer_rgba()), format="png", metadata={"Software": None})
    return Figure(fig, caption, hover, buf.getvalue())


def distribution(result):
    """Per-pair sample distributions (the flagged pairs first), or None for one value per pair."""
    if result.value_only:
        return None
    ax = cplot.distribution(result)
    return Figure(ax.figure, "samples of a few pairs: bimodal or unstable ones first, then fastest to "
                             "slowest")


def comparison(results, names, statistic="median"):
    fig = cplot.compare(results, names=names, order="topology", statistic=statistic)
    fit_colorbar_label(fig)
    return Figure(fig, "one colour scale for every machine")


def placement(result, statistic="median"):
    fig = cplot.placement(result, order="topology", statistic=statistic)
    return Figure(fig, "one heatmap per home of the line, one colour scale")


def fleet(result):
    """The fleet's heat table and the ratio maps of (a few) outlier nodes with a recorded file."""
    out = [Figure(cplot.fleet(result, max_nodes=MAX_FLEET_ROWS),
                  f"class median per node (at most {MAX_FLEET_ROWS} per group: those that deviate most; "
                  "every node is in the table below); outliers boxed")]
    shown = []
    for o in result.outliers:
        rec = next((x for x in result.nodes if x["node"] == o.node), None)
        if o.node in shown or rec is None or not rec.get("file") or len(shown) >= MAX_RATIO_MAPS:
            continue
        shown.append(o.node)
        out.append(Figure(cplot.fleet(result, o.node), f"{o.node}: its matrix over its group's median"))
    return out


def locks(result):
    """Nanoseconds per operation of each test (one bar each), or None where nothing was measured."""
    rows = [r for r in result.records() if math.isfinite(float(r.get("avg_ns", math.nan)))]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.4), layout="constrained")
    ax.barh([str(r["name"]) for r in rows], [float(r["avg_ns"]) for r in rows], color="tab:blue")
    ax.invert_yaxis()
    ax.set_xlabel("average ns per call")
    ax.set_title(f"{result.name or 'locks'}: {result.mode}", fontsize=10)
    return Figure(fig, "cost of each test")


def close(figures):
    plt = pyplot()
    for f in figures:
        plt.close(f.fig)
