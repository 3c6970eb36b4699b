"""The run path of ``corelat fleet`` (issue 36, the fleet's monitoring path, items 1, 2, 6, 7 and 9),
without MPI: every rank of the job is a thread of this process over an in-process stand-in for
mpi4py (point-to-point messages with tags, a non-blocking barrier, MPI_Abort), each rank its own
machine, and each rank runs the command's own code (``cmd_fleet.run``)."""

import os
import threading
import time

import pytest


import corelat
from conftest import run_cli
from corelat._fleet import run as _run
from corelat._fleet import mpistart as _mpistart
from corelat.cli import _parser, cmd_fleet

ANY = -1
_local = threading.local()


class Aborted(BaseException):
    """MPI_Abort in a rank (a thread here): the job ends, every rank with it."""


class _Status:
    def __init__(self):
        self.source, self.count = None, 0

    def Get_source(self):
        return self.source

    def Get_count(self, _type):
        return self.count


class _Request:
    def __init__(self, test=lambda: True):
        self._test = test

    def Test(self):
        return self._test()


class _Group:
    def __init__(self, rank):
        self.rank = rank

    def Translate_ranks(self, ranks, _other):
        return [self.rank for _ in ranks]


class _Shared:
    """Split_type(COMM_TYPE_SHARED): each rank is its own machine."""

    def __init__(self, rank):
        self.rank = rank

    def Get_size(self):
        return 1

    def Get_group(self):
        return _Group(self.rank)

    def Free(self):
        pass


class World:
    """The job: mailboxes of (source, tag, bytes), a barrier count, the abort."""

    def __init__(self, size):
        self.size, self.lock = size, threading.Lock()
        self.boxes = {r: [] for r in range(size)}
        self.arrived = set()
        self.aborted = None  # (rank, code)

    def check(self):
        if self.aborted is not None:
            raise Aborted(self.aborted)


class Comm:
    def __init__(self, world, rank):
        self.world, self.rank = world, rank

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.world.size

    def Get_group(self):
        return _Group(self.rank)

    def Isend(self, spec, dest, tag):
        self.world.check()
        with self.world.lock:
            self.world.boxes[dest].append((self.rank, tag, bytes(spec[0])))
        return _Request()

    def _find(self, source, tag):
        for k, (src, t, _) in enumerate(self.world.boxes[self.rank]):
            if t == tag and source in (ANY, src):
                return k
        return None

    def Iprobe(self, source, tag, status):
        self.world.check()
        with self.world.lock:
            k = self._find(source, tag)
            if k is None:
                return False
            status.source, _, data = self.world.boxes[self.rank][k]
            status.count = len(data)
            return True

    def Recv(self, spec, source, tag):
        with self.world.lock:
            k = self._find(source, tag)
            _, _, data = self.world.boxes[self.rank].pop(k)
        spec[0][:] = data

    def Ibarrier(self):
        with self.world.lock:
            self.world.arrived.add(self.rank)

        def test():
            self.world.check()
            return len(self.world.arrived) == self.world.size
        return _Request(test)

    def Split_type(self, _kind, key=0):
        return _Shared(self.rank)

    def Abort(self, code):
        with self.world.lock:
            if self.world.aborted is None:
                self.world.aborted = (self.rank, code)
        raise Aborted(code)


class FakeMPI:
    BYTE, ANY_SOURCE, COMM_TYPE_SHARED = "byte", ANY, "shared"
    Status = _Status

    @property
    def COMM_WORLD(self):  # each rank (thread) its own
        return _local.comm

    def Get_processor_name(self):
        return _local.name


class Job:
    """One fleet job of ``nodes`` ranks; ``hang``: nodes whose measurement never ends (kill -STOP)."""

    def __init__(self, monkeypatch, nodes, hang=(), fail=(), kill=()):
        self.nodes, self.hang, self.fail, self.kill = list(nodes), set(hang), set(fail), set(kill)
        self.release = threading.Event()
        self.measured = []
        fake = FakeMPI()
        monkeypatch.setattr(_run, "mpi", lambda *a, **k: fake)
        monkeypatch.setattr(cmd_fleet, "mpi", lambda *a, **k: fake)
        monkeypatch.setattr(_mpistart, "ABORT_GRACE", 0.0)
        monkeypatch.delenv("CORELAT_NODE_NAME", raising=False)
        monkeypatch.setattr(_run._sweep, "run", self._measure)
        self.base = corelat.load(corelat.example_files()[0])

    def _measure(self, options):
        node = options.name
        self.measured.append(node)
        if node in self.hang:
            self.release.wait(60)
            raise RuntimeError("released at the end of the test")
        if node in self.fail:
            raise RuntimeError("this node failed")
        if node in self.kill:  # kill -9 of this rank: the launcher ends the whole job, no rank writes more
            world = _local.comm.world
            with world.lock:
                world.aborted = world.aborted or (_local.comm.rank, 9)
            raise Aborted(9)
        from corelat._fleet import synth
        return synth.copies(self.base, 1, seed=len(self.measured), names=node)[0]

    def _rank(self, world, nodes, rank, argv, out):
        _local.comm, _local.name = Comm(world, rank), nodes[rank]
        try:
            out[rank] = ("exit", cmd_fleet.run(_parser("fleet", cmd_fleet).parse_args(argv)))
        except Aborted as e:
            out[rank] = ("abort", e.args[0])
        except corelat.InputError as e:
            out[rank] = ("input", str(e))
        except BaseException as e:  # noqa: BLE001 - the test reads it
            out[rank] = ("raised", repr(e))

    def run(self, *argv, nodes=None, timeout=60):
        """{rank: (how it ended, value)}: "exit" and the status, "abort" and (rank, code), "input".
        ``nodes``: this job's, where it is not the one of the constructor (two jobs at once)."""
        out, nodes = {}, list(nodes or self.nodes)
        world = World(len(nodes))
        threads = [threading.Thread(target=self._rank, args=(world, nodes, r, list(argv), out), daemon=True)
                   for r in range(1, len(nodes))]
        for t in threads:
            t.start()
        self._rank(world, nodes, 0, list(argv), out)
        self.release.set()
        for t in threads:
            t.join(timeout)
        return out


FAST = ["10", "5", "--no-retest"]


def test_the_stand_in_job_runs_a_clean_fleet(monkeypatch, tmp_path):
    job = Job(monkeypatch, ["n1", "n2", "n3", "n4"])
    out = job.run(*FAST, "-o", str(tmp_path / "d"), "--wait", "20")
    assert out[0] in (("exit", 0), ("exit", 3)), out
    assert sorted(os.listdir(tmp_path / "d")) == ["fleet.json", "n1.npz", "n2.npz", "n3.npz", "n4.npz"]


# -- 1: a hung node: the Prometheus file is written before the job is ended -------------------------------
def test_a_hung_node_still_gets_a_prometheus_file_before_the_abort(monkeypatch, tmp_path):
    job = Job(monkeypatch, ["n1", "n2", "n3", "n4"], hang={"n3"})
    prom = tmp_path / "k.prom"
    t0 = time.monotonic()
    out = job.run(*FAST, "-o", str(tmp_path / "d"), "--wait", "3", "--prometheus", str(prom))
    assert time.monotonic() - t0 < 30
    assert out[0][0] == "abort", out  # the job is ended for the hung node, as before
    assert (tmp_path / "d" / "fleet.json").exists()
    text = prom.read_text()
    assert "corelat_fleet_exit_status 1" in text and 'status="missing"} 1' in text, text


# -- 7: every output is checked before anything is measured -----------------------------------------------
@pytest.mark.parametrize("prom", ["/proc/corelat-x.prom", "{tmp}/no-such-folder/x.prom", "{tmp}/x.txt"])
def test_a_prometheus_file_that_cannot_be_written_is_refused_before_measuring(monkeypatch, tmp_path, prom):
    job = Job(monkeypatch, ["n1", "n2"])
    prom = prom.format(tmp=tmp_path)
    out = job.run(*FAST, "-o", str(tmp_path / "d"), "--wait", "20", "--prometheus", prom)
    assert job.measured == [], "measured before the output was checked"
    assert out[0][0] == "input" and prom in out[0][1], out


# -- 6: a file that could not be saved is an error of the run, in every summary ---------------------------
def _full_disk(monkeypatch, folder):
    """Writes under ``folder`` fail as on a full disk (ENOSPC); the checks before measuring pass,
    as they do on a disk with inodes left and no blocks."""
    import errno

    from corelat._core import files as _files

    real = _files.atomic_write

    def write(path, fn):
        if os.path.abspath(os.fspath(path)).startswith(str(folder) + os.sep):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))
        return real(path, fn)
    monkeypatch.setattr(_files, "atomic_write", write)


def _prom_value(text, name, labels=""):
    for line in text.splitlines():
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    raise AssertionError(f"no {name}{labels} in:\n{text}")


def _check_full_disk_run(out, folder, prom, capsys):
    assert out[0] == ("exit", 1), out  # not 0: files were lost
    assert not (folder / "fleet.json").exists()
    text = prom.read_text()
    assert _prom_value(text, "corelat_fleet_exit_status") == 1
    assert _prom_value(text, "corelat_fleet_failed_nodes") >= 1, text
    printed = capsys.readouterr()
    assert "fleet.json" in printed.out and "could not be written" in printed.out, printed.out
    assert "n2" in printed.out.split("Errors")[-1], printed.out  # a node whose file was lost is named


def test_a_full_disk_is_a_failed_run_not_exit_0(monkeypatch, tmp_path, capsys):
    folder = tmp_path / "d"
    _full_disk(monkeypatch, folder)
    job = Job(monkeypatch, ["n1", "n2", "n3"])
    prom = tmp_path / "k.prom"
    out = job.run(*FAST, "-o", str(folder), "--wait", "20", "--prometheus", str(prom))
    _check_full_disk_run(out, folder, prom, capsys)


def test_a_real_full_tmpfs_is_a_failed_run(monkeypatch, tmp_path, capsys):
    import subprocess

    folder = tmp_path / "d"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40k", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)  # the disk full: inodes left, no blocks
        try:
            with pytest.raises(OSError):
                while True:
                    os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
        job = Job(monkeypatch, ["n1", "n2", "n3"])
        prom = tmp_path / "k.prom"
        out = job.run(*FAST, "-o", str(folder), "--wait", "20", "--prometheus", str(prom))
        _check_full_disk_run(out, folder, prom, capsys)
    finally:
        subprocess.run(["umount", str(folder)], check=False)


# -- 9: one job at a time writes a folder ------------------------------------------------------------------
@pytest.mark.parametrize("same_nodes", [False, True])
def test_a_second_job_into_a_folder_in_use_is_refused_and_told_why(monkeypatch, tmp_path, same_nodes):
    folder = tmp_path / "d"
    job = Job(monkeypatch, ["a1", "a2"], hang={"a2"})
    first = {}
    t = threading.Thread(target=lambda: first.update(job.run(*FAST, "-o", str(folder), "--wait", "6")))
    t.start()
    deadline = time.monotonic() + 20
    while "a2" not in job.measured and time.monotonic() < deadline:  # the first job is measuring
        time.sleep(0.05)
    second = ["a1", "a2"] if same_nodes else ["b1", "b2"]
    before = list(job.measured)
    out = job.run(*FAST, "-o", str(folder), "--wait", "6", nodes=second)
    t.join(30)
    assert job.measured[len(before):] == [], "the second job measured into the folder in use"
    assert all(how == "input" for how, _ in out.values()), out
    assert "in use" in out[0][1] and str(folder) in out[0][1], out[0][1]
    # the first job's lock is gone with it: a third job runs, and leaves no lock file
    job.hang = set()
    again = job.run(*FAST, "-o", str(folder), "--wait", "20")
    assert again[0] in (("exit", 0), ("exit", 3)), again
    assert not (folder / _run.LOCK_NAME).exists()


# -- 2: a job that was killed never leaves a folder that says OK --------------------------------------------
def test_a_killed_job_leaves_a_folder_that_says_it_is_incomplete(monkeypatch, tmp_path):
    folder = tmp_path / "d"
    nodes = ["n1", "n2", "n3", "n4"]
    job = Job(monkeypatch, nodes)
    good = job.run(*FAST, "-o", str(folder), "--wait", "20")
    assert good[0] in (("exit", 0), ("exit", 3)), good
    old = corelat.FleetResult.load(folder / "fleet.json")
    assert len(old.nodes) == 4
    job.kill = {"n3"}
    time.sleep(1.1)  # the second run's files are newer, as they would be
    killed = job.run(*FAST, "-o", str(folder), "--wait", "20")
    assert killed[0][0] == "abort", killed
    p = run_cli("fleet-report", folder)
    assert p.returncode == 1, p.stdout + p.stderr  # not 0: n3 of the killed run has no result
    assert "n3" in p.stdout.split("Errors")[-1], p.stdout
    report = corelat.FleetResult.load(folder / "fleet.json")  # not the good run's any more
    assert report.metadata["run"]["run"] != old.metadata["run"]["run"]
    assert not report.summary()["ok"] and "n3" in {e["node"] for e in report.errors}, report


def test_sigterm_writes_a_partial_report_and_prometheus_file(monkeypatch, tmp_path):
    import signal

    folder, prom = tmp_path / "d", tmp_path / "k.prom"
    job = Job(monkeypatch, ["n1", "n2", "n3", "n4"], hang={"n3"})
    got = []
    previous = signal.signal(signal.SIGTERM, lambda *a: got.append("the test's handler"))
    try:
        def scancel():
            deadline = time.monotonic() + 20
            # n3 hangs, the others have saved their files (on a loaded machine 0.3 s after n3 began
            # was not enough for them: 0 nodes, 4 missing)
            while time.monotonic() < deadline and not (
                    "n3" in job.measured and all((folder / f"{n}.npz").exists() for n in ("n1", "n2", "n4"))):
                time.sleep(0.05)
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGTERM)  # as scancel (and mpiexec passing it on) does
        threading.Thread(target=scancel, daemon=True).start()
        t0 = time.monotonic()
        out = job.run(*FAST, "-o", str(folder), "--wait", "15", "--prometheus", str(prom))
        took = time.monotonic() - t0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert out[0] == ("abort", 128 + signal.SIGTERM), (out, got)
    assert took < 10, took  # at once, not at the end of the wait
    report = corelat.FleetResult.load(folder / "fleet.json")
    assert "n3" in report.missing and "SIGTERM" in report.metadata["missing_reasons"]["n3"]
    assert len(report.nodes) == 3
    assert "corelat_fleet_exit_status 1" in prom.read_text()
