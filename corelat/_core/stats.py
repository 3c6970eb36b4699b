"""Per-pair statistics over NaN-padded sample arrays.

Samples live in arrays shaped ``(..., k)`` where missing samples (not measured, dropped because a
thread migrated, or padding when pairs got different sample counts) are NaN. Every function here
reduces the last axis and returns NaN where a pair has no samples, without warnings.
"""

import functools
import math
import statistics

import numpy as np

#: Two-sided confidence level of :func:`median_ci`.
CI_LEVEL = 0.95


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
    return np.take_along_axis(srt, rank[..., None], axis=-1)[..., 0]


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


def median(a):
    """Median of the samples per pair."""
    return percentile(a, 50.0)


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
    """
    n = np.asarray(n)
    z = _z(level)
    half = z * np.sqrt(n) / 2.0
    lo = np.floor(n / 2.0 - half - 0.5).astype(np.int64)
    hi = np.ceil(n / 2.0 + half - 0.5).astype(np.int64)
    lo = np.clip(lo, 0, np.maximum(n - 1, 0))
    hi = np.clip(hi, 0, np.maximum(n - 1, 0))
    return lo, hi


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
    # As rows of a 2-D array: plain fancy indexing is several times faster than take_along_axis.
    srt = np.sort(a.reshape(-1, a.shape[-1]), axis=-1)  # NaNs sort last: ranks index valid samples
    if srt.shape[0] == 1:
        return _median_and_ci_row(srt[0], shape, level)
    n = np.sum(~np.isnan(srt), axis=-1)
    rows = np.arange(srt.shape[0])

    def at(rank):
        return srt[rows, rank]

    last = np.maximum(n - 1, 0)
    med = (at(last // 2) + at(np.minimum(n // 2, last))) / 2.0
    lo_rank, hi_rank = median_ci_ranks(n, level)
    empty = n == 0
    return tuple(np.where(empty, np.nan, v).reshape(shape) for v in (med, at(lo_rank), at(hi_rank)))


def _median_and_ci_row(row, shape, level):
    # One pair (a sweep's chunk check): scalar arithmetic beats a dozen NumPy calls on 1-element arrays.
    n = int(row.size - np.count_nonzero(np.isnan(row)))
    if n == 0:
        return tuple(np.full(shape, np.nan) for _ in range(3))
    med = (row[(n - 1) // 2] + row[n // 2]) / 2.0
    half = _z(level) * math.sqrt(n) / 2.0
    lo = min(max(math.floor(n / 2.0 - half - 0.5), 0), n - 1)
    hi = min(max(math.ceil(n / 2.0 + half - 0.5), 0), n - 1)
    return tuple(np.full(shape, v) for v in (med, row[lo], row[hi]))


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
