"""A fleet folder read on worker processes: the same fleet as read serially; Ctrl-C and dead workers."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import ENDS_WITHIN_S, before_corelat_ran, cli_command

import corelat
from corelat._fleet import readers
from corelat._fleet import synth as _fleet_synth

PEERS = "fixtures/peer-results/core-to-core-latency"
RYZEN = "AMD Ryzen 9 5950X @ 3.40 GHz.csv"


@pytest.fixture(scope="module")
def folder(shared_dir, tmp_path_factory):
    """Twelve nodes (one slowed), a file that is no archive, an error file, and no node012."""
    d = tmp_path_factory.mktemp("fleet")
    base = corelat.load(shared_dir / PEERS / RYZEN)
    for r in _fleet_synth.copies(base, 13, seed=5, slow=(3, "across", 1.3)):
        if r.name != "node012":
            r.save(d / f"{r.name}.npz")
    (d / "node013.npz").write_bytes(b"PK\x03\x04 not a zip archive")
    (d / "node014.error.json").write_text('{"kind": "fleet-node-error", "node": "node014", "error": "boom"}')
    return d


def _fleet(folder, monkeypatch, parallel):
    monkeypatch.setattr(readers, "MIN_FILES", 2 if parallel else 10**9)
    monkeypatch.setattr(readers, "workers", lambda: 2)
    got = corelat.fleet(folder, expect="node[000-014]")
    d = got.to_dict()
    d["metadata"].pop("date")
    return d


def test_worker_processes_give_the_serial_fleet(folder, monkeypatch):
    serial = _fleet(folder, monkeypatch, parallel=False)
    parallel = _fleet(folder, monkeypatch, parallel=True)
    assert parallel == serial
    assert [e["node"] for e in parallel["errors"]] == ["node013", "node014"]
    assert parallel["missing"] == ["node012"]
    assert [o["node"] for o in parallel["outliers"]] == ["node003"]


def _read_or_die(path):
    if path.endswith("die"):
        os.kill(os.getpid(), signal.SIGKILL)
    return path.upper()


@pytest.mark.parametrize("at", [0, 7, 25])
def test_a_worker_that_dies_makes_its_files_errors_and_the_rest_is_read(monkeypatch, at):
    monkeypatch.setattr(readers, "workers", lambda: 2)
    paths = [f"f{k:02d}" for k in range(30)]
    paths[at] += "-die"
    added, died = [], []
    readers.read_in_order(paths, _read_or_die, lambda p, got: added.append((p, got)),
                          lambda p, why: died.append(p))
    assert paths[at] in died
    assert [p for p, _ in added] == [p for p in paths if p not in died]  # in order, each once
    assert all(got == p.upper() for p, got in added)
    assert len(died) <= 4 * 2  # the files then in hand, no more


def _slow_upper(path):
    time.sleep(0.01)
    return path.upper()


@pytest.mark.signals
def test_a_ctrl_c_where_python_swallows_it_still_ends_the_read(monkeypatch):
    """Python raises KeyboardInterrupt wherever the main thread is. Where that code swallows it (a
    weakref callback of the import system: "Exception ignored"), the read went on to the end after
    a Ctrl-C (`fleet-report` exited 3, 1 run in 10 under load). The read notes the Ctrl-C instead and
    raises it itself, between two results."""
    monkeypatch.setattr(readers, "workers", lambda: 2)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a user's process
    paths = [f"f{k:03d}" for k in range(200)]
    added = []

    def add(path, got):
        added.append(got)
        if len(added) == 5:
            # From another thread, as from a terminal: os.kill of this process from the main thread
            # raises at once, in os.kill itself, out of the block below.
            go, sent = threading.Event(), threading.Event()

            def ctrl_c():
                go.wait(10)
                os.kill(os.getpid(), signal.SIGINT)
                sent.set()

            threading.Thread(target=ctrl_c).start()
            with contextlib.suppress(KeyboardInterrupt):  # as a finaliser: what is raised stays in it
                go.set()
                sent.wait(10)
                time.sleep(0.05)

    try:
        with pytest.raises(KeyboardInterrupt):
            readers.read_in_order(paths, _slow_upper, add, lambda path, why: None)
        assert 5 <= len(added) < len(paths)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, before)


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _descendants(pid):
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


@pytest.mark.signals
@pytest.mark.slow
def test_ctrl_c_during_a_parallel_fleet_report_exits_130_and_leaves_no_worker(folder, tmp_path):
    if readers.workers() < 2:
        pytest.skip("needs 2 usable CPUs (one process reads alone)")
    big = tmp_path / "big"
    big.mkdir()
    files = sorted(p for p in os.listdir(folder) if p.startswith("node0") and p < "node012")
    for k in range(4000):  # links: a folder that takes seconds to read, written in a moment
        os.link(folder / files[k % len(files)], big / f"n{k:05d}.npz")
    # Ctrl-C: SIGINT to the whole foreground process group, workers included.
    p = subprocess.Popen(cli_command("fleet-report", big), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_descendants(p.pid)) < 3:  # the fork server and two workers
            assert p.poll() is None and time.monotonic() < deadline, "no worker started"
            time.sleep(0.02)
        workers = _descendants(p.pid)
        time.sleep(0.3)
        t0 = time.monotonic()
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert took < ENDS_WITHIN_S
    # The fork server (and multiprocessing's resource tracker) end on their own once the command
    # has: reading their end of its pipe.
    deadline = time.monotonic() + ENDS_WITHIN_S
    while [w for w in workers if _state(w) not in ("Z", "gone")] and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {w: _cmdline(w) for w in workers if _state(w) not in ("Z", "gone")}
    assert not left


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pytest.mark.slow
def test_hostile_files_read_on_workers_are_the_errors_they_are_read_here(tmp_path, monkeypatch):
    sys.path.insert(0, os.path.dirname(__file__))
    import hostile

    hostile.generate(tmp_path, bomb=False)
    serial = _fleet(tmp_path, monkeypatch, parallel=False)
    parallel = _fleet(tmp_path, monkeypatch, parallel=True)
    assert parallel == serial
    assert serial["errors"] and all("\n" not in e["error"] for e in serial["errors"])


@pytest.fixture(scope="module")
def two_hundred(folder, tmp_path_factory):
    """A folder of 200 node files (links to the twelve): read on a worker pool (readers.MIN_FILES)."""
    d = tmp_path_factory.mktemp("fleet200")
    files = sorted(p for p in os.listdir(folder) if p.startswith("node0") and p < "node012")
    for k in range(200):
        os.link(folder / files[k % len(files)], d / f"n{k:03d}.npz")
    return d


@pytest.mark.signals
@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6])
def test_ctrl_c_at_any_moment_of_a_fleet_report_exits_130_without_a_traceback(two_hundred, delay):
    """A Ctrl-C 0.3 s into `fleet-report` of 200 nodes, as the fork server and the pool started, ended
    in "internal error: EOFError: unexpected EOF" (exit 1, a traceback). Wherever it lands (the
    command's start, the pool's, the reading), it ends the command with 130 and one line."""
    # A signal that lands while the interpreter itself starts (before corelat's first line runs)
    # is Python's to report, not corelat's: that try is not judged, and the next one waits longer.
    for attempt in range(5):
        p = subprocess.Popen(cli_command("fleet-report", two_hundred), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            time.sleep(delay + 0.05 * attempt)
            os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        if not before_corelat_ran(err):
            break
    else:
        pytest.fail(f"5 signals from {delay} s on all landed before corelat ran: {err}")
    if p.returncode in (1, 3):  # read to the end before the signal came: nothing to judge
        assert "Traceback" not in err and "internal error" not in err, err
        return
    assert p.returncode == 130, err
    assert "Traceback" not in err and "internal error" not in err, err


@pytest.mark.signals
@pytest.mark.slow
@pytest.mark.parametrize("after", [0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08])
def test_ctrl_c_as_a_fleet_report_ends_exits_130_or_its_status_never_killed(two_hundred, after):
    """A Ctrl-C that lands as `fleet-report` of 200 nodes has printed its report and is ending (the
    pool shut down, Ctrl-C handed back to Python, the interpreter finalising) killed the command by
    SIGINT (status -2, no word on stderr), 13 times in 120 tries with 0.3-1.8 s delays. It ends with
    the command's own status or 130 and one line, wherever it lands."""
    statuses = []
    for _ in range(4):
        p = subprocess.Popen(cli_command("fleet-report", two_hundred), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            p.stdout.read(1)  # the report is flushed: the command is ending
            time.sleep(after)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGINT)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        err = err.decode()
        statuses.append(p.returncode)
        assert p.returncode in (1, 3, 130), (p.returncode, err)
        assert "Traceback" not in err and "internal error" not in err, err
        if p.returncode == 130:
            assert "corelat: interrupted" in err, err
