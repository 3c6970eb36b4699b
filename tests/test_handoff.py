"""Tiny sizes measure real hand-offs: both threads start at a barrier, and the first timed round trip
of every sample needs the partner (the CAS flag is parked between samples, so the initiator's first
compare-exchange cannot succeed on its own)."""

import os

import numpy as np
import pytest

import corelat
from corelat import _corelat

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


@pytest.mark.parametrize("kernel", ["KERNEL_CAS", "KERNEL_RW"])
def test_one_round_trip_is_a_real_round_trip(kernel):
    # Not a magnitude: a single timed round trip must cost about what one round trip of a long
    # batch costs. Before the fix a one-round-trip CAS sample was one local compare-exchange that
    # never involved the partner (~5 ns against ~24-100+ ns): well under half.
    corelat.timer_info()
    a, b, code = CPUS[0], CPUS[-1], getattr(_corelat, kernel)
    single = [_corelat.pingpong(a, b, code, 1, 50, 0, 5.0).min() for _ in range(5)]
    batch = [_corelat.pingpong(a, b, code, 200, 10, 1, 5.0).min() / 200 for _ in range(5)]
    assert min(single) > 0.5 * min(batch), (single, batch)


def test_the_first_sample_holds_no_start_up():
    # `corelat 1 1`: the only sample used to include the partner's thread start (milliseconds).
    # With a start barrier it is one round trip; 0.5 ms is thousands of round trips on any machine.
    corelat.timer_info()
    tpn = corelat.timer_info()["ticks_per_ns"]
    firsts = [_corelat.pingpong(CPUS[0], CPUS[-1], _corelat.KERNEL_CAS, 1, 1, 0, 5.0)[0] / tpn for _ in range(5)]
    assert np.median(firsts) < 500_000, firsts
