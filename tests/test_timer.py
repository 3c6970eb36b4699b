"""The timer's step (resolution) is measured at start-up, kept in every result and reported by check."""

import os

import numpy as np
import pytest

import corelat
from corelat._system import conditions as _check

CPUS = sorted(os.sched_getaffinity(0))


def test_timer_info_has_the_measured_step():
    info = corelat.timer_info()
    assert info["resolution_ticks"] >= 1 and info["resolution_ns"] > 0
    assert info["resolution_ns"] == pytest.approx(info["resolution_ticks"] / info["ticks_per_ns"])
    hist = info["delta_histogram"]
    assert hist and all(count > 0 for _, count in hist)
    assert [d for d, _ in hist] == sorted(d for d, _ in hist)
    assert info["overhead_ticks"] >= 0


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
def test_every_result_records_the_step():
    r = corelat.measure(CPUS[:2], round_trips=10, samples=3)
    assert r.metadata["timer"]["resolution_ns"] == corelat.timer_info()["resolution_ns"]


def _info(step_ticks, tpn=2.445):
    return {"name": "tsc", "ticks_per_ns": tpn, "resolution_ticks": step_ticks,
            "resolution_ns": step_ticks / tpn,
            "overhead_ticks": 24.0, "delta_histogram": ((0, 900), (24, 80), (25, 20))}


def test_check_warns_on_a_coarse_timer():
    coarse = _check.check_timer_resolution(_info(24.0))  # the AMD host of the report: ~10 ns steps
    assert coarse.status == _check.WARN and "9.82 ns" in coarse.found
    assert coarse.value["delta_histogram"] == [[0, 900], [24, 80], [25, 20]]
    fine = _check.check_timer_resolution(_info(1.0))
    assert fine.status == _check.OK


def test_oneway_tolerance_follows_the_step(monkeypatch):
    from corelat._measure import measurers as _measurers

    monkeypatch.setattr(_measurers, "timer_info", lambda: dict(_info(24.0), invariant=True))
    monkeypatch.setattr(_measurers, "extension", lambda: type("X", (), {"oneway": None})())
    m = _measurers.OneWayMeasurer(10, 1, 1.0)
    assert m.tolerance_ns == pytest.approx(2 * 24 / 2.445 + 1.0)
    assert np.isfinite(m.overhead_ns)
