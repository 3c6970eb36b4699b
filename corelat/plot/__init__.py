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
from corelat._results.latency import LatencyResult, PairFlag
from corelat._results.placement import PlacementResult
from corelat.plot._axes import _figsize, _log_labels, _mark_clipped, _settle
from corelat.plot._order import _one_home, _ordered
from corelat.plot._values import _agree_within, _clip, _default_pairs
from corelat.plot._words import _count_text, _fleet_label, _statistic_words, _value_label

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
        Write each cell's value: True, False, or None for "where the cells are big enough".
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
    auto_scale = vmin is None and vmax is None
    cm = plt.get_cmap(cmap).with_extremes(bad=_NAN_COLOUR)
    finite = m[np.isfinite(m)]
    if vmin is None:
        vmin = float(finite.min()) if finite.size else 0.0
    if vmax is None:
        vmax = float(finite.max()) if finite.size else 1.0
    flat = _agree_within(ordered, statistic, m)
    if flat is not None and auto_scale:
        # Differences smaller than the values' own uncertainty are noise: a scale as wide as the
        # uncertainty keeps them from being painted as structure.
        mid = (vmax + vmin) / 2
        vmin, vmax = min(vmin, mid - flat), max(vmax, mid + flat)
    if vmax - vmin < 0.02 * max(abs(vmax), 1.0):  # one value (2 CPUs): a readable scale around it
        mid = (vmax + vmin) / 2
        vmin, vmax = mid * 0.9, mid * 1.1 if mid > 0 else 1.0
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest",
                   origin="upper", aspect="equal")
    ticks, fs = _ticks(n, [start for start, _ in lines])
    labels = [str(ordered.cpus[i]) for i in ticks]
    ax.set_xticks(ticks, labels, fontsize=fs, rotation=90 if n > 16 else 0)
    ax.set_yticks(ticks, labels, fontsize=fs)
    one_way = not ordered.metadata.get("symmetric", True)
    ax.set_xlabel("receiving CPU" if one_way else "CPU")
    ax.set_ylabel("sending CPU" if one_way else "CPU")
    ax.tick_params(length=2)
    for start, width in lines:
        ax.axhline(start - 0.5, color="white", linewidth=width)
        ax.axvline(start - 0.5, color="white", linewidth=width)
    values = np.unique(m[np.isfinite(m)])
    single = values.size == 1  # e.g. 2 CPUs: a colour bar would carry no information
    if colorbar and not single:
        cb = fig.colorbar(im, ax=ax, shrink=0.85, pad=0.02)
        cb.set_label(_value_label(ordered, statistic))
    # Cell size in points (from the axes' size before layout: close enough to decide and to size text).
    bbox = ax.get_window_extent().transformed(fig.dpi_scale_trans.inverted())
    cell_pt = min(bbox.width, bbox.height) * 72.0 / max(n, 1)
    if annotate is None:
        annotate = cell_pt >= MIN_ANNOTATED_CELL_PT or (single and colorbar)
    if annotate:
        size = max(4.0, min(10.0, cell_pt * 0.36))
        for i in range(n):
            for j in range(n):
                v = m[i, j]
                if np.isfinite(v):
                    r, g, b, _ = cm((v - vmin) / (vmax - vmin))
                    colour = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
                    ax.text(j, i, _fmt(v), ha="center", va="center", fontsize=size, color=colour)
    if title is None:
        name = ordered.name or "result"
        title = f"{name}: {ordered.kernel} kernel, {n} CPUs\n{note}"
        if single and colorbar:
            shown = (ordered.metadata.get("statistic") or "one value") if ordered.value_only else statistic
            title += f"\n{shown} {_fmt(float(values[0]))} ns for every pair"
    if flat is not None:
        title += f"\nall differences within the values' uncertainty (±{_fmt(flat)} ns): no structure"
    ax.set_title(title, fontsize=10)
    if own_figure:
        _settle(fig)
    return ax


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
    pos = {c: i for i, c in enumerate(result.cpus)}
    if pairs is None:
        idx = _default_pairs(result, limit)
    else:
        idx = []
        for p in pairs:
            try:
                a, b = p
                idx.append((pos[a], pos[b]))
            except (KeyError, TypeError, ValueError):
                raise InputError(f"pair {p!r} is not two CPUs of this result {result.cpus}") from None
    data, labels, counts = [], [], []
    flags = np.asarray(result.flags)
    for i, j in idx:
        s = result.samples[i, j]
        s = s[~np.isnan(s)]
        if s.size == 0 and result.metadata.get("symmetric", True):
            s = result.samples[j, i]
            s = s[~np.isnan(s)]
        if s.size == 0:
            continue
        flag = flags[i, j] | flags[j, i]
        mark = " bimodal" if flag & PairFlag.BIMODAL else (" unstable" if flag & PairFlag.UNSTABLE else "")
        data.append(s)
        counts.append(s.size)
        labels.append(f"{result.cpus[i]}↔{result.cpus[j]}{mark}")
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
        shown = [np.log10(s) for s in data] if log else data
        spread = [k for k, s in enumerate(shown) if np.ptp(s) > 0]
        if spread:
            ax.violinplot([shown[k] for k in spread], positions=spread, showmedians=True, showextrema=True,
                          widths=0.8)
        for k, s in enumerate(shown):
            ax.scatter(np.full(s.size, k) + np.linspace(-0.12, 0.12, s.size), s, s=3, alpha=0.35,
                       color="black", linewidths=0)
        ax.set_xticks(range(len(data)), labels, rotation=45 if len(data) > 4 else 0, ha="right"
                      if len(data) > 4 else "center", fontsize=8)
        ax.set_xlabel("CPU pair")
        if log:
            lo, hi = math.floor(np.log10(everything.min())), math.ceil(np.log10(everything.max()))
            ticks = [(math.log10(m * 10.0**e), _fmt(m * 10.0**e))
                     for e in range(lo, hi + 1) for m in (1, 2, 5)]
            bottom, top = math.log10(everything.min()) - 0.05, math.log10(everything.max()) + 0.05
            ticks = [(t, lab) for t, lab in ticks if bottom <= t <= top]
            ax.set_ylim(bottom, top)
            ax.set_yticks([t for t, _ in ticks], [lab for _, lab in ticks])
            ax.set_ylabel("one-way latency (ns, log scale)")
        else:
            ax.set_ylabel("one-way latency (ns)")
        if any(below.size or above.size for below, above in clipped):
            _mark_clipped(ax, clipped, clip)
    else:
        lo = float(everything.min())
        hi = float(everything.max())
        if log:
            bins = np.geomspace(lo, hi, 60)
            ax.set_xscale("log")
            _log_labels(ax.xaxis, lo, hi)
        else:
            bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 50)
        for s, label in zip(data, labels):
            ax.hist(s, bins=bins.tolist(), histtype="step", linewidth=1.3, label=label)
        ax.set_xlabel("one-way latency (ns, log scale)" if log else "one-way latency (ns)")
        ax.set_ylabel("samples")
        ax.legend(fontsize=7, ncols=2 if len(data) > 6 else 1)
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
    shown = []
    for g in groups:
        dev = np.asarray(g.values) / np.array([g.class_medians[c] for c in g.classes]) - 1.0
        rows = np.arange(len(g.nodes))
        if len(rows) > max_nodes:
            worst = np.nan_to_num(np.abs(dev), nan=0.0).max(axis=1) if dev.size else np.zeros(len(rows))
            rows = np.sort(np.argsort(-worst, kind="stable")[:max_nodes])
        shown.append((g, dev, rows))
    heights = [max(2.5, 0.22 * len(rows) + 1.8) for _, _, rows in shown]
    width = max(5.0, 1.1 * max(len(g.classes) for g in groups) + 3.0)
    fig, axes = plt.subplots(len(shown), 1, figsize=(width, min(sum(heights), 60.0)), layout="constrained",
                             squeeze=False, height_ratios=heights)
    r = FLEET_DEVIATION_RANGE
    cm = plt.get_cmap("RdBu_r").with_extremes(bad=_NAN_COLOUR)
    for ax, (g, dev, rows) in zip(axes[:, 0], shown):
        d = dev[rows] if dev.size else np.zeros((len(rows), 0))
        im = ax.imshow(np.ma.masked_invalid(d), cmap=cm, vmin=-r, vmax=r, aspect="auto",
                       interpolation="nearest")
        ax.set_xticks(range(len(g.classes)), [_fleet_label(c) for c in g.classes], fontsize=8)
        ax.set_yticks(range(len(rows)), [g.nodes[i] for i in rows], fontsize=7 if len(rows) > 30 else 8)
        annotate = len(rows) <= 60
        for y, i in enumerate(rows):
            for x, c in enumerate(g.classes):
                v = g.values[i, x]
                if annotate and np.isfinite(v):
                    ax.text(x, y, _fmt(v), ha="center", va="center", fontsize=7)
                if (g.nodes[i], c) in flagged:
                    ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="black", lw=2))
        more = f", {len(rows)} of {len(g.nodes)} nodes (most deviating)" if len(rows) < len(g.nodes) else ""
        ax.set_title(f"group {g.id}: {g.cpu_model}, {len(g.cpus)} CPUs, {len(g.nodes)} nodes{more}",
                     fontsize=9)
        cb = fig.colorbar(im, ax=ax, shrink=0.9, pad=0.02)
        cb.set_label("vs group median", fontsize=8)
        cb.ax.yaxis.set_major_formatter(lambda v, _: f"{v:+.0%}")
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
