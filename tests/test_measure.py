"""Real kernels on this machine's CPUs, tiny sizes, invariants only (never a latency magnitude)."""

import os
import threading
import time

import numpy as np
import pytest

import corelat
from corelat import _corelat
from corelat._measure import sweep as _sweep
from corelat._measure.measurers import PairMeasurer
from corelat._measure.sweep import sweep_pairs
from corelat._results.latency import PairFlag

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


@pytest.mark.hw
@needs2
@pytest.mark.parametrize("kernel", sorted(corelat.KERNELS))
def test_measure_invariants(kernel):
    r = corelat.measure(kernel=kernel, round_trips=50, samples=7, warmup=1)
    n = len(CPUS)
    assert r.cpus == tuple(CPUS)
    assert r.kernel == kernel
    assert r.samples.shape == (n, n, 7)
    assert np.isnan(r.samples[np.arange(n), np.arange(n)]).all()
    off = ~np.eye(n, dtype=bool)
    vals = r.samples[off]
    finite = vals[np.isfinite(vals)]
    assert finite.size > 0 and (finite > 0).all()
    np.testing.assert_array_equal(r.samples, r.samples.transpose(1, 0, 2), err_msg="mirrored half")
    low = np.tril(off, -1)
    assert (r.flags[low] & PairFlag.MEASURED).all()
    assert (r.flags.T[low] & PairFlag.MIRRORED).all()
    md = r.metadata
    for key in ("corelat_version", "cpu_model", "hostname", "kernel_release", "timer", "parameters", "date",
                "python", "numpy", "governor", "hypervisor"):
        assert key in md, key
    assert md["timer"]["ticks_per_ns"] > 0
    assert md["parameters"] == {"round_trips": 50, "samples": 7, "warmup": 1, "timeout": 1.0}
    assert "round-trip time / 2" in md["latency"]


@pytest.mark.hw
@needs2
def test_cpu_string_and_order_as_given():
    a, b = CPUS[:2]
    r = corelat.measure(f"{b},{a}", round_trips=10, samples=3)
    assert r.cpus == (b, a)


@pytest.mark.hw
@needs2
def test_pinned_threads_run_where_asked_and_caller_affinity_unchanged():
    before = os.sched_getaffinity(0)
    corelat.measure(CPUS[:2], round_trips=10, samples=3)
    assert os.sched_getaffinity(0) == before


@pytest.mark.hw
@needs2
def test_raw_pingpong_shapes():
    corelat.timer_info()
    ticks = _corelat.pingpong(CPUS[0], CPUS[1], _corelat.KERNEL_RW, 20, 5, 1, 1.0)
    assert ticks.dtype == np.uint64 and ticks.shape == (5,)
    assert (ticks > 0).all()


@pytest.mark.hw
@pytest.mark.signals
@needs2
def test_timeout_names_the_cpus():
    a, b = CPUS[:2]
    stall = PairMeasurer("cas", 10, 1, 0.2, _stall=True)
    t0 = time.monotonic()
    with pytest.raises(corelat.MeasurementTimeout, match=f"CPUs {a} and {b}") as info:
        _sweep.measure_with(stall, [a, b], round_trips=10, samples=3, timeout=0.2)
    assert isinstance(info.value, TimeoutError)
    assert time.monotonic() - t0 < 5


@pytest.mark.hw
@needs2
def test_gil_released_during_measurement():
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)
        before = counter[0]
        corelat.measure(CPUS[:2], round_trips=2000, samples=30)
        during = counter[0] - before
    finally:
        stop.set()
        t.join()
    assert during > 0, "a Python thread made no progress while measuring: GIL held"


def test_sweep_pairs_lower_triangle():
    assert sweep_pairs(4) == [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)]


class FakeMeasurer:
    """A pair measurer with a known answer: latency = 10 * |a - b| ns, some samples migrated."""

    def __init__(self):
        self.calls = []

    def __call__(self, a, b, samples):
        self.calls.append((a, b))
        out = np.full(samples, 10.0 * abs(a - b))
        if (a + b) % 3 == 0:
            out[0] = np.nan
        return out


def test_sweep_logic_with_fake_measurer():
    fake = FakeMeasurer()
    cpus = CPUS[:2] if len(CPUS) >= 2 else None
    if cpus is None:
        pytest.skip("needs 2 allowed CPUs to pass validation")
    r = _sweep.measure_with(fake, cpus, samples=4)
    assert len(fake.calls) == 1
    assert r.median[1, 0] == 10.0 * abs(cpus[1] - cpus[0])
    done = []
    _sweep.measure_with(FakeMeasurer(), cpus, samples=4, progress=lambda d, t: done.append((d, t)))
    # the re-test the limit allows is counted from the start; none was needed: the total shrinks
    assert done == [(1, 2), (1, 1)]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cpus": [0, 0]}, "more than once"),
        ({"cpus": [0]}, "at least 2"),
        ({"cpus": [0, 100000]}, "not available"),
        ({"cpus": [-1, 0]}, "not available"),
        ({"cpus": "0,x"}, "bad CPU list"),
        ({"cpus": [0.5, 1]}, "integers"),
        ({"cpus": 5}, "list of CPU ids"),
        ({"kernel": "nope"}, "unknown kernel"),
        ({"round_trips": 0}, "round_trips"),
        ({"round_trips": 10**9}, "round_trips"),
        ({"samples": -3}, "samples"),
        ({"samples": 2.5}, "samples"),
        ({"warmup": -1}, "warmup"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": "soon"}, "timeout"),
        ({"order": "random"}, "order"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(corelat.InputError, match=match):
        corelat.measure(**kwargs)


def test_disallowed_cpu_message_lists_allowed():
    with pytest.raises(ValueError) as info:
        corelat.measure([CPUS[0], 4096])
    from corelat._system import cpulist as _cpulist

    assert _cpulist.format(CPUS) in str(info.value)
