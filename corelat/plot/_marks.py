"""What the pictures draw on an Axes: a heatmap's written values and group lines, violins and
histograms of samples."""

from __future__ import annotations

import math

import numpy as np

from corelat._core.errors import InputError
from corelat._core.text import value_err as _fmt
from corelat.plot._axes import TICK_LABEL_SIZE, _log_labels
from corelat.plot._words import _value_label, _who


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
                  if len(data) > 4 else "center")
    ax.tick_params(which="both", labelsize=TICK_LABEL_SIZE)
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
    ax.tick_params(which="both", labelsize=TICK_LABEL_SIZE)
    ax.legend(fontsize=7, ncols=2 if len(data) > 6 else 1)


def _value_histogram(result, ax, log_ratio):
    """One histogram of every pair's value (a file of one value per pair), a row at a time: neither a
    copy of the matrix nor an object per pair. A log scale where the slowest pair is over ``log_ratio``
    times the median pair, as for samples."""
    m = np.asarray(result.median, dtype=float)
    n = result.n
    symmetric = result.metadata.get("symmetric", True)

    def counted(edges):
        total = np.zeros(len(edges) - 1, dtype=np.int64)
        for i in range(n):
            row = m[i, :i] if symmetric else np.delete(m[i], i)
            total += np.histogram(row[np.isfinite(row)], bins=edges)[0]
        return total

    ok = np.isfinite(m)
    lo, hi = float(np.min(m, where=ok, initial=np.inf)), float(np.max(m, where=ok, initial=-np.inf))
    if not lo <= hi:
        raise InputError("no pair has a value: there is nothing to draw")
    fine = np.linspace(lo, hi if hi > lo else lo + 1.0, 2049)
    cum = np.cumsum(counted(fine))
    median = float(fine[np.searchsorted(cum, cum[-1] / 2) + 1])
    log = hi > log_ratio * median and lo > 0
    edges = np.geomspace(lo, hi, 60) if log and hi > lo else np.linspace(lo, hi if hi > lo else lo + 1.0, 50)
    counts = counted(edges)
    ax.stairs(counts, edges, linewidth=1.3)
    if log:
        ax.set_xscale("log")
        _log_labels(ax.xaxis, lo, hi)
    label = _value_label(result, "median")
    ax.set_xlabel(label.replace("(ns)", "(ns, log scale)") if log else label)
    ax.set_ylabel("CPU pairs")
    ax.tick_params(which="both", labelsize=TICK_LABEL_SIZE)
    ax.set_title(f"{_who(result)}: {result.kernel} kernel, {int(cum[-1]):,} CPU pairs, one value each",
                 fontsize=10)
    return ax
