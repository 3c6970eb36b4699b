"""Pictures of latency results (needs matplotlib: ``pip install corelat[plot]``).

* :func:`heatmap`: the matrix with a colour bar in ns and group boundaries drawn, ordered by the OS
  topology, by the latency structure, or by CPU id; readable from 2 to hundreds of CPUs (cell values
  are written only where they fit).
* :func:`distribution`: per-pair sample distributions (violins or histograms), where bimodal or
  unstable pairs show.
* :func:`compare`: heatmaps of several results side by side on one colour scale.

matplotlib is imported when a function is first called, so ``import corelat.plot`` stays cheap. When
no ``ax`` is given the figure is made with pyplot (so notebooks show it); close it with
``plt.close(fig)`` in long scripts.
"""

import math

import numpy as np

from ._errors import InputError
from ._result import PairFlag

#: A cell must be at least this many points wide to carry its value.
MIN_ANNOTATED_CELL_PT = 17.0
#: Distributions switch to a log scale when the slowest sample exceeds this many times the median.
LOG_SCALE_RATIO = 5.0
#: Line widths of group boundaries, coarsest first.
_TOPOLOGY_LINES = (("package", 2.2), ("node", 1.6), ("l3", 1.0))
_NAN_COLOUR = "#d9d9d9"


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("corelat.plot needs matplotlib: pip install corelat[plot]") from None
    return plt


def _fmt(v):
    return f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}"


def _ordered(result, order):
    """(result in that order, [(boundary starts, line width)], note for the title)."""
    if order == "os":
        return result.with_cpus_order(sorted(result.cpus)), [], "CPU order"
    if order == "topology":
        if result.metadata.get("topology"):
            try:
                from ._result import thaw
                from ._topology import Topology

                cpus, bounds = Topology.from_dict(thaw(result.metadata["topology"])).order(result.cpus)
            except (ImportError, ValueError, TypeError, KeyError) as e:
                note = f"topology unusable ({e}): ordered by latency structure"
            else:
                lines = [(bounds.get(level, []), width) for level, width in _TOPOLOGY_LINES]
                drawn = [level.replace("l3", "L3").replace("node", "NUMA node")
                         for (level, _), (starts, _) in zip(_TOPOLOGY_LINES, lines) if starts]
                what = "topology order" + (f"; lines: {', '.join(drawn)}" if drawn else "")
                return result.with_cpus_order(cpus), _dedupe(lines), what
        else:
            note = "no topology recorded: ordered by latency structure"
        ordered, lines, _ = _ordered(result, "structure")
        return ordered, lines, note
    if order == "structure":
        from ._structure import structure

        st = structure(result)
        bounds = st.boundaries()
        k = len(st.levels)
        lines = [(bounds[i], 1.0 + 1.2 * i / max(k - 1, 1)) for i in range(k)]
        what = "latency structure order" + (" (lines: latency groups)" if k else "")
        return result.with_cpus_order(st.order()), _dedupe(lines), what
    raise InputError(f"unknown order {order!r}: use 'topology', 'structure' or 'os'")


def _dedupe(lines):
    # A boundary shared by several levels (a package that is also a NUMA node) is drawn once, thickest.
    best = {}
    for starts, width in lines:
        for s in starts:
            best[s] = max(best.get(s, 0.0), width)
    return sorted(best.items())


def _figsize(n):
    side = min(max(5.0, 0.34 * n + 2.0), 14.0)
    return (side + 1.4, side)


def heatmap(result, order="topology", statistic="median", annotate=None, ax=None, *, vmin=None, vmax=None,
            colorbar=True, cmap="viridis", title=None):
    """Draw the latency matrix; returns the matplotlib ``Axes``.

    Args:
        result: a :class:`~corelat._result.LatencyResult`.
        order: ``"topology"`` (package → NUMA node → L3 → core, from the topology the result carries;
            falls back to ``"structure"`` and says so in the title), ``"structure"`` (groups found by
            :func:`corelat.structure`) or ``"os"`` (CPU ids).
        statistic: ``"median"``, ``"mean"``, ``"min"``, ``"max"`` or ``"std"``.
        annotate: write each cell's value: True, False, or None for "where the cells are big enough".
        ax: draw into this Axes (default: a new figure sized for the number of CPUs).
        vmin, vmax: colour scale limits in ns (default: the data's range).
        colorbar: add a colour bar in ns.
    """
    plt = _plt()
    ordered, lines, note = _ordered(result, order)
    m = np.array(ordered.statistic(statistic), dtype=float)
    n = ordered.n
    if ax is None:
        _, ax = plt.subplots(figsize=_figsize(n), layout="constrained")
    fig = ax.figure
    cm = plt.get_cmap(cmap).with_extremes(bad=_NAN_COLOUR)
    finite = m[np.isfinite(m)]
    if vmin is None:
        vmin = float(finite.min()) if finite.size else 0.0
    if vmax is None:
        vmax = float(finite.max()) if finite.size else 1.0
    if vmax - vmin < 0.02 * max(abs(vmax), 1.0):  # one value (2 CPUs): a readable scale around it
        mid = (vmax + vmin) / 2
        vmin, vmax = mid * 0.9, mid * 1.1 if mid > 0 else 1.0
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest",
                   origin="upper", aspect="equal")
    # Ticks: every CPU up to 32, else about 32 evenly spaced labels.
    step = max(1, math.ceil(n / 32))
    ticks = list(range(0, n, step))
    labels = [str(ordered.cpus[i]) for i in ticks]
    fs = 9 if n <= 16 else (7 if n <= 48 else 6)
    ax.set_xticks(ticks, labels, fontsize=fs, rotation=90 if n > 16 else 0)
    ax.set_yticks(ticks, labels, fontsize=fs)
    ax.set_xlabel("CPU")
    ax.set_ylabel("CPU")
    ax.tick_params(length=2)
    for start, width in lines:
        ax.axhline(start - 0.5, color="white", linewidth=width)
        ax.axvline(start - 0.5, color="white", linewidth=width)
    if colorbar:
        cb = fig.colorbar(im, ax=ax, shrink=0.85, pad=0.02)
        cb.set_label(f"one-way latency (ns), {statistic} per pair")
    # Cell size in points (from the axes' size before layout: close enough to decide and to size text).
    bbox = ax.get_window_extent().transformed(fig.dpi_scale_trans.inverted())
    cell_pt = min(bbox.width, bbox.height) * 72.0 / max(n, 1)
    if annotate is None:
        annotate = cell_pt >= MIN_ANNOTATED_CELL_PT
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
    ax.set_title(title, fontsize=10)
    return ax


def _default_pairs(result, limit):
    """Interesting pairs (index tuples, lower triangle): bimodal/unstable first, then a spread."""
    med = result.median
    n = result.n
    sym = result.metadata.get("symmetric", True)
    cand = [(i, j) for i in range(n) for j in range(n)
            if i != j and (j < i or not sym) and result.count[i, j] > 0]
    if not cand:
        return []
    flagged = [p for p in cand if result.flags[p] & (PairFlag.BIMODAL | PairFlag.UNSTABLE)]
    by_value = sorted(cand, key=lambda p: med[p])
    picks = np.unique(np.linspace(0, len(by_value) - 1, min(limit, len(by_value))).round().astype(int))
    spread = [by_value[k] for k in picks]
    out = []
    for p in flagged[: limit // 2] + spread:
        if p not in out:
            out.append(p)
    return sorted(out[:limit], key=lambda p: med[p])


def distribution(result, pairs=None, kind="violin", ax=None, limit=12):
    """Per-pair sample distributions; returns the ``Axes``.

    ``pairs`` are CPU-id tuples (default: up to ``limit`` pairs: bimodal or unstable ones first, then
    a spread from fastest to slowest). ``kind`` is ``"violin"`` or ``"hist"``. A value-only result
    (imported from another tool's file) has no samples: that raises :class:`~corelat._errors.InputError`.
    """
    if result.value_only or result.samples.shape[2] < 2:
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
    data, labels = [], []
    for i, j in idx:
        s = result.samples[i, j]
        s = s[~np.isnan(s)]
        if s.size == 0 and result.metadata.get("symmetric", True):
            s = result.samples[j, i]
            s = s[~np.isnan(s)]
        if s.size == 0:
            continue
        flag = result.flags[i, j] | result.flags[j, i]
        mark = " bimodal" if flag & PairFlag.BIMODAL else (" unstable" if flag & PairFlag.UNSTABLE else "")
        data.append(s)
        labels.append(f"{result.cpus[i]}↔{result.cpus[j]}{mark}")
    if not data:
        raise InputError("no measured samples for the requested pairs")
    plt = _plt()
    if ax is None:
        width = min(max(5.0, 0.7 * len(data) + 2.5), 16.0)
        _, ax = plt.subplots(figsize=(width, 4.5), layout="constrained")
    # Preempted samples (a VM's vCPU descheduled) can be 100x the bulk: then a log scale keeps both
    # the bulk and the outliers readable.
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
            ticks = [(math.log10(m * 10.0**e), _fmt(m * 10.0**e)) for e in range(lo, hi + 1) for m in (1, 2, 5)]
            bottom, top = math.log10(everything.min()) - 0.05, math.log10(everything.max()) + 0.05
            ticks = [(t, lab) for t, lab in ticks if bottom <= t <= top]
            ax.set_ylim(bottom, top)
            ax.set_yticks([t for t, _ in ticks], [lab for _, lab in ticks])
            ax.set_ylabel("one-way latency (ns, log scale)")
        else:
            ax.set_ylabel("one-way latency (ns)")
    else:
        lo = float(everything.min())
        hi = float(everything.max())
        if log:
            bins = np.geomspace(lo, hi, 60)
            ax.set_xscale("log")
        else:
            bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 50)
        for s, label in zip(data, labels):
            ax.hist(s, bins=bins, histtype="step", linewidth=1.3, label=label)
        ax.set_xlabel("one-way latency (ns, log scale)" if log else "one-way latency (ns)")
        ax.set_ylabel("samples")
        ax.legend(fontsize=7, ncols=2 if len(data) > 6 else 1)
    per = result.samples.shape[2]
    ax.set_title(f"{result.name or 'result'}: {result.kernel} kernel, samples per pair (up to {per})", fontsize=10)
    return ax


def compare(results, names=None, order="structure", statistic="median", annotate=None):
    """Heatmaps of several results side by side on one colour scale; returns the ``Figure``."""
    plt = _plt()
    results = list(results)
    if not results:
        raise InputError("nothing to compare")
    names = list(names) if names is not None else [r.name or f"result {k + 1}" for k, r in enumerate(results)]
    if len(names) != len(results):
        raise InputError(f"{len(names)} names for {len(results)} results")
    values = np.concatenate([np.ravel(r.statistic(statistic)) for r in results])
    values = values[np.isfinite(values)]
    vmin, vmax = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    k = len(results)
    side = min(max(4.0, 0.3 * max(r.n for r in results) + 2.0), 9.0)
    fig, axes = plt.subplots(1, k, figsize=(side * k + 1.5, side + 0.6), layout="constrained", squeeze=False)
    axes = list(axes[0])
    for ax, r, name in zip(axes, results, names):
        heatmap(r, order=order, statistic=statistic, annotate=annotate, ax=ax, vmin=vmin, vmax=vmax,
                colorbar=False, title=f"{name}\n{r.kernel} kernel, {r.n} CPUs")
    mappable = axes[0].images[0]
    cb = fig.colorbar(mappable, ax=axes, shrink=0.85, pad=0.02)
    cb.set_label(f"one-way latency (ns), {statistic} per pair")
    fig.suptitle("core-to-core latency, one colour scale")
    return fig
