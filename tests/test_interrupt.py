"""Ctrl-C ends a sweep promptly: a subprocess sent SIGINT mid-sweep."""

import os
import signal
import subprocess
import sys
import time

import pytest

CPUS = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


def _interrupt(cmd, ready_marker=None):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)  # imports done, deep inside a long pair
        assert p.poll() is None, "the sweep ended before it could be interrupted"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=10)
        return p.returncode, time.monotonic() - t0, err
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()  # reap it and close its pipes, also when an assertion failed


def test_cli_sigint_exits_130_quickly():
    # 10^6 round trips x 1000 samples: hours if not interrupted.
    rc, took, err = _interrupt([sys.executable, "-m", "corelat", "1000000", "1000"])
    assert rc == 130
    assert took < 1.0, f"took {took:.2f} s to stop"
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
    rc, took, err = _interrupt([sys.executable, "-c", code])
    assert rc == 42, err
    assert took < 1.0
