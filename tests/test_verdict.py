"""Verdicts: one machine judged against a reference (corelat.verify and 'corelat verify'): jittered
copies are within, a slowed class is named, a machine of another shape is a finding, peers' files
judge and are judged; the exit codes, --json and --prometheus."""

import json
import os

import numpy as np
import pytest
from conftest import run_cli
from machines import machine
from peers import PEERS

import corelat
from corelat._core.errors import InputError

RYZEN = "AMD Ryzen 9 5950X @ 3.40 GHz.csv"
RYZEN_HX = "AMD Ryzen 9 5900HX @ 3.3 GHz.csv"


@pytest.fixture(scope="module")
def ref():
    return corelat.reference(machine("cn000"), name="epyc-7742")


@pytest.mark.parametrize("seed", range(5))
def test_jittered_copies_are_within(ref, seed):
    v = corelat.verify(machine("cn007", jitter=0.02, seed=seed), ref)
    assert v.ok and v.exit_status == 0 and not v.findings
    assert v.line == "cn007: ok, 5 classes within their tolerance of epyc-7742 (28 s)"
    assert all(c.within for c in v) and len(v) == 5


@pytest.mark.parametrize("cls", ["smt", "l2", "l3", "package", "packages"])
def test_a_class_slowed_25_percent_is_off_and_named(ref, cls):
    v = corelat.verify(machine("cn007", jitter=0.02, slow=(cls, 1.25)), ref)
    assert not v.ok and v.exit_status == 3
    assert [c.cls for c in v.off] == [cls]
    assert v.line.startswith(f"cn007: {cls} +2") and "vs epyc-7742 (tolerance ±5 %); 4 other classes within" \
        in v.line
    assert v[cls].ratio == pytest.approx(1.25, rel=0.03) and v[cls].within is False


def test_two_cpus_missing_is_off_for_its_shape(ref):
    v = corelat.verify(machine("cn007", jitter=0.02, missing=(30, 31)), ref)
    assert v.exit_status == 3 and not v.ok
    assert v.findings == ("30 CPUs where the reference has 32 (CPUs 30, 31 offline)",)
    assert v.line.startswith("cn007: 30 CPUs where the reference has 32 (CPUs 30, 31 offline)")
    assert "\n" not in v.line


def test_another_cpu_model_is_a_finding(ref):
    r = machine("cn007")
    other = corelat.LatencyResult.from_matrix(r.median, r.cpus, kernel="cas", name="cn007",
                                              metadata={**dict(r.metadata), "cpu_model": "Other CPU"})
    v = corelat.verify(other, ref)
    assert v.exit_status == 3 and "CPU model Other CPU where the reference has" in v.line


def test_a_class_not_measured_is_said_not_passed(ref):
    r = machine("cn007")
    m = r.median.copy()
    for i in range(0, 32, 2):  # every SMT pair unmeasured
        m[i, i + 1] = m[i + 1, i] = float("nan")
    unmeasured = corelat.LatencyResult.from_matrix(m, r.cpus, kernel="cas", metadata=dict(r.metadata))
    v = corelat.verify(unmeasured, ref)
    assert v.exit_status == 1 and not v.ok
    assert v["smt"].status == "not measured" and "smt not measured" in v.line


def test_another_kernel_is_bad_input(ref):
    with pytest.raises(InputError, match="kernel"):
        corelat.verify(machine("cn007", kernel="rw"), ref)


def test_peer_files_as_references_and_as_judged_files(shared_dir, tmp_path):
    folder = shared_dir / PEERS
    ref = corelat.reference(folder / RYZEN)
    v = corelat.verify(folder / RYZEN, ref)
    assert v.ok and v.name == "AMD Ryzen 9 5950X @ 3.40 GHz"
    # a jittered copy of the peer's matrix, written as core-to-core-latency's CSV
    r = corelat.load(folder / RYZEN)
    rng = np.random.default_rng(1)
    f = np.tril(rng.uniform(0.98, 1.02, r.median.shape), -1)
    copy = corelat.LatencyResult.from_matrix(r.median * (f + f.T + np.eye(len(r.cpus))), r.cpus)
    copy.to_csv(tmp_path / "cn001.csv")
    v = corelat.verify(tmp_path / "cn001.csv", ref)
    assert v.ok, v.line
    assert v.name == "cn001"
    other = corelat.verify(folder / RYZEN_HX, ref)
    assert other.exit_status == 3 and "16 CPUs where the reference has 32" in other.line
    # a machine with a topology judged against a peer's file, and the other way round: the shapes differ
    assert corelat.verify(machine("cn007"), ref).exit_status == 3


def test_protocol_round_trips(ref, tmp_path):
    v = corelat.verify(machine("cn007", jitter=0.02, slow=("l3", 1.3)), ref)
    v.save(tmp_path / "v.npz")
    assert corelat.load(tmp_path / "v.npz") == v and corelat.Verdict.load(tmp_path / "v.npz") == v
    d = json.loads(json.dumps(v.to_dict()))
    assert corelat.Verdict.from_dict(d) == v
    assert d["exit_status"] == 3 and d["line"] == v.line and d["classes"][2]["class"] == "l3"
    assert {"measured", "centre", "tolerance", "ratio", "within"} <= set(d["classes"][0])
    assert "l3" in v.describe() and v.summary()["off"] == 1


def test_reference_given_as_a_path_is_named_by_its_stem(tmp_path):
    ref = corelat.reference(machine(), name="")
    ref.save(tmp_path / "epyc-7742.npz")
    assert "of epyc-7742" in corelat.verify(machine("cn007"), tmp_path / "epyc-7742.npz").line
    with pytest.raises(InputError, match="not a reference"):
        machine().save(tmp_path / "r.npz")
        corelat.verify(machine(), tmp_path / "r.npz")


# -- the command -----------------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    nodes = {"good": machine("cn007", jitter=0.02, seed=3), "slow": machine("cn008", slow=("package", 1.25)),
             "short": machine("cn009", missing=(30, 31))}
    for key, r in nodes.items():
        r.save(tmp_path / f"{key}.npz")
    machine("cn000").save(tmp_path / "known-good.npz")
    return tmp_path


def _prom(path):
    """{name: value} of the overall series, {(name, class): value} of the per-class ones."""
    from prometheus_client.parser import text_string_to_metric_families

    with open(path) as f:
        text = f.read()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, s.labels["class"]) if "class" in s.labels else s.name] = s.value
    return out


def test_cli_reference_then_verify_exit_codes_json_and_prometheus(files):
    d = str(files)
    got = run_cli("reference", f"{d}/known-good.npz", "-o", f"{d}/epyc-7742.npz")
    assert got.returncode == 0, got.stderr
    assert "epyc-7742" in got.stdout and os.path.exists(f"{d}/epyc-7742.npz")
    ref = f"{d}/epyc-7742.npz"

    got = run_cli("verify", "--against", ref, f"{d}/good.npz", "--line", "--prometheus", f"{d}/good.prom")
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "cn007: ok, 5 classes within their tolerance of epyc-7742 (28 s)"
    prom = _prom(f"{d}/good.prom")
    assert prom["corelat_verify_exit_status"] == 0 and prom["corelat_verify_ok"] == 1
    assert prom[("corelat_verify_class_within", "smt")] == 1

    got = run_cli("verify", "--against", ref, f"{d}/slow.npz", "--prometheus", f"{d}/slow.prom")
    assert got.returncode == 3, got.stderr
    assert got.stdout.splitlines()[0].startswith("cn008: package +25 % vs epyc-7742")
    prom = _prom(f"{d}/slow.prom")
    assert prom["corelat_verify_exit_status"] == 3
    assert prom[("corelat_verify_class_within", "package")] == 0
    assert prom[("corelat_verify_class_ratio", "package")] == pytest.approx(1.25, rel=0.01)

    got = run_cli("verify", "--against", ref, f"{d}/short.npz", "--json")
    assert got.returncode == 3
    v = json.loads(got.stdout)
    assert v["exit_status"] == 3 and "CPUs 30, 31 offline" in v["line"] and v["findings"]


def test_cli_bad_input_is_exit_2_in_one_line_with_a_prometheus_file(files):
    d = str(files)
    got = run_cli("verify", "--against", f"{d}/good.npz", f"{d}/slow.npz", "--prometheus", f"{d}/bad.prom")
    assert got.returncode == 2
    assert got.stderr.count("\n") == 1 and "not a reference" in got.stderr and "Traceback" not in got.stderr
    assert _prom(f"{d}/bad.prom")["corelat_verify_exit_status"] == 2
    got = run_cli("verify", "--against", f"{d}/nothing-here.npz", f"{d}/slow.npz")
    assert got.returncode == 2 and "Traceback" not in got.stderr
    got = run_cli("reference", f"{d}/good.npz", f"{d}/short.npz", "-o", f"{d}/mixed.npz")
    assert got.returncode == 2 and "alike" in got.stderr and not os.path.exists(f"{d}/mixed.npz")


def test_cli_could_not_measure_is_exit_1_and_the_prometheus_path_is_checked_first(tmp_path):
    # a reference of CPUs 1000-1031, none of which this machine has: nothing can be measured
    corelat.reference(machine("far", first=1000), name="far").save(tmp_path / "far.npz")
    got = run_cli("verify", "--against", str(tmp_path / "far.npz"), "--prometheus", str(tmp_path / "n.prom"),
                  env={"SLURMD_NODENAME": "cn010"})
    assert got.returncode == 1, got.stderr
    assert got.stdout.strip().startswith("cn010: could not measure (0 of the reference's 32 CPUs")
    assert _prom(tmp_path / "n.prom")["corelat_verify_exit_status"] == 1
    # an output that cannot be written: refused before anything is measured or judged
    got = run_cli("verify", "--against", str(tmp_path / "far.npz"), "--prometheus", "/nonexistent/x.prom")
    assert got.returncode == 2 and "cannot write" in got.stderr and got.stdout == ""
    got = run_cli("verify", "--against", str(tmp_path / "far.npz"), "--prometheus", str(tmp_path / "x.txt"))
    assert got.returncode == 2 and ".prom" in got.stderr


def test_cli_help_lists_the_exit_codes():
    got = run_cli("verify", "--help")
    assert got.returncode == 0
    for code in ("0  every class", "3  a class is off", "1  could not measure", "2  bad input"):
        assert code in got.stdout


@pytest.mark.hw
def test_cli_measures_this_machine_against_its_own_reference(tmp_path):
    r = corelat.measure(strategy="sample", samples=20, round_trips=200)
    r.save(tmp_path / "me.npz")
    corelat.reference(r, name="here").save(tmp_path / "here.npz")
    got = run_cli("verify", "--against", str(tmp_path / "here.npz"), "--json",
                  "--prometheus", str(tmp_path / "me.prom"))
    # a shared VM's latency moves between runs: within or off, never a crash, and said both ways
    assert got.returncode in (0, 3), got.stderr
    v = json.loads(got.stdout)
    assert v["exit_status"] == got.returncode == _prom(tmp_path / "me.prom")["corelat_verify_exit_status"]
