"""Statistics against a plain per-pair NumPy/Python reference."""

import math

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
