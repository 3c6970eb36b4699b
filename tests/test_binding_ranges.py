"""The binding's own range checks (csrc/module.c), for callers of ``corelat._corelat`` who skip Python's
validation: a count whose sum or product would overflow the kernels' int64 counters is refused,
naming the argument, before any thread starts (issue 34, item 13)."""

import os

import pytest

import corelat

_corelat = pytest.importorskip("corelat._corelat")

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
HUGE = 2**63 - 1
#: A chain of 4 lines: one cycle, no two consecutive lines in one 128 B pair.
ORDER = [0, 2, 1, 3]


def _calls(a, b):
    """(name of the out-of-range argument, the call) for each pair entry point."""
    cas = _corelat.KERNEL_CAS
    out = [
        ("warmup", lambda: _corelat.pingpong(a, b, cas, 10, 1, HUGE, 1.0)),
        ("warmup", lambda: _corelat.pingpong(a, b, cas, 10, 2**40, 2**40 * 8, 1.0)),
        ("round_trips", lambda: _corelat.pingpong(a, b, cas, HUGE, 1, 0, 1.0)),
        ("warmup", lambda: _corelat.oneway(a, b, 5, 1, HUGE, 1.0)),
        ("messages", lambda: _corelat.oneway(a, b, HUGE, 1, 0, 1.0)),
        ("samples", lambda: _corelat.oneway(a, b, 5, HUGE, 0, 1.0)),
    ]
    if _corelat.HAVE_CHASE:
        out.append(("warmup", lambda: _corelat.chase(a, b, _corelat.CHASE_CLEAN, ORDER, 1, HUGE, 1.0)))
    return out


# hw: the calls go to the kernels' entry points (refused there before a thread starts, but on today's
# main they ran: an overflowed count made an empty loop and an empty array)
@pytest.mark.hw
@needs2
def test_counts_that_overflow_are_refused_naming_the_argument():
    corelat.timer_info()
    a, b = CPUS[:2]
    for name, call in _calls(a, b):
        with pytest.raises(ValueError, match=rf"\b{name}=\d+ is out of its range"):
            out = call()
            pytest.fail(f"{name}: accepted, returned {out!r}")


@pytest.mark.hw
@needs2
def test_counts_at_the_limits_python_allows_still_run():
    corelat.timer_info()
    a, b = CPUS[:2]
    assert len(_corelat.pingpong(a, b, _corelat.KERNEL_RW, 1, 2, 0, 5.0)) == 2
    ab, ba, _, _ = _corelat.oneway(a, b, 1, 2, 3, 5.0)
    assert len(ab) == len(ba) == 2
