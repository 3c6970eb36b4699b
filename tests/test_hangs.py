"""Nothing hangs: frozen, starved and moved measuring threads, run out of threads; each case in a
subprocess with a hard time limit. Facilities this machine may lack (cgroup v1 freezer, cpuset and
pids controllers, SCHED_FIFO, two CPUs) are skipped with the precise reason.

The bounds are generous (seconds where the fix needs a fraction of one): they tell "ends" from
"hangs for minutes", never a speed."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import cli_command

import corelat
from corelat import _corelat
from corelat._core import status as _cstatus
from corelat._measure.measurers import PairMeasurer, _once_more_if_moved

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
pytestmark = [pytest.mark.hw, pytest.mark.signals]
CGROUP_V1 = "/sys/fs/cgroup"
# The environment a user has: no BLAS thread variables (a test that set them hid a SCHED_FIFO starvation
# every user met). PINNED is the variant with OpenBLAS held to one thread, run beside it where it matters.
BLAS_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
ENV = {k: v for k, v in os.environ.items() if k not in BLAS_VARS and k != "CORELAT_DEBUG"}
PINNED = dict(ENV, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

# A pair measured for hours unless something stops it: 10^6 round trips x 1000 samples.
LONG = ["-c", f"{CPUS[0]},{CPUS[-1]}", "--kernel", "rw", "1000000", "1000"] if len(CPUS) >= 2 else []


def _start(args, env=None, prefix=(), partner=None):
    return subprocess.Popen([*prefix, *cli_command(*args, partner=partner)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(ENV, **(env or {})))


def _workers(p, timeout=30):
    """Thread ids of the measuring threads of process p, once they exist (main thread excluded)."""
    deadline = time.monotonic() + timeout
    while True:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{p.pid}/task") if int(t) != p.pid)
        if len(tids) >= 2:
            return tids
        assert p.poll() is None, p.communicate()[1]
        assert time.monotonic() < deadline, "the measuring threads never started"
        time.sleep(0.02)


def _thread_on(p, cpu, timeout=30):
    """The measuring thread of p pinned to `cpu` (glibc pins a new thread as it starts, so a thread
    just created may not be pinned yet: wait for it)."""
    deadline = time.monotonic() + timeout
    while True:
        for t in _workers(p, timeout):
            try:
                if os.sched_getaffinity(t) == {cpu}:
                    return t
            except OSError:
                pass  # gone in between
        assert time.monotonic() < deadline, f"no thread pinned to CPU {cpu}"
        time.sleep(0.01)


def _finish(p, timeout):
    """Wait at most `timeout` s; returns (status, stderr, seconds). Kills the process if it hangs."""
    t0 = time.monotonic()
    try:
        _, err = p.communicate(timeout=timeout)
        return p.returncode, err, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"still running {timeout} s later: it hangs")


def _cgroup(controller, why):
    path = os.path.join(CGROUP_V1, controller)
    if not os.path.isfile(os.path.join(path, "tasks")):
        pytest.skip(f"no cgroup v1 {controller} controller at {path} ({why})")
    if os.geteuid() != 0:
        pytest.skip(f"creating a cgroup under {path} needs root ({why})")
    d = os.path.join(path, f"corelat-test-{uuid.uuid4().hex[:8]}")
    os.mkdir(d)
    return d


def _read(path):
    with open(path) as f:
        return f.read()


def _remove_cgroup(d, parent_tasks):
    for tid in _read(os.path.join(d, "tasks")).split():
        try:
            with open(parent_tasks, "w") as f:
                f.write(tid)
        except OSError:
            pass
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except OSError:
            time.sleep(0.1)


# -- a partner that stops running -------------------------------------------------------------


@needs2
def test_frozen_partner_hook_times_out_naming_the_cpu():
    # The responder sleeps 60 s deaf to everything (as frozen): the caller leaves it behind after
    # the time-out + grace and says which CPU did not answer.
    p = _start([*LONG, "--timeout", "0.5"], partner="freeze=60")
    rc, err, _ = _finish(p, 20)
    assert rc == 1, err
    # the sleeping responder, or (on a machine so loaded that the initiator got no CPU for a second
    # either) the initiator: a CPU of the pair is named
    assert re.search(f"thread on CPU ({CPUS[-1]}|{CPUS[0]}) stopped running", err) and "Traceback" not in err


@needs2
def test_frozen_partner_hook_ctrl_c_still_works():
    p = _start(LONG, partner="freeze=60")
    _workers(p)
    time.sleep(0.3)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    rc, err, _ = _finish(p, 20)
    assert rc == 130, err
    assert time.monotonic() - t0 < 5, "Ctrl-C took too long with a frozen partner"


def _stderr_until(p, needle, timeout):
    """Read p's stderr until a line holds `needle`; returns the text read. A process whose thread is
    frozen by a cgroup freezer cannot finish exiting until it is thawed (the kernel waits for every
    thread), so what the caller printed is the sign that it returned."""
    import select

    text, deadline = "", time.monotonic() + timeout
    while needle not in text:
        left = deadline - time.monotonic()
        assert left > 0, f"no {needle!r} within {timeout} s: it hangs; stderr so far: {text!r}"
        ready, _, _ = select.select([p.stderr], [], [], left)
        if ready:
            line = p.stderr.readline()
            assert line, f"stderr closed without {needle!r}: {text!r}"
            text += line
    return text


def _thaw_and_reap(d, p):
    with open(os.path.join(d, "freezer.state"), "w") as f:
        f.write("THAWED")
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
    _remove_cgroup(d, os.path.join(CGROUP_V1, "freezer", "tasks"))


def _freeze(d, tid):
    with open(os.path.join(d, "tasks"), "w") as f:
        f.write(str(tid))
    with open(os.path.join(d, "freezer.state"), "w") as f:
        f.write("FROZEN")


@pytest.mark.slow
@needs2
@pytest.mark.parametrize("which", ["responder", "initiator"])
def test_cgroup_frozen_thread_times_out(which):
    d = _cgroup("freezer", "to freeze one measuring thread")
    p = _start([*LONG, "--timeout", "1"])
    try:
        cpu = CPUS[-1] if which == "responder" else CPUS[0]
        tid = _thread_on(p, cpu)
        time.sleep(0.3)
        _freeze(d, tid)
        err = _stderr_until(p, "stopped running", 20)
        assert f"thread on CPU {cpu} stopped running" in err, err
    finally:
        _thaw_and_reap(d, p)
    assert p.returncode == 1


@needs2
def test_cgroup_frozen_thread_ctrl_c():
    d = _cgroup("freezer", "to freeze one measuring thread")
    p = _start(LONG)
    try:
        tid = _thread_on(p, CPUS[-1])
        time.sleep(0.3)
        _freeze(d, tid)
        time.sleep(0.2)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _stderr_until(p, "interrupted", 10)
        assert time.monotonic() - t0 < 5
    finally:
        _thaw_and_reap(d, p)
    assert p.returncode == 130


@pytest.mark.slow
@needs2
def test_memory_of_a_left_behind_thread_is_freed_when_it_wakes():
    """The partner sleeps, deaf, for `freeze` s; the caller gives up on it GRACE_S after the
    initiator's 0.1 s time-out, and the job stays alive until the sleeper wakes. The time-out
    counts the initiator's own CPU time, so on a loaded machine (CI's background C checks) it can
    end more than `freeze` - GRACE_S after the start: the sleeper then wakes within the grace,
    nobody is left behind, and the time-out itself is the outcome, correctly. Then nothing may
    stay alive either, and the next try sleeps twice as long."""
    corelat.timer_info()
    a, b = CPUS[0], CPUS[-1]
    before = _corelat.jobs_alive()
    for freeze in (2.0, 4.0, 8.0):
        with pytest.raises(corelat.MeasurementTimeout) as got:
            _corelat.pingpong(a, b, _corelat.KERNEL_RW, 10, 5, 0, 0.1, freeze=freeze)
        if f"CPU {b} stopped running" in str(got.value):
            break
        assert "did not answer within 0.1 s" in str(got.value)
        assert _corelat.jobs_alive() == before  # it woke in time: nothing was left behind
    else:
        pytest.fail("the sleeping partner was never left behind, even asleep for 8 s")
    assert _corelat.jobs_alive() == before + 1  # the sleeping thread still holds its job
    deadline = time.monotonic() + 30
    while _corelat.jobs_alive() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _corelat.jobs_alive() == before  # it woke, saw the abort and freed the job


# -- real-time priority ---------------------------------------------------------------------


@needs2
def _chrt():
    chrt = shutil.which("chrt")
    if not chrt:
        pytest.skip("chrt (util-linux) not installed")
    probe = subprocess.run([chrt, "-f", "10", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"SCHED_FIFO not permitted here (needs root or RLIMIT_RTPRIO): {probe.stderr.strip()}")
    return chrt


def _priorities(p, timeout=10):
    """{thread id: real-time priority} of p's threads but the main one, once two of them exist and
    all sit below the caller's 10, or as they are after `timeout` s. glibc creates a thread with the
    creator's policy and sets the one its attributes ask for from the creator before the thread runs
    any code: a thread caught in between reads 10 for a moment (once in the flake finder's loaded rounds)."""
    deadline = time.monotonic() + timeout
    while True:
        found = {}
        for t in os.listdir(f"/proc/{p.pid}/task"):
            if int(t) != p.pid:
                with contextlib.suppress(OSError):  # gone in between
                    found[int(t)] = os.sched_getparam(int(t)).sched_priority
        if (len(found) >= 2 and all(prio < 10 for prio in found.values())) or time.monotonic() > deadline:
            return found
        assert p.poll() is None, p.communicate()[1]
        time.sleep(0.02)


@pytest.fixture
def one_real_time_run():
    """Hold a machine-wide lock while a test runs a command under SCHED_FIFO. Two such commands at one
    priority on the same CPUs starve each other's measuring threads (FIFO threads never yield), and
    the command then rightly ends with "the partner did not answer": seen when a second test run
    (a developer's, .ci/stress, CI) shared the machine. The lock only orders such tests across test
    runs; it never fails one (it waits at most 10 minutes, then runs anyway)."""
    import fcntl
    import tempfile

    with open(os.path.join(tempfile.gettempdir(), "corelat-tests-sched-fifo.lock"), "a") as f:
        deadline = time.monotonic() + 600
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# `chrt -f 10 corelat ...` as a user types it (no BLAS variables), and the pinned-down variant; Ctrl-C
# and SIGTERM. The bound is loose (it tells "ends" from "hangs"); benchmarks/exit_time.py times it.
@needs2
@pytest.mark.parametrize("kernel, sig, env", [
    ("cas", signal.SIGINT, "user"), ("rw", signal.SIGINT, "user"), ("rw", signal.SIGTERM, "user"),
    ("rw", signal.SIGINT, "pinned"),
])
def test_ctrl_c_under_sched_fifo(kernel, sig, env, one_real_time_run):
    chrt = _chrt()
    args = ["--kernel", kernel, "1000000", "1000"]  # every allowed CPU, as `corelat 1000000 1000`
    p = subprocess.Popen([chrt, "-f", "10", *cli_command(*args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         text=True, env=ENV if env == "user" else PINNED)
    try:
        _workers(p)
        # the measuring threads run below the caller, so the caller can always stop them
        prios = _priorities(p)
        assert all(os.sched_getscheduler(t) in (os.SCHED_FIFO, os.SCHED_OTHER) for t in prios)
        assert all(prio < 10 for prio in prios.values()), prios
        time.sleep(0.5)
        t0 = time.monotonic()
        p.send_signal(sig)
        rc, err, _ = _finish(p, 20)
        assert rc == (130 if sig == signal.SIGINT else -sig), err
        assert time.monotonic() - t0 < 5
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


@needs2
def test_no_thread_of_the_command_spins_above_the_measuring_threads_under_sched_fifo(one_real_time_run):
    # In the user's environment NumPy's OpenBLAS started a thread per CPU at the caller's priority,
    # one above the measuring threads; idle, such a thread spins before it sleeps, and on a measuring
    # thread's CPU it starves that thread. While measuring, only the caller may sit at its priority.
    chrt = _chrt()
    p = subprocess.Popen([chrt, "-f", "10", *cli_command(*LONG)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         text=True, env=ENV)
    try:
        _thread_on(p, CPUS[-1])
        others = _priorities(p)
        assert len(others) == 2 and all(prio < 10 for prio in others.values()), others
    finally:
        p.kill()
        p.communicate()


# -- a thread moved off its CPU -------------------------------------------------------------


def _moved_from_outside(statement, times):
    """Run `statement` in a subprocess that prints "CAUGHT <type> <cpu> <now_on> <message>" if it raises
    a MeasurementError; move the thread pinned to CPUS[-1] onto CPUS[0] `times` times (what taskset -p
    does; a retry pins a new thread, found as the one pinned to CPUS[-1] again). Returns its stdout and
    stderr; fails if a run does not end within a bound."""
    code = (
        "import corelat, corelat._measure.smt\n"
        "from corelat import _corelat\n"
        "corelat.timer_info()\n"
        "try:\n"
        f"    {statement}\n"
        "except corelat.MeasurementError as e:\n"
        "    print('CAUGHT', type(e).__name__, getattr(e, 'cpu', '-'), getattr(e, 'now_on', '-'), e, "
        "flush=True)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env=ENV)
    try:
        for _ in range(times):
            t0 = time.monotonic()
            tid = _thread_on(p, CPUS[-1])
            assert time.monotonic() - t0 < 20, "the run before did not end at once"
            time.sleep(0.2)
            os.sched_setaffinity(tid, {CPUS[0]})
        t0 = time.monotonic()
        out, err = p.communicate(timeout=90)  # an unfixed run ends after 60 s (or 120 s: fails)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, err
    assert took < 20, f"took {took:.0f} s to stop"
    return out, err


@needs2
def test_moved_thread_ends_the_call_at_once():
    # sched_setaffinity from outside (what `taskset -p` does) on the responder, in mid-run
    out, err = _moved_from_outside(
        f"_corelat.pingpong({CPUS[0]}, {CPUS[-1]}, _corelat.KERNEL_RW, 1000000, 1000, 0, 10.0)", 1)
    assert (out.startswith(f"CAUGHT ThreadMoved {CPUS[-1]} {CPUS[0]}")
            and "affinity changed" in out), (out, err)


# Runs of minutes unless something stops them: smt's loop for 60 s; locks' tests with no spin-wait
# for a lock (the baseline, an atomic, a mutex), 2 x 60 s each. Raw calls: no retry.
_LONG_RUNS = {
    "smt": f"_corelat.smt_throughput([{CPUS[0]}, {CPUS[-1]}], 0, 60.0, 10.0, {1 << 16})",
    "locks": f"_corelat.locks([{CPUS[0]}, {CPUS[-1]}], [0, 1, 6], True, 60.0, 60.0, 10.0)",
}


@needs2
@pytest.mark.parametrize("run", sorted(_LONG_RUNS))
def test_moved_thread_ends_a_busy_or_lock_run_at_once(run):
    # Threads moved onto one CPU would measure each other for the rest of the run: it must end at
    # once, as a ping-pong does, not minutes later with numbers that describe nothing.
    out, err = _moved_from_outside(_LONG_RUNS[run], 1)
    assert (out.startswith(f"CAUGHT ThreadMoved {CPUS[-1]} {CPUS[0]}")
            and "affinity changed" in out), (out, err)


_PUBLIC_RUNS = {
    "smt": f"corelat._measure.smt.throughput([{CPUS[0]}, {CPUS[-1]}], 'alu', duration=60)",
    "locks": f"corelat.locks([{CPUS[0]}, {CPUS[-1]}], kernel=['inc-atomic-relaxed'], shared=True, "
             "duration=60)",
}


@needs2
@pytest.mark.parametrize("run", sorted(_PUBLIC_RUNS))
def test_busy_or_lock_run_moved_twice_fails_clearly(run):
    # moved: the run ends, is run again on freshly pinned threads; moved again: a clear error, fast
    out, err = _moved_from_outside(_PUBLIC_RUNS[run], 2)
    assert re.match(r"CAUGHT MeasurementError - - CPUs [0-9,-]+: the CPU affinity changed during the "
                    r"measurement",
                    out), (out, err)


def test_moved_thread_is_retried_once_then_fails_clearly():
    calls = []

    def moved_then(second):
        def call():
            calls.append(1)
            if len(calls) == 1:
                raise _cstatus.ThreadMoved("CPUs 0 and 1: the thread pinned to CPU 1 ran on CPU 0", 1, 0)
            return second()
        return call

    assert _once_more_if_moved(moved_then(lambda: "ok"), 0, 1) == "ok" and len(calls) == 2

    def pin_fails():
        raise corelat.MeasurementError("CPUs 0 and 1: cannot pin a thread to CPU 1")

    calls.clear()
    with pytest.raises(corelat.MeasurementError,
                       match="CPU affinity changed during the measurement.*cannot pin"):
        _once_more_if_moved(moved_then(pin_fails), 0, 1)


@needs2
def test_cpuset_shrinking_mid_pair_ends_the_sweep_with_a_clear_error():
    d = _cgroup("cpuset", "to shrink the process's cpuset while it measures")
    parent = os.path.join(CGROUP_V1, "cpuset")
    a, b = CPUS[0], CPUS[-1]
    with open(os.path.join(d, "cpuset.cpus"), "w") as f:
        f.write(f"{a},{b}")
    with open(os.path.join(d, "cpuset.mems"), "w") as f:
        f.write(_read(os.path.join(parent, "cpuset.mems")).strip())
    # 1000 round trips per sample as in the report, but samples enough to still be running when the
    # cpuset shrinks (35 samples finished before the test saw the threads on an idle machine)
    p = _start(["-c", f"{a},{b}", "--kernel", "rw", "1000", "100000", "--timeout", "1"])
    try:
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
        _workers(p)
        with open(os.path.join(d, "cpuset.cpus"), "w") as f:
            f.write(str(a))
        t0 = time.monotonic()
        rc, err, _ = _finish(p, 60)
        took = time.monotonic() - t0
        # it may have finished before the change took hold; otherwise it must say why, fast
        if rc != 0:
            assert rc == 1 and "affinity changed" in err, err
            assert took < 20, f"took {took:.0f} s to stop"
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        _remove_cgroup(d, os.path.join(parent, "tasks"))


# -- a pair's time budget inside one chunk --------------------------------------------------


@needs2
def test_budget_is_enforced_inside_a_chunk():
    corelat.timer_info()
    m = PairMeasurer("rw", 1000, 1, 1.0)
    t0 = time.monotonic()
    ns = m(CPUS[0], CPUS[-1], 1_000_000, budget=0.05)  # a million samples: minutes without the budget
    assert time.monotonic() - t0 < 10
    assert 1 <= ns.size < 1_000_000 and (ns > 0).all()


# -- running out of threads -----------------------------------------------------------------


@needs2
def test_thread_creation_failure_names_the_call_the_pair_and_the_cpu():
    d = _cgroup("pids", "to limit the threads a process may create")
    code = (
        "import sys, corelat\n"
        "corelat.timer_info()\n"
        "sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.readline()\n"
        "try:\n"
        f"    corelat.measure([{CPUS[0]}, {CPUS[-1]}], round_trips=10, samples=3)\n"
        "except corelat.MeasurementError as e:\n"
        "    print('ERROR', e, flush=True)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert p.stdout.readline() == "ready\n"
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
        with open(os.path.join(d, "pids.max"), "w") as f:
            f.write(str(len(os.listdir(f"/proc/{p.pid}/task")) + 1))  # room for one measuring thread
        out, err = p.communicate("go\n", timeout=60)
        assert out.startswith("ERROR"), (out, err)
        assert ("pthread_create" in out and f"CPU {CPUS[-1]}" in out
                and f"CPUs {CPUS[0]} and {CPUS[-1]}" in out)
        assert "ran out of threads" in out and "pids.max" in out
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        _remove_cgroup(d, os.path.join(CGROUP_V1, "pids", "tasks"))
