"""Statistics against a plain per-pair NumPy/Python reference."""

import math
import statistics
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from corelat._core import stats as _stats


def reference(values):
    """Slow, obviously-correct statistics of one pair's samples (NaN = missing)."""
    v = np.array([x for x in values if not math.isnan(x)])
    if v.size == 0:
        return {"median": np.nan, "mean": np.nan, "min": np.nan, "max": np.nan, "std": np.nan,
                "lo": np.nan, "hi": np.nan}
    s = np.sort(v)
    n = len(s)
    # Order-statistic CI of the median: ranks n/2 -+ z*sqrt(n)/2 (continuity-corrected), clipped.
    z = 1.959963984540054
    lo = min(max(math.floor(n / 2 - z * math.sqrt(n) / 2 - 0.5), 0), n - 1)
    hi = min(max(math.ceil(n / 2 + z * math.sqrt(n) / 2 - 0.5), 0), n - 1)
    return {
        "median": float(np.median(v)), "mean": float(np.mean(v)), "min": float(v.min()),
            "max": float(v.max()),
        "std": float(np.std(v, ddof=1)) if n > 1 else np.nan, "lo": float(s[lo]), "hi": float(s[hi]),
    }


def check_against_reference(a):
    got = {"median": _stats.median(a), "mean": _stats.mean(a), "min": _stats.minimum(a),
           "max": _stats.maximum(a),
               "std": _stats.std(a)}
    got["lo"], got["hi"] = _stats.median_ci(a)
    for idx in np.ndindex(a.shape[:-1]):
        ref = reference(a[idx])
        for key, want in ref.items():
            np.testing.assert_allclose(got[key][idx], want, rtol=1e-12, atol=1e-9, equal_nan=True,
                                       err_msg=f"{key} at {idx}")


def test_matches_reference_with_nan_padding():
    rng = np.random.default_rng(1)
    a = rng.lognormal(3, 0.5, size=(4, 4, 57))
    a[0, 0] = np.nan  # unmeasured diagonal
    a[1, 2, 10:] = np.nan  # a pair with fewer samples
    a[2, 3, ::3] = np.nan  # dropped (migrated) samples
    a[3, 1, 1:] = np.nan  # a single sample
    check_against_reference(a)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12),
                  elements=st.one_of(st.floats(0.1, 1e6), st.just(np.nan))))
def test_property_matches_reference(a):
    check_against_reference(a)


def test_ci_contains_median_and_narrows():
    rng = np.random.default_rng(2)
    small = rng.normal(100, 5, size=30)
    big = rng.normal(100, 5, size=3000)
    for x in (small, big):
        lo, hi = _stats.median_ci(x)
        assert lo <= np.median(x) <= hi
    assert np.diff(_stats.median_ci(big)) < np.diff(_stats.median_ci(small))


def test_ci_coverage_is_near_nominal():
    # Distribution-free: coverage holds for a skewed distribution too.
    rng = np.random.default_rng(3)
    true_median = math.exp(0)  # lognormal(0, 1)
    x = rng.lognormal(0, 1, size=(2000, 101))
    lo, hi = _stats.median_ci(x)
    coverage = np.mean((lo <= true_median) & (true_median <= hi))
    assert 0.93 <= coverage <= 0.98


def test_all_nan_is_quiet():
    a = np.full((2, 2, 5), np.nan)
    for fn in (_stats.median, _stats.mean, _stats.minimum, _stats.maximum, _stats.std, _stats.median_err):
        assert np.isnan(fn(a)).all()
    assert (_stats.count(a) == 0).all()


@pytest.mark.parametrize("n", [1, 2, 5, 10, 100, 1000])
def test_ci_ranks_in_range(n):
    lo, hi = _stats.median_ci_ranks(n)
    assert 0 <= lo <= hi <= n - 1


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12),
                  elements=st.one_of(st.floats(0.1, 1e6), st.just(np.nan))))
def test_median_and_ci_one_sort_matches(a):
    med, lo, hi = _stats.median_and_ci(a)
    np.testing.assert_allclose(med, _stats.median(a), rtol=1e-12, equal_nan=True)
    lo2, hi2 = _stats.median_ci(a)
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(hi, hi2)


# -- one median, one CI-rank formula, scipy's MAD: the same figures as the code they replaced ----------
def _old_percentile_median(a):
    """The median :func:`_stats.median` gave before the statistics were one module (percentile 50)."""
    srt = np.sort(np.asarray(a, dtype=np.float64), axis=-1)
    n = np.sum(~np.isnan(srt), axis=-1)
    pos = 0.5 * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    lo_v = np.take_along_axis(srt, lo[..., None], axis=-1)[..., 0]
    hi_v = np.take_along_axis(srt, hi[..., None], axis=-1)[..., 0]
    with np.errstate(invalid="ignore"):
        return np.where(n > 0, lo_v + (hi_v - lo_v) * (pos - lo), np.nan)


def _old_ci_ranks_scalar(n, z=1.959963984540054):
    """The second copy of the CI-rank formula (median_and_ci's one-pair path) before."""
    half = z * math.sqrt(n) / 2.0
    return (min(max(math.floor(n / 2.0 - half - 0.5), 0), n - 1),
            min(max(math.ceil(n / 2.0 + half - 0.5), 0), n - 1))


def _samples(seed, k, shape=(24, 24)):
    rng = np.random.default_rng(seed)
    # Tick-quantised lognormal samples: even counts whose two middle values differ, as measured.
    a = np.round(rng.lognormal(4, 0.3, size=(*shape, k)) / 0.4166666) * 0.4166666
    a[rng.random(a.shape) < 0.2] = np.nan
    return a


@pytest.mark.parametrize("k", [1, 2, 3, 4, 10, 57, 200])
def test_one_median_is_the_old_median_bit_for_bit(k):
    a = _samples(k, k)
    np.testing.assert_array_equal(_stats.median(a), _old_percentile_median(a))
    np.testing.assert_array_equal(_stats.median(a), _stats.percentile(a, 50))
    # median_and_ci's median was (lo + hi) / 2 of its own: now the one median, bit for bit
    np.testing.assert_array_equal(_stats.median_and_ci(a)[0], _stats.median(a))
    for idx in np.ndindex(a.shape[:-1]):  # the one-pair path
        np.testing.assert_array_equal(_stats.median_and_ci(a[idx])[0], _stats.median(a[idx]))


@pytest.mark.parametrize("k", [2, 4, 10, 57])
def test_one_median_against_numpy(k):
    # np.nanmedian takes (lo + hi) / 2 where the one median takes lo + (hi - lo) / 2: at most one
    # unit in the last place apart, and equal for odd counts.
    a = _samples(100 + k, k)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmedian(a, axis=-1)
    have = ~np.isnan(want)
    np.testing.assert_array_equal(np.isnan(_stats.median(a)), ~have)
    np.testing.assert_array_max_ulp(_stats.median(a)[have], want[have], maxulp=1)
    odd = have & (_stats.count(a) % 2 == 1)
    np.testing.assert_array_equal(_stats.median(a)[odd], want[odd])


def test_median_along_an_axis_is_the_fleets_old_nan_median():
    # The fleet's nan_median(stack, axis=0) (also (lo + hi) / 2) is median(stack, axis=0) now.
    stack = np.moveaxis(_samples(5, 16), -1, 0)
    got = _stats.median(stack, axis=0)
    np.testing.assert_array_equal(got, _stats.median(np.moveaxis(stack, 0, -1)))
    srt = np.sort(stack, axis=0)
    n = np.sum(~np.isnan(srt), axis=0)
    lo = np.take_along_axis(srt, np.maximum((n - 1) // 2, 0)[None], axis=0)[0]
    hi = np.take_along_axis(srt, np.maximum(n // 2, 0)[None], axis=0)[0]
    old = np.where(n > 0, (lo + hi) / 2.0, np.nan)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(old))
    np.testing.assert_array_max_ulp(got[~np.isnan(got)], old[~np.isnan(old)], maxulp=1)


def test_sorted_median_is_the_median():
    rng = np.random.default_rng(6)
    for n in range(1, 40):
        v = np.sort(rng.lognormal(3, 1, n))
        assert _stats.sorted_median(v) == _stats.median(v)


def test_one_ci_rank_formula_for_a_count_and_for_counts():
    ns = np.arange(0, 5000)
    lo, hi = _stats.median_ci_ranks(ns)
    assert lo.dtype == hi.dtype == np.int64
    for n in range(5000):
        got = _stats.median_ci_ranks(n)
        assert got == (lo[n], hi[n])
        if n:
            assert got == _old_ci_ranks_scalar(n)
            ref = reference(np.arange(float(n)))  # the plain reference's order statistics
            assert got == (ref["lo"], ref["hi"])


def test_median_sd_is_scipys_mad_and_the_old_figures():
    rng = np.random.default_rng(8)
    for size in (2, 3, 7, 40, 1001):
        v = rng.lognormal(3, 0.3, size)
        v[::5] = np.nan  # ignored, as the fleet's class medians of nodes that lack a class
        med, sd = _stats.median_sd(v)
        f = v[np.isfinite(v)]
        assert med == float(np.median(f))  # the old centre, bit for bit
        mad = float(np.median(np.abs(f - np.median(f))))
        # scipy's scale="normal" divides by the normal's quartile; the old code multiplied by 1.4826
        assert sd == pytest.approx(mad / statistics.NormalDist().inv_cdf(0.75), rel=1e-15)
        assert sd == pytest.approx(1.4826 * mad, rel=2e-6)
    assert all(math.isnan(x) for x in _stats.median_sd([np.nan, np.inf]))


def test_import_corelat_does_not_import_scipy():
    code = "import sys, corelat; print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
