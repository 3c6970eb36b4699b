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
