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
from corelat._core.errors import InputError
from corelat._core.extras import require
from corelat._core.text import value_err as _fmt
from corelat._core.types import DEFAULT_ORDER, Order, Path, Statistic
from corelat._results.latency import LatencyResult
from corelat._results.placement import PlacementResult
from corelat.plot._axes import _cell_points, _figsize, _fit_title, _mark_clipped, _settle, fit_colorbar_label
from corelat.plot._marks import _group_lines, _histograms, _value_histogram, _violins, _write_values
from corelat.plot._order import _one_home, _ordered
from corelat.plot._values import (
    _agree_within,
    _annotation_cap,
    _block_medians,
    _clip,
    _colour_range,
    _default_pairs,
    _pair_indices,
    _pair_samples,
)
from corelat.plot._words import _count_text, _statistic_words, _value_label, _who
from corelat.plot.fleet import FLEET_DEVIATION_RANGE, fleet  # noqa: F401 - public: corelat.plot.fleet

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
#: Up to this many CPUs a heatmap draws each pair as its own cell; beyond, each drawn cell is the
#: median of a k × k block of pairs (k = ceil(n / MAX_DRAWN_CELLS); the title says so). A 4,000-CPU
#: figure has fewer pixels than pairs, and matplotlib holds about 100 bytes per cell it is given.
MAX_DRAWN_CELLS = 1024


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
    '2-CPU VM, cas (AMD EPYC): cas kernel, 2 CPUs'
    """
    plt = _plt()
    result = _one_home(result, home)
    ordered, lines, note = _ordered(result, order)
    m = np.asarray(ordered.statistic(statistic), dtype=float)  # read only: no copy of a big matrix
    n = ordered.n
    block = math.ceil(n / MAX_DRAWN_CELLS)
    own_figure = ax is None
    if ax is None:
        _, ax = plt.subplots(figsize=_figsize(n), layout="constrained")
    fig = ax.figure
    cm = plt.get_cmap(cmap).with_extremes(bad=_NAN_COLOUR)
    flat = _agree_within(ordered, statistic, m)
    vmin, vmax = _colour_range(m, vmin, vmax, flat)
    drawn = m if block == 1 else _block_medians(m, block)
    side = drawn.shape[0] * block - 0.5  # a block past the last CPU is cut off by the limits below
    im = ax.imshow(np.ma.masked_invalid(drawn), cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest",
                   origin="upper", aspect="equal", extent=(-0.5, side, side, -0.5))
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    _cpu_axes(ax, ordered, lines)
    ok = np.isfinite(m)
    values = np.array([np.min(m, where=ok, initial=np.inf), np.max(m, where=ok, initial=-np.inf)])
    single = ok.any() and values[0] == values[1]  # e.g. 2 CPUs: a colour bar would carry no information
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
        if block > 1:
            title += f"\neach cell the median of a {block} × {block} block of pairs ({n:,} CPUs)"
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
    title = f"{_who(ordered)}: {ordered.kernel} kernel, {ordered.n} CPUs\n{note}"
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
        For a value-only result (imported from another tool's file: no samples) unless
        ``kind="hist"`` without ``pairs`` (then one histogram of every pair's value), an unknown
        kind, a pair that is not two CPUs of the result, or a bad ``clip``.
    MissingDependencyError
        Where matplotlib is not installed (the message says how to install it).

    Examples
    --------
    >>> import corelat, corelat.plot
    >>> ax = corelat.plot.distribution(corelat.load(corelat.example_files()[0]), kind="hist")
    """
    if kind not in ("violin", "hist"):
        raise InputError(f"unknown kind {kind!r}: use 'violin' or 'hist'")
    # A measured result keeps its samples, however few a loaded machine's time budget left (even one):
    # only another tool's value per pair has no distribution per pair; its pairs' values make one.
    if result.value_only:
        return _values_histogram(result, pairs, kind, ax)
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
    _fit_title(ax, f"{_who(result)}: {result.kernel} kernel, {_count_text(counts)}")
    if own_figure:
        _settle(ax.figure)
    return ax


def _values_histogram(result, pairs, kind, ax):
    """The histogram of every pair's value of a file of one value per pair (no violins, no pairs)."""
    src = result.metadata.get("source", "another tool")
    if kind != "hist" or pairs is not None:
        raise InputError(f"{result.name or 'this result'} holds one value per pair ({src}), not samples: "
                         "there is no distribution to draw per pair (kind='hist' without pairs draws "
                         "the histogram of every pair's value); measure with corelat to keep raw samples")
    own_figure = ax is None
    if ax is None:
        _, ax = _plt().subplots(figsize=(8.0, 4.5), layout="constrained")
    _value_histogram(result, ax, LOG_SCALE_RATIO)
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
    titles = list(names) if names is not None else None
    loaded, names = labels_for(items, names)
    titles = titles if titles is not None else _panel_titles(loaded, names)
    values = np.concatenate([np.ravel(r.statistic(statistic)) for r in loaded])
    values = values[np.isfinite(values)]
    vmin, vmax = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    k = len(loaded)
    # A grid, not one long row: up to 3 side by side, then about as many rows as columns.
    ncols = k if k <= 3 else math.ceil(math.sqrt(k))
    nrows = math.ceil(k / ncols)
    side = min(max(4.0, 0.3 * max(r.n for r in loaded) + 2.0), 9.0 if k <= 3 else 6.0)
    fig, grid = plt.subplots(nrows, ncols, figsize=(side * ncols + 1.5, (side + 1.0) * nrows),
                             layout="constrained", squeeze=False)
    axes = list(grid.ravel()[:k])
    for spare in grid.ravel()[k:]:
        spare.remove()
    for ax, r, title in zip(axes, loaded, titles):
        heatmap(r, order=order, statistic=statistic, annotate=annotate, ax=ax, vmin=vmin, vmax=vmax,
                colorbar=False, title=f"{title}\n{r.kernel} kernel, {r.n} CPUs")
    mappable = axes[0].images[0]
    cb = fig.colorbar(mappable, ax=axes, shrink=0.85, pad=0.02)
    quantities = {_value_label(r, statistic).split(", ", 1)[0] for r in loaded}
    words = "; ".join(dict.fromkeys(_statistic_words(r, statistic) for r in loaded))
    cb.set_label(f"{quantities.pop()}, {words}" if len(quantities) == 1
                 else "; ".join(dict.fromkeys(_value_label(r, statistic) for r in loaded)))
    fig.suptitle("core-to-core latency, one colour scale")
    _settle(fig)
    fit_colorbar_label(fig)
    return fig


def _panel_titles(results, labels):
    """Each panel's title: the CPU model (see _who), with the label where two panels would share one;
    a file's name where it tells apart two results of one name (two runs on one host)."""
    who = [label if label != (r.name or "result") else _who(r) for r, label in zip(results, labels)]
    return [w if who.count(w) == 1 or w == label else f"{w} ({label})" for w, label in zip(who, labels)]


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
