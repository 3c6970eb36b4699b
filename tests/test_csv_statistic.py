"""A CSV says which statistic it holds (issue 34, item 4): corelat's CSV of medians read back as
medians, core-to-core-latency's own layout (means) kept as its tools read it, and a comparison of
results holding different statistics that says so. Pure: no kernel runs (the CLI through
tests/fake_cli.py)."""

import csv
import io
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from peers import peer_files

from corelat import LatencyResult, load
from corelat._analysis.compare import compare
from corelat._core.errors import InputError
from corelat._results import matrix as _matrix
from corelat.cli import main

PEERS = "fixtures/peer-results/core-to-core-latency"
FAKE_CLI = pathlib.Path(__file__).resolve().parent / "fake_cli.py"
LOW = np.tril(np.ones((3, 3), dtype=bool), -1)


def sampled(name="m"):
    s = np.random.default_rng(3).lognormal(3, 0.4, size=(3, 3, 9))
    s[np.arange(3), np.arange(3)] = np.nan
    return LatencyResult(cpus=(0, 1, 2), kernel="cas", samples=s, name=name)


def means(name="peer"):
    m = np.array([[np.nan, 20.0, 80.0], [20.0, np.nan, 81.0], [80.0, 81.0, np.nan]])
    return LatencyResult.from_matrix(m, name=name, metadata={"source": "core-to-core-latency csv",
                                                              "statistic": "mean"})


def read_like_core_to_core_latency(text):
    """The matrix as core-to-core-latency's results notebook reads a file: plain CSV, no header, no
    comment lines (``np.array(pandas.read_csv(path, header=None))``), every cell a number or empty.
    Without pandas, the same rules by hand: a '#' line is a row like any other."""
    try:
        import pandas as pd
    except ImportError:
        rows = list(csv.reader(io.StringIO(text)))
        width = len(rows[0])
        assert all(len(row) <= width for row in rows), "pandas refuses a row longer than the first"
        return np.array([[float(c) if c.strip() else np.nan for c in row + [""] * (width - len(row))]
                         for row in rows])
    return np.array(pd.read_csv(io.StringIO(text), header=None), dtype=float)


# -- what the file holds is what it reads back as ------------------------------------------------
@pytest.mark.parametrize("labelled", [False, True], ids=["triangle", "labelled"])
@pytest.mark.parametrize("statistic", ["median", "mean", "min", "max"])
def test_a_csv_reads_back_as_the_statistic_it_holds(tmp_path, statistic, labelled):
    r = sampled()
    path = tmp_path / "m.csv"
    r.to_csv(path, statistic=statistic, labelled=labelled)
    back = load(path)
    assert back.metadata["statistic"] == statistic
    assert _matrix.held_statistic(back, "median") == statistic
    np.testing.assert_allclose(back.median[LOW], r.statistic(statistic)[LOW])


def test_a_value_only_result_writes_the_statistic_its_values_are(tmp_path):
    # A file of means asked for its "median" holds means still: its CSV says mean, not median.
    path = tmp_path / "peer.csv"
    means().to_csv(path, statistic="median")
    assert load(path).metadata["statistic"] == "mean"
    # One value per pair from nowhere known: read back as unknown, never as the layout's mean.
    plain = LatencyResult.from_matrix(np.array([[np.nan, 5.0], [5.0, np.nan]]), name="x")
    plain.to_csv(path)
    back = load(path)
    assert back.metadata.get("statistic") is None and _matrix.held_statistic(back, "mean") is None


def test_the_default_csv_is_core_to_core_latencys_own_layout(tmp_path):
    """Means, no comment line: a file its tools read as they read their own."""
    r = sampled()
    text = r.to_csv()
    assert text == r.to_csv(statistic="mean")
    assert "#" not in text
    m = read_like_core_to_core_latency(text)
    assert m.shape == (3, 3)
    np.testing.assert_allclose(m[LOW], r.mean[LOW])
    assert np.isnan(m[~LOW]).all()
    (tmp_path / "y.csv").write_text(text)
    assert load(tmp_path / "y.csv").metadata["statistic"] == "mean"


def test_a_marked_csv_still_reads_with_numpy_and_pandas_comments():
    """A CSV of medians starts with one '#' line: numpy's text reader skips it (as pandas does with
    comment='#'), and the cells are the triangle of core-to-core-latency's layout."""
    r = sampled()
    text = r.to_csv(statistic="median")
    first, *rest = text.splitlines()
    assert first.startswith("#") and "statistic=median" in first
    assert not any(line.startswith("#") for line in rest)
    m = np.genfromtxt(io.StringIO(text), delimiter=",")
    np.testing.assert_allclose(m[LOW], r.median[LOW])
    assert np.isnan(m[~LOW]).all()


def test_peer_files_read_as_means_and_write_back_byte_for_byte(shared_dir):
    # Their --csv files (a lower triangle: the first line is empty cells); the folder holds their
    # text outputs and an index of the files too.
    files = [f for f in peer_files(shared_dir / PEERS) if f.read_text().startswith(",")]
    assert len(files) >= 6
    for f in files:
        r = load(f)
        assert r.metadata["statistic"] == "mean" and _matrix.held_statistic(r, "median") == "mean"
        np.testing.assert_allclose(read_like_core_to_core_latency(r.to_csv()),
                                   read_like_core_to_core_latency(f.read_text()), equal_nan=True)


@pytest.mark.parametrize("line, message", [
    ("# statistic=p99", "unknown statistic 'p99'"),
    ("# statistic=median\n# statistic=mean", "says its statistic twice"),
])
def test_a_bad_statistic_line_is_refused(tmp_path, line, message):
    path = tmp_path / "bad.csv"
    path.write_text(line + "\n,,\n1.0,,\n2.0,3.0,\n")
    with pytest.raises(InputError, match=message) as e:
        load(path)
    assert "bad.csv" in str(e.value)


# -- the command line ----------------------------------------------------------------------------
def fake_cli(tmp_path, *args):
    canned = tmp_path / "canned.npz"
    if not canned.exists():
        sampled("lat").save(canned)
    env = {**os.environ, "CORELAT_FAKE_RESULT": str(canned)}
    env.pop("CORELAT_DEBUG", None)
    return subprocess.run([sys.executable, str(FAKE_CLI), *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path, check=False)


def test_cli_csv_outputs_say_what_they_hold(tmp_path):
    # `-o y.csv` and `--csv`: core-to-core-latency's layout and statistic (mean) unless asked
    p = fake_cli(tmp_path, "--csv", "-o", "y.csv", "50", "20")
    assert p.returncode == 0, p.stderr
    assert "#" not in p.stdout and load(tmp_path / "y.csv").metadata["statistic"] == "mean"
    assert p.stdout == (tmp_path / "y.csv").read_text()
    assert "y.csv" in p.stderr and "mean per pair" in p.stderr, p.stderr
    p = fake_cli(tmp_path, "--statistic", "median", "--csv", "-o", "z.csv", "50", "20")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("# statistic=median")
    assert load(tmp_path / "z.csv").metadata["statistic"] == "median"


# -- comparing unlike statistics -----------------------------------------------------------------
def test_a_comparison_of_different_statistics_says_so(tmp_path, capsys):
    own, peer = sampled("own"), means("peer")
    c = compare(own, peer)
    assert c.statistics == ("median", "mean") and c.mixed_statistics
    assert [rec["statistic"] for rec in c.records()] == ["median", "mean"]
    said = [w for w in c.warnings if "different statistics" in w]
    assert said and "own: median" in said[0] and "peer: mean" in said[0], c.warnings
    assert "different statistics" in c.table()
    assert c.to_dict()["mixed_statistics"] is True
    # The same statistic everywhere: nothing to say.
    for same in (compare(own, sampled("b")), compare(own, peer, statistic="mean"), compare(peer, peer)):
        assert not same.mixed_statistics and not any("different statistics" in w for w in same.warnings)
        assert "different statistics" not in same.table()
    # One file that does not say: unknown is not the same as median.
    plain = LatencyResult.from_matrix(np.array([[np.nan, 5.0], [5.0, np.nan]]), name="x")
    assert compare(own, plain).statistics == ("median", None) and compare(own, plain).mixed_statistics
    # The command line, as text and as JSON.
    own.save(tmp_path / "own.npz")
    peer.to_csv(tmp_path / "peer.csv")
    assert main(["compare", str(tmp_path / "own.npz"), str(tmp_path / "peer.csv")]) == 0
    out = capsys.readouterr()
    assert "different statistics" in out.out + out.err
    assert main(["compare", "--json", str(tmp_path / "own.npz"), str(tmp_path / "peer.csv")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mixed_statistics"] is True
    assert [rec["statistic"] for rec in data["records"]] == ["median", "mean"]
