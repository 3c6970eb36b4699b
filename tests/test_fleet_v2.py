"""Fleet v2 (issue 25): other tools' files in a fleet folder, hardware sub-groups, one bad file never
the fleet's problem, exit statuses for monitoring, the Prometheus file, paths relative to the folder."""

import json
import os
import shutil

import numpy as np
import pytest
from conftest import run_cli
from peers import peer_files

import corelat
from corelat._fleet import synth as _fleet_synth
from corelat._results.fleet import MIN_GROUP

PEERS = "fixtures/peer-results/core-to-core-latency"
R5950 = "AMD Ryzen 9 5950X @ 3.40 GHz.csv"
R7950 = "AMD Ryzen 9 7950X.csv"
GRAVITON = "AWS Graviton3.csv"


@pytest.fixture(scope="module")
def peers(shared_dir):
    return {p.name: corelat.load(p) for p in peer_files(shared_dir / PEERS)}


def _peer_folder(shared_dir, folder, counts):
    """``folder`` of copies of peers' CSV files, named like a fleet folder: ``<node>.csv``."""
    folder.mkdir()
    k = 0
    for file, n in counts.items():
        for _ in range(n):
            shutil.copy(shared_dir / PEERS / file, folder / f"node{k:02d}.csv")
            k += 1
    return folder


def _csv_fleet(folder, results):
    """Synthetic nodes written as core-to-core-latency CSV files (the synthetic fleets from disk)."""
    folder.mkdir(exist_ok=True)
    for r in results:
        r.to_csv(folder / f"{r.name}.csv")
    return folder


# -- 1: other tools' files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("file", [R5950, GRAVITON, "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv"])
def test_one_slowed_node_is_found_from_csv_files_on_disk(peers, tmp_path, file):
    nodes = _fleet_synth.copies(peers[file], 30, seed=11)
    nodes[9] = corelat.LatencyResult.from_matrix(nodes[9].median * 1.3, nodes[9].cpus, name="node009")
    r = corelat.fleet(_csv_fleet(tmp_path / "csv", nodes))  # no topology on disk: classes from the structure
    assert len(r.nodes) == 30
    assert {o.node for o in r.outliers} == {"node009"}, [o.describe() for o in r.outliers]


def test_a_folder_of_other_tools_csv_files_is_read(peers, tmp_path):
    nodes = _fleet_synth.copies(peers[GRAVITON], 12, seed=4, slow=(5, "cores", 1.3))
    folder = _csv_fleet(tmp_path / "csv", nodes)
    r = corelat.fleet(folder, expect="node[000-011]")
    assert len(r.nodes) == 12 and not r.errors and not r.missing
    assert [o.node for o in r.outliers] == ["node005"]
    p = run_cli("fleet-report", folder, "--expect", "node[000-011]")
    assert "12 nodes" in p.stdout and "node005" in p.stdout, p.stdout + p.stderr


def test_a_folder_without_any_usable_file_is_never_a_silent_zero(tmp_path):
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "readme.md").write_text("hello")
    (folder / "node01.csv").write_text("not, a, matrix\nat all\n")
    r = corelat.fleet(folder)
    assert not r.nodes and not r.summary()["ok"]
    text = r.describe()
    assert "readme.md" in text and "node01.csv" in text and "no node has a result" in text
    p = run_cli("fleet-report", folder)
    assert p.returncode == 1, p.stdout + p.stderr
    (tmp_path / "empty").mkdir()
    p = run_cli("fleet-report", tmp_path / "empty")
    assert p.returncode == 1 and "no node" in p.stdout


# -- 9: one bad file is its node's problem -------------------------------------------------------------------
def _encrypted(path):
    data = bytearray(path.read_bytes())
    for sig, off in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = data.find(sig)
        while i >= 0:
            data[i + off] |= 1  # "encrypted" general purpose flag
            i = data.find(sig, i + 4)
    path.write_bytes(bytes(data))


def test_a_deeply_nested_error_file_or_an_encrypted_npz_is_an_error_of_its_node(peers, tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    for r in _fleet_synth.copies(peers[GRAVITON], 4, seed=1):
        r.save(folder / f"{r.name}.npz")
    (folder / "deep.error.json").write_text("[" * 200_000)
    _fleet_synth.copies(peers[GRAVITON], 1, seed=2, names="locked")[0].save(folder / "locked.npz")
    _encrypted(folder / "locked.npz")
    r = corelat.fleet(folder)
    assert len(r.nodes) == 4
    assert {e["node"] for e in r.errors} == {"deep", "locked"}
    p = run_cli("fleet-report", folder)
    assert p.returncode == 1 and "4 nodes" in p.stdout and "Traceback" not in p.stderr, p.stderr


# -- exit statuses -----------------------------------------------------------------------------------------
def test_outliers_alone_exit_3_and_problems_win(peers, tmp_path):
    nodes = _fleet_synth.copies(peers[GRAVITON], 8, seed=5, slow=(2, "cores", 1.4))
    folder = tmp_path / "f"
    folder.mkdir()
    for r in nodes:
        r.save(folder / f"{r.name}.npz")
    p = run_cli("fleet-report", folder, "--json")
    assert p.returncode == 3, p.stderr
    assert json.loads(p.stdout)["summary"]["ok"] is False
    p = run_cli("fleet-report", folder, "--expect", "node[000-008]")  # node008 missing: 1 wins over 3
    assert p.returncode == 1
    os.unlink(folder / "node002.npz")
    assert run_cli("fleet-report", folder).returncode == 0


# -- 2: other hardware among other tools' files ------------------------------------------------------------
def test_a_second_kind_of_machine_is_a_sub_group_and_a_lone_one_an_outlier(shared_dir, tmp_path):
    folder = _peer_folder(shared_dir, tmp_path / "peers", {R5950: 8, R7950: 4})
    r = corelat.fleet(folder)
    assert not r.outliers, [o.describe() for o in r.outliers]
    (sub,) = r.metadata["subgroups"]
    assert sub["nodes"] == ["node08", "node09", "node10", "node11"]
    text = r.describe()
    assert "sub-group of other hardware" in text and "unknown hardware" in text and "--model" in text
    lone = _peer_folder(shared_dir, tmp_path / "lone", {R5950: 8, R7950: 1})
    r = corelat.fleet(lone)
    assert {o.node for o in r.outliers} == {"node08"} and not r.metadata["subgroups"]


def test_a_model_or_a_mapping_file_splits_the_groups(shared_dir, tmp_path):
    folder = _peer_folder(shared_dir, tmp_path / "peers", {R5950: 8, R7950: 4})
    mapping = tmp_path / "models.txt"
    mapping.write_text("# node list  model\nnode[00-07] AMD Ryzen 9 5950X\nnode[08-11] AMD Ryzen 9 7950X\n")
    r = corelat.fleet(folder, model=mapping)
    assert sorted(len(g.nodes) for g in r.groups) == [4, 8] and not r.outliers
    assert {g.cpu_model for g in r.groups} == {"AMD Ryzen 9 5950X", "AMD Ryzen 9 7950X"}
    r = corelat.fleet(_peer_folder(shared_dir, tmp_path / "one", {R5950: 5}), model="AMD Ryzen 9 5950X")
    assert r.groups[0].cpu_model == "AMD Ryzen 9 5950X" and "unknown hardware" not in r.describe()
    p = run_cli("fleet-report", folder, "--model", mapping)
    assert p.returncode == 0 and "7950X" in p.stdout, p.stdout + p.stderr


# -- monitoring: Prometheus --------------------------------------------------------------------------------
def test_prometheus_file_parses_and_says_the_verdict(peers, tmp_path):
    parser = pytest.importorskip("prometheus_client.parser")
    nodes = _fleet_synth.copies(peers[GRAVITON], 6, seed=5, slow=(2, "cores", 1.4),
                                names='we"ird\\node{}')
    folder = _csv_fleet(tmp_path / "f", nodes[:5])
    (folder / "gone.error.json").write_text(json.dumps({"kind": "fleet-node-error", "node": "gone",
                                                        "error": "boom"}))
    prom = tmp_path / "corelat.prom"
    (tmp_path / "nodes.txt").write_text("absent\n")
    p = run_cli("fleet-report", folder, "--prometheus", prom, "--expect", tmp_path / "nodes.txt")
    assert p.returncode == 1, p.stderr
    families = {f.name: f for f in parser.text_string_to_metric_families(prom.read_text())}
    outlier = {(s.labels["node"], s.labels["class"]): s.value
               for s in families["corelat_fleet_outlier"].samples}
    assert outlier[('we"ird\\node2', "cores")] == 1 and sum(outlier.values()) == 1
    medians = families["corelat_fleet_class_median_ns"].samples
    assert len(medians) == 5 and all(s.value > 0 for s in medians)
    assert families["corelat_fleet_missing_nodes"].samples[0].value == 1
    assert families["corelat_fleet_failed_nodes"].samples[0].value == 1
    assert families["corelat_fleet_run_timestamp_seconds"].samples[0].value > 1.5e9
    assert families["corelat_fleet_exit_status"].samples[0].value == 1
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]  # atomic: no temporary left


# -- 8: the small ones ------------------------------------------------------------------------------------
def test_a_node_list_file_that_is_not_there_is_an_error_not_a_host(tmp_path):
    p = run_cli("fleet-report", tmp_path, "--expect", "nosuchfile.txt")
    assert p.returncode == 2 and "nosuchfile.txt" in p.stderr and "no such file" in p.stderr


# -- 5: an output folder that cannot be written is refused before anything is measured --------------------
@pytest.mark.parametrize("what", ["file", "fifo", "devnull", "proc"])
def test_fleet_refuses_an_output_that_is_not_a_writable_folder(tmp_path, what):
    out = {"file": tmp_path / "f.txt", "fifo": tmp_path / "fifo", "devnull": "/dev/null",
           "proc": "/proc/corelat-fleet-out"}[what]
    if what == "file":
        out.write_text("keep me")
    if what == "fifo":
        os.mkfifo(out)
    p = run_cli("fleet", "50", "10", "-o", out, timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    assert str(out) in p.stderr and "File exists" not in p.stderr and "Traceback" not in p.stderr
    if what == "file":
        assert out.read_text() == "keep me"


# -- 7: node files relative to the report -----------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_a_saved_report_finds_its_node_files_from_anywhere(peers, tmp_path, monkeypatch, suffix):
    job = tmp_path / "job"
    (job / "run").mkdir(parents=True)
    for r in _fleet_synth.copies(peers[GRAVITON], 3, seed=1):
        r.save(job / "run" / f"{r.name}.npz")
    monkeypatch.chdir(job)  # the job's working directory: paths as the job sees them
    report = corelat.fleet("run")
    report.save(f"run/fleet{suffix}")
    monkeypatch.chdir(tmp_path.parent)
    got = corelat.load(job / "run" / f"fleet{suffix}")
    for rec in got.nodes:
        assert corelat.load(rec["file"]).name == rec["node"]
    moved = tmp_path / "moved"
    os.rename(job / "run", moved)  # the whole folder moved: still found
    got = corelat.load(moved / f"fleet{suffix}")
    assert all(os.path.exists(rec["file"]) for rec in got.nodes)


# -- 6: stale and mixed runs -------------------------------------------------------------------------------
def test_files_of_another_run_are_named_and_left_out_unless_asked(peers, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()

    def run_of(run):
        return lambda i: {"fleet": {"node": f"node{i:03d}", "run": run, "job": "4242"}}

    old = _fleet_synth.copies(peers[GRAVITON], 5, seed=1, metadata=run_of("old-run"))
    for r in old:
        r.save(folder / f"{r.name}.npz")
        os.utime(folder / f"{r.name}.npz", (1e9, 1e9))
    (folder / "node009.error.json").write_text(json.dumps({"kind": "fleet-node-error", "node": "node009",
                                                           "error": "old failure", "run": "old-run"}))
    os.utime(folder / "node009.error.json", (1e9, 1e9))
    new = _fleet_synth.copies(peers[GRAVITON], 3, seed=2, metadata=run_of("new-run"))
    for r in new:  # node000..002 again, the newer run
        r.save(folder / f"{r.name}.npz")
    r = corelat.fleet(folder)
    assert sorted(x["node"] for x in r.nodes) == ["node000", "node001", "node002"] and not r.errors
    note = next(n for n in r.notes if "another run" in n)
    assert "node003.npz" in note and "node009.error.json" in note and "new-run" in note
    assert r.metadata["run"] == {"run": "new-run"}
    assert len(corelat.fleet(folder, all_runs=True).nodes) == 5
    p = run_cli("fleet-report", folder, "--all-runs")
    assert "5 nodes" in p.stdout and p.returncode == 1  # node009's old error


def test_a_fleet_job_writes_its_run_into_each_file(tmp_path, monkeypatch):
    from corelat._fleet import run as _run

    monkeypatch.setenv("SLURM_JOB_ID", "777")
    got = _run._save_result(corelat.load(corelat.example_files()[0]), str(tmp_path), "n1", 0,
                            _run.new_run())
    md = corelat.load(got[1]).metadata["fleet"]
    assert md["job"] == "777" and md["run"] and md["started"]


# -- figures ------------------------------------------------------------------------------------------------
@pytest.fixture
def plt():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import corelat.plot  # noqa: F401

    yield plt
    plt.close("all")


def _inside(fig, artist):
    renderer = fig.canvas.get_renderer()
    box, page = artist.get_window_extent(renderer), fig.bbox
    return box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1


def test_overview_of_a_thousand_nodes_reads_and_names_failed_missing_and_long_names(peers, plt):
    import matplotlib.colors

    long = "rack-0042-chassis-07-blade-3-" + "x" * 80 + "-node{:04d}"
    nodes = _fleet_synth.copies(peers[GRAVITON], 1000, seed=7, slow=(417, "cores", 2.0), names=long)
    fleet = corelat.fleet(nodes, expect=[n.name for n in nodes] + ["lost01"])
    fleet = corelat.FleetResult.from_dict({**fleet.to_dict(), "errors": [
        {"node": "broken07", "error": "boom", "file": ""}]})
    fig = corelat.plot.fleet(fleet)
    w, h = fig.get_size_inches()
    assert h <= 12 and w <= 14  # not a 46-inch strip
    (ax,) = [a for a in fig.axes if a.images]
    assert ax.images[0].get_array().shape[0] == 1000  # every node is a row
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert 10 <= len(labels) <= 60 and all(len(t.get_text()) <= 32 for t in labels)
    assert any(t.get_text().endswith("node0417") for t in labels)  # the outlier is named
    assert all(_inside(fig, t) for t in labels)  # long names not clipped
    text = "\n".join(t.get_text() for a in fig.axes for t in a.texts)
    assert "failed (1): broken07" in text and "missing (1): lost01" in text
    # the outlier's value reads on its cell: white on a dark cell, its box drawn
    (value,) = [t for t in ax.texts if t.get_fontweight() == "bold"]
    cell = ax.images[0].cmap(ax.images[0].norm(ax.images[0].get_array()[417, 0]))
    dark = sum(c * k for c, k in zip(matplotlib.colors.to_rgb(cell), (0.299, 0.587, 0.114))) < 0.5
    assert dark and value.get_color() == "white" and len(ax.patches) == 1


def test_ratio_heatmap_says_when_the_ratio_lies_beyond_its_scale(peers, tmp_path, plt):
    nodes = _fleet_synth.copies(peers[GRAVITON], 6, seed=3, slow=(2, "cores", 0.24))
    folder = tmp_path / "f"
    folder.mkdir()
    for r in nodes:
        r.save(folder / f"{r.name}.npz")
    fig = corelat.plot.fleet(corelat.fleet(folder), node="node002")
    (ax,) = [a for a in fig.axes if a.images]
    assert "beyond the colour scale" in ax.get_title() and "ratios from ×0.1" in ax.get_title()


def test_corelat_plot_draws_fleet_json(peers, tmp_path):
    pytest.importorskip("matplotlib")
    folder = _csv_fleet(tmp_path / "f", _fleet_synth.copies(peers[GRAVITON], 4, seed=1))
    corelat.fleet(folder).save(folder / "fleet.json")
    p = run_cli("plot", folder / "fleet.json", "-o", tmp_path / "fleet.png")
    assert p.returncode == 0 and (tmp_path / "fleet.png").stat().st_size > 1000, p.stderr
    p = run_cli("plot", folder / "fleet.json", "--node", "node001", "-o", tmp_path / "node.png")
    assert p.returncode == 0 and (tmp_path / "node.png").exists(), p.stderr


# -- Slurm defaults ------------------------------------------------------------------------------------
def test_under_srun_expect_defaults_to_the_job_node_list(monkeypatch):
    from corelat.cli import cmd_fleet

    args = type("Args", (), {"expect": None})()
    monkeypatch.setenv("SLURM_JOB_NODELIST", "cn[01-03],gpu7")
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    assert cmd_fleet._expect(args) is None  # the batch script, not a step: nothing implied
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    assert cmd_fleet._expect(args) == ["cn01", "cn02", "cn03", "gpu7"]
    args.expect = "a,b"
    assert cmd_fleet._expect(args) == ["a", "b"]  # --expect wins


# -- node types that differ ----------------------------------------------------------------------------------
def test_node_options_file_gives_each_kind_of_node_its_options(tmp_path):
    import argparse

    from corelat.cli import cmd_fleet

    p = argparse.ArgumentParser()
    cmd_fleet.add_arguments(p)
    table = tmp_path / "types.txt"
    table.write_text("# kinds of node\ngpu[01-02] --cpus 0-3 --kernel rw   # the GPU nodes\n"
                     "cpu[01-64] 200 20\n")
    args = p.parse_args(["-o", str(tmp_path / "o"), "--node-options", str(table), "--timeout", "7"])
    got = cmd_fleet.node_options(args)
    assert [sorted(names)[:2] for names, _ in got] == [["gpu01", "gpu02"], ["cpu01", "cpu02"]]
    gpu, cpu = got[0][1], got[1][1]
    assert gpu.kernel == "rw" and cpu.kernel == "cas" and gpu.timeout == 7 == cpu.timeout  # the command's
    assert (cpu.round_trips, cpu.samples) == (200, 20) and gpu.round_trips == 1000
    # a host named by its FQDN (no SLURMD_NODENAME) takes its line, as --expect matches it
    assert cmd_fleet.options_for(got, None, "gpu02.cluster.local") is gpu
    assert cmd_fleet.options_for(got, None, "cpu07") is cpu
    assert cmd_fleet.options_for(got, None, "login1") is None
    table.write_text("gpu01 --bogus 3\n")
    with pytest.raises(corelat.InputError, match="line 1"):
        cmd_fleet.node_options(args)
    table.write_text("gpu01 --kernel nonsense\n")
    p2 = run_cli("fleet", "-o", tmp_path / "o2", "--node-options", table)
    assert p2.returncode == 2 and "Traceback" not in p2.stderr, p2.stderr


def test_the_report_says_when_its_files_were_measured(peers):
    nodes = _fleet_synth.copies(peers[GRAVITON], 3, seed=1,
                                metadata=lambda i: {"date": f"2026-11-0{i + 1}T10:00:00+00:00"})
    r = corelat.fleet(nodes)
    assert "measured from 2026-11-01T10:00:00+00:00 to 2026-11-03T10:00:00+00:00" in r.describe()
    assert [x["date"] for x in r.to_dict()["nodes"]][0] == "2026-11-01T10:00:00+00:00"


def test_an_absurd_wait_is_refused_in_a_few_words(tmp_path):
    p = run_cli("fleet", "50", "10", "--wait", "1e308", "-o", tmp_path / "o")
    assert p.returncode == 2 and "--wait" in p.stderr, p.stderr
    assert not any(len(w) > 30 for w in p.stderr.split()), p.stderr  # not 309 digits


def test_a_group_of_exactly_the_smallest_judged_size_is_judged():
    # Issue 34 item 14: MIN_GROUP nodes are enough to call one an outlier; one node fewer is not
    # (a `<` made `<=` in the outlier test went unnoticed: no test had a group of exactly MIN_GROUP).
    m = np.array([[0, 8, 40, 40], [8, 0, 40, 40], [40, 40, 0, 8], [40, 40, 8, 0]], dtype=float)
    base = corelat.LatencyResult.from_matrix(m, name="base")
    for count, judged in ((MIN_GROUP, True), (MIN_GROUP - 1, False)):
        nodes = _fleet_synth.copies(base, count, seed=1, slow=(count - 1, "cores", 1.5))
        f = corelat.fleet(nodes)
        assert len(f.groups) == 1 and len(f.groups[0].nodes) == count
        found = {(o.node, o.cls) for o in f.outliers}
        assert found == ({(nodes[-1].name, "cores")} if judged else set()), (count, found)
