"""Statistics, all in one module: per-pair statistics over NaN-padded sample arrays, and the medians
a fleet needs (a weighted median, a running median in bounded memory, a median and robust spread).

Samples live in arrays shaped ``(..., k)`` where missing samples (not measured, dropped because a
thread migrated, or padding when pairs got different sample counts) are NaN. The per-pair functions
reduce the last axis and return NaN where a pair has no samples, without warnings.

There is one median (:func:`median`, from the two middle order statistics by :func:`_midpoint`) and
one confidence interval of it (:func:`median_ci_ranks`); every other function here that needs either
calls these.

The running median is Rousseeuw and Bassett's remedian (JASA 85, 1990): values go into a buffer of
``base`` slots; a full buffer is replaced by its median, which goes into the next level's buffer.
Memory is ``base × levels`` matrices for ``base ** levels`` nodes (15 × 3 for 3,375 nodes), the
result is exact up to ``base`` nodes and a consistent estimate of the median beyond.
"""

import functools
import math
import statistics

import numpy as np

#: Two-sided confidence level of :func:`median_ci`.
CI_LEVEL = 0.95

#: Slots per remedian level (:class:`RunningMedian`).
REMEDIAN_BASE = 15


# No numpy nan* reductions here: they warn on all-NaN slices (the diagonal), and silencing them with
# warnings.catch_warnings is not thread-safe (threads reading r.median at once printed warnings).
# Sorting puts NaN last, so order statistics index the valid samples; errstate is per thread.


def count(a):
    """Number of non-NaN samples per pair."""
    a = np.asarray(a)
    if a.ndim and a.shape[-1] == 1:  # a value per pair: no (n, n, k) mask and sum
        return (~np.isnan(a[..., 0])).astype(np.intp)
    return np.sum(~np.isnan(a), axis=-1)


def _single(a):
    """``a[..., 0]`` as a float64 matrix of its own when ``a`` holds one sample per pair (a value-only
    result: a file of one value per pair), else None. Each statistic of one sample is that sample
    or NaN, which this gives without the sorts and masks that cost a 4,000-CPU file a dozen
    matrices."""
    a = np.asarray(a)
    if a.ndim == 0 or a.shape[-1] != 1:
        return None
    return np.array(a[..., 0], dtype=np.float64)


def _sorted(a):
    a = np.asarray(a, dtype=np.float64)
    return np.sort(a, axis=-1), count(a)


def _at(srt, rank):
    """``srt[..., rank]`` per row: for one row plain indexing, for many fancy indexing of the rows
    flattened to 2-D (several times faster than take_along_axis)."""
    if srt.ndim == 1:
        return srt[rank]
    rows = srt.reshape(-1, srt.shape[-1])
    return rows[np.arange(rows.shape[0]), np.reshape(rank, -1)].reshape(np.shape(rank))


def _midpoint(lo, hi):
    # lo + (hi - lo) / 2 rather than (lo + hi) / 2: the two differ in the last bit for about one
    # even-count pair in six, and this is the value numpy's linear percentile at 50 gives, the
    # median corelat has always reported. An odd count passes the middle element twice.
    return lo + (hi - lo) * 0.5


def _middle(srt, n):
    """The median of sorted values (NaN last) of which ``n`` are valid: a 1-D array with a Python
    int ``n`` (scalar arithmetic, for a sweep's per-pair checks), or rows with a NumPy count each."""
    if isinstance(n, int):
        return _midpoint(srt[max(n - 1, 0) // 2], srt[min(n // 2, max(n - 1, 0))]) if n else math.nan
    last = np.maximum(n - 1, 0)
    with np.errstate(invalid="ignore"):
        med = _midpoint(_at(srt, last // 2), _at(srt, np.minimum(n // 2, last)))
    return np.where(n > 0, med, np.nan)


def sorted_median(v):
    """Median of sorted values without NaN (1-D): :func:`median` without its sort."""
    return _middle(np.asarray(v), len(v))


def percentile(a, q):
    """The q-th percentile (0..100) per pair (linear interpolation, as numpy's default)."""
    single = _single(a)
    if single is not None:
        return single
    srt, n = _sorted(a)
    if srt.shape[-1] == 0:
        return np.full(srt.shape[:-1], np.nan)
    pos = (q / 100.0) * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    lo_v, hi_v = _at(srt, lo), _at(srt, hi)
    with np.errstate(invalid="ignore"):
        out = lo_v + (hi_v - lo_v) * (pos - lo)
    return np.where(n > 0, out, np.nan)


def median(a, axis=-1):
    """Median of the samples per pair, ignoring NaN (NaN where a pair has none).

    ``axis`` (the last by default) is the axis reduced: ``axis=0`` gives the element-wise median of
    a stack of matrices. The value is ``percentile(a, 50)``'s, bit for bit.
    """
    a = np.asarray(a)
    if axis not in (-1, a.ndim - 1):
        a = np.moveaxis(a, axis, -1)
    single = _single(a)
    if single is not None:
        return single
    srt, n = _sorted(a)
    if srt.shape[-1] == 0:
        return np.full(srt.shape[:-1], np.nan)
    return _middle(srt, n)


def mean(a):
    """Mean of the samples per pair."""
    single = _single(a)
    if single is not None:
        return single
    a = np.asarray(a, dtype=np.float64)
    n = count(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(np.isnan(a), 0.0, a).sum(axis=-1) / n, np.nan)


def _extreme(a, reduce, fill):
    single = _single(a)
    if single is not None:
        return single
    a = np.asarray(a, dtype=np.float64)
    n = count(a)
    return np.where(n > 0, reduce(np.where(np.isnan(a), fill, a), axis=-1, initial=fill), np.nan)


def minimum(a):
    """Minimum of the samples per pair."""
    return _extreme(a, np.min, np.inf)


def maximum(a):
    """Maximum of the samples per pair."""
    return _extreme(a, np.max, -np.inf)


def std(a):
    """Sample standard deviation (ddof=1) per pair; NaN with fewer than two samples."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim and a.shape[-1] == 1:
        return np.full(a.shape[:-1], np.nan)
    n = count(a)
    m = mean(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        dev = np.where(np.isnan(a), 0.0, a - m[..., None])
        var = (dev * dev).sum(axis=-1) / (n - 1)
        return np.where(n >= 2, np.sqrt(var), np.nan)


def median_ci_ranks(n, level=CI_LEVEL):
    """0-based ranks (lo, hi) of the order statistics bounding the median's confidence interval.

    Distribution-free: the number of samples below the true median is Binomial(n, 1/2), so the
    interval between order statistics ``lo`` and ``hi`` covers the median with probability at least
    ``level`` (normal approximation with continuity correction; exact enough for n >= 10, and clipped
    to the sample range for tiny n). Latency samples are skewed and often bimodal, so a
    distribution-free interval is the honest choice.

    ``n`` is a count (the ranks are ints) or an array of counts (the ranks are int64 arrays).
    """
    # One pair (a sweep's chunk check): scalar arithmetic beats NumPy on 0-d arrays.
    scalar = isinstance(n, int) or not np.ndim(n)
    if scalar:
        n = int(n)
        half = _z(level) * math.sqrt(n) / 2.0
    else:
        n = np.asarray(n)
        half = _z(level) * np.sqrt(n) / 2.0
    # // floors a float and an array alike (and exactly), so the formula is written once.
    lo = (n / 2.0 - half - 0.5) // 1.0
    hi = -(-(n / 2.0 + half - 0.5) // 1.0)  # ceil
    if scalar:
        last = max(n - 1, 0)
        return min(max(int(lo), 0), last), min(max(int(hi), 0), last)
    last = np.maximum(n - 1, 0)
    return np.clip(lo.astype(np.int64), 0, last), np.clip(hi.astype(np.int64), 0, last)


@functools.lru_cache(maxsize=8)
def _z(level):
    """The two-sided normal quantile of a confidence ``level`` (1.96 for 0.95)."""
    return statistics.NormalDist().inv_cdf(0.5 + level / 2.0)


def median_and_ci(a, level=CI_LEVEL):
    """(median, low, high) per pair from one sort: the hot path of precision-driven sampling.

    NaN where a pair has no samples. Same values as :func:`median` and :func:`median_ci`.
    """
    single = _single(a)
    if single is not None:  # one sample: it is the median and both ends of the interval
        return single, single.copy(), single.copy()
    a = np.asarray(a, dtype=np.float64)
    shape = a.shape[:-1]
    if a.shape[-1] == 0 or a.size == 0:
        empty = np.full(shape, np.nan)
        return empty, empty.copy(), empty.copy()
    srt = np.sort(a.reshape(-1, a.shape[-1]), axis=-1)  # NaNs sort last: ranks index valid samples
    if srt.shape[0] == 1:  # one pair: scalar arithmetic beats a dozen NumPy calls on 1-element arrays
        row = srt[0]
        n = int(row.size - np.count_nonzero(np.isnan(row)))
        if n == 0:
            return tuple(np.full(shape, np.nan) for _ in range(3))
        lo, hi = median_ci_ranks(n, level)
        return tuple(np.full(shape, v) for v in (_middle(row, n), row[lo], row[hi]))
    n = np.sum(~np.isnan(srt), axis=-1)
    lo_rank, hi_rank = median_ci_ranks(n, level)
    empty = n == 0
    lo, hi = (np.where(empty, np.nan, _at(srt, r)) for r in (lo_rank, hi_rank))
    return _middle(srt, n).reshape(shape), lo.reshape(shape), hi.reshape(shape)


def median_ci(a, level=CI_LEVEL):
    """(low, high) bounds of the confidence interval of the median per pair.

    Both arrays have the shape of ``a`` without its last axis; NaN where a pair has no samples.
    """
    _, lo, hi = median_and_ci(a, level)
    return lo, hi


def median_err(a, level=CI_LEVEL):
    """Half-width of the median's confidence interval per pair (the ``±`` in printed cells)."""
    single = _single(a)
    if single is not None:  # an interval of one sample has no width
        single[~np.isnan(single)] = 0.0
        return single
    lo, hi = median_ci(a, level)
    return (hi - lo) / 2.0


def mean_sem(a):
    """Standard error of the mean per pair (what core-to-core-latency prints after ``±``)."""
    a = np.asarray(a)
    if a.ndim and a.shape[-1] == 1:
        return np.full(a.shape[:-1], np.nan)
    n = count(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        return std(a) / np.sqrt(n)


def median_sd(values):
    """(median, robust standard deviation) of the finite values; (NaN, NaN) when there are none.

    The spread is the median absolute deviation scaled to a normal distribution's standard deviation
    (``scipy.stats.median_abs_deviation(scale="normal")``), and the median is its centre,
    ``np.median``'s.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return math.nan, math.nan
    # Imported here: `import corelat` stays light (scipy costs a quarter of a second to import).
    from scipy.stats import median_abs_deviation

    return float(np.median(v)), float(median_abs_deviation(v, scale="normal"))


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
        """Take one more array of :attr:`shape`."""
        v = np.array(a, dtype=np.float64).reshape(self._size)
        level = 0
        while True:
            if level == len(self._levels):
                self._levels.append([])
            self._levels[level].append(v)
            if len(self._levels[level]) < self.base:
                break
            v = median(np.stack(self._levels[level]), axis=0)
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
