"""Fleet analysis: synthetic fleets built from the shared peer result files, the result protocol,
folders of node files, node lists, the running median and the CLI without MPI."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import run_cli
from peers import peer_files

import corelat
from corelat._core.errors import InputError
from corelat._analysis import classes as _fleet_classes
from corelat._fleet import hostlist as _hostlist
from corelat._fleet import nodes as _fleet
from corelat._core import stats as _stats
from corelat._fleet import synth as _fleet_synth

PEERS = "fixtures/peer-results/core-to-core-latency"
XEON = "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv"
RYZEN = "AMD Ryzen 9 5950X @ 3.40 GHz.csv"
GRAVITON = "AWS Graviton3.csv"


@pytest.fixture(scope="module")
def peers(shared_dir):
    return {p.name: corelat.load(p) for p in peer_files(shared_dir / PEERS)}


def _classes(result):
    return _fleet_classes.present(*_fleet_synth._classification(result))


# -- the analysis on synthetic fleets ---------------------------------------------------------------------
@pytest.mark.parametrize("file", [XEON, RYZEN, GRAVITON, "Intel Core i9-12900K.csv"])
def test_one_slowed_node_and_class_is_flagged_and_nothing_else(peers, file):
    base = peers[file]
    names = _classes(base)
    for k, cls in enumerate(names):
        nodes = _fleet_synth.copies(base, 50, seed=10 + k, slow=(17, cls, 1.25))
        result = corelat.fleet(nodes)
        flagged = [(o.node, o.cls) for o in result.outliers]
        assert flagged == [("node017", cls)], (file, cls, [o.describe() for o in result.outliers])
        o = result.outliers[0]
        assert o.deviation > 0.15 and o.value > o.median
        assert len(result.groups) == 1 and len(result.groups[0].nodes) == 50


def test_a_faster_node_is_an_outlier_too(peers):
    base = peers[RYZEN]
    nodes = _fleet_synth.copies(base, 20, seed=3, slow=(4, "across", 0.75))
    assert [(o.node, o.cls) for o in corelat.fleet(nodes).outliers] == [("node004", "across")]


@pytest.mark.slow
def test_no_slowed_node_no_outlier_over_many_fleets(peers):
    # The false-positive rate: 0 flags in 40 random fleets of 50 nodes (benchmarks/fleet.py measures it
    # over more fleets and records it in benchmarks/RESULTS.md).
    flags = 0
    for seed in range(20):
        for file in (XEON, GRAVITON):
            flags += len(corelat.fleet(_fleet_synth.copies(peers[file], 50, seed=seed)).outliers)
    assert flags == 0


def test_mixed_hardware_goes_to_separate_groups(peers):
    nodes = (_fleet_synth.copies(peers[XEON], 6, seed=1, names="xeon{:02d}")
             + _fleet_synth.copies(peers[RYZEN], 5, seed=2, names="ryzen{:02d}")
             + _fleet_synth.copies(peers[GRAVITON], 4, seed=3, names="arm{:02d}"))
    result = corelat.fleet(nodes[::-1])
    groups = {g.cpu_model: set(g.nodes) for g in result.groups}
    assert groups == {
        XEON[:-4]: {f"xeon{i:02d}" for i in range(6)},
        RYZEN[:-4]: {f"ryzen{i:02d}" for i in range(5)},
        GRAVITON[:-4]: {f"arm{i:02d}" for i in range(4)},
    }
    assert result.outliers == ()
    for g in result.groups:
        assert g.values.shape == (len(g.nodes), len(g.classes))
        assert g.median_matrix.shape == (len(g.cpus),) * 2


def test_small_groups_are_not_judged(peers):
    nodes = _fleet_synth.copies(peers[RYZEN], 2, seed=1, slow=(0, "across", 2.0))
    result = corelat.fleet(nodes)
    assert result.outliers == () and len(result.groups[0].nodes) == 2
    assert "not judged" in str(result)


def test_outlier_names_the_settings_that_differ(peers):
    def md(i):
        return {"governor": "powersave" if i == 5 else "performance", "kernel_release": "6.1.0",
                "boost": i != 9}
    nodes = _fleet_synth.copies(peers[RYZEN], 12, seed=4, slow=(5, "within1", 1.3), metadata=md)
    result = corelat.fleet(nodes)
    (o,) = result.outliers
    assert (o.node, o.cls) == ("node005", "within1")
    assert ("governor", "powersave", "performance") in o.differs
    text = str(result)
    assert "powersave" in text and "performance" in text
    # node009's boost differs without a latency outlier: listed apart
    assert "node009: boost False (group: True)" in text
    rec = {r["node"]: r for r in result.records()}
    assert rec["node005"]["status"] == "outlier" and rec["node005"]["outlier_classes"] == ["within1"]
    assert rec["node009"]["status"] == "ok" and rec["node009"]["differs"] == {"boost": [False, True]}


def test_topology_classes_from_a_two_socket_smt_machine(hwloc_topology):
    topo = hwloc_topology("16em64t-4s2c2t-offlines")
    cpus = topo.cpus
    records = topo.records()
    codes, names = _fleet_classes.from_topology(records, cpus)
    rows = {r["cpu"]: r for r in records}
    for i, a in enumerate(cpus):
        for j, b in enumerate(cpus):
            if i == j:
                assert codes[i, j] == -1
                continue
            got = names[codes[i, j]]
            ra, rb = rows[a], rows[b]
            if ra["core"] == rb["core"]:
                assert got == "smt"
            elif ra["package"] != rb["package"]:
                assert got == "packages"
            else:
                assert got in ("l2", "l3", "package")
    assert {"smt", "packages"} <= set(_fleet_classes.present(codes, names))


def test_measured_results_group_by_topology_and_round_trip_the_class_table():
    r = corelat.LatencyResult.load(corelat.example_files()[0]) if corelat.example_files() else None
    if r is None or not r.metadata.get("topology"):
        pytest.skip("no shipped example with a topology")
    nd = _fleet.summarize(r)
    assert nd.codes is not None and nd.key()[-1] != "structure"


# -- the result protocol -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_fleet(peers):
    nodes = _fleet_synth.copies(peers[RYZEN], 8, seed=7, slow=(3, "smt", 1.4))
    return corelat.fleet(nodes + _fleet_synth.copies(peers[XEON], 3, seed=8, names="x{}"),
                         expect="node[000-008],x[0-2]")


def test_protocol(small_fleet):
    r = small_fleet
    assert r.missing == ("node008",)
    s = r.summary()
    assert s == {"nodes": 11, "groups": 2, "outliers": 1, "errors": 0, "missing": 1, "ok": False}
    recs = r.records()
    assert len(recs) == 12 and {x["status"] for x in recs} == {"ok", "outlier", "missing"}
    d = r.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["kind"] == "fleet" and d["summary"] == s
    assert isinstance(r.table(), str) and "node003" in r.table() and "*" in r.table()
    text = str(r)
    for needle in ("2 groups", "Outliers:", "node003", "Missing:", "node008"):
        assert needle in text
    assert isinstance(r.warnings, tuple) and isinstance(r.notes, tuple)
    assert r.group_of("node003").id == r.outliers[0].group


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_save_load_round_trip_by_value(small_fleet, tmp_path, suffix):
    path = tmp_path / ("f" + suffix)
    small_fleet.save(path)
    back = corelat.FleetResult.load(path)
    assert back == small_fleet
    assert back is not small_fleet and str(back) == str(small_fleet)
    if suffix == ".npz":
        assert corelat.load(path) == small_fleet
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(str(z["header"][()]))
        assert header["kind"] == "fleet" and "version" in header


def test_value_equality_sees_a_difference(small_fleet, peers):
    other = corelat.fleet(_fleet_synth.copies(peers[RYZEN], 8, seed=99))
    assert other != small_fleet
    assert small_fleet != "fleet"


def test_save_refuses_other_suffixes(small_fleet, tmp_path):
    with pytest.raises(InputError):
        small_fleet.save(tmp_path / "f.csv")


def test_load_rejects_garbage(tmp_path):
    p = tmp_path / "f.json"
    p.write_text('{"kind": "fleet", "groups": 3}')
    with pytest.raises(InputError, match="f.json"):
        corelat.FleetResult.load(p)
    p.write_text("not json")
    with pytest.raises(InputError):
        corelat.FleetResult.load(p)


# -- folders -----------------------------------------------------------------------------------------------
def _write_folder(tmp_path, peers, count=6):
    folder = tmp_path / "run"
    folder.mkdir()
    for r in _fleet_synth.copies(peers[RYZEN], count, seed=5, slow=(2, "across", 1.3)):
        r.save(folder / f"{r.name}.npz")
    (folder / "node009.error.json").write_text(json.dumps(
        {"format": "corelat-result", "kind": "fleet-node-error", "version": 1, "node": "node009",
         "error": "InputError: CPU 99 is not allowed"}))
    (folder / "node010.npz").write_bytes(b"PK\x03\x04 truncated")
    (folder / "notes.txt").write_text("left alone")
    return folder


def test_folder_with_results_errors_corrupt_files_and_missing_nodes(tmp_path, peers):
    folder = _write_folder(tmp_path, peers)
    r = corelat.fleet(folder, expect="node[000-011]")
    assert len(r.nodes) == 6
    assert {e["node"] for e in r.errors} == {"node009", "node010"}
    assert "CPU 99" in next(e["error"] for e in r.errors if e["node"] == "node009")
    assert r.missing == ("node006", "node007", "node008", "node011")
    assert [(o.node, o.cls) for o in r.outliers] == [("node002", "across")]
    assert r.name == "run"


def test_folder_skips_other_kinds_and_fleet_json(tmp_path, peers, small_fleet):
    folder = _write_folder(tmp_path, peers)
    small_fleet.save(folder / "fleet.json")
    small_fleet.save(folder / "old-fleet.npz")
    r = corelat.fleet(folder)
    assert len(r.nodes) == 6 and any("old-fleet.npz" in n for n in r.notes)


def test_bad_inputs():
    with pytest.raises(InputError):
        corelat.fleet("/nonexistent/folder")
    with pytest.raises(InputError):
        corelat.fleet([42])


def test_two_results_with_one_name_both_kept(peers):
    a = _fleet_synth.copies(peers[RYZEN], 3, seed=1)
    r = corelat.fleet(a + a[:1])
    assert len(r.nodes) == 4 and any("node000" in w for w in r.warnings)


# -- node lists --------------------------------------------------------------------------------------------
def test_hostlist_expansion():
    assert _hostlist.expand("node[01-03],login1") == ["node01", "node02", "node03", "login1"]
    assert _hostlist.expand("n[8-10]") == ["n8", "n9", "n10"]
    assert _hostlist.expand("r[1-2]n[1,3]") == ["r1n1", "r1n3", "r2n1", "r2n3"]
    assert _hostlist.expand("a,a,b") == ["a", "b"]
    assert _hostlist.expand("gpu[007-009]") == ["gpu007", "gpu008", "gpu009"]
    for bad in ("n[1-", "n[3-1]", "n[a]", "n]", "n[[1]]", "n[0-99999999]"):
        with pytest.raises(InputError):
            _hostlist.expand(bad)


def test_expected_nodes_from_a_file(tmp_path):
    p = tmp_path / "nodes"
    p.write_text("# the rack\nnode[1-2]\nnode9  gpu1\n")
    assert _hostlist.expected_nodes(str(p)) == ["node1", "node2", "node9", "gpu1"]
    assert _hostlist.expected_nodes(["b", "a"]) == ["b", "a"]
    with pytest.raises(InputError):
        _hostlist.expected_nodes("/no/such/file")


# -- medians -----------------------------------------------------------------------------------------------
def test_weighted_median_matches_numpy_with_equal_weights():
    rng = np.random.default_rng(0)
    for k in range(1, 12):
        v = rng.normal(size=(k, 50))
        v[rng.random(v.shape) < 0.2] = np.nan
        got = _stats.weighted_median(v, np.ones(k))
        for c in range(50):
            col = v[:, c][~np.isnan(v[:, c])]
            want = np.median(col) if col.size else np.nan
            assert got[c] == pytest.approx(want, nan_ok=True)


def test_running_median_exact_up_to_base_then_close():
    rng = np.random.default_rng(1)
    data = rng.lognormal(3.0, 0.1, size=(1000, 4, 4))
    rm = _stats.RunningMedian((4, 4), base=15)
    for i, m in enumerate(data):
        rm.add(m)
        if i + 1 in (1, 2, 7, 15):
            assert np.allclose(rm.result(), np.median(data[: i + 1], axis=0))
    exact = np.median(data, axis=0)
    # the remedian is an estimate beyond the base: within a few percent of the exact median here
    assert np.all(np.abs(rm.result() / exact - 1) < 0.03)
    assert _stats.RunningMedian((2, 2)).result().shape == (2, 2)


# -- ending an MPI job -------------------------------------------------------------------------------------
class _Clocked:
    """A stream or communicator that records when each call happened."""

    def __init__(self, events, name):
        self.events, self.name = events, name

    def write(self, text):
        self.events.append((time.monotonic(), self.name, "write", text))

    def flush(self):
        self.events.append((time.monotonic(), self.name, "flush", None))

    def Abort(self, code):  # mpi4py's name
        self.events.append((time.monotonic(), self.name, "Abort", code))


def test_a_rank_says_why_it_ends_the_job_and_waits_before_mpi_abort(monkeypatch):
    # MPICH's launcher drops now and then what a rank wrote just before MPI_Abort (CI's mpiexec test
    # saw an empty stderr): the reason is flushed, and the launcher gets time to pass it on
    from corelat._fleet import run as _fleet_run

    events = []
    monkeypatch.setattr(sys, "stdout", _Clocked(events, "stdout"))
    monkeypatch.setattr(sys, "stderr", _Clocked(events, "stderr"))
    _fleet_run._abort(_Clocked(events, "comm"), "rank 2 did not start")
    said = [k for k, e in enumerate(events) if e[1:3] == ("stderr", "write")]
    assert [events[k][3] for k in said] == ["corelat fleet: error: rank 2 did not start\n"]
    flushed = [e for e in events[said[0]:] if e[1:3] == ("stderr", "flush")]
    # stdout flushed before the error is said: a report printed before
    assert flushed and ("stdout", "flush", None) in [e[1:] for e in events[:said[0]]]
    assert events[-1][1:] == ("comm", "Abort", _fleet_run.EXIT_TIMEOUT)
    assert _fleet_run.ABORT_GRACE >= 0.25
    assert events[-1][0] - flushed[0][0] >= _fleet_run.ABORT_GRACE


# -- import and CLI ----------------------------------------------------------------------------------------
def test_import_corelat_does_not_import_mpi4py():
    code = "import sys, corelat; corelat.fleet; assert 'mpi4py' not in sys.modules, 'mpi4py imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fleet_without_mpi4py_says_how_to_install_and_exits_2(tmp_path):
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "from corelat.cli import main\n"
            f"sys.exit(main(['fleet', '-o', {str(tmp_path / 'out')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "pip install" in p.stderr and "mpi4py" in p.stderr and "Traceback" not in p.stderr


def test_fleet_report_cli(tmp_path, peers):
    folder = _write_folder(tmp_path, peers)
    p = run_cli("fleet-report", folder, "--expect", "node[000-006]")
    assert p.returncode == 1, p.stderr  # errors and a missing node
    for needle in ("Outliers:", "node002", "Errors:", "node009", "Missing:", "node006"):
        assert needle in p.stdout
    out = tmp_path / "report.npz"
    p = run_cli("fleet-report", folder, "--json", "-o", out)
    d = json.loads(p.stdout)
    assert d["kind"] == "fleet" and d["summary"]["errors"] == 2
    assert corelat.load(out).summary()["nodes"] == 6


def test_fleet_report_cli_bad_input(tmp_path):
    p = run_cli("fleet-report", tmp_path / "nope")
    assert p.returncode == 2 and "error" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("fleet-report", tmp_path, "--expect", "n[3-1]")
    assert p.returncode == 2 and "backwards" in p.stderr


def test_fleet_report_of_a_clean_folder_exits_0(tmp_path, peers):
    folder = tmp_path / "ok"
    folder.mkdir()
    for r in _fleet_synth.copies(peers[GRAVITON], 4, seed=1):
        r.save(folder / f"{r.name}.npz")
    p = run_cli("fleet-report", folder)
    assert p.returncode == 0, p.stderr
    assert os.path.basename(folder) in p.stdout


# -- pictures ----------------------------------------------------------------------------------------------
def test_plot_heat_table_and_ratio_heatmap(peers, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import corelat.plot

    folder = tmp_path / "f"
    folder.mkdir()
    nodes = _fleet_synth.copies(peers[RYZEN], 10, seed=2, slow=(6, "across", 1.3))
    nodes += _fleet_synth.copies(peers[GRAVITON], 3, seed=3, names="arm{}")
    for r in nodes:
        r.save(folder / f"{r.name}.npz")
    result = corelat.fleet(folder)
    fig = corelat.plot.fleet(result)
    tables = [ax for ax in fig.axes if ax.images]
    assert len(tables) == 2  # one heat table per group
    boxed = [p for ax in tables for p in ax.patches]
    assert len(boxed) == len(result.outliers) == 1
    ryzen = next(ax for ax in tables if "Ryzen" in ax.get_title())
    assert [t.get_text() for t in ryzen.get_yticklabels()][6] == "node006" and ryzen.patches
    plt.close(fig)
    fig = corelat.plot.fleet(result, node="node006")  # read from the node's file
    (ax,) = [a for a in fig.axes if a.images]
    ratio = ax.images[0].get_array()
    assert ratio.shape == (32, 32)
    assert "node006" in ax.get_title()
    plt.close(fig)
    fig = corelat.plot.fleet(result, group=result.group_of("node006").id)
    assert len([a for a in fig.axes if a.images]) == 1
    plt.close(fig)
    with pytest.raises(InputError):
        corelat.plot.fleet(result, group=9)
    with pytest.raises(KeyError):
        corelat.plot.fleet(result, node="nope")
