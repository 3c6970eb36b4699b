"""What the pictures draw on an Axes: a heatmap's written values and group lines, violins and
histograms of samples, a fleet group's heat table."""

from __future__ import annotations

import math

import numpy as np

from corelat._core.text import value_err as _fmt
from corelat.plot._axes import _log_labels
from corelat.plot._words import _fleet_label


def _group_lines(ax, lines):
    """White lines between the groups of a heatmap (``(first index, width)`` each)."""
    for start, width in lines:
        ax.axhline(start - 0.5, color="white", linewidth=width)
        ax.axvline(start - 0.5, color="white", linewidth=width)


def _write_values(ax, m, cm, vmin, vmax, cell_pt):
    """Each finite cell's value, in black or white, whichever reads better on the cell's colour."""
    size = max(4.0, min(10.0, cell_pt * 0.36))
    n = m.shape[0]
    for i in range(n):
        for j in range(n):
            v = m[i, j]
            if np.isfinite(v):
                r, g, b, _ = cm((v - vmin) / (vmax - vmin))
                colour = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
                ax.text(j, i, _fmt(v), ha="center", va="center", fontsize=size, color=colour)


def _log_y(ax, everything):
    """A log10 y axis (the violins are drawn as log10 of the samples) labelled 1, 2, 5 per decade."""
    lo, hi = math.floor(np.log10(everything.min())), math.ceil(np.log10(everything.max()))
    ticks = [(math.log10(m * 10.0**e), _fmt(m * 10.0**e)) for e in range(lo, hi + 1) for m in (1, 2, 5)]
    bottom, top = math.log10(everything.min()) - 0.05, math.log10(everything.max()) + 0.05
    ticks = [(t, lab) for t, lab in ticks if bottom <= t <= top]
    ax.set_ylim(bottom, top)
    ax.set_yticks([t for t, _ in ticks], [lab for _, lab in ticks])
    ax.set_ylabel("one-way latency (ns, log scale)")


def _violins(ax, data, labels, log, everything):
    """One violin per pair (a pair whose samples are all equal has none) with its samples as dots."""
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
        _log_y(ax, everything)
    else:
        ax.set_ylabel("one-way latency (ns)")


def _histograms(ax, data, labels, log, everything):
    """One step histogram per pair on shared bins (log-spaced on a log scale)."""
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


def _fleet_cells(plt, ax, group, rows, flagged):
    """The class medians written in the cells (up to 60 rows, where they stay readable) and the
    outliers boxed."""
    annotate = len(rows) <= 60
    for y, i in enumerate(rows):
        for x, c in enumerate(group.classes):
            v = group.values[i, x]
            if annotate and np.isfinite(v):
                ax.text(x, y, _fmt(v), ha="center", va="center", fontsize=7)
            if (group.nodes[i], c) in flagged:
                ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="black", lw=2))


def _fleet_table(plt, fig, ax, shown, flagged, cm, r):
    """One group's heat table: nodes × classes, coloured by deviation within ±``r``, with its
    colour bar."""
    g, dev, rows = shown
    d = dev[rows] if dev.size else np.zeros((len(rows), 0))
    im = ax.imshow(np.ma.masked_invalid(d), cmap=cm, vmin=-r, vmax=r, aspect="auto",
                   interpolation="nearest")
    ax.set_xticks(range(len(g.classes)), [_fleet_label(c) for c in g.classes], fontsize=8)
    ax.set_yticks(range(len(rows)), [g.nodes[i] for i in rows], fontsize=7 if len(rows) > 30 else 8)
    _fleet_cells(plt, ax, g, rows, flagged)
    more = f", {len(rows)} of {len(g.nodes)} nodes (most deviating)" if len(rows) < len(g.nodes) else ""
    ax.set_title(f"group {g.id}: {g.cpu_model}, {len(g.cpus)} CPUs, {len(g.nodes)} nodes{more}",
                 fontsize=9)
    cb = fig.colorbar(im, ax=ax, shrink=0.9, pad=0.02)
    cb.set_label("vs group median", fontsize=8)
    cb.ax.yaxis.set_major_formatter(lambda v, _: f"{v:+.0%}")
