"""Pictures of latency results (needs matplotlib: ``pip install 'corelat[plot]'``, or ``'.[plot]'`` in a
checkout).

* :func:`heatmap`: the matrix with a colour bar in ns and group boundaries drawn, ordered by the OS
  topology, by the latency structure, or by CPU id; readable from 2 to hundreds of CPUs (cell values
  are written only where they fit).
* :func:`distribution`: per-pair sample distributions (violins or histograms), where bimodal or
  unstable pairs show.
* :func:`compare`: heatmaps of several results side by side on one colour scale.
* :func:`fleet`: a fleet's nodes × classes heat table with outliers marked, or one node's matrix
  divided by its group's median matrix.
* :func:`placement`: a :func:`corelat.placement` result, one heatmap per home of the line, on one
  colour scale (:func:`heatmap` draws one home with ``home=K``).

matplotlib is imported when a function is first called, so ``import corelat.plot`` stays cheap. When
no ``ax`` is given the figure is made with pyplot (so notebooks show it); close it with
``plt.close(fig)`` in long scripts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from corelat._analysis.compare import labels_for
from corelat._core.errors import InputError, InputTypeError
from corelat._core.extras import require
from corelat._core.text import value_err as _fmt
from corelat._core.types import DEFAULT_ORDER, Order, Path, Statistic
from corelat._results.fleet import FleetResult
from corelat._results.latency import LatencyResult
from corelat._results.placement import PlacementResult
from corelat.plot._axes import _cell_points, _figsize, _mark_clipped, _settle
from corelat.plot._marks import _fleet_table, _group_lines, _histograms, _violins, _write_values
from corelat.plot._order import _one_home, _ordered
from corelat.plot._values import (
    _agree_within,
    _annotation_cap,
    _clip,
    _colour_range,
    _default_pairs,
    _fleet_rows,
    _pair_indices,
    _pair_samples,
)
from corelat.plot._words import _count_text, _statistic_words, _value_label

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a function is first called
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


#: A cell must be at least this many points wide to carry its value.
MIN_ANNOTATED_CELL_PT = 17.0
#: Up to this many CPUs every CPU is labelled on the heatmap's axes.
MAX_EVERY_CPU_LABELLED = 64
#: Distributions switch to a log scale when the slowest sample exceeds this many times the median.
LOG_SCALE_RATIO = 5.0
#: Violins show each pair's samples between these percentiles of the pair (the rest are counted).
DEFAULT_CLIP = (0.0, 99.0)
_NAN_COLOUR = "#d9d9d9"


def _plt():
    return require("matplotlib.pyplot", "plot", "corelat.plot")


def heatmap(
    result: LatencyResult | PlacementResult,
    order: Order | None = DEFAULT_ORDER,
    statistic: Statistic = "median",
    annotate: bool | None = None,
    ax: Axes | None = None,
    *,
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
    cmap: str = "viridis",
    title: str | None = None,
    home: int | str | None = None,
) -> Axes:
    """Draw the latency matrix as a heatmap.

    Parameters
    ----------
    result : LatencyResult or PlacementResult
        The matrix; for a placement result ``home`` says which home to draw.
    order : {None, "os", "topology", "structure"}
        None (the default everywhere in corelat: the CPUs as the result holds them), ``"os"``
        (CPU ids ascending), ``"topology"`` (package, NUMA node, L3, core, from the topology the
        result carries; falls back to ``"structure"`` and says so in the title) or
        ``"structure"`` (groups found by :func:`corelat.structure`).
    statistic : str
        ``"median"``, ``"mean"``, ``"min"``, ``"max"`` or ``"std"``.
    annotate : bool or None
        Write each cell's value: True, False, or None for "where the cells are big enough" (never on
        more than 128 CPUs: the title says the values were left out).
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (default: a new figure sized for the number of CPUs).
    vmin : float, optional
        Lower colour scale limit in ns (default: the data's minimum).
    vmax : float, optional
        Upper colour scale limit in ns (default: the data's maximum).
    colorbar : bool
        Add a colour bar in ns.
    cmap : str
        A matplotlib colour map name.
    title : str, optional
        The title (default: the result's name, kernel, CPU count, order and median).
    home : int or str, optional
        For a placement result, the home to draw: a NUMA node K, a label like ``"node:1"`` or
        ``"responder"``, or a position in ``result.homes``.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    InputError
        For an unknown order or statistic, or a placement result without a valid ``home``.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install it).

    Examples
    --------
    >>> import corelat, corelat.plot
    >>> ax = corelat.plot.heatmap(corelat.load(corelat.example_files()[0]), order="os")
    >>> ax.get_title().splitlines()[0]
    '2-CPU VM, cas: cas kernel, 2 CPUs'
    """
    plt = _plt()
    result = _one_home(result, home)
    ordered, lines, note = _ordered(result, order)
    m = np.array(ordered.statistic(statistic), dtype=float)
    n = ordered.n
    own_figure = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=_figsize(n), layout="constrained")
    fig = ax.figure
    cm = plt.get_cmap(cmap).with_extremes(bad=_NAN_COLOUR)
    flat = _agree_within(ordered, statistic, m)
    vmin, vmax = _colour_range(m, vmin, vmax, flat)
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest",
                   origin="upper", aspect="equal")
    _cpu_axes(ax, ordered, lines)
    values = np.unique(m[np.isfinite(m)])
    single = values.size == 1  # e.g. 2 CPUs: a colour bar would carry no information
    if colorbar and not single:
        cb = fig.colorbar(im, ax=ax, shrink=0.85, pad=0.02)
        cb.set_label(_value_label(ordered, statistic))
    cell_pt = _cell_points(ax, n)
    if annotate is None:
        annotate = cell_pt >= MIN_ANNOTATED_CELL_PT or (single and colorbar)
    annotate, unwritten = _annotation_cap(annotate, n)
    if annotate:
        _write_values(ax, m, cm, vmin, vmax, cell_pt)
    if title is None:
        title = _heatmap_title(ordered, statistic, note, values if single and colorbar else None) + unwritten
    if flat is not None:
        title += f"\nall differences within the values' uncertainty (±{_fmt(flat)} ns): no structure"
    ax.set_title(title, fontsize=10)
    if own_figure:
        _settle(fig)
    return ax


def _cpu_axes(ax, ordered, lines):
    """CPU ids on both axes (the sender and receiver of a one-way result) and the group lines."""
    n = ordered.n
    ticks, fs = _ticks(n, [start for start, _ in lines])
    labels = [str(ordered.cpus[i]) for i in ticks]
    ax.set_xticks(ticks, labels, fontsize=fs, rotation=90 if n > 16 else 0)
    ax.set_yticks(ticks, labels, fontsize=fs)
    one_way = not ordered.metadata.get("symmetric", True)
    ax.set_xlabel("receiving CPU" if one_way else "CPU")
    ax.set_ylabel("sending CPU" if one_way else "CPU")
    ax.tick_params(length=2)
    _group_lines(ax, lines)


def _heatmap_title(ordered, statistic, note, single_value):
    """The default title; ``single_value`` (the values when every pair has the same one, and no
    colour bar says so) adds that value."""
    title = f"{ordered.name or 'result'}: {ordered.kernel} kernel, {ordered.n} CPUs\n{note}"
    if single_value is not None:
        shown = (ordered.metadata.get("statistic") or "one value") if ordered.value_only else statistic
        title += f"\n{shown} {_fmt(float(single_value[0]))} ns for every pair"
    return title


def _ticks(n, starts):
    """Tick positions and font size: every CPU up to MAX_EVERY_CPU_LABELLED, else every k-th CPU
    plus the first CPU of each group (where a boundary line starts), so groups stay readable."""
    if n <= MAX_EVERY_CPU_LABELLED:
        return list(range(n)), 9 if n <= 16 else (7 if n <= 32 else 6)
    step = math.ceil(n / 32)
    firsts = sorted(set(starts) | {0})
    # Evenly spaced labels that would crowd a group's first CPU make way for it.
    even = [t for t in range(0, n, step) if all(abs(t - f) >= step / 2 for f in firsts)]
    return sorted(set(even) | set(firsts)), 6


def distribution(
    result: LatencyResult,
    pairs: Sequence[tuple[int, int]] | None = None,
    kind: Literal["violin", "hist"] = "violin",
    ax: Axes | None = None,
    limit: int = 12,
    clip: tuple[float, float] | None = DEFAULT_CLIP,
) -> Axes:
    """Per-pair sample distributions, where bimodal or unstable pairs show.

    Parameters
    ----------
    result : LatencyResult
        A measured result (with raw samples).
    pairs : list of tuple, optional
        CPU-id pairs to draw (default: up to ``limit`` pairs: bimodal or unstable ones first, then
        a spread from fastest to slowest).
    kind : {"violin", "hist"}
        Violins or histograms.
    ax : matplotlib.axes.Axes, optional
        Draw into this Axes (default: a new figure).
    limit : int
        How many pairs to choose when ``pairs`` is not given.
    clip : tuple of float or None
        Violins show each pair's samples within this percentile range ``(low, high)`` of that
        pair, so one preempted sample does not squash them; the others are marked on the edge
        and counted in the legend. None draws every sample.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    InputError
        For a value-only result (imported from another tool's file: no samples), an unknown
        kind, a pair that is not two CPUs of the result, or a bad ``clip``.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install it).

    Examples
    --------
    >>> import corelat, corelat.plot
    >>> ax = corelat.plot.distribution(corelat.load(corelat.example_files()[0]), kind="hist")
    """
    # A measured result keeps its samples, however few a loaded machine's time budget left (even one):
    # only another tool's value per pair has no distribution.
    if result.value_only:
        src = result.metadata.get("source", "another tool")
        raise InputError(f"{result.name or 'this result'} holds one value per pair ({src}), not samples: "
                         "there is no distribution to draw; measure with corelat to keep raw samples")
    if kind not in ("violin", "hist"):
        raise InputError(f"unknown kind {kind!r}: use 'violin' or 'hist'")
    idx = _default_pairs(result, limit) if pairs is None else _pair_indices(result, pairs)
    data, labels, counts = _pair_samples(result, idx)
    if not data:
        raise InputError("no measured samples for the requested pairs")
    plt = _plt()
    own_figure = ax is None
    if ax is None:
        width = min(max(5.0, 0.7 * len(data) + 2.5), 16.0)
        _, ax = plt.subplots(figsize=(width, 4.5), layout="constrained")
    # Preempted samples (a VM's vCPU descheduled) can be 100x the bulk: then a log scale keeps both
    # the bulk and the outliers readable.
    clipped = []  # per drawn pair: samples beyond the clip range, (below, above)
    if kind == "violin" and clip is not None:
        data, clipped = _clip(data, clip)
    everything = np.concatenate(data)
    log = float(everything.max()) > LOG_SCALE_RATIO * float(np.median(everything)) and everything.min() > 0
    if kind == "violin":
        _violins(ax, data, labels, log, everything)
        if any(below.size or above.size for below, above in clipped):
            _mark_clipped(ax, clipped, clip)
    else:
        _histograms(ax, data, labels, log, everything)
    ax.set_title(f"{result.name or 'result'}: {result.kernel} kernel, {_count_text(counts)}", fontsize=10)
    if own_figure:
        _settle(ax.figure)
    return ax


def compare(
    results: Sequence[LatencyResult | Path],
    names: Sequence[str] | None = None,
    order: Order | None = DEFAULT_ORDER,
    statistic: Statistic = "median",
    annotate: bool | None = None,
) -> Figure:
    """Heatmaps of several results side by side on one colour scale.

    Parameters
    ----------
    results : list of LatencyResult or path
        Results or paths to result files.
    names : list of str, optional
        Panel titles (default: each result's name, or the file's name where two results share
        one, e.g. two runs on one host).
    order : {None, "os", "topology", "structure"}
        How each matrix is ordered (see :func:`heatmap`).
    statistic : str
        The per-pair statistic drawn.
    annotate : bool or None
        Write each cell's value (None: where the cells are big enough).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        For no results, or a file that cannot be read.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install it).

    Examples
    --------
    >>> import corelat, corelat.plot
    >>> fig = corelat.plot.compare(corelat.example_files())
    >>> len(fig.axes) >= 2
    True
    """

    plt = _plt()
    items = list(results)
    if not items:
        raise InputError("nothing to compare")
    loaded, names = labels_for(items, names)
    values = np.concatenate([np.ravel(r.statistic(statistic)) for r in loaded])
    values = values[np.isfinite(values)]
    vmin, vmax = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    k = len(loaded)
    side = min(max(4.0, 0.3 * max(r.n for r in loaded) + 2.0), 9.0)
    fig, axes = plt.subplots(1, k, figsize=(side * k + 1.5, side + 1.0), layout="constrained", squeeze=False)
    axes = list(axes[0])
    for ax, r, name in zip(axes, loaded, names):
        heatmap(r, order=order, statistic=statistic, annotate=annotate, ax=ax, vmin=vmin, vmax=vmax,
                colorbar=False, title=f"{name}\n{r.kernel} kernel, {r.n} CPUs")
    mappable = axes[0].images[0]
    cb = fig.colorbar(mappable, ax=axes, shrink=0.85, pad=0.02)
    quantities = {_value_label(r, statistic).split(", ", 1)[0] for r in loaded}
    words = "; ".join(dict.fromkeys(_statistic_words(r, statistic) for r in loaded))
    cb.set_label(f"{quantities.pop()}, {words}" if len(quantities) == 1
                 else "; ".join(dict.fromkeys(_value_label(r, statistic) for r in loaded)))
    fig.suptitle("core-to-core latency, one colour scale")
    _settle(fig)
    return fig


# -- fleets ------------------------------------------------------------------------------------------------
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
    ticks, fs = _ticks(n, [])
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


def placement(
    result: PlacementResult,
    order: Order | None = DEFAULT_ORDER,
    statistic: Statistic = "median",
    annotate: bool | None = None,
) -> Figure:
    """Small multiples of a :func:`corelat.placement` result.

    One heatmap per home of the line, on one colour scale, titled with each home and where its
    pages were found (:func:`heatmap` draws one home with ``home=``).

    Parameters
    ----------
    result : PlacementResult
        What :func:`corelat.placement` returned.
    order : {None, "os", "topology", "structure"}
        How each matrix is ordered (see :func:`heatmap`).
    statistic : str
        The per-pair statistic drawn.
    annotate : bool or None
        Write each cell's value (None: where the cells are big enough).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        For anything but a placement result.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install it).

    Examples
    --------
    >>> import corelat, corelat.plot
    >>> r = corelat.placement([0, 1], homes=["initiator", "responder"], samples=5, round_trips=20)
    >>> fig = corelat.plot.placement(r)
    """

    if not isinstance(result, PlacementResult):
        raise InputError("plot.placement() draws a corelat.placement() result; use heatmap() for one matrix")
    names = []
    for label, found in zip(result.homes, result.home_node):
        seen = sorted({int(v) for v in found.ravel() if v >= 0})
        names.append(f"home {label}" + (f" (pages on node {', '.join(map(str, seen))})" if seen else ""))
    fig = compare(result.results, names=names, order=order, statistic=statistic, annotate=annotate)
    fig.suptitle(f"where the line lives: {result.kernel}, one colour scale")
    return fig
