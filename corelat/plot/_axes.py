"""Figure size, layout and axis dressing shared by the plots."""

from __future__ import annotations

import math
import textwrap

from corelat._core.text import value_err as _fmt
from corelat.plot._words import _pct, _short


#: Every tick label of a distribution, on both axes, major and minor: a log axis labels its decades
#: (major ticks) and 2×, 5× (minor), and labels of two sizes read as two scales.
TICK_LABEL_SIZE = 8


def _figsize(n):
    side = min(max(5.0, 0.34 * n + 2.0), 14.0)
    return (side + 1.4, side)


def _settle(fig):
    # Constrained layout with fixed-aspect axes settles only on its second pass: run the first one
    # now, so the figure that is shown or saved has no text cut off or overlapping.
    fig.draw_without_rendering()


def _mark_clipped(ax, clipped, clip):
    """Clipped samples as arrows on the axes' edge, counted in the legend."""
    from matplotlib.transforms import blended_transform_factory

    edge = blended_transform_factory(ax.transData, ax.transAxes)
    # Room for the markers above (below) the data, so that they neither sit on a violin's end nor
    # stick out of the axes into the title.
    low, high = ax.get_ylim()
    pad = 0.09 * (high - low)
    ax.set_ylim(low - (pad if any(c[0].size for c in clipped) else 0.0),
                high + (pad if any(c[1].size for c in clipped) else 0.0))
    for side, y, marker in ((1, 0.96, "^"), (0, 0.04, "v")):
        xs = [k for k, c in enumerate(clipped) if c[side].size]
        if not xs:
            continue
        count = sum(clipped[k][side].size for k in xs)
        worst = (max if side else min)(float(v) for k in xs for v in clipped[k][side])
        whose = "its" if count == 1 else "their"
        what = f"above {whose} pair's {_pct(clip[1])}" if side else f"below {whose} pair's {_pct(clip[0])}"
        label = (f"{count} sample{'s' if count != 1 else ''} {what}, not drawn "
                 f"({'up to' if side else 'down to'} {_fmt(worst)} ns)")
        ax.scatter(xs, [y] * len(xs), transform=edge, marker=marker, color="tab:red", s=30, label=label,
                   zorder=3)
    # Below the axis label, not over the violins (the pairs' tops are where their slow samples are).
    # The gap is measured in points once the labels are laid out: a fixed fraction of the axes sat on
    # the label "CPU pair" (points do not change when the layout then resizes the axes).
    from matplotlib.transforms import offset_copy

    fig = ax.figure
    fig.draw_without_rendering()
    below = ax.get_window_extent().y0 - ax.get_tightbbox().y0  # pixels: tick labels and axis label
    gap = below * 72.0 / fig.dpi + 4.0
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False, borderaxespad=0.0,
              bbox_transform=offset_copy(ax.transAxes, fig=fig, y=-gap, units="points"))

def _log_labels(axis, lo, hi):
    # matplotlib labels only the decades (10³, 10⁴): with 2× and 5× labelled too, a peak between them
    # can be read off the axis.
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    decades = math.log10(hi / lo)
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0) if decades <= 4 else (3.0,)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: _short(v)) if decades <= 6 else NullFormatter())
    axis.set_tick_params(which="both", labelsize=TICK_LABEL_SIZE)


def _fit_title(ax, text, fontsize=10.0):
    """``text`` as the title of ``ax``, broken after its first ": " and then made smaller (not below
    6 pt) where it is wider than the axes: titles of axes side by side ran into each other."""
    title = ax.set_title(text, fontsize=fontsize)
    width = ax.get_window_extent().width
    if title.get_window_extent().width <= width:
        return title
    title.set_text(text.replace(": ", ":\n", 1))
    while title.get_window_extent().width > width and title.get_fontsize() > 6:
        title.set_fontsize(title.get_fontsize() - 0.5)
    return title


def _cell_points(ax, n):
    """The side of one of ``n`` × ``n`` cells in points, from the axes' size before layout (close
    enough to decide whether values fit and to size their text)."""
    bbox = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
    return min(bbox.width, bbox.height) * 72.0 / max(n, 1)


def fit_colorbar_label(fig):
    """Wrap a colour bar's label to the bar's length: one line naming two statistics (a file of
    medians beside one of means) is longer than the figure is tall, and was cut at both ends."""
    for ax in fig.axes:
        for image in ax.images:
            bar = image.colorbar
            if bar is None:
                continue
            label = bar.ax.yaxis.label
            fig.canvas.draw()
            length = bar.ax.get_window_extent().height * 72.0 / fig.dpi  # points along the bar
            chars = max(20, int(length / (0.6 * label.get_fontsize())))
            text = " ".join(label.get_text().split())
            if len(text) > chars:
                label.set_text(textwrap.fill(text, chars))
