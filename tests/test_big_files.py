"""Memory of the commands that read a big value-only file: a bounded number of matrices, not a dozen.

A 4,000-CPU file of one value per pair (another tool's matrix, imported) is 128 MB a matrix, and
``corelat report`` of one took 1.9 GB, ``compare`` more: each statistic a matrix, each made from a
sort and masks of its own, and copies where views would do. The bound is measured with
tracemalloc's peak (NumPy's arrays are traced) around the command, in matrices of the file's size.
"""

import contextlib
import io
import tracemalloc

import numpy as np
import pytest

import corelat
from corelat import cli

#: CPUs of the synthetic file: big enough that a matrix (8 MB) dwarfs what the command's modules take.
N = 1000
MATRIX = N * N * 8
#: Matrices a command may hold at once (docs/results.md, "Big machines": the file's own samples and
#: flags, the matrix analysed, a few temporaries).
BOUND = 8


def big_matrix(n, seed=1):
    """A block-structured latency matrix: 8-CPU groups at ~20 ns, quarters at ~80 ns, ~200 ns across."""
    rng = np.random.default_rng(seed)
    c = np.arange(n)
    group, quarter = c // 8, c // max(1, n // 4)
    m = np.where(group[:, None] == group[None, :], 20.0,
                 np.where(quarter[:, None] == quarter[None, :], 80.0, 200.0))
    m += rng.random((n, n))
    return (m + m.T) / 2


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    paths = []
    for k, name in enumerate(("a", "b")):
        p = d / f"{name}.npz"
        corelat.LatencyResult.from_matrix(big_matrix(N, seed=k), name=name, kernel="cas").save(p)
        paths.append(str(p))
    small = d / "small.npz"
    corelat.LatencyResult.from_matrix(big_matrix(16), name="small", kernel="cas").save(small)
    return paths, str(small)


def _peak(argv):
    """(exit status, tracemalloc peak in bytes) of the command ``argv`` run here."""
    out = io.StringIO()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out):
            status = cli.main(argv)
        return status, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_big_value_only_file_is_read_in_a_few_matrices(big, command):
    (a, b), small = big
    argv = {"report": ["report", a], "compare": ["compare", a, b]}[command]
    small_argv = [small if x in (a, b) else x for x in argv]
    assert cli.main(small_argv) == 0  # the modules loaded, so that the peak is the matrices'
    status, peak = _peak(argv)
    assert status == 0
    assert peak < BOUND * MATRIX, f"{command}: {peak / MATRIX:.1f} matrices of {N} CPUs at once"


def test_statistics_of_one_sample_per_pair_share_it():
    r = corelat.LatencyResult.from_matrix(big_matrix(64))
    for name in ("median", "mean", "min", "max"):
        m = r.statistic(name)
        assert np.shares_memory(m, r.samples) and not m.flags.writeable
    lo, hi = r.ci
    assert np.shares_memory(lo, r.samples) and np.shares_memory(hi, r.samples)
    assert np.array_equal(r.median, r.samples[..., 0], equal_nan=True)
    assert np.isnan(r.std).all() and np.isnan(r.sem).all()
    assert np.array_equal(r.err, np.where(np.isnan(r.median), np.nan, 0.0), equal_nan=True)
    assert r.count.sum() == 64 * 63 and r.count.dtype == np.intp


def test_a_loaded_result_keeps_the_arrays_it_read(big):
    (a, _), _ = big
    r = corelat.load(a)
    assert not r.samples.flags.writeable and not r.flags.flags.writeable
    with pytest.raises(ValueError):
        r.samples[0, 1, 0] = 1.0
    # a copy is made of what someone else can still write
    m = big_matrix(8)
    s = m[:, :, None].copy()
    r2 = corelat.LatencyResult(cpus=range(8), kernel="cas", samples=s)
    s[0, 1, 0] = -1.0
    assert r2.samples[0, 1, 0] != -1.0
