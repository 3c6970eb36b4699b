"""What the plotted data says: how far a value can be trusted, which pairs to draw, what a
percentile clip keeps."""

from __future__ import annotations

import warnings

import numpy as np

from corelat._core.errors import InputError
from corelat._results.latency import PairFlag


#: Cell values are written on heatmaps of at most this many CPUs: beyond, a cell is under a point at any
#: figure size, and a text per cell (a million for 1,000 CPUs) took seconds to draw, Ctrl-C waiting.
MAX_ANNOTATED_CPUS = 128


def _annotation_cap(annotate, n):
    """``(annotate, title note)``: an asked-for annotation of more than MAX_ANNOTATED_CPUS is left out."""
    if annotate and n > MAX_ANNOTATED_CPUS:
        return False, f"\ncell values not written: {n:,} CPUs (at most {MAX_ANNOTATED_CPUS})"
    return bool(annotate), ""


def _block_medians(m, k):
    """The median of each ``k`` × ``k`` block of ``m`` (NaN cells left out; NaN for a block of none),
    ``k`` rows at a time: never a copy of all of ``m``."""
    n0, n1 = m.shape
    rows, cols = -(-n0 // k), -(-n1 // k)
    out = np.empty((rows, cols))
    strip = np.empty((k, cols * k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": the diagonal's last block
        for r in range(rows):
            part = m[r * k:(r + 1) * k]
            strip.fill(np.nan)
            strip[: part.shape[0], :n1] = part
            out[r] = np.nanmedian(strip.reshape(k, cols, k).transpose(1, 0, 2).reshape(cols, k * k), axis=1)
    return out


def _uncertainty(result, statistic):
    """Per-cell half-width of what the shown value can be trusted to (NaN where unknown): the
    median's or mean's interval, widened by the timer-offset bound of one-way results."""
    if result.value_only or statistic not in ("median", "mean"):
        return None
    u = np.array(result.err if statistic == "median" else result.sem, dtype=float)
    bound = result.extras.get("skew_bound_ns")
    if bound is not None and np.shape(bound) == u.shape:
        u = np.fmax(u, np.asarray(bound, dtype=float))
    return u


def _agree_within(result, statistic, m):
    """The largest uncertainty when every value's interval holds one common value (so the matrix
    shows no difference that the data can tell apart), else None."""
    u = _uncertainty(result, statistic)
    ok = np.isfinite(m)
    if u is None or ok.sum() < 2 or not np.all(np.isfinite(u[ok])):
        return None
    if np.unique(m[ok]).size < 2:
        return None
    if np.max(m[ok] - u[ok]) <= np.min(m[ok] + u[ok]):
        return float(np.max(u[ok]))
    return None


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


def _clip(data, clip):
    """Each pair's samples within its own percentile range ``clip``, and what fell outside."""
    lo_pct, hi_pct = clip
    if not 0 <= lo_pct < hi_pct <= 100:
        raise InputError(f"clip {clip!r}: give two percentiles, 0 <= low < high <= 100")
    kept, out = [], []
    for s in data:
        lo, hi = np.percentile(s, [lo_pct, hi_pct])
        inside = (s >= lo) & (s <= hi)
        kept.append(s[inside])
        out.append((s[s < lo], s[s > hi]))
    return kept, out


def _colour_range(m, vmin, vmax, flat):
    """The heatmap's colour limits: the data's range where the caller gave none, widened to the
    values' uncertainty ``flat`` when the caller gave neither (differences smaller than that are
    noise, and a scale as wide as the uncertainty keeps them from being painted as structure)."""
    auto_scale = vmin is None and vmax is None
    finite = m[np.isfinite(m)]
    if vmin is None:
        vmin = float(finite.min()) if finite.size else 0.0
    if vmax is None:
        vmax = float(finite.max()) if finite.size else 1.0
    if flat is not None and auto_scale:
        mid = (vmax + vmin) / 2
        vmin, vmax = min(vmin, mid - flat), max(vmax, mid + flat)
    if vmax - vmin < 0.02 * max(abs(vmax), 1.0):  # one value (2 CPUs): a readable scale around it
        mid = (vmax + vmin) / 2
        vmin, vmax = mid * 0.9, mid * 1.1 if mid > 0 else 1.0
    return vmin, vmax


def _pair_indices(result, pairs):
    """CPU-id pairs as index pairs of ``result``; anything but two of its CPUs is refused."""
    pos = {c: i for i, c in enumerate(result.cpus)}
    idx = []
    for p in pairs:
        try:
            a, b = p
            idx.append((pos[a], pos[b]))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"pair {p!r} is not two CPUs of this result {result.cpus}") from None
    return idx


def _pair_flag_word(flag):
    return " bimodal" if flag & PairFlag.BIMODAL else (" unstable" if flag & PairFlag.UNSTABLE else "")


def _pair_samples(result, idx):
    """``(samples, labels, counts)`` of the index pairs that hold samples; a symmetric result
    measured only one direction of a pair lends the other."""
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
        data.append(s)
        counts.append(s.size)
        labels.append(f"{result.cpus[i]}↔{result.cpus[j]}{_pair_flag_word(flags[i, j] | flags[j, i])}")
    return data, labels, counts
