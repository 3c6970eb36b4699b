"""The C entry points neither leak references nor memory over thousands of calls."""

import gc
import os
import sys

import pytest

import corelat
from corelat import _corelat

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _loop(fn, n):
    for _ in range(n):
        fn()


def _assert_flat(fn, n=2000):
    _loop(fn, 200)  # warm caches, allocator pools, interned objects
    gc.collect()
    refs0, rss0 = sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else 0, rss_kib()
    blocks0 = sys.getallocatedblocks()
    _loop(fn, n)
    gc.collect()
    grew_blocks = sys.getallocatedblocks() - blocks0
    grew_rss = rss_kib() - rss0
    # A leak of one object or 64 bytes per call would show as >= n blocks / >= 125 KiB.
    # Half the calls: interpreter noise reached 88 blocks in 300 calls on one Python of the matrix.
    assert grew_blocks < n // 2, f"{grew_blocks} Python blocks more after {n} calls"
    assert grew_rss < 1024, f"RSS grew by {grew_rss} KiB after {n} calls"
    del refs0


def test_pingpong_success_path_flat():
    corelat.timer_info()
    a, b = CPUS[:2]

    def call():
        # A generous time-out: on a loaded machine a partner may not run for a second (the time-out
        # path has its own test below).
        ticks = _corelat.pingpong(a, b, _corelat.KERNEL_CAS, 5, 4, 0, 30.0)
        assert sys.getrefcount(ticks) == 2  # our name + the argument

    _assert_flat(call)


def test_pingpong_error_paths_flat():
    corelat.timer_info()
    a = CPUS[0]

    def bad_cpu():
        try:
            _corelat.pingpong(a, 4095, _corelat.KERNEL_CAS, 5, 4, 0, 1.0)
        except corelat.MeasurementError:
            pass

    def bad_args():
        try:
            _corelat.pingpong(a, a, 9, 5, 4, 0, 1.0)
        except ValueError:
            pass

    _assert_flat(bad_cpu, 1000)
    _assert_flat(bad_args, 1000)


def test_timeout_path_flat():
    corelat.timer_info()
    a, b = CPUS[:2]

    def stalled():
        try:
            _corelat.pingpong(a, b, _corelat.KERNEL_RW, 5, 2, 0, 0.001, stall_responder=True)
        except corelat.MeasurementTimeout:
            pass

    _assert_flat(stalled, 300)


def test_timer_info_flat():
    _assert_flat(lambda: (_corelat.timer_info(), _corelat.hw_timer(), _corelat.current_cpu()))
