"""Memory of the commands that read a big value-only file: a bounded number of matrices, not a dozen.

A 4,000-CPU file of one value per pair (another tool's matrix, imported) is 128 MB a matrix, and
``corelat report`` of one took 1.9 GB, ``compare`` more: each statistic a matrix, each made from a
sort and masks of its own, and copies where views would do. The bound is measured with
tracemalloc's peak (NumPy's arrays are traced) around the command, in matrices of the file's size.
"""

import contextlib
import importlib.util
import io
import json
import pathlib
import re
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


def _bench():
    # The benchmark's synthetic matrix, so that the test bounds what the benchmark's table shows.
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "big_files.py"
    spec = importlib.util.spec_from_file_location("big_files", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


big_matrix = _bench().big_matrix


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
    middle = []  # the figures' size: a heatmap's figure stops growing at 36 CPUs, the report's at 96
    for k in range(2):
        middle.append(str(d / f"m{k}.npz"))
        corelat.LatencyResult.from_matrix(big_matrix(FIGURE_CPUS, seed=k), name=f"m{k}", kernel="cas").save(
            middle[-1])
    return paths, str(small), middle


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


needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                      reason="matplotlib is not installed")
#: Every command issue 34 names, as ``python -m corelat`` arguments ({a}, {b}: the files; {d}: a folder).
COMMANDS = {
    "report": ["report", "{a}"],
    "compare": ["compare", "{a}", "{b}"],
    "report --matrix": ["report", "--matrix", "{a}"],
    "plot": ["plot", "{a}", "-o", "{d}/p.png"],
    "plot --kind hist": ["plot", "--kind", "hist", "{a}", "-o", "{d}/h.png"],
    "report --html": ["report", "{a}", "--html", "{d}/r.html"],
    "report --pdf": ["report", "{a}", "--pdf", "{d}/r.pdf"],
}
#: Commands that draw a figure: what matplotlib holds for its pixels (~60 MB for a 14-inch heatmap,
#: 7 matrices of 1,000 CPUs, the same at 4,000) is the peak of the command on a file of FIGURE_CPUS,
#: and the bound is on what the big file adds to it.
_DRAWN = {"plot", "plot --kind hist", "report --html", "report --pdf"}
FIGURE_CPUS = 250


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=[needs_matplotlib, pytest.mark.slow] if c in _DRAWN else [])
    for c in COMMANDS])
def test_a_big_value_only_file_is_read_in_a_few_matrices(big, command, tmp_path, monkeypatch):
    (a, b), small, middle = big
    argv = [x.format(a=a, b=b, d=tmp_path) for x in COMMANDS[command]]
    small_argv = [small if x in (a, b) else x for x in argv]
    assert cli.main(small_argv) == 0  # the modules loaded, so that the peak is the matrices'
    figure = 0
    if command in _DRAWN:
        import corelat.plot

        # heatmaps of 1,000 CPUs drawn as blocks, as those of 4,000 are by default (MAX_DRAWN_CELLS 1024)
        monkeypatch.setattr(corelat.plot, "MAX_DRAWN_CELLS", FIGURE_CPUS)
        status, figure = _peak([{a: middle[0], b: middle[1]}.get(x, x) for x in argv])
        assert status == 0
    status, peak = _peak(argv)
    assert status == 0
    assert peak - figure < BOUND * MATRIX, (
        f"{command}: {(peak - figure) / MATRIX:.1f} matrices of {N} CPUs at once (beyond a figure's "
        f"{figure / MATRIX:.1f})")


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
    (a, _), _, _ = big
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


@needs_matplotlib
def test_a_value_only_file_has_a_histogram_of_its_pairs_values():
    from corelat import plot
    from corelat._core.errors import InputError

    m = big_matrix(40)
    r = corelat.LatencyResult.from_matrix(m, name="imported", kernel="cas")
    ax = plot.distribution(r, kind="hist")
    (steps,) = ax.patches
    heights = steps.get_data().values
    assert heights.sum() == 40 * 39 // 2  # every pair once, from the lower triangle
    low = m[np.tril_indices(40, -1)]
    assert np.array_equal(heights, np.histogram(low, bins=steps.get_data().edges)[0])
    assert ax.get_ylabel() == "CPU pairs" and "780 CPU pairs, one value each" in ax.get_title()
    for kwargs in ({"kind": "violin"}, {"kind": "hist", "pairs": [(0, 1)]}):
        with pytest.raises(InputError, match="one value per pair .*no distribution to draw"):
            plot.distribution(r, **kwargs)


@needs_matplotlib
def test_a_heatmap_of_more_cpus_than_drawn_cells_draws_block_medians(monkeypatch, tmp_path):
    from corelat import plot

    m = big_matrix(100)
    m[3, 7] = m[7, 3] = np.nan
    r = corelat.LatencyResult.from_matrix(m, name="blocks", kernel="cas")
    monkeypatch.setattr(plot, "MAX_DRAWN_CELLS", 30)  # 100 CPUs in blocks of 4: 25 x 25 cells
    ax = plot.heatmap(r)
    drawn = np.ma.filled(ax.images[0].get_array(), np.nan)
    expect = np.nanmedian(r.median.reshape(25, 4, 25, 4).transpose(0, 2, 1, 3).reshape(25, 25, 16), axis=2)
    np.testing.assert_allclose(drawn, expect)
    assert "median of a 4 × 4 block of pairs" in ax.get_title()
    assert ax.get_xlim() == (-0.5, 99.5) and ax.get_ylim() == (99.5, -0.5)  # CPUs' axes, not blocks'
    # a count that is no multiple of the block: the last block holds fewer CPUs, none drawn past them
    r2 = corelat.LatencyResult.from_matrix(big_matrix(98), name="blocks", kernel="cas")
    ax2 = plot.heatmap(r2)
    assert ax2.images[0].get_array().shape == (25, 25) and ax2.get_xlim() == (-0.5, 97.5)
    assert np.isclose(ax2.images[0].get_array()[24, 23], np.median(r2.median[96:, 92:96]))
    # the page's hover values are the blocks, said in the caption
    out = tmp_path / "r.html"
    corelat.report(r, out)
    page = out.read_text(encoding="utf-8")
    (blob,) = re.findall(r'<script type="application/json" id="values\d+">(.*?)</script>', page, re.S)
    hover = json.loads(blob.replace("<\\/", "</"))
    assert hover["block"] == 4 and len(hover["values"]) == 25 * 25 and len(hover["cpus"]) == 100
    assert "median of a 4 × 4 block of pairs" in page


def test_the_page_s_csv_is_written_as_it_was_held(tmp_path):
    from corelat._report import html
    from corelat._report.machine import matrices_csv

    r = corelat.LatencyResult.from_matrix(big_matrix(30), name="csv", kernel="cas")
    lazy, held = matrices_csv(r, "r.csv", lazy=True), matrices_csv(r, "r.csv")
    assert lazy.text == "" and "".join(lazy.chunks()) == held.text and lazy.rows == 30 * 29 // 2
    assert "".join(html._data(lazy)) == "".join(html._data(held))
    odd = matrices_csv(r, "r.csv", label="a&b<'\"é")
    assert "".join(html._data(odd)).count("%") > odd.text.count("\n")  # quoted as before
