"""Ctrl-C ends a sweep promptly: a subprocess sent SIGINT mid-sweep."""

import os
import sys

import pytest
from conftest import ENDS_WITHIN_S, interrupt_when_measuring

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = [pytest.mark.hw, pytest.mark.signals,
              pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")]


def test_cli_sigint_exits_130_quickly():
    # 10^6 round trips x 1000 samples: hours if not interrupted.
    rc, took, err = interrupt_when_measuring([sys.executable, "-m", "corelat", "1000000", "1000"])
    assert rc == 130
    assert took < ENDS_WITHIN_S, f"took {took:.2f} s to stop"
    assert "Traceback" not in err and "interrupted" in err


def test_api_sigint_raises_keyboardinterrupt():
    code = (
        "import corelat\n"
        "try:\n"
        "    corelat.measure(round_trips=10**6, samples=1000)\n"
        "except KeyboardInterrupt:\n"
        "    print('KI', flush=True)\n"
        "    raise SystemExit(42)\n"
    )
    rc, took, err = interrupt_when_measuring([sys.executable, "-c", code])
    assert rc == 42, err
    assert took < ENDS_WITHIN_S
