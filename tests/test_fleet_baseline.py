"""fleet-report --baseline REF: every node judged against a reference (issue 36), lone nodes and
groups under the smallest judged size included; the per-node status series of the Prometheus file."""

import json

import numpy as np
import pytest
from conftest import run_cli
from machines import machine

import corelat
from corelat._fleet import baseline as _baseline


def _folder(tmp_path, nodes):
    folder = tmp_path / "fleet"
    folder.mkdir()
    for r in nodes:
        r.save(folder / f"{r.name}.npz")
    return folder


def _ref(tmp_path):
    path = tmp_path / "epyc.npz"
    refs = [machine(f"ref{i}", jitter=0.02, seed=50 + i) for i in range(3)]
    corelat.reference(refs, name="epyc").save(path)
    return path


def _good(k=4):
    return [machine(f"cn{i:03d}", jitter=0.02, seed=i) for i in range(1, k + 1)]


def _other_model(name):
    r = machine(name, jitter=0.02, seed=77)
    return corelat.LatencyResult.from_matrix(r.median, r.cpus, kernel="cas", name=name,
                                             metadata={**r.metadata, "cpu_model": "Synthetic Xeon 32"})


def test_a_lone_node_short_of_cpus_passes_without_a_baseline_and_is_off_with_one(tmp_path):
    # cn005 has 30 of the 32 CPUs: a group of one, never judged by its group
    folder = _folder(tmp_path, [*_good(), machine("cn005", jitter=0.02, seed=5, missing=(30, 31))])
    p = run_cli("fleet-report", folder)
    assert p.returncode == 0, p.stdout + p.stderr  # what the issue found: nothing says cn005 is off
    p = run_cli("fleet-report", folder, "--baseline", _ref(tmp_path))
    assert p.returncode == 3, p.stdout + p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("cn005:"))
    assert "30 CPUs where the reference has 32" in line and "offline" in line
    assert "epyc" in p.stdout and "Baseline" in p.stdout


def test_a_lone_node_of_another_model_is_off_against_the_baseline(tmp_path):
    folder = _folder(tmp_path, [*_good(), _other_model("cn006")])
    r = _baseline.judge(corelat.fleet(folder), _ref(tmp_path))
    verdicts = r.metadata["baseline"]["nodes"]
    assert verdicts["cn006"]["status"] == "off" and "Synthetic Xeon 32" in verdicts["cn006"]["line"]
    assert all(verdicts[f"cn00{i}"]["status"] == "ok" for i in range(1, 5))
    assert corelat.FleetResult.from_dict(r.to_dict()).metadata["baseline"] == r.metadata["baseline"]


def test_a_slowed_node_in_a_small_group_is_off_against_the_baseline(tmp_path):
    # two nodes: a group under the smallest judged size, so no outlier is ever named
    folder = _folder(tmp_path, [machine("cn001", jitter=0.02, seed=1),
                                machine("cn002", jitter=0.02, seed=2, slow=("l3", 1.25))])
    assert run_cli("fleet-report", folder).returncode == 0
    p = run_cli("fleet-report", folder, "--baseline", _ref(tmp_path), "--json")
    assert p.returncode == 3, p.stderr
    d = json.loads(p.stdout)
    b = d["metadata"]["baseline"]
    assert b["reference"] == "epyc" and b["file"].endswith("epyc.npz")
    assert b["nodes"]["cn002"]["status"] == "off"
    assert b["nodes"]["cn002"]["line"].startswith("cn002: l3 +25 %")
    assert b["nodes"]["cn001"]["status"] == "ok"
    assert d["summary"]["baseline_off"] == 1


def test_a_node_with_an_unmeasured_class_is_not_judged_exit_1(tmp_path):
    r = machine("cn002", jitter=0.02, seed=2)
    m = r.median.copy()
    codes = corelat.reference(machine()).codes
    m[codes == 0] = np.nan  # no SMT pair measured
    r = corelat.LatencyResult.from_matrix(m, r.cpus, kernel="cas", name="cn002", metadata=r.metadata)
    folder = _folder(tmp_path, [machine("cn001", jitter=0.02, seed=1), r])
    out = tmp_path / "report.json"
    p = run_cli("fleet-report", folder, "--baseline", _ref(tmp_path), "-o", out)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "cn002" in p.stdout and "not measured" in p.stdout
    saved = corelat.FleetResult.load(out)
    assert saved.metadata["baseline"]["nodes"]["cn002"]["status"] == "not judged"


def test_the_baseline_must_be_a_reference(tmp_path):
    folder = _folder(tmp_path, _good(2))
    p = run_cli("fleet-report", folder, "--baseline", folder / "cn001.npz")
    assert p.returncode == 2 and "not a reference" in p.stderr, p.stderr


# -- the Prometheus file: written by prometheus_client, a status per node (issue 36, item 8) -------------
def _families(prom):
    parser = pytest.importorskip("prometheus_client.parser")
    return {f.name: f for f in parser.text_string_to_metric_families(prom.read_text())}


def _status(families):
    got = {}
    for s in families["corelat_fleet_node_status"].samples:
        if s.value == 1:
            assert s.labels["node"] not in got, s.labels  # one status per node
            got[s.labels["node"]] = s.labels["status"]
    return got


def test_the_prometheus_file_names_each_node_with_its_status(tmp_path):
    nodes = [*_good(4), machine("cn010", jitter=0.02, seed=10, slow=("l3", 1.3))]
    folder = _folder(tmp_path, nodes)
    (folder / "cn011.error.json").write_text(json.dumps({"kind": "fleet-node-error", "node": "cn011",
                                                         "error": "boom"}))
    prom = tmp_path / "fleet.prom"
    p = run_cli("fleet-report", folder, "--prometheus", prom, "--expect", "cn[001-004],cn[010-012]")
    assert p.returncode == 1, p.stdout + p.stderr
    families = _families(prom)
    assert _status(families) == {"cn001": "ok", "cn002": "ok", "cn003": "ok", "cn004": "ok",
                                 "cn010": "off", "cn011": "failed", "cn012": "missing"}
    states = {s.labels["status"] for s in families["corelat_fleet_node_status"].samples}
    assert states == {"ok", "off", "failed", "missing", "not judged"}
    # the series there were before stay as they were
    assert families["corelat_fleet_missing_nodes"].samples[0].value == 1
    assert families["corelat_fleet_failed_nodes"].samples[0].value == 1
    assert families["corelat_fleet_exit_status"].samples[0].value == 1
    outlier = {(s.labels["node"], s.labels["class"]): s.value
               for s in families["corelat_fleet_outlier"].samples}
    assert outlier[("cn010", "l3")] == 1 and sum(outlier.values()) == 1


def test_the_prometheus_status_against_a_baseline(tmp_path):
    r = machine("cn003", jitter=0.02, seed=3)
    m = r.median.copy()
    m[corelat.reference(machine()).codes == 0] = np.nan
    r = corelat.LatencyResult.from_matrix(m, r.cpus, kernel="cas", name="cn003", metadata=r.metadata)
    folder = _folder(tmp_path, [machine("cn001", jitter=0.02, seed=1),
                                machine("cn002", jitter=0.02, seed=2, missing=(0, 1)), r])
    prom = tmp_path / "fleet.prom"
    p = run_cli("fleet-report", folder, "--baseline", _ref(tmp_path), "--prometheus", prom)
    assert p.returncode == 1, p.stdout + p.stderr
    families = _families(prom)
    assert _status(families) == {"cn001": "ok", "cn002": "off", "cn003": "not judged"}
    ref = {s.labels.get("reference") for s in families["corelat_fleet_node_status"].samples}
    assert ref == {"epyc"}


def test_without_a_baseline_a_node_of_a_small_group_is_not_judged(tmp_path):
    folder = _folder(tmp_path, [*_good(3), _other_model("cn009")])
    prom = tmp_path / "fleet.prom"
    p = run_cli("fleet-report", folder, "--prometheus", prom)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _status(_families(prom))["cn009"] == "not judged"


def test_prometheus_without_prometheus_client_is_bad_input_naming_the_pip_command(tmp_path):
    fake = tmp_path / "site"
    (fake / "prometheus_client").mkdir(parents=True)
    (fake / "prometheus_client" / "__init__.py").write_text("raise ImportError('no prometheus_client')\n")
    folder = _folder(tmp_path, _good(2))
    prom = tmp_path / "fleet.prom"
    p = run_cli("fleet-report", folder, "--prometheus", prom, env={"PYTHONPATH": str(fake)})
    assert p.returncode == 2, p.stdout + p.stderr
    assert "prometheus_client" in p.stderr and "pip install" in p.stderr and not prom.exists()
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("name, message", [("fleet.txt", "must end in .prom"),
                                           ("no-such-folder/fleet.prom", "does not exist")])
def test_fleet_report_checks_its_prometheus_file_before_reading(tmp_path, name, message):
    # node_exporter's textfile collector reads only *.prom files: fleet-report wrote fleet.txt without
    # a word (corelat fleet and verify refuse it), and found a missing folder only after reading.
    folder = _folder(tmp_path, _good(2))
    prom = tmp_path / name
    p = run_cli("fleet-report", folder, "--prometheus", prom)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr and not prom.exists() and not p.stdout, p.stdout + p.stderr
    assert "Traceback" not in p.stderr


# -- 10: the exit codes are in --help, and what a killed rank leaves -------------------------------------
@pytest.mark.parametrize("command", ["fleet", "fleet-report"])
def test_help_lists_the_exit_codes(command):
    p = run_cli(command, "--help")
    assert p.returncode == 0, p.stderr
    text = p.stdout[p.stdout.index("Exit status:"):]
    for code in ("0", "1", "2", "3"):
        assert any(line.split()[:1] == [code] for line in text.splitlines()), (code, text)
    assert "--baseline" in text
    if command == "fleet":  # what an admin sees when the job is ended from outside
        assert "137" in text and "143" in text and "fleet-report" in text, text
