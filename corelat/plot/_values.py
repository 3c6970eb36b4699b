"""What the plotted data says: how far a value can be trusted, which pairs to draw, what a
percentile clip keeps."""

from __future__ import annotations

import numpy as np

from corelat._core.errors import InputError
from corelat._results.latency import PairFlag


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
