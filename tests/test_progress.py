"""The progress a sweep reports never goes back: re-tests and the sample strategy's later batches are
counted in the total from the start, and the total only shrinks to what was really measured (it
used to grow when the re-tests began: the bar ran 100 % -> 50 % -> 100 %). Fake measurers, no kernel."""

import io

import numpy as np
import pytest

from corelat._measure import progress as _progress
from corelat._measure import sweep as _sweep
from corelat._system import validate as _validate


@pytest.fixture
def cpus(monkeypatch):
    """Pretend this process may run on 8 CPUs (the measurer is a fake; nothing is pinned)."""
    monkeypatch.setattr(_validate, "allowed_cpus", lambda: list(range(8)))
    return list(range(8))


def bimodal_when_odd(a, b, k):
    """A steady 50 ns, but two groups (30 and 90 ns) for pairs whose CPUs add up to an odd number:
    those are re-tested at the end of the sweep."""
    if (a + b) % 2:
        return np.where(np.arange(k) % 2 == 0, 30.0, 90.0)
    return np.full(k, 50.0)


def check_never_back(seen, measured):
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == measured
    assert all(d <= t for d, t in seen)
    fractions = [d / t for d, t in seen]
    assert fractions == sorted(fractions), f"the fraction done went back: {seen}"
    assert seen[-1] == (measured, measured)


@pytest.mark.parametrize("retest", [True, 3, 100, False])
def test_progress_never_goes_back_when_retests_add_pairs(cpus, retest):
    seen, calls = [], []

    def fake(a, b, k):
        calls.append((a, b))
        return bimodal_when_odd(a, b, k)

    r = _sweep.measure_with(fake, cpus, samples=40, retest=retest,
                            progress=lambda d, t: seen.append((d, t)))
    pairs = len(cpus) * (len(cpus) - 1) // 2
    assert len(calls) == pairs + r.metadata["sampling"]["pairs_retested"]
    assert (r.metadata["sampling"]["pairs_retested"] > 0) == (retest is not False)
    check_never_back(seen, len(calls))


def test_progress_never_goes_back_with_the_sample_strategy_and_retests(cpus):
    seen, calls = [], []

    def fake(a, b, k):  # pairs within a block are classes of their own: measured, some re-tested
        calls.append((a, b))
        if a // 4 == b // 4:
            return bimodal_when_odd(a, b, k)
        return np.full(k, 80.0) + 0.01 * np.arange(k)

    r = _sweep.measure_with(fake, cpus, samples=40, strategy="sample", partition=[cpus[:4], cpus[4:]],
                            progress=lambda d, t: seen.append((d, t)))
    assert r.metadata["sampling"]["pairs_retested"] > 0 and r.metadata["sampling"]["pairs_estimated"] > 0
    check_never_back(seen, len(calls))


def test_shrink_lowers_a_total_never_raises_it_nor_goes_below_done():
    seen = []
    bar = _progress.make(lambda d, t: seen.append((d, t)), 10)
    bar.update(3)
    _progress.shrink(bar, 12)  # never up
    _progress.shrink(bar, 1)  # never below what is done
    _progress.shrink(bar, 5)
    assert seen == [(3, 10), (3, 3)] and bar.total == 3
    _progress.shrink(_progress.make(False, 10), 2)  # no bar: nothing to do


class FakeTqdm:
    """What the sweep uses of tqdm: total, n, update, refresh, close."""

    def __init__(self, total):
        self.total, self.n, self.refreshed = total, 0, 0

    def update(self, n=1):
        self.n += n

    def refresh(self):
        self.refreshed += 1


def test_shrink_a_tqdm_bar():
    bar = FakeTqdm(10)
    bar.update(4)
    _progress.shrink(bar, 6)
    assert (bar.total, bar.refreshed) == (6, 1)


def test_text_fallback_shows_the_shrunken_total_at_once():
    bar = _progress._Text(10, "corelat")
    bar.stream = io.StringIO()
    bar.update(4)
    _progress.shrink(bar, 4)
    assert bar.stream.getvalue().endswith("\rcorelat: 4/4 pairs, 0 s left  ")
