"""Medians for fleets: a weighted median per column, and a running median matrix in bounded memory.

The running median is Rousseeuw and Bassett's remedian (JASA 85, 1990): values go into a buffer of
``base`` slots; a full buffer is replaced by its median, which goes into the next level's buffer.
Memory is ``base × levels`` matrices for ``base ** levels`` nodes (15 × 3 for 3,375 nodes), the
result is exact up to ``base`` nodes and a consistent estimate of the median beyond.
"""

import numpy as np

#: Slots per remedian level.
REMEDIAN_BASE = 15


def weighted_median(values, weights):
    """Weighted median of each column of ``values`` (k, m), ignoring NaN; NaN for an empty column.

    Where the cumulative weight reaches exactly half, the mean of the two middle values is taken,
    so equal weights give ``np.median``'s answer.
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim == 1:
        return weighted_median(v[:, None], w)[0]
    k, m = v.shape
    if k == 0:
        return np.full(m, np.nan)
    order = np.argsort(v, axis=0, kind="stable")  # NaN sorts last
    vs = np.take_along_axis(v, order, axis=0)
    ws = np.where(np.isnan(vs), 0.0, w[order])
    cw = np.cumsum(ws, axis=0)
    total = cw[-1]
    cols = np.arange(m)
    idx = np.argmax(cw >= total / 2.0, axis=0)
    lo = vs[idx, cols]
    hi = vs[np.minimum(idx + 1, k - 1), cols]
    at_half = (cw[idx, cols] == total / 2.0) & (cw[idx, cols] < total)
    out = np.where(at_half, (lo + hi) / 2.0, lo)
    out[total == 0] = np.nan
    return out


def nan_median(a, axis=-1):
    """Median along ``axis`` ignoring NaN (NaN where all are NaN), as ``np.nanmedian`` but by one
    sort: numpy's nanmedian takes a slow masked-array path for short axes (a few samples per pair,
    a few buffered matrices), and warns on all-NaN slices."""
    s = np.sort(np.moveaxis(np.asarray(a, dtype=np.float64), axis, -1), axis=-1)  # NaN sorts last
    if s.shape[-1] == 1:
        return s[..., 0].copy()
    count = np.sum(~np.isnan(s), axis=-1)
    lo = np.take_along_axis(s, np.maximum((count - 1) // 2, 0)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(s, np.maximum(count // 2, 0)[..., None], axis=-1)[..., 0]
    return np.where(count > 0, (lo + hi) / 2.0, np.nan)


def robust(values):
    """(median, MAD) of the finite values (NaN, NaN when there are none)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return float("nan"), float("nan")
    med = float(np.median(v))
    return med, float(np.median(np.abs(v - med)))


class RunningMedian:
    """The element-wise running median of equally shaped arrays (NaN entries are ignored).

    Each level holds at most ``base`` arrays (a list, so a group of a few nodes costs a few arrays).
    """

    def __init__(self, shape, base=REMEDIAN_BASE):
        self.shape = tuple(shape)
        self.base = int(base)
        self.count = 0
        self._size = int(np.prod(self.shape))
        self._levels = []  # lists of flat arrays

    def add(self, a):
        v = np.array(a, dtype=np.float64).reshape(self._size)
        level = 0
        while True:
            if level == len(self._levels):
                self._levels.append([])
            self._levels[level].append(v)
            if len(self._levels[level]) < self.base:
                break
            v = nan_median(np.stack(self._levels[level]), axis=0)
            self._levels[level] = []
            level += 1
        self.count += 1

    def result(self):
        """The median (estimate) so far; all NaN before anything was added."""
        vals = [x for lv in self._levels for x in lv]
        if not vals:
            return np.full(self.shape, np.nan)
        wts = [float(self.base) ** k for k, lv in enumerate(self._levels) for _ in lv]
        return weighted_median(np.stack(vals), np.array(wts)).reshape(self.shape)
