"""Hostile result files (issue 15, items 7 and 8): every case of tests/hostile.py is refused with an
InputError by corelat.load and with exit status 2 and one line by ``corelat report``; nothing the
file declares is allocated first."""

import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

import corelat

sys.path.insert(0, os.path.dirname(__file__))
import hostile


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return hostile.generate(tmp_path_factory.mktemp("hostile"))


def _limited(limit_bytes):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return apply


# Every door (issue 34 item 11): corelat.load, then each saved kind's own load; the first door that
# does not answer InputError is what the line says.
_LOAD_ALL = r"""
import sys, time, corelat
doors = [corelat.load] + [k.load for k in (corelat.LatencyResult, corelat.SMTResult, corelat.LockResult,
                                           corelat.PlacementResult, corelat.FleetResult, corelat.CheckReport,
                                           corelat.Topology)]
for path in sys.argv[1:]:
    t = time.monotonic()
    for load in doors:
        door = getattr(load, "__qualname__", "load")
        try:
            load(path)
            what = f"accepted by {door}"
        except corelat.InputError as e:
            what = "InputError: " + str(e).replace("\n", " ")[:200]
        except BaseException as e:
            what = f"raw {type(e).__name__} from {door}: {str(e)[:200]}"
        if not what.startswith("InputError") or path not in what:
            break
    print(f"{time.monotonic() - t:.2f}\t{path}\t{what}", flush=True)
"""


@pytest.mark.slow
def test_every_hostile_file_is_refused_with_input_error(cases):
    # In a subprocess whose address space is capped at 1 GiB: a reader that allocated what a file
    # declares (64 GiB, a 4 GiB zip bomb) fails with MemoryError instead of refusing the file.
    p = subprocess.run([sys.executable, "-c", _LOAD_ALL, *(path for _, path in cases)], check=False,
                       capture_output=True,
                       text=True, timeout=600, preexec_fn=_limited(1 << 30))
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [line.split("\t", 2) for line in p.stdout.splitlines()]
    assert len(rows) == len(cases)
    bad = [(os.path.basename(path), what) for _, path, what in rows if not what.startswith("InputError")]
    assert not bad, f"{len(bad)} of {len(cases)} hostile files not refused cleanly: {bad}"
    slow = [(os.path.basename(path), t) for t, path, _ in rows if float(t) > 10]
    assert not slow, slow
    for _, path, what in rows:  # every message names the file
        assert path in what, what


@pytest.mark.slow
def test_report_cli_one_line_exit_2(cases):
    script = (
        "import sys, io, contextlib\n"
        "from corelat.cli import main\n"
        "for path in sys.argv[1:]:\n"
        "    err = io.StringIO()\n"
        "    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):\n"
        "        rc = main(['report', path])\n"
        "    print(rc, repr(err.getvalue()), flush=True)\n"
    )
    picked = [path for name, path in cases if name != "zip_bomb_4gib"][::3]
    p = subprocess.run([sys.executable, "-c", script, *picked], check=False, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    for path, line in zip(picked, p.stdout.splitlines()):
        rc, err = line.split(" ", 1)
        err = eval(err)
        assert rc == "2" and err.count("\n") == 1 and "internal error" not in err, (path, rc, err)


def _save_valid(tmp_path, samples, kernel="cas", metadata=None):
    r = corelat.LatencyResult(cpus=tuple(range(samples.shape[0])), kernel=kernel, samples=samples,
                              metadata=metadata or {})
    path = tmp_path / "ok.npz"
    r.save(path)
    return path


def _samples(n=3, k=4, dtype=np.float64):
    s = np.random.default_rng(0).uniform(20, 90, (n, n, k)).astype(dtype)
    for i in range(n):
        s[i, i] = np.nan
    return s


def test_legitimate_variants_still_load(tmp_path):
    # float32 and big-endian samples, Fortran order, unknown extra members, a oneway file whose
    # fastest samples read slightly negative (timer cost subtracted), and the shipped examples.
    import zipfile

    for s in (_samples(dtype=np.float32), _samples().astype(">f8"), np.asfortranarray(_samples())):
        path = tmp_path / "v.npz"
        with open(path, "wb") as f:
            np.savez_compressed(f, header=np.array('{"format": "corelat-result", "version": 1}'),
                                cpus=np.arange(3), samples=s, flags=np.ones((3, 3), np.uint32))
        assert corelat.load(path).samples.dtype == np.float64
    path = _save_valid(tmp_path, _samples())
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("added_by_a_newer_corelat.npy", hostile.npy(np.zeros(3)))
        z.writestr("../not an array.txt", b"never read")
    assert corelat.load(path).n == 3
    s = _samples()
    s[1, 0, 0] = -3.0
    assert corelat.load(_save_valid(tmp_path, s, kernel="oneway", metadata={"symmetric": False})).n == 3
    for path in corelat.example_files():
        assert corelat.load(path).n >= 2


@pytest.mark.slow
def test_zip_bomb_refused_quickly(cases):
    path = dict(cases)["zip_bomb_4gib"]
    assert os.path.getsize(path) < 8 * 1024**2
    t = time.monotonic()
    with pytest.raises(corelat.InputError, match="GiB"):
        corelat.load(path)
    assert time.monotonic() - t < 10
