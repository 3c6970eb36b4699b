"""The one-way kernel: real messages with tiny sizes (invariants only), the timer-offset check and its
refusal, time-outs, and the C entry point's shapes, errors and references."""

import contextlib
import os
import sys
import time

import numpy as np
import pytest
from conftest import ENDS_WITHIN_S, interrupt_when_measuring
from leakcheck import assert_flat

import corelat
from corelat import _corelat
from corelat._measure import measurers as _measurers
from corelat._measure import sweep as _sweep
from corelat._results.latency import PairFlag

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


@pytest.mark.hw
@needs2
def test_oneway_invariants():
    r = corelat.measure(CPUS[:2], kernel="oneway", round_trips=20, samples=6, warmup=1)
    assert r.kernel == "oneway"
    assert r.samples.shape == (2, 2, 6)
    assert np.isnan(r.samples[[0, 1], [0, 1]]).all()
    for i, j in ((0, 1), (1, 0)):
        assert r.flags[i, j] & PairFlag.MEASURED and not r.flags[i, j] & PairFlag.MIRRORED
        v = r.samples[i, j]
        assert np.isfinite(v).any()
    md = r.metadata
    assert md["symmetric"] is False and "cpus[i]" in md["direction"]
    assert md["clock_check"]["reference"][0]["cpu"] == CPUS[1]
    bound = r.extras["skew_bound_ns"]
    assert bound[0, 1] == bound[1, 0] >= 0 and np.isnan(bound[0, 0])
    assert r.summary()["pairs"] == 2  # both directions count


@pytest.mark.hw
@needs2
def test_oneway_precision_mode_and_cli():
    r = corelat.measure(CPUS[:2], kernel="oneway", round_trips=20, precision=0.05, max_time_per_pair=0.05)
    taken = r.extras["samples_taken"]
    assert taken[0, 1] == taken[1, 0] >= 1
    from conftest import run_cli

    p = run_cli("--kernel", "oneway", "--cpus", f"{CPUS[0]},{CPUS[1]}", 10, 3)
    assert p.returncode == 0, p.stderr
    assert "row CPU sends, column CPU receives" in p.stdout


@pytest.mark.hw
@needs2
@pytest.mark.parametrize("offset_ns", [2e6, -2e6])
def test_skewed_timers_are_refused(offset_ns):
    # The test hook adds an offset to every reading of the second CPU's timer: 2 ms is far beyond
    # any latency, so some message "arrives before it was sent" and the kernel must refuse.
    a, b = CPUS[:2]
    m = _measurers.OneWayMeasurer(20, 1, 1.0, _offset_ns=offset_ns)
    with pytest.raises(corelat.MeasurementError,
                       match=r"timer of CPU \d+ is ahead .* use kernel 'cas' or 'rw'"):
        _sweep.measure_with(m, [a, b], kernel="oneway", round_trips=20, samples=3)
    ahead = b if offset_ns > 0 else a
    with pytest.raises(corelat.MeasurementError, match=f"timer of CPU {ahead} is ahead"):
        m.check_clocks([a, b])


def test_clock_bracket_rules():
    _measurers.check_clock_bracket(0, 1, -80.0, 90.0)  # 0 inside: fine
    _measurers.check_clock_bracket(0, 1, 0.5, 90.0, tolerance_ns=1.0)  # within the tolerance
    with pytest.raises(corelat.MeasurementError, match="CPU 1 is ahead of CPU 0's by at least 50 ns"):
        _measurers.check_clock_bracket(0, 1, 50.0, 120.0)
    with pytest.raises(corelat.MeasurementError, match="CPU 0 is ahead of CPU 1's by at least 30 ns"):
        _measurers.check_clock_bracket(0, 1, -100.0, -30.0)
    with pytest.raises(corelat.MeasurementError, match="less than nothing"):
        _measurers.check_clock_bracket(0, 1, 40.0, -40.0)


@needs2
def test_non_invariant_timer_is_refused(monkeypatch):
    info = dict(corelat.timer_info(), invariant=False)
    monkeypatch.setattr(_measurers, "timer_info", lambda: dict(info))
    with pytest.raises(corelat.InputError, match="constant rate"):
        corelat.measure(CPUS[:2], kernel="oneway", round_trips=10, samples=2)


@pytest.mark.hw
@pytest.mark.signals
@needs2
def test_oneway_timeout_names_the_cpus():
    a, b = CPUS[:2]
    m = _measurers.OneWayMeasurer(10, 1, 0.2, _stall=True)
    t0 = time.monotonic()
    with pytest.raises(corelat.MeasurementTimeout, match=f"CPUs {a} and {b}"):
        m(a, b, 3)
    assert time.monotonic() - t0 < 5


@pytest.mark.hw
@pytest.mark.signals
@needs2
def test_ctrl_c_stops_a_long_oneway_pair():
    # 10^6 messages x 1000 samples, precision-driven: hours if not interrupted.
    code = ("import corelat, sys\n"
            "try:\n"
            "    corelat.measure(kernel='oneway', round_trips=10**6, max_time_per_pair=3600, "
            "precision=1e-4)\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(42)\n")
    # Sent once the measuring threads are pinned, not after a fixed sleep: on a loaded machine the
    # imports alone took longer than the 1.5 s the test used to wait, and Ctrl-C landed in them.
    rc, took, err = interrupt_when_measuring([sys.executable, "-c", code])
    assert rc == 42, err
    assert took < ENDS_WITHIN_S


@pytest.mark.hw
@needs2
def test_raw_oneway_shapes_and_bad_arguments():
    corelat.timer_info()
    a, b = CPUS[:2]
    ab, ba, min_ab, min_ba = _corelat.oneway(a, b, 20, 5, 1, 1.0)
    assert ab.dtype == np.int64 and ba.dtype == np.int64 and ab.shape == ba.shape == (5,)
    # each sample sums 20 messages, each at least the smallest one
    assert (ab >= 20 * min_ab).all() and (ba >= 20 * min_ba).all()
    for args in ((a, a, 20, 5, 1, 1.0), (a, b, 0, 5, 1, 1.0), (a, b, 20, 0, 1, 1.0), (a, b, 20, 5, -1, 1.0),
                 (a, b, 20, 5, 1, 0.0), (-1, b, 20, 5, 1, 1.0)):
        with pytest.raises(ValueError):
            _corelat.oneway(*args)
    with pytest.raises(corelat.MeasurementError, match="cannot pin"):
        _corelat.oneway(a, 4095, 5, 2, 0, 1.0)


@pytest.mark.hw
@needs2
def test_oneway_entry_point_does_not_leak():
    corelat.timer_info()
    a, b = CPUS[:2]

    def call():
        ab, ba, _, _ = _corelat.oneway(a, b, 5, 4, 0, 1.0)
        assert sys.getrefcount(ab) == sys.getrefcount(ba) == 2
        with contextlib.suppress(corelat.MeasurementTimeout):
            _corelat.oneway(a, b, 5, 2, 0, 0.001, stall_responder=True)

    assert_flat(call, 300, warm=50, max_blocks=100)
