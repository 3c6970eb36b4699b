"""Fleet files: node files of raw samples read through their median member (the samples stay
compressed on disk), older files without it, hostile median members, ``corelat.load`` of a
``fleet.json``, and node lists read with a bound."""

import json
import os
import threading

import numpy as np
import pytest
from conftest import run_cli

import corelat
from corelat._core import npz as _npz
from corelat._core.errors import InputError, SaveError
from corelat._fleet import hostlist as _hostlist
from corelat._fleet import nodes as _fleet
from corelat._fleet import synth as _fleet_synth

PEERS = "fixtures/peer-results/core-to-core-latency"
RYZEN = "AMD Ryzen 9 5950X @ 3.40 GHz.csv"
SAMPLES = 5


@pytest.fixture(scope="module")
def ryzen(shared_dir):
    return corelat.load(shared_dir / PEERS / RYZEN)


def _with_samples(r, seed):
    """``r`` as a result of SAMPLES raw samples per pair (what ``corelat fleet`` saves)."""
    rng = np.random.default_rng(seed)
    m = np.asarray(r.median)
    s = m[:, :, None] * np.exp(0.05 * rng.standard_normal(m.shape + (SAMPLES,)))
    s[np.isnan(m)] = np.nan
    return corelat.LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=s,
                                 metadata=dict(r.metadata), name=r.name)


@pytest.fixture(scope="module")
def nodes(ryzen):
    return [_with_samples(r, k) for k, r in enumerate(_fleet_synth.copies(ryzen, 6, seed=3,
                                                                          slow=(4, "across", 1.3)))]


def _save_old_style(r, path):
    """A latency file as corelat wrote it before the median member."""
    header, arrays = r._to_npz()
    arrays.pop("median", None)
    _npz.write(path, "latency", header, arrays)


def _members(path):
    with np.load(path, allow_pickle=False) as z:
        return set(z.files)


def test_a_file_of_raw_samples_carries_their_median_and_loads_as_before(nodes, tmp_path):
    r = nodes[0]
    r.save(tmp_path / "a.npz")
    assert "median" in _members(tmp_path / "a.npz")
    with np.load(tmp_path / "a.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(z["median"], r.median)
    assert corelat.load(tmp_path / "a.npz") == r
    one = corelat.LatencyResult.from_matrix(np.asarray(r.median), r.cpus)
    one.save(tmp_path / "b.npz")  # one value per pair: the samples are the median; nothing doubled
    assert "median" not in _members(tmp_path / "b.npz")


def test_a_fleet_reads_the_median_member_not_the_samples(nodes, tmp_path, monkeypatch):
    nodes[0].save(tmp_path / "a.npz")
    read = []
    real = _npz._read_member
    monkeypatch.setattr(_npz, "_read_member", lambda z, members,
                        name: read.append(name) or real(z, members, name))
    nd = _fleet.read_node_file(str(tmp_path / "a.npz"), "a")
    assert "samples" not in read and "median" in read
    np.testing.assert_array_equal(nd.median, nodes[0].median)


def test_selective_read_takes_names_or_a_chooser(nodes, tmp_path):
    nodes[0].save(tmp_path / "a.npz")
    _, arrays = _npz.read(tmp_path / "a.npz", only=("cpus", "no-such-member"))
    assert set(arrays) == {"cpus"}
    seen = {}
    _, arrays = _npz.read(tmp_path / "a.npz", only=lambda available: seen.update(available) or ["flags"])
    assert set(arrays) == {"flags"} and seen["samples"][0] == (16 * 2, 16 * 2, SAMPLES)
    assert set(_npz.read(tmp_path / "a.npz")[1]) == {"cpus", "samples", "flags", "median"}


def test_older_files_without_the_median_member_give_the_same_fleet(nodes, tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    new.mkdir()
    old.mkdir()
    for r in nodes:
        r.save(new / f"{r.name}.npz")
        _save_old_style(r, old / f"{r.name}.npz")
    assert "median" not in _members(old / "node000.npz")
    a, b = corelat.fleet(new), corelat.fleet(old)
    assert ([(o.node, o.cls) for o in a.outliers] == [(o.node, o.cls) for o in b.outliers]
            == [("node004", "across")])
    np.testing.assert_array_equal(a.groups[0].values, b.groups[0].values)
    np.testing.assert_array_equal(a.groups[0].median_matrix, b.groups[0].median_matrix)
    from_results = corelat.fleet(nodes)
    np.testing.assert_array_equal(a.groups[0].values, from_results.groups[0].values)


def _forged(r, median):
    header, arrays = r._to_npz()
    arrays["median"] = median
    return header, arrays


@pytest.mark.parametrize("case", ["wrong_shape", "integers", "complex", "negative", "infinite", "all_nan",
                                  "all_zero", "strings"])
def test_a_forged_median_member_makes_that_node_an_error(nodes, tmp_path, case):
    r = nodes[0]
    m = np.array(r.median)
    median = {"wrong_shape": m[:3, :3], "integers": np.nan_to_num(m).astype(np.int64),
              "complex": m.astype(np.complex128), "negative": np.where(np.isnan(m), m, -5.0),
              "infinite": np.where(np.isnan(m), m, np.inf), "all_nan": np.full_like(m, np.nan),
              "all_zero": np.where(np.isnan(m), m, 0.0), "strings": np.full(m.shape, "12")}[case]
    folder = tmp_path / "run"
    folder.mkdir()
    for k in (1, 2, 3):
        nodes[k].save(folder / f"{nodes[k].name}.npz")
    _npz.write(folder / "bad.npz", "latency", *_forged(r, median))
    got = corelat.fleet(folder)
    assert len(got.nodes) == 3
    assert [e["node"] for e in got.errors] == ["bad"]
    assert "bad.npz" in got.errors[0]["error"] and "\n" not in got.errors[0]["error"]


@pytest.mark.slow
def test_hostile_files_become_errors_of_their_nodes(tmp_path):
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    import hostile

    cases = hostile.generate(tmp_path)
    got = corelat.fleet(tmp_path)  # no exception, whatever the files hold
    accepted = {r["node"] for r in got.nodes} - {"valid"}
    refused = {e["node"] for e in got.errors}
    # Only what a fleet does not read may be broken in a file it takes: the samples (beside their
    # median member) and the extras. Header, CPUs, flags and the median are checked as load checks them.
    assert accepted and all(c.startswith(("samples_", "extras_")) for c in accepted), sorted(accepted)
    names = {os.path.basename(p)[:-4] for _, p in cases if p.endswith(".npz")}
    assert names - {"kind_unknown"} <= accepted | refused
    assert all("\n" not in e["error"] for e in got.errors)


# -- corelat.load of a fleet report -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report(ryzen):
    return corelat.fleet(_fleet_synth.copies(ryzen, 5, seed=11, slow=(1, "smt", 1.5)), expect="node[000-005]")


def test_corelat_load_reads_fleet_json(report, tmp_path):
    report.save(tmp_path / "fleet.json")
    back = corelat.load(tmp_path / "fleet.json")
    assert isinstance(back, corelat.FleetResult) and back == report
    os.replace(tmp_path / "fleet.json", tmp_path / "report")  # renamed: still told apart by its content
    assert corelat.load(tmp_path / "report") == report


@pytest.mark.parametrize("text, needle", [
    ('{"kind": "latency", "cpus": [0, 1]}', "not a fleet report"),
    ("[1, 2]", "not a mapping"),
    ('{"kind": "fleet", "groups": NaN}', "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    ('{"kind": "fleet"', "not valid JSON"),
])
def test_corelat_load_of_bad_json_names_the_file(tmp_path, text, needle):
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(InputError, match=needle) as e:
        corelat.load(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["fleet.json", "fleet.npz"])
def test_cli_report_prints_a_saved_fleet_report(report, tmp_path, name):
    report.save(tmp_path / name)
    p = run_cli("report", tmp_path / name)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Fleet: 5 nodes") and "node001" in p.stdout
    q = run_cli("report", "--json", tmp_path / name)
    assert q.returncode == 0 and json.loads(q.stdout)["summary"] == report.summary()


# -- node lists -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["/dev/zero", "/dev/urandom"])
def test_a_node_list_that_is_a_device_is_refused(spec):
    with pytest.raises(InputError, match="not a regular file"):
        _hostlist.expected_nodes(spec)


def test_a_node_list_that_is_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "nodes"
    os.mkfifo(fifo)
    got = []
    t = threading.Thread(target=lambda: got.append(pytest.raises(InputError,
                                                                 _hostlist.expected_nodes, str(fifo))),
                         daemon=True)
    t.start()
    t.join(30)
    assert got and "FIFO" in str(got[0].value)


def test_a_node_list_larger_than_the_limit_is_refused_not_cut(tmp_path):
    p = tmp_path / "nodes"
    p.write_bytes(b"".join(b"node%07d\n" % j for j in range(1_500_000)))  # 18 MB of good names
    assert os.path.getsize(p) > 16 << 20
    with pytest.raises(InputError, match="larger than"):
        _hostlist.expected_nodes(str(p))


def test_a_node_list_that_is_not_text_or_a_folder(tmp_path):
    p = tmp_path / "nodes"
    p.write_bytes(b"node1\n\xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        _hostlist.expected_nodes(str(p))
    with pytest.raises(InputError, match="a folder"):
        _hostlist.expected_nodes(str(tmp_path))


def test_fleet_report_cli_with_a_device_as_node_list(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    p = run_cli("fleet-report", folder, "--expect", "/dev/zero")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "/dev/zero" in p.stderr and "not a regular file" in p.stderr


# -- the settings a fleet compares -----------------------------------------------------------------------
def test_every_result_records_the_microcode_revision(tmp_path):
    from corelat._system import sysinfo as _sysinfo

    # files from job arrays (corelat -o) carry it too, not only fleet runs
    assert "microcode" in _sysinfo.collect()
    cpu0 = tmp_path / "sys/devices/system/cpu/cpu0/microcode"
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\nmicrocode\t: 0xde\n")
    assert _sysinfo.microcode(str(tmp_path)) == "0xde"
    cpu0.mkdir(parents=True)
    (cpu0 / "version").write_text("0xb000040\n")
    assert _sysinfo.microcode(str(tmp_path)) == "0xb000040"
    assert _sysinfo.microcode(str(tmp_path / "nothing")) is None


def test_a_job_array_node_with_other_microcode_is_named(ryzen, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    def md(i):
        return {"microcode": "0x2" if i == 2 else "0x1", "governor": "performance"}

    for r in _fleet_synth.copies(ryzen, 6, seed=4, slow=(2, "across", 1.3), metadata=md):
        r.save(folder / f"{r.name}.npz")
    got = corelat.fleet(folder)
    [o] = got.outliers
    assert (o.node, o.cls) == ("node002", "across") and ("microcode", "0x2", "0x1") in o.differs
    assert "microcode '0x2' (group: '0x1')" in got.describe()


@pytest.mark.parametrize("ending", [".json", ".npz"])
def test_saving_a_fleet_into_a_missing_folder_is_a_save_error(report, tmp_path, ending):
    # Issue 34 item 12: one error for both endings, as the docstring promises (.json gave InputError).
    path = tmp_path / "no such folder" / f"fleet{ending}"
    with pytest.raises(SaveError, match="no such folder") as e:
        report.save(path)
    assert not isinstance(e.value, InputError)
    with pytest.raises(InputError, match=r"\.json or \.npz"):  # a wrong ending is a wrong argument
        report.save(tmp_path / "fleet.txt")
