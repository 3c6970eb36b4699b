"""Bounded reads and atomic saves (issue 15, items 5 and 6).

Reads: /dev/zero, /dev/urandom, FIFOs, folders and links to them are refused at once (not read until
memory runs out, not blocking); sysfs files of another machine's dump that link to /dev/zero are
unreadable items, not a hang. Saves: an interrupted or failed save leaves the old file intact and no
temporary file; a symlink as target is followed; every I/O error names the path.
"""

import errno
import gc
import os
import resource
import signal
import stat
import subprocess
import sys
import time
import warnings
import zipfile

import numpy as np
import pytest
from conftest import run_cli

import corelat

sys.path.insert(0, os.path.dirname(__file__))
import hostile

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")

_CAP = 1 << 30  # address space of the subprocesses: a reader that slurps /dev/zero fails, not the machine


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (_CAP, _CAP))


def _load_in_subprocess(path, timeout=60):
    code = ("import sys, corelat\n"
            "try:\n    corelat.load(sys.argv[1]); print('accepted')\n"
            "except corelat.InputError as e:\n    print('InputError:', e)\n")
    try:
        p = subprocess.run([sys.executable, "-c", code, str(path)], check=False,
                           capture_output=True, text=True,
                           timeout=timeout, preexec_fn=_capped)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path} did not finish within {timeout} s")
    return p.stdout.strip() or p.stderr.strip().splitlines()[-1]


def _result(k=4, name="r"):
    s = np.random.default_rng(k).uniform(20, 90, (2, 2, k))
    s[0, 0] = s[1, 1] = np.nan
    return corelat.LatencyResult(cpus=(0, 1), kernel="cas", samples=s, name=name)


def _special_files(tmp_path):
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    link = tmp_path / "x.npz"
    link.symlink_to("/dev/zero")
    sparse = tmp_path / "huge.csv"
    with open(sparse, "wb") as f:
        f.truncate(8 * 1024**3)  # 8 GiB of zeros, no disk used
    out = {"/dev/zero": "/dev/zero", "link to /dev/zero": link, "FIFO": fifo, "folder": tmp_path,
           "8 GiB sparse file": sparse}
    if os.path.exists("/dev/urandom"):
        out["/dev/urandom"] = "/dev/urandom"
    return out


def test_special_files_refused_at_once(tmp_path):
    for what, path in _special_files(tmp_path).items():
        t = time.monotonic()
        out = _load_in_subprocess(path)
        assert out.startswith("InputError") and str(path) in out, (what, out)
        assert time.monotonic() - t < 30, what


def test_report_special_file_exit_2(tmp_path):
    link = tmp_path / "x.npz"
    link.symlink_to("/dev/zero")
    p = run_cli("report", link, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a regular file" in p.stderr, p.stderr


@pytest.mark.signals
def test_read_is_bounded_and_interruptible(tmp_path):
    from corelat._core import files as _files

    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(_files.Refused, match="larger than"):
        _files.read_bytes(big, 4096)
    assert _files.read_bytes(big, 5000) == b"x" * 5000
    # /proc files say size 0: the cap holds while reading, too.
    with pytest.raises(OSError):
        _files.read_bytes("/proc/self/maps", 10)
    # Ctrl-C between chunks of a long read: a KeyboardInterrupt, not a read to the end.
    code = ("import signal, sys\nfrom corelat._core import files as _files\n"
            "signal.setitimer(signal.ITIMER_REAL, 0.3)\n"
            "signal.signal(signal.SIGALRM, lambda *a: signal.raise_signal(signal.SIGINT))\n"
            "try:\n    _files.read_bytes(sys.argv[1], 1 << 40)\nexcept KeyboardInterrupt:\n    "
            "print('interrupted')\n")
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(1 << 40)  # a terabyte of zeros: minutes to read
    p = subprocess.run([sys.executable, "-c", code, str(sparse)], check=False, capture_output=True,
                       text=True, timeout=60)
    assert p.stdout.strip() == "interrupted", p.stderr


def _dump(root, online_target):
    cpu = root / "sys/devices/system/cpu"
    for c in (0, 1):
        (cpu / f"cpu{c}/topology").mkdir(parents=True)
        (cpu / f"cpu{c}/topology/core_id").write_text(f"{c}\n")
        (cpu / f"cpu{c}/topology/physical_package_id").write_text("0\n")
    (cpu / "online").symlink_to(online_target)
    (cpu / "possible").write_text("0-1\n")
    os.mkfifo(cpu / "cpu1/topology/thread_siblings_list")


def test_topology_dump_with_links_to_dev_zero_and_fifos(tmp_path):
    _dump(tmp_path, "/dev/zero")
    code = ("import sys, warnings, corelat\nwarnings.simplefilter('ignore')\n"
            "t = corelat.topology(sys.argv[1])\nprint(len(t.cpus))\n")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False, capture_output=True,
                       text=True, timeout=60,
                       preexec_fn=_capped)
    assert p.returncode == 0, p.stderr[-500:]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        corelat.topology(tmp_path)
    assert any("not a regular file" in str(w.message) for w in seen), [str(w.message) for w in seen]
    for cmd in (["topology", "--root", tmp_path], ["check", "--root", tmp_path, "--no-skew"]):
        p = run_cli(*cmd, timeout=60)
        assert p.returncode in (0, 2) and "Traceback" not in p.stderr, (cmd, p.stderr)
        # Warnings are one line each, no source file or code line.
        assert all(ln.startswith("corelat: warning: ") for ln in p.stderr.splitlines()), p.stderr


# -- atomic saves -----------------------------------------------------------------------------
def _leftovers(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def test_failed_save_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.npz"
    _result(name="old").save(target)
    before = target.read_bytes()

    def explode(f, array, **options):
        f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(np.lib.format, "write_array", explode)
    with pytest.raises(KeyboardInterrupt):
        _result(name="new").save(target)
    monkeypatch.undo()
    assert target.read_bytes() == before and corelat.load(target).name == "old"
    assert _leftovers(tmp_path) == []


def test_failed_save_closes_its_archive(tmp_path, monkeypatch):
    # NumPy < 2.1's savez leaves its ZipFile open when a write fails (here: the file size limit, as a
    # full disk would); its finaliser then raised "seek of closed file" at a later garbage
    # collection, in whatever code ran then (seen on Python 3.9).
    opened, unraisable = [], []

    class Tracked(zipfile.ZipFile):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            opened.append(self)

    monkeypatch.setattr(zipfile, "ZipFile", Tracked)
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    s = np.random.default_rng(0).uniform(20, 90, (40, 40, 300))
    big = corelat.LatencyResult(cpus=range(40), kernel="cas", samples=s)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, limit[1]))
        with pytest.raises(OSError) as e:
            big.save(tmp_path / "out.npz")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, handler)
    assert e.value.errno == errno.EFBIG
    del e
    gc.collect()
    assert len(opened) == 1 and opened[0].fp is None, "the archive was left open"
    opened.clear()
    gc.collect()
    assert unraisable == [] and _leftovers(tmp_path) == []


def test_archive_is_what_numpy_writes(tmp_path):
    # Written by corelat's own writer (always closed): the same members, compression and bytes as
    # np.savez_compressed, read by np.load without pickles.
    r = _result(k=7, name="same")
    ours, theirs = tmp_path / "ours.npz", tmp_path / "theirs.npz"
    r.save(ours)
    with np.load(ours, allow_pickle=False) as z:
        arrays = {name: z[name] for name in z.files}
    np.savez_compressed(theirs, **arrays)
    with zipfile.ZipFile(ours) as a, zipfile.ZipFile(theirs) as b:
        assert [(i.filename, i.compress_type, i.CRC, i.file_size) for i in a.infolist()] == \
            [(i.filename, i.compress_type, i.CRC, i.file_size) for i in b.infolist()]
        assert all(a.read(n) == b.read(n) for n in a.namelist())
    assert corelat.load(ours).name == "same"


def test_save_follows_symlinks_and_keeps_them(tmp_path):
    real = tmp_path / "real.npz"
    link = tmp_path / "link.npz"
    link.symlink_to(real.name)  # dangling
    _result(name="one").save(link)
    assert link.is_symlink() and real.is_file() and corelat.load(link).name == "one"
    _result(name="two").save(link)
    assert link.is_symlink() and corelat.load(real).name == "two"
    _result().to_csv(link, labelled=True)
    assert link.is_symlink() and corelat.load(real).n == 2


def test_a_replaced_file_loses_its_set_id_and_sticky_bits(tmp_path):
    # Issue 34 item 14: the permission bits of the file replaced are kept, never set-user-ID,
    # set-group-ID or sticky (a set-id program of another must not become one of ours).
    target = tmp_path / "out.npz"
    _result().save(target)
    os.chmod(target, 0o7750)
    had = os.stat(target).st_mode & 0o7000  # what chmod kept (a non-root user may lose set-group-ID)
    assert had & stat.S_ISUID, oct(had)
    _result(name="new").save(target)
    mode = os.stat(target).st_mode
    assert mode & 0o7000 == 0, f"{oct(stat.S_IMODE(mode))} kept {oct(mode & had)} of {oct(had)}"
    assert mode & 0o777 == 0o750 and corelat.load(target).name == "new"
    for write in (lambda p: p.write_bytes(b"x"), lambda p: _result().save(p)):  # a new file: none either
        fresh = tmp_path / "fresh.npz"
        fresh.unlink(missing_ok=True)
        write(fresh)
        _result().save(fresh)
        assert os.stat(fresh).st_mode & 0o7000 == 0


def test_save_keeps_permissions_and_refuses_non_regular_targets(tmp_path):
    target = tmp_path / "out.npz"
    _result().save(target)
    os.chmod(target, 0o640)
    _result().save(target)
    assert (os.stat(target).st_mode & 0o777) == 0o640
    for bad in (tmp_path, "/dev/null"):
        with pytest.raises(OSError, match="not a regular file") as e:
            _result().save(bad)
        assert str(bad) in str(e.value)
    assert _leftovers(tmp_path) == []




def test_file_size_limit_mid_save_keeps_the_old_file(tmp_path):
    # RLIMIT_FSIZE stands in for a full disk where no small tmpfs can be mounted: the write fails
    # part-way (EFBIG) exactly as it would with ENOSPC.
    target = tmp_path / "out.npz"
    _result(name="old").save(target)
    before = target.read_bytes()
    p = subprocess.run([sys.executable, "-c", hostile.SAVE_UNDER_FSIZE, str(target)], check=False,
                       capture_output=True, text=True,
                       timeout=120)
    assert p.stdout.split() == ["OSError", str(errno.EFBIG), "True"], (p.stdout, p.stderr)
    assert target.read_bytes() == before and _leftovers(tmp_path) == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                           check=False, capture_output=True).returncode != 0:
        pytest.skip("cannot mount a 64 KB tmpfs here (needs root and mount rights); "
                    "test_file_size_limit_mid_save_keeps_the_old_file covers the same path with RLIMIT_FSIZE")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_full_disk_keeps_the_old_file_and_names_it(tiny_tmpfs):
    target = tiny_tmpfs / "out.npz"
    _result(name="old").save(target)
    before = target.read_bytes()
    s = np.random.default_rng(0).uniform(20, 90, (40, 40, 300))
    big = corelat.LatencyResult(cpus=range(40), kernel="cas", samples=s)
    with pytest.raises(OSError) as e:
        big.save(target)
    assert e.value.errno == errno.ENOSPC and str(target) in str(e.value)
    assert target.read_bytes() == before and _leftovers(tiny_tmpfs) == []




@pytest.mark.signals
@pytest.mark.parametrize("attempt", range(4))
def test_ctrl_c_during_save_never_truncates(tmp_path, attempt):
    target = tmp_path / "out.npz"
    _result(name="old").save(target)
    p = subprocess.Popen([sys.executable, "-c", hostile.SAVE_LOOP, str(target)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2 + 0.37 * attempt)  # somewhere inside one of the saves
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()
    assert corelat.load(target).name in ("old", "new")
    assert _leftovers(tmp_path) == []
