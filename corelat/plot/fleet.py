"""Fleet figures: a fleet's nodes × classes heat table with outliers marked, and one node's matrix
divided by its group's median matrix (:func:`fleet`; ``corelat.plot.fleet`` is this function)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from corelat._core.errors import InputError, InputTypeError
from corelat._core.extras import require
from corelat._results.fleet import FleetResult
from corelat._results.latency import LatencyResult
from corelat.plot._axes import _figsize, _settle
from corelat.plot._marks import _fleet_table
from corelat.plot._values import _fleet_rows

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a function is first called
    from matplotlib.figure import Figure

#: Up to this many CPUs every CPU is labelled on the ratio heatmap's axes.
MAX_EVERY_CPU_LABELLED = 64
_NAN_COLOUR = "#d9d9d9"


def _plt():
    return require("matplotlib.pyplot", "plot", "corelat.plot")


def _ticks(n):
    """Tick positions and font size: every CPU up to MAX_EVERY_CPU_LABELLED, else every k-th CPU."""
    if n <= MAX_EVERY_CPU_LABELLED:
        return list(range(n)), 9 if n <= 16 else (7 if n <= 32 else 6)
    return list(range(0, n, math.ceil(n / 32))), 6


# -- the figures ---------------------------------------------------------------------------------------------
#: Colour range of the fleet heat table and ratio heatmap: deviation from the group's median.
FLEET_DEVIATION_RANGE = 0.3


def fleet(
    result: FleetResult,
    node: str | LatencyResult | None = None,
    *,
    group: int | None = None,
    max_nodes: int = 200,
) -> Figure:
    """Pictures of a fleet result.

    Without ``node``: a heat table per group, nodes × pair classes, coloured by each class
    median's deviation from the group's median (white = typical, red = slower, blue = faster),
    outliers boxed. With ``node``: that node's matrix divided by its group's median matrix, as a
    ratio heatmap (1 = typical).

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
    if not groups:
        raise InputError("no group to draw" if group is None else f"no group {group} in this fleet")
    flagged = {(o.node, o.cls) for o in result.outliers}
    shown = [_fleet_rows(g, max_nodes) for g in groups]
    heights = [max(2.5, 0.22 * len(rows) + 1.8) for _, _, rows in shown]
    width = max(5.0, 1.1 * max(len(g.classes) for g in groups) + 3.0)
    fig, axes = plt.subplots(len(shown), 1, figsize=(width, min(sum(heights), 60.0)), layout="constrained",
                             squeeze=False, height_ratios=heights)
    cm = plt.get_cmap("RdBu_r").with_extremes(bad=_NAN_COLOUR)
    for ax, one in zip(axes[:, 0], shown):
        _fleet_table(plt, fig, ax, one, flagged, cm, FLEET_DEVIATION_RANGE)
    fig.suptitle(f"{result.name}: class median per node (ns); boxed = outlier", fontsize=10)
    _settle(fig)
    return fig


def _fleet_ratio(plt, result, node):

    if isinstance(node, LatencyResult):
        r, name = node, node.name
        g = next((g for g in result.groups if g.nodes and name in g.nodes), None)
    else:
        name = str(node)
        g = result.group(name)
        rec = next(x for x in result.nodes if x["node"] == name)
        if not rec.get("file"):
            raise InputError(f"the fleet recorded no file for node {name!r}: pass its LatencyResult instead")
        r = LatencyResult.load(rec["file"])
    if g is None:
        raise InputError(f"node {name!r} is in no group of this fleet")
    r = r.with_cpus_order(sorted(r.cpus))
    if tuple(r.cpus) != tuple(g.cpus):
        raise InputError(f"node {name!r} was measured on other CPUs than its group")
    ratio = np.asarray(r.median) / np.asarray(g.median_matrix)
    n = len(g.cpus)
    fig, ax = plt.subplots(figsize=_figsize(n), layout="constrained")
    lim = math.log(1 + FLEET_DEVIATION_RANGE)
    cm = plt.get_cmap("RdBu_r").with_extremes(bad=_NAN_COLOUR)
    with np.errstate(divide="ignore", invalid="ignore"):
        logr = np.log(ratio)
    im = ax.imshow(np.ma.masked_invalid(logr), cmap=cm, vmin=-lim, vmax=lim, interpolation="nearest")
    ticks, fs = _ticks(n)
    ax.set_xticks(ticks, [str(g.cpus[i]) for i in ticks], fontsize=fs, rotation=90 if n > 16 else 0)
    ax.set_yticks(ticks, [str(g.cpus[i]) for i in ticks], fontsize=fs)
    ax.set_xlabel("CPU")
    ax.set_ylabel("CPU")
    cb = fig.colorbar(im, ax=ax, shrink=0.85, pad=0.02)
    cb.set_label(f"{name} / group median (ratio)")
    steps = [x for x in (0.8, 0.9, 1.0, 1.1, 1.2, 1.3) if abs(math.log(x)) <= lim + 1e-9]
    cb.set_ticks([math.log(x) for x in steps], labels=[f"×{x:g}" for x in steps])
    ax.set_title(f"{name} / median of group {g.id} ({len(g.nodes)} nodes)\n{g.cpu_model}", fontsize=10)
    _settle(fig)
    return fig
