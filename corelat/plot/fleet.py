"""Fleet figures: a fleet's nodes × classes heat table with outliers marked, and one node's matrix
divided by its group's median matrix (:func:`fleet`; ``corelat.plot.fleet`` is this function).

The heat table reads from a handful of nodes to thousands: up to :data:`LABEL_EVERY_NODE` nodes a
group shows every name and value; beyond, the group is one image of fixed height in which every
node is a row and only the outliers (and a few others, for orientation) are named. Failed and
missing nodes are listed under the tables; long node names are shortened in the middle.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from corelat._core.errors import InputError, InputTypeError
from corelat._core.extras import require
from corelat._core.text import value_err as _fmt
from corelat._results.fleet import FleetResult
from corelat._results.fleet import label as _class_label
from corelat._results.latency import LatencyResult
from corelat._results.load import load as _load
from corelat.plot._axes import _figsize, _settle

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a function is first called
    from matplotlib.figure import Figure

#: Colour range of the fleet heat table and ratio heatmap: deviation from the group's median.
FLEET_DEVIATION_RANGE = 0.3
#: Up to this many nodes a group's table names every node and writes every value.
LABEL_EVERY_NODE = 60
#: Node names longer than this are shortened in the middle (``rack12-…-node0042``).
MAX_NAME = 32
#: Up to this many CPUs every CPU is labelled on the ratio heatmap's axes.
MAX_EVERY_CPU_LABELLED = 64
#: Failed and missing nodes named under the tables (the rest are counted).
MAX_LISTED = 30
_NAN_COLOUR = "#d9d9d9"


def _plt():
    return require("matplotlib.pyplot", "plot", "corelat.plot")


def _short_name(name, width=MAX_NAME):
    """``name`` shortened in the middle to ``width`` characters (both ends tell nodes apart)."""
    name = str(name)
    if len(name) <= width:
        return name
    keep = width - 1
    return name[: keep - keep // 2] + "…" + name[len(name) - keep // 2:]


def _ticks(n):
    """Tick positions and font size: every CPU up to MAX_EVERY_CPU_LABELLED, else every k-th CPU."""
    if n <= MAX_EVERY_CPU_LABELLED:
        return list(range(n)), 9 if n <= 16 else (7 if n <= 32 else 6)
    return list(range(0, n, math.ceil(n / 32))), 6


def _rows(group, max_nodes):
    """``(group, deviation from the class medians, the node rows drawn)``: a group of more than
    ``max_nodes`` nodes keeps those that deviate most, in their order."""
    meds = np.array([group.class_medians[c] for c in group.classes], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = np.asarray(group.values) / meds - 1.0
    rows = np.arange(len(group.nodes))
    if len(rows) > max_nodes:
        worst = np.nan_to_num(np.abs(dev), nan=0.0).max(axis=1) if dev.size else np.zeros(len(rows))
        rows = np.sort(np.argsort(-worst, kind="stable")[:max_nodes])
    return group, dev, rows


def _text_colour(cm, value, r):
    """Black or white, whichever reads on the cell's colour."""
    red, green, blue, _ = cm((np.clip(value, -r, r) + r) / (2 * r)) if np.isfinite(value) else (0.85,) * 4
    return "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"


def _cells(plt, ax, shown, flagged, cm, r):
    """The class medians written in the cells (where they stay readable) and the outliers boxed, in
    a box and a value that read on any colour."""
    from matplotlib import patheffects  # with matplotlib, which is imported on first use

    g, dev, rows = shown
    annotate = len(rows) <= LABEL_EVERY_NODE
    for y, i in enumerate(rows):
        for x, c in enumerate(g.classes):
            v, out = g.values[i, x], (g.nodes[i], c) in flagged
            if (annotate or out) and np.isfinite(v):
                ax.text(x, y, _fmt(v), ha="center", va="center", fontsize=7 if annotate else 6,
                        color=_text_colour(cm, dev[i, x], r), fontweight="bold" if out else "normal")
            if out:  # gold inside black: a box seen on white, red and navy alike
                box = plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="gold", lw=1.5)
                box.set_path_effects([patheffects.Stroke(linewidth=4, foreground="black"),
                                      patheffects.Normal()])
                ax.add_patch(box)


def _table(plt, fig, ax, shown, flagged, cm, r):
    """One group's heat table: nodes × classes, coloured by deviation within ±``r``, with its colour
    bar (arrows where deviations lie beyond it)."""
    g, dev, rows = shown
    d = dev[rows] if dev.size else np.zeros((len(rows), 0))
    im = ax.imshow(np.ma.masked_invalid(d), cmap=cm, vmin=-r, vmax=r, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(g.classes)), [_class_label(c).replace(", ", "\n") for c in g.classes], fontsize=8)
    if len(rows) <= LABEL_EVERY_NODE:
        ticks = list(range(len(rows)))
    else:  # every outlier named, and about 20 others for orientation
        out = {n for n, _ in flagged}
        step = math.ceil(len(rows) / 20)
        ticks = sorted({y for y, i in enumerate(rows) if g.nodes[i] in out} | set(range(0, len(rows), step)))
    ax.set_yticks(ticks, [_short_name(g.nodes[rows[y]]) for y in ticks], fontsize=7 if len(ticks) > 30 else 8)
    _cells(plt, ax, shown, flagged, cm, r)
    more = f", {len(rows)} of {len(g.nodes)} nodes (most deviating)" if len(rows) < len(g.nodes) else ""
    ax.set_title(f"group {g.id}: {g.cpu_model}, {len(g.cpus)} CPUs, {len(g.nodes)} nodes{more}", fontsize=9)
    beyond = bool(np.nanmax(np.abs(d), initial=0.0) > r) if d.size and np.isfinite(d).any() else False
    cb = fig.colorbar(im, ax=ax, shrink=0.9, pad=0.02, extend="both" if beyond else "neither")
    cb.set_label("vs group median" + (" (arrows: beyond)" if beyond else ""), fontsize=8)
    cb.ax.yaxis.set_major_formatter(lambda v, _: f"{v:+.0%}")


def _problems(result):
    """The lines naming the failed and missing nodes (empty when none)."""
    lines = []
    for what, names in (("failed", [e["node"] for e in result.errors]), ("missing", list(result.missing))):
        if names:
            shown = ", ".join(_short_name(n, 24) for n in names[:MAX_LISTED])
            rest = f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
            lines.append(f"{what} ({len(names)}): {shown}{rest}")
    return lines


def _group_height(rows):
    return max(2.5, 0.22 * len(rows) + 1.8) if len(rows) <= LABEL_EVERY_NODE else 7.0


# -- the figures -------------------------------------------------------------------------------------------
def fleet(
    result: FleetResult,
    node: str | LatencyResult | None = None,
    *,
    group: int | None = None,
    max_nodes: int = 2000,
) -> Figure:
    """Pictures of a fleet result.

    Without ``node``: a heat table per group, nodes × pair classes, coloured by each class
    median's deviation from the group's median (white = typical, red = slower, blue = faster),
    outliers boxed with their value; failed and missing nodes are listed beneath. Groups of more
    than 60 nodes are drawn as one image of fixed height with the outliers named. With ``node``:
    that node's matrix divided by its group's median matrix, as a ratio heatmap (1 = typical);
    its title says the extreme ratios when they lie beyond the colour scale.

    Parameters
    ----------
    result : FleetResult
        What :func:`corelat.fleet` or :func:`corelat.measure_fleet` returned.
    node : str or LatencyResult, optional
        A node name (its matrix is read from the file the fleet recorded) or its result.
    group : int, optional
        Draw only this group.
    max_nodes : int
        Groups of more nodes show the nodes that deviate most.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        For an unknown group or node, or a node without a recorded file.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install it).

    Examples
    --------
    >>> import corelat, corelat.plot
    >>> fig = corelat.plot.fleet(corelat.fleet(corelat.example_files()))
    """

    if not isinstance(result, FleetResult):
        raise InputTypeError(f"plot.fleet() draws a FleetResult, not {type(result).__name__}")
    plt = _plt()
    if node is not None:
        return _fleet_ratio(plt, result, node)
    groups = [g for g in result.groups if group is None or g.id == group]
    problems = _problems(result) if group is None else []
    if not groups and not problems:
        raise InputError("no group to draw" if group is None else f"no group {group} in this fleet")
    shown = [_rows(g, max_nodes) for g in groups]
    heights = [_group_height(rows) for _, _, rows in shown]
    heights += [0.3 + 0.2 * len(problems)] if problems else []
    width = max(6.0, 1.1 * max((len(g.classes) for g in groups), default=1) + 4.0)
    fig, axes = plt.subplots(len(heights), 1, figsize=(width, min(sum(heights), 60.0)), layout="constrained",
                             squeeze=False, height_ratios=heights)
    cm = plt.get_cmap("RdBu_r").with_extremes(bad=_NAN_COLOUR)
    flagged = {(o.node, o.cls) for o in result.outliers}
    for ax, one in zip(axes[:, 0], shown):
        _table(plt, fig, ax, one, flagged, cm, FLEET_DEVIATION_RANGE)
    if problems:
        ax = axes[-1, 0]
        ax.axis("off")
        ax.text(0.0, 1.0, "\n".join(problems), ha="left", va="top", fontsize=8, color="tab:red",
                transform=ax.transAxes, wrap=True)
    fig.suptitle(f"{result.name}: class median per node (ns); boxed = outlier", fontsize=10)
    _settle(fig)
    return fig


def _node_and_group(result, node):
    if isinstance(node, LatencyResult):
        r, name = node, node.name
        g = next((g for g in result.groups if g.nodes and name in g.nodes), None)
    else:
        name = str(node)
        g = result.group_of(name)
        rec = next(x for x in result.nodes if x["node"] == name)
        if not rec.get("file"):
            raise InputError(f"the fleet recorded no file for node {name!r}: pass its LatencyResult instead")
        r = _load(rec["file"])  # corelat's file, or another tool's matrix
        if not isinstance(r, LatencyResult):
            raise InputError(f"{rec['file']}: not a latency result")
    if g is None:
        raise InputError(f"node {name!r} is in no group of this fleet")
    r = r.ordered("os")
    if tuple(r.cpus) != tuple(g.cpus):
        raise InputError(f"node {name!r} was measured on other CPUs than its group")
    return r, name, g


def _fleet_ratio(plt, result, node):
    r, name, g = _node_and_group(result, node)
    ratio = np.asarray(r.median) / np.asarray(g.median_matrix)
    n = len(g.cpus)
    fig, ax = plt.subplots(figsize=_figsize(n), layout="constrained")
    lim = math.log(1 + FLEET_DEVIATION_RANGE)
    cm = plt.get_cmap("RdBu_r").with_extremes(bad=_NAN_COLOUR)
    with np.errstate(divide="ignore", invalid="ignore"):
        logr = np.log(ratio)
    finite = logr[np.isfinite(logr)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    beyond = lo < -lim - 1e-9 or hi > lim + 1e-9
    im = ax.imshow(np.ma.masked_invalid(logr), cmap=cm, vmin=-lim, vmax=lim, interpolation="nearest")
    ticks, fs = _ticks(n)
    ax.set_xticks(ticks, [str(g.cpus[i]) for i in ticks], fontsize=fs, rotation=90 if n > 16 else 0)
    ax.set_yticks(ticks, [str(g.cpus[i]) for i in ticks], fontsize=fs)
    ax.set_xlabel("CPU")
    ax.set_ylabel("CPU")
    extend = ("both" if lo < -lim and hi > lim else "min" if lo < -lim else "max") if beyond else "neither"
    cb = fig.colorbar(im, ax=ax, shrink=0.85, pad=0.02, extend=extend)
    cb.set_label(f"{_short_name(name)} / group median (ratio)")
    steps = [x for x in (0.8, 0.9, 1.0, 1.1, 1.2, 1.3) if abs(math.log(x)) <= lim + 1e-9]
    cb.set_ticks([math.log(x) for x in steps], labels=[f"×{x:g}" for x in steps])
    title = f"{_short_name(name)} / median of group {g.id} ({len(g.nodes)} nodes)\n{g.cpu_model}"
    if beyond:
        title += (f"\nratios from ×{math.exp(lo):.2g} to ×{math.exp(hi):.2g}: beyond the colour scale "
                  f"(×{math.exp(-lim):.2g} to ×{math.exp(lim):.2g}) where the arrows point")
    ax.set_title(title, fontsize=10)
    _settle(fig)
    return fig
