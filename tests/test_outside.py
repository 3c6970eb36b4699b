"""What is done to a sweep's process from outside is survived and said: a stop of the whole process
(Ctrl-Z then ``fg``, SIGSTOP then SIGCONT) is no partner's silence, and the pair is measured again; a
thread moved off its CPU (``taskset -a -p``) is re-pinned, measured again and reported in the result's
warnings and ``extras["moved"]``. The pure tests drive the sweep with fake measurers; the ``signals``
ones stop and move a real command (their bounds tell "ends" from "hangs", never a speed)."""

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest
from conftest import ENDS_WITHIN_S, cli_command

import corelat
from corelat._measure import quality as _quality
from corelat._measure import sweep as _sweep
from corelat._system import validate as _validate

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
ENV = {k: v for k, v in os.environ.items() if k != "CORELAT_DEBUG"}


@pytest.fixture
def cpus(monkeypatch):
    """Pretend this process may run on 4 CPUs (the measurer is a fake; nothing is pinned)."""
    monkeypatch.setattr(_validate, "allowed_cpus", lambda: list(range(4)))
    return list(range(4))


def _continued():
    """What the process sees when it is continued after a stop: a SIGCONT (the sweep's handler runs
    at once, in this, the main thread)."""
    os.kill(os.getpid(), signal.SIGCONT)
    time.sleep(0.01)


class Stopped:
    """Pair (0, 1) is continued after a stop while it is measured, on its first ``times`` attempts;
    with ``timeout`` those attempts then fail as a partner that did not answer would."""

    def __init__(self, times=1, timeout=False):
        self.times, self.timeout, self.calls = times, timeout, []

    def __call__(self, a, b, k):
        self.calls.append((a, b))
        if (a, b) == (0, 1) and self.calls.count((0, 1)) <= self.times:
            _continued()
            if self.timeout:
                raise corelat.MeasurementTimeout("CPUs 0 and 1: the partner did not answer within 0.2 s")
            return np.r_[1e9, np.full(k - 1, 50.0)]  # the stop inside a sample
        return np.full(k, 50.0)


# -- a stop of the whole process (pure: fake measurers, SIGCONT sent to this process) ---------


def test_a_pair_measured_while_the_process_was_stopped_is_measured_again(cpus):
    fake = Stopped()
    r = _sweep.measure_with(fake, cpus, samples=5, retest=False)
    assert fake.calls.count((0, 1)) == 2
    assert np.nanmax(r.samples[1, 0]) == 50.0  # the attempt that held the stop is gone
    assert r.metadata["sampling"]["pairs_stopped"] == 1
    assert any("stopped and continued" in n and "1-0" in n and "measured again" in n for n in r.notes)
    assert not any("stopped" in w for w in r.warnings)


def test_a_time_out_during_a_stop_measures_the_pair_again(cpus):
    fake = Stopped(times=2, timeout=True)
    r = _sweep.measure_with(fake, cpus, samples=5, retest=False)
    assert fake.calls.count((0, 1)) == 3 and r.median[1, 0] == 50.0


def test_a_time_out_without_a_stop_still_ends_the_sweep(cpus):
    def silent(a, b, k):
        raise corelat.MeasurementTimeout("CPUs 0 and 1: the partner did not answer within 0.2 s")

    with pytest.raises(corelat.MeasurementTimeout):
        _sweep.measure_with(silent, cpus, samples=5, retest=False)


def test_a_pair_stopped_at_every_attempt_keeps_the_last_one_and_warns(cpus):
    fake = Stopped(times=100)
    r = _sweep.measure_with(fake, cpus, samples=5, retest=False)
    assert fake.calls.count((0, 1)) == _sweep.STOP_RETRIES + 1
    assert any("during each of" in w and "include a stop" in w for w in r.warnings)


def test_a_time_out_at_every_attempt_ends_the_sweep(cpus):
    with pytest.raises(corelat.MeasurementTimeout):
        _sweep.measure_with(Stopped(times=100, timeout=True), cpus, samples=5, retest=False)


def test_the_sigcont_handler_is_the_sweep_s_only_and_is_given_back(cpus):
    assert signal.getsignal(signal.SIGCONT) == signal.SIG_DFL
    _sweep.measure_with(Stopped(), cpus, samples=5, retest=False)
    assert signal.getsignal(signal.SIGCONT) == signal.SIG_DFL
    # a program's own handler is left alone (no stop is counted then)
    mine = []
    old = signal.signal(signal.SIGCONT, lambda *a: mine.append(1))
    try:
        r = _sweep.measure_with(Stopped(), cpus, samples=5, retest=False)
        assert mine and r.metadata["sampling"]["pairs_stopped"] == 0
    finally:
        signal.signal(signal.SIGCONT, old)


def test_a_sweep_outside_the_main_thread_measures_without_a_handler(cpus):
    out = {}
    t = threading.Thread(target=lambda: out.update(r=_sweep.measure_with(Stopped(), cpus, samples=5,
                                                                          retest=False)))
    t.start()
    t.join()
    assert out["r"].metadata["sampling"]["pairs_stopped"] == 0


# -- a thread moved off its CPU from outside (pure) ------------------------------------------


class Moved:
    """A measurer whose threads for pair (1, 2) were moved from CPU 2 to CPU 0 once, as the real ones
    report it (``moves``: each a call measured again on freshly pinned threads)."""

    def __init__(self):
        self.moves = []

    def __call__(self, a, b, k):
        if (a, b) == (1, 2):
            self.moves.append((2, 0))
        return np.full(k, 50.0)


def test_a_moved_pair_is_said_in_the_warnings_and_extras(cpus):
    r = _sweep.measure_with(Moved(), cpus, samples=5, retest=False)
    moved = r.extras["moved"]
    assert moved[2, 1] == moved[1, 2] == 1 and moved.sum() == 2
    assert r.metadata["sampling"]["pairs_moved"] == 1
    (w,) = [w for w in r.warnings if "moved" in w]
    assert "measured again" in w and "(2-1: the thread pinned to CPU 2 ran on CPU 0)" in w
    assert "taskset" in w
    cli = _quality.for_cli(w)
    assert cli.endswith("; the result saved with -o FILE counts the moves per pair") and "extras" not in cli
    two = _quality.moved_warning({(1, 0): [(1, 0)], (3, 2): [(3, 2), (3, -1)]})
    assert two.startswith("2 CPU pairs were measured again") and "(1-0, 3-2; e.g. 1-0: the thread" in two


def test_moves_survive_a_save_and_a_reordering(cpus, tmp_path):
    r = _sweep.measure_with(Moved(), cpus, samples=5, retest=False)
    path = tmp_path / "moved.npz"
    r.save(path)
    back = corelat.load(path)
    np.testing.assert_array_equal(back.extras["moved"], r.extras["moved"])
    assert any("moved" in w for w in back.warnings)
    assert r.ordered([3, 2, 1, 0]).extras["moved"][1, 2] == 1


def test_no_move_no_extra(cpus):
    r = _sweep.measure_with(lambda a, b, k: np.full(k, 50.0), cpus, samples=5, retest=False)
    assert "moved" not in r.extras and r.metadata["sampling"]["pairs_moved"] == 0


# -- the real thing: a command stopped and continued, its threads moved ----------------------


def _worker(p, timeout=30):
    """A measuring thread of p (pinned to one CPU, unlike the main thread and OpenBLAS's), once one exists."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            for t in os.listdir(f"/proc/{p.pid}/task"):
                try:
                    if int(t) != p.pid and len(os.sched_getaffinity(int(t))) == 1:
                        return int(t)
                except OSError:
                    pass  # gone in between
        except OSError:
            pass
        if p.poll() is not None or time.monotonic() > deadline:
            return None
        time.sleep(0.01)


def _finish(p, timeout=120):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"still running {timeout} s later: it hangs")
    return p.returncode, out, err


# One call per pair lasting about a second or more here (fixed-size sampling), so the stops land in
# a kernel's waits; no re-tests, to bound the run.
SIZES = {"cas": ["1000", "200"], "rw": ["1000", "120"], "oneway": ["1000", "60"],
         "read-modified": ["1", "100"]}


@pytest.mark.hw
@pytest.mark.signals
@pytest.mark.slow
@needs2
@pytest.mark.parametrize("kernel", sorted(SIZES))
def test_ctrl_z_then_fg_does_not_lose_the_sweep(kernel, tmp_path):
    # Three stops of 1 s, five times the 0.2 s time-out, then SIGCONT: the run completes and saves
    # (before: "the partner did not answer within 0.2 s", exit 1, no file, in about a third of stops).
    out = tmp_path / "r.npz"
    p = subprocess.Popen(cli_command("-c", f"{CPUS[0]},{CPUS[-1]}", "--kernel", kernel, "--timeout", "0.2",
                                     "--no-retest", "--no-progress", *SIZES[kernel], "-o", out),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        for sig in (signal.SIGSTOP, signal.SIGTSTP, signal.SIGSTOP):
            if _worker(p) is None:
                break  # already done
            time.sleep(0.3)
            p.send_signal(sig)
            time.sleep(1.0)
            p.send_signal(signal.SIGCONT)
        rc, _, err = _finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert rc == 0, err
    assert "Traceback" not in err and corelat.load(out).kernel == kernel


@pytest.mark.hw
@pytest.mark.signals
@needs2
def test_ctrl_c_after_a_stop_still_ends_the_sweep():
    p = subprocess.Popen(cli_command("-c", f"{CPUS[0]},{CPUS[-1]}", "--kernel", "rw", "1000000", "1000"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert _worker(p) is not None, p.communicate()[1]
        time.sleep(0.2)
        p.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        p.send_signal(signal.SIGCONT)
        time.sleep(0.2)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        rc, _, err = _finish(p, 30)
        assert rc == 130, err
        assert time.monotonic() - t0 < ENDS_WITHIN_S
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def _move_all(pid, cpu):
    """What ``taskset -a -p -c CPU PID`` does: every thread of pid onto one CPU."""
    taskset = shutil.which("taskset")
    if taskset:  # its status is not checked: a thread that ended between its listing and its move fails it
        subprocess.run([taskset, "-a", "-p", "-c", str(cpu), str(pid)], check=False, capture_output=True)
        return
    for t in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # gone in between
            os.sched_setaffinity(int(t), {cpu})


@pytest.mark.hw
@pytest.mark.signals
@pytest.mark.slow
@needs2
def test_taskset_during_a_sweep_is_undone_and_said(tmp_path):
    # The pair's one call lasts a second or more here (2 x 10^5 round trips per sample); every thread is
    # moved onto the first CPU in mid-call: the call ends, the pair is measured again on freshly
    # pinned threads, and the command, the result's warnings and extras["moved"] say so (before:
    # nothing said at all).
    out = tmp_path / "r.npz"
    a, b = CPUS[0], CPUS[-1]
    p = subprocess.Popen(cli_command("-c", f"{a},{b}", "--kernel", "rw", "--no-retest", "--no-progress",
                                     "200000", "10", "-o", out),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert _worker(p) is not None, p.communicate()[1]
        time.sleep(0.05)
        _move_all(p.pid, a)
        rc, stdout, err = _finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert rc == 0, err
    said = stdout + err
    assert "measured again because something outside corelat moved a measuring thread" in said, said
    assert f"the thread pinned to CPU {b} ran on CPU {a}" in said
    r = corelat.load(out)
    assert r.extras["moved"][1, 0] >= 1 and r.metadata["sampling"]["pairs_moved"] == 1
    assert any("moved a measuring thread" in w for w in r.warnings)
