"""compare(): side-by-side summaries for scripts and the ``corelat compare`` command."""

import json
import re

import numpy as np
import pytest
from conftest import run_cli

from corelat import LatencyResult, load
from corelat._analysis.compare import compare, example_files
from corelat._core.errors import InputError
from corelat.cli import main

PEERS = "fixtures/peer-results/core-to-core-latency"


def two_groups(within, across, smt=None, name=""):
    """16 CPUs in 2 groups of 8 (siblings n and n+8 when smt is given), with small noise."""
    lab = np.repeat([0, 1], 8) if smt is None else np.tile(np.repeat([0, 1], 4), 2)
    m = np.where(lab[:, None] == lab[None, :], within, across).astype(float)
    if smt is not None:
        idx = np.arange(16)
        m[idx, (idx + 8) % 16] = smt
    rng = np.random.default_rng(len(name))
    m = m * (1 + 0.02 * rng.standard_normal(m.shape))
    return LatencyResult.from_matrix((m + m.T) / 2, name=name)


def test_records_and_ratios():
    a = two_groups(20.0, 80.0, smt=8.0, name="a")
    b = two_groups(40.0, 160.0, name="b")
    c = compare(a, b)
    ra, rb = c.records()
    assert (ra["name"], rb["name"]) == ("a", "b")
    assert ra["cpus"] == rb["cpus"] == 16 and ra["pairs"] == 120
    assert ra["min"] <= ra["median"] <= ra["max"]
    assert ra["min"] == pytest.approx(8.0, rel=0.1) and rb["min"] == pytest.approx(40.0, rel=0.1)
    assert ra["smt"] == pytest.approx(8.0, rel=0.1) and rb["smt"] is None
    assert ra["within"] == pytest.approx(20.0, rel=0.05) and ra["across"] == pytest.approx(80.0, rel=0.05)
    assert rb["ratio"]["within"] == pytest.approx(2.0, rel=0.05)
    assert rb["ratio"]["across"] == pytest.approx(2.0, rel=0.05)
    assert rb["ratio"]["smt"] is None
    assert ra["ratio"]["median"] == 1.0
    assert ra["groups"] == rb["groups"] == "2×8"
    assert "2 groups of 8 CPUs" in ra["structure"]
    assert json.loads(json.dumps(c.to_dict()))["records"][1]["name"] == "b"


def test_table_is_side_by_side():
    c = compare(two_groups(20.0, 80.0, name="first"), two_groups(40.0, 160.0, name="second"))
    table = c.table()
    lines = table.splitlines()
    assert "ratios to first" in lines[0]
    assert lines[1].split() == ["first", "second"]
    across = next(ln for ln in lines if ln.startswith("across groups (ns)"))
    assert re.search(r"\(×(1\.9[5-9]|2\.0[0-5])\)", across)  # the ratio to the first result
    assert "2 groups of 8 CPUs" not in table  # the readings are the report's, not the table's
    # The report: the table, then each result's structure reading; what print() shows.
    text = c.describe()
    assert text.startswith(table + "\n\n")
    assert text.splitlines()[-1].startswith("second: 2 groups of 8 CPUs")
    assert str(c) == text


def test_names_paths_lists_and_errors(tmp_path):
    a = two_groups(20.0, 80.0, name="same")
    a.save(tmp_path / "a.npz")
    c = compare([a, tmp_path / "a.npz"])  # a list, and a path
    assert c.names == ("same", "a")  # a shared name: the file's name labels the file
    assert compare(a, a).names == ("same", "same (2)")  # no file to name them by: still unique
    assert compare(a, a, names=["x", "y"]).names == ("x", "y")
    with pytest.raises(InputError, match="2 names for 1 results"):
        compare(a, names=["x", "y"])
    with pytest.raises(InputError, match="at least one"):
        compare()
    with pytest.raises(InputError, match="cannot compare 'int'"):
        compare(a, 3)
    with pytest.raises(InputError, match="unknown statistic"):
        compare(a, statistic="p99")


def test_peer_files(shared_dir):
    folder = shared_dir / PEERS
    c = compare(folder / "AMD Ryzen 9 5950X @ 3.40 GHz.csv",
                folder / "Intel Core i9-9900K CPU @ 3.60 GHz.csv")
    r5950, r9900 = c.records()
    assert r5950["groups"] == "2×16" and r9900["groups"] == "none"
    assert r9900["across"] is None and r9900["within"] is not None
    assert r5950["value_only"] and r5950["kernel"] == "unknown"


def test_cli_compare(tmp_path, capsys, shared_dir):
    folder = shared_dir / PEERS
    files = [str(folder / "AWS Graviton3.csv"), str(folder / "Intel Core i9-12900K.csv")]
    assert main(["compare", *files]) == 0
    out = capsys.readouterr().out
    assert "AWS Graviton3" in out and "Intel Core i9-12900K" in out and "median (ns)" in out
    assert main(["compare", *files, "--json", "--names", "g3", "adl"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in data["records"]] == ["g3", "adl"]


def test_cli_compare_bad_input_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a\nmatrix\n")
    p = run_cli("compare", bad, tmp_path / "missing.npz")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("corelat: error:") and len(p.stderr.strip().splitlines()) == 1


def test_example_files_load():
    files = example_files()
    if not files:
        pytest.skip("no example results packaged yet")
    for f in files:
        r = load(f)
        assert r.n >= 2 and not r.value_only and r.samples.shape[2] > 1


def test_table_says_which_statistic_an_imported_file_holds(shared_dir):
    """A core-to-core-latency CSV records a mean per pair: the table must not call it a median."""
    peer = load(shared_dir / PEERS / "AMD Ryzen 9 7950X.csv")
    own = load(example_files()[0])
    head = compare(peer, own).table().splitlines()[0]
    assert "median per pair" in head and f"{peer.name}: mean per pair, as its file records it" in head, head
    plain = LatencyResult.from_matrix(np.array([[np.nan, 5.0], [5.0, np.nan]]), name="x")
    head = compare(plain, own).table().splitlines()[0]
    assert "x: one value per pair (its file does not say which statistic)" in head, head
    assert "as its file" not in compare(own, own).table().splitlines()[0]
