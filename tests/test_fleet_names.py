"""Node names in the fleet's run path (issue 36, the fleet's monitoring path, items 4 and 5), without
MPI: the in-process stand-in job of test_fleet_run_defects."""

import json
import os

from test_fleet_run_defects import FAST, Job

from corelat._fleet import run as _run


def _report(folder):
    return json.loads((folder / "fleet.json").read_text())


# -- 5: names that are one name once cleaned are kept apart, and the report says so ------------------------
def test_names_that_collide_once_cleaned_are_kept_apart_and_named(monkeypatch, tmp_path):
    monkeypatch.setattr(_run._Job, "_machine", lambda self: 0)  # every rank on one machine, as in the issue
    names = ["cn/001", "cn_001", "cn:001", "cn002", "cn003"]
    job = Job(monkeypatch, names)
    out = job.run(*FAST, "-o", str(tmp_path / "d"), "--wait", "30")
    assert out[0][0] == "exit", out
    d = _report(tmp_path / "d")
    nodes = sorted(r["node"] for r in d["nodes"])
    assert len(nodes) == 5, nodes  # before: 3 node(s) on 5 rank(s), two never measured
    assert len(job.measured) == 5, job.measured
    assert "cn_001" in nodes and len(set(nodes)) == 5
    said = " ".join(d["notes"] + d["warnings"])
    assert "cn/001" in said and "cn:001" in said and "cn_001" in said, said
    assert len([n for n in os.listdir(tmp_path / "d") if n.endswith(".npz")]) == 5


# -- 4: FQDN host names match the Slurm list; SLURMD_NODENAME where Slurm sets it -------------------------
def test_fqdn_processor_names_match_a_slurm_list(monkeypatch, tmp_path):
    job = Job(monkeypatch, [f"cn{i:03d}.cluster.local" for i in range(1, 5)])
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    out = job.run(*FAST, "-o", str(tmp_path / "d"), "--wait", "30", "--expect", "cn[001-004]")
    d = _report(tmp_path / "d")
    assert d["missing"] == [], d["missing"]  # before: 4 missing, 4 not in the expected list
    assert not [n for n in d["notes"] if "not in the expected list" in n], d["notes"]
    assert out[0] in (("exit", 0), ("exit", 3)), out


def test_the_node_is_slurms_name_where_slurm_sets_it(monkeypatch):
    class MPI:
        def Get_processor_name(self):
            return "cn007.cluster.local"

    monkeypatch.delenv("CORELAT_NODE_NAME", raising=False)
    monkeypatch.setenv("SLURMD_NODENAME", "cn007")
    assert _run.node_name(MPI()) == "cn007"  # before: cn007.cluster.local
    monkeypatch.setenv("CORELAT_NODE_NAME", "chosen")
    assert _run.node_name(MPI()) == "chosen"
    monkeypatch.delenv("CORELAT_NODE_NAME")
    monkeypatch.delenv("SLURMD_NODENAME")
    assert _run.node_name(MPI()) == "cn007.cluster.local"


def test_a_folder_of_fqdn_files_matches_a_short_list(tmp_path):
    import corelat

    base = corelat.load(corelat.example_files()[0])
    folder = tmp_path / "f"
    folder.mkdir()
    for i in (1, 2, 3):
        base.save(folder / f"cn{i:03d}.cluster.local.npz")
    r = corelat.fleet(folder, expect="cn[001-004]")
    assert list(r.missing) == ["cn004"], r.missing  # before: all four missing
    assert not [n for n in r.notes if "not in the expected list" in n], r.notes
    # a list of full names still matches full names, and short files match a list of full names
    r = corelat.fleet(folder, expect="cn[001-003].cluster.local")
    assert not r.missing


def test_short_name_matching_stays_exact_where_it_would_be_ambiguous():
    from corelat._fleet import hostlist

    missing, extra = hostlist.match(["cn001"], ["cn001.a.local", "cn001.b.local"])
    assert missing == ["cn001"] and extra == ["cn001.a.local", "cn001.b.local"]
    missing, extra = hostlist.match(["cn001.cluster.local", "cn002"], ["cn001", "cn002.x"])
    assert missing == [] and extra == []
    missing, extra = hostlist.match(["10.0.0.1"], ["10.0.0.2"])
    assert missing == ["10.0.0.1"] and extra == ["10.0.0.2"]
