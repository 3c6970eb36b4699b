"""One result protocol: every kind has name, metadata, warnings, notes, to_dict, records, table,
describe (str), summary, value equality, and measured kinds save to a file corelat.load reads back as
the same kind, rebuild from to_dict with from_dict and are immutable (docs/results.md)."""

import dataclasses
import json
import os
from collections.abc import Mapping

import numpy as np
import pytest
from conftest import run_cli

import corelat
from corelat import CheckReport, LatencyResult, LockResult, PlacementResult, SMTResult
from corelat._core import protocol
from corelat._core.protocol import Result, SavedResult, thaw
from corelat._fleet import synth as _synth
from corelat._measure.locks import summarise
from corelat._results import schema
from corelat._results.load import KINDS as _LOAD_KINDS

CPUS = sorted(os.sched_getaffinity(0))


def latency():
    rng = np.random.default_rng(1)
    s = rng.lognormal(3, 0.3, size=(3, 3, 8))
    s[np.arange(3), np.arange(3)] = np.nan
    s[2, 1, 3] = np.nan  # a dropped sample: NaN must compare equal to NaN
    return LatencyResult(cpus=(4, 0, 2), kernel="cas", samples=s, name="lat",
                         metadata={"parameters": {"samples": 8}, "warnings": ["w"], "notes": ["n"]})


def smt_result(empty=False):
    k = 0 if empty else 2
    non = np.full((k, 4), 50.0)
    non[:, 1] = np.nan
    return SMTResult(cpus=(0, 1, 2, 3), kernel="rw", pairs=np.array([[0, 2], [1, 3]])[:k],
                     partners=np.array([1, -1])[:k], partner_levels=("l3", "")[:k],
                     sibling_samples=np.full((k, 4), 5.0), nonsibling_samples=non,
                     loops=("alu", "mem"), alone=np.full((k, 2, 2), 2e9), together=np.full((k, 2, 2), 1e9),
                     metadata={"warnings": ["dropped"]}, reason="no siblings" if empty else None, name="smt")


def lock_result():
    raw = {"calls": [[100, 100], [20, 20]], "ticks": [[2000] * 2, [2000] * 2], "sermin": [[60, 60], [90, 90]],
           "sercalls": [[5, 5], [7, 7]], "counter": [0, 52]}
    data, threads = summarise(["baseline", "lock-pthread-mutex"], [0, 1], raw, 2.0, 50.0)
    return LockResult(cpus=(0, 1), shared=True, duration=1.0, data=data, threads=threads,
                      metadata={"timer": {"name": "tsc"}, "timer_mhz": 2000.0}, name="locks")


def check_report():
    return corelat.check(interval=0.01, measure_skew=False)


MEASURED = {"latency": latency, "smt": smt_result, "smt-empty": lambda: smt_result(True),
            "locks": lock_result,
            "topology": corelat.topology, "check": check_report}


def placement_result():
    a = latency()
    found = np.where(np.eye(3, dtype=bool), -1, 1)
    b = LatencyResult(cpus=a.cpus, kernel=a.kernel, samples=a.samples * 1.5, metadata=thaw(a.metadata),
                      name=a.name, extras={"home_node": found})
    return PlacementResult(["initiator", "node:1"], [a, b], name="homes")


def built_check_report():
    items = [{"name": "governor", "status": "warn", "found": "powersave", "why": "clock changes",
              "value": ["powersave", "performance"]},
             {"name": "smt", "status": "ok", "found": "on", "why": "", "value": {"siblings": 2}},
             {"name": "skew", "status": "unknown", "found": "not measured", "why": "", "value": None}]
    return CheckReport(items, metadata={"hostname": "h"}, name="check")


def fleet_result():
    m = np.array([[0, 8, 40, 40], [8, 0, 40, 40], [40, 40, 0, 8], [40, 40, 8, 0]], dtype=float)
    base = LatencyResult.from_matrix(m, name="base")
    nodes = _synth.copies(base, 5, seed=1, slow=(2, "cores", 1.5),
                          metadata=lambda i: {"governor": "powersave" if i == 2 else "performance"})
    return corelat.fleet(nodes)


#: Every kind that holds measurements: its builder (pure: no C kernel), the keywords its records()
#: and table() share beyond none, and the file endings it saves to besides .npz.
KINDS = {
    "latency": (latency, {"statistic": "min"}, ()),
    "placement": (placement_result, {"statistic": "mean"}, ()),
    "smt": (smt_result, {"statistic": "max"}, ()),
    "smt-empty": (lambda: smt_result(True), {"statistic": "max"}, ()),
    "locks": (lock_result, {"per_thread": True}, ()),
    "check": (built_check_report, {}, ()),
    "fleet": (fleet_result, {"group": 1}, (".json",)),
    "reference": (lambda: corelat.reference(nested_matrix(), name="ref"), {}, ()),
    "verdict": (lambda: corelat.verify(nested_matrix(), corelat.reference(nested_matrix(), name="ref"),
                                       name="node"), {}, ()),
}


def _arrays(obj, seen=0):
    """Every numpy array a result holds, through mappings, sequences, results and dataclasses."""
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _arrays(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            yield from _arrays(v)
    elif isinstance(obj, Result):
        for f in obj._FIELDS:
            yield from _arrays(getattr(obj, f))
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _arrays(getattr(obj, f.name))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_walks_the_whole_protocol(tmp_path, kind):
    build, keywords, formats = KINDS[kind]
    r = build()
    # A copy kept by value to check, at the end, that the walk changed nothing: not a second build,
    # since a fleet records the second it was made (two builds a second apart differ, under load).
    kept = type(r).from_dict(json.loads(json.dumps(r.to_dict(), allow_nan=False)))
    assert isinstance(r, SavedResult) and r == kept
    # save(path) / corelat.load(path): the same kind, equal, in every format the kind writes
    for ending in (".npz", *formats):
        path = tmp_path / f"r{ending}"
        r.save(path)
        back = corelat.load(path)
        assert type(back) is type(r) and back == r and type(r).load(path) == r
    # to_dict() / from_dict(), through strict JSON; arrays=False leaves the figures only
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["kind"] == r._KIND and d["name"] == r.name and d["warnings"] == list(r.warnings)
    back = type(r).from_dict(d)
    assert type(back) is type(r) and back == r
    small = r.to_dict(arrays=False)
    json.dumps(small, allow_nan=False)
    assert set(small) <= set(d)
    # records() and table() take the same keywords, with the same meaning
    for kw in ({}, keywords):
        rows = r.records(**kw)
        assert isinstance(rows, list) and all(isinstance(x, dict) for x in rows)
        text = r.table(**kw)
        assert isinstance(text, str) and text
    if "statistic" in keywords:
        for verb in (r.records, r.table):
            with pytest.raises(corelat.InputError, match="statistic"):
                verb(statistic="mode")
    # summary(): a small dict of headline figures; describe() is what print() shows
    assert isinstance(r.summary(), dict)
    assert str(r) == r.describe() and r.describe()
    assert repr(r).startswith(f"<{type(r).__name__} {r.name!r}: ")
    # frozen: no attribute can be assigned or deleted, arrays and metadata are read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.name = "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del r.name
    with pytest.raises(TypeError):
        r.metadata["x"] = 1
    arrays = list(_arrays(r))
    assert arrays or kind in ("check", "verdict")  # a report and a verdict hold findings, not arrays
    assert not any(a.flags.writeable for a in arrays)
    assert r == kept  # nothing above changed it


def test_derived_views_have_no_save():
    """A comparison or a structure is made from results: it is no SavedResult and has no save()."""
    c = comparison()
    for view in (c, corelat.structure(c.results[0])):
        assert isinstance(view, Result) and not isinstance(view, SavedResult)
        assert not hasattr(view, "save") and not hasattr(type(view), "load")


def comparison():
    m = np.array([[np.nan, 10.0, 20.0], [10.0, np.nan, 30.0], [20.0, 30.0, np.nan]])
    return corelat.compare(LatencyResult.from_matrix(m, name="a"), LatencyResult.from_matrix(m * 2, name="b"))


DERIVED = {"comparison": comparison, "structure": lambda: corelat.structure(nested_matrix())}


def nested_matrix():
    """Two packages of two groups of two CPUs: a structure with nested levels."""
    cpu = np.arange(8)
    apart = cpu[:, None] // 2 != cpu[None, :] // 2, cpu[:, None] // 4 != cpu[None, :] // 4
    m = 15.0 + 45.0 * apart[0] + 90.0 * apart[1]
    np.fill_diagonal(m, np.nan)
    return LatencyResult.from_matrix(m, name="s")


@pytest.mark.parametrize("kind", sorted(MEASURED) + sorted(DERIVED))
def test_protocol_shape(kind):
    r = DERIVED[kind]() if kind in DERIVED else MEASURED[kind]()
    assert isinstance(r.name, str) and r.name
    assert isinstance(r.warnings, tuple) and isinstance(r.notes, tuple)
    assert hasattr(r.metadata, "get")
    if kind not in ("comparison", "check"):
        assert r.cpus and all(isinstance(c, int) for c in r.cpus)
    assert isinstance(r.summary(), dict)
    recs = r.records()
    assert isinstance(recs, list) and all(isinstance(x, dict) for x in recs)
    # describe() is what print() shows, for a derived view too (the base class's __str__)
    assert str(r) == r.describe() and "__str__" not in vars(type(r))
    assert isinstance(r.table(), str) and r.table()
    d = r.to_dict()
    back = json.loads(json.dumps(d, allow_nan=False))  # strict JSON: NaN became null
    assert back["name"] == r.name and back["warnings"] == list(r.warnings)
    assert repr(r).startswith(f"<{type(r).__name__} {r.name!r}: ")


@pytest.mark.parametrize("kind", sorted(MEASURED))
def test_save_load_same_kind_and_equal(tmp_path, kind):
    r = MEASURED[kind]()
    path = tmp_path / "r.npz"
    r.save(path)
    a, b = corelat.load(path), corelat.load(path)
    assert type(a) is type(r)
    assert a == b and a == r
    assert type(r).load(path) == r
    with np.load(path, allow_pickle=False) as z:  # plain arrays only, never pickle
        assert all(z[k].dtype != object for k in z.files)


def test_values_differ_and_results_are_unhashable():
    a, b = latency(), latency()
    assert a == b
    s = np.array(b.samples)
    s[0, 1, 0] += 1
    assert LatencyResult(cpus=b.cpus, kernel=b.kernel, samples=s, metadata=b.metadata, name=b.name) != a
    assert smt_result() != smt_result(True)
    assert comparison() == comparison() and check_report() != comparison()
    assert a != lock_result() and a != "lat"
    for r in (a, smt_result(), lock_result(), corelat.topology(), check_report(), comparison()):
        with pytest.raises(TypeError):
            hash(r)


def test_loading_the_wrong_kind_says_so(tmp_path):
    path = tmp_path / "smt.npz"
    smt_result().save(path)
    with pytest.raises(corelat.InputError, match="'smt'"):
        LatencyResult.load(path)


def test_check_report_is_still_a_sequence_of_items():
    report = check_report()
    items = list(report)
    assert items and len(report) == len(items) and report[0] is items[0]
    assert all(isinstance(i, corelat.CheckItem) for i in report)
    assert report.summary()["matters"] == [i.name for i in items if i.matters]


def test_topology_views():
    topo = corelat.topology()
    assert topo.records()[0]["cpu"] == topo.cpus[0]
    assert topo.table().startswith(f"Topology of {topo.root}: {topo.headline()}")
    s = topo.summary()
    assert s["cpus"] == len(topo) and s["text"] == topo.headline()


def test_bad_construction_is_a_corelat_error():
    with pytest.raises(corelat.InputError):
        LatencyResult(cpus=(0, 1), kernel="cas", samples=np.zeros((3, 3, 1)))
    with pytest.raises(corelat.InputError):
        latency().statistic("mode")
    with pytest.raises(corelat.InputError):
        latency().ordered([99])
    with pytest.raises(corelat.InputError):
        smt_result().__class__(**{**smt_fields(), "partners": np.zeros(5)})
    with pytest.raises(corelat.InputError):
        lock_result().row("nothing")
    topo = corelat.topology()
    with pytest.raises(corelat.InputTypeError):  # also a TypeError, as before
        topo.order(["0"])
    with pytest.raises(corelat.InputError):
        topo.order([10**6])
    with pytest.raises(corelat.InputError):
        corelat.Topology.from_dict({"format": "x"})
    with pytest.raises(corelat.InputFileNotFoundError):  # also a FileNotFoundError, as before
        corelat.topology("/nonexistent")
    with pytest.raises(corelat.InputTypeError):
        corelat.smt(topology="/")


def smt_fields():
    r = smt_result()
    return {f: getattr(r, f) for f in SMTResult._FIELDS}


@pytest.mark.hw
@pytest.mark.skipif(not CPUS, reason="needs a CPU")
def test_cli_locks_output_and_json(tmp_path):
    out = tmp_path / "l.npz"
    p = run_cli("locks", "-d", "0.001", "-k", "inc-atomic-relaxed", "-o", str(out), str(CPUS[0]))
    assert p.returncode == 0, p.stderr
    r = corelat.load(out)
    assert isinstance(r, LockResult) and r.tests == ("baseline", "inc-atomic")  # the 0.1 name selects it
    p = run_cli("locks", "-d", "0.001", "-k", "inc-atomic-relaxed", "--json", str(CPUS[0]))
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["kind"] == "locks" and [x["name"] for x in d["records"]] == ["baseline", "inc-atomic"]


@pytest.mark.hw
def test_cli_smt_output_and_json(tmp_path):
    out = tmp_path / "s.npz"
    p = run_cli("smt", "10", "3", "-d", "0.001", "-o", str(out))
    assert p.returncode == 0, p.stderr
    r = corelat.load(out)
    assert isinstance(r, SMTResult)
    p = run_cli("smt", "10", "3", "-d", "0.001", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["kind"] == "smt" and d["summary"]["pairs"] == len(r)


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs")
def test_cli_measure_json():
    p = run_cli("10", "3", "--cpus", f"{CPUS[0]},{CPUS[1]}", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["kind"] == "latency" and d["cpus"] == CPUS[:2] and len(d["records"]) == 2
    p = run_cli("10", "3", "--json", "--csv")
    assert p.returncode == 2 and "choose one" in p.stderr


def test_every_door_runs_the_same_file_checks():
    # Issue 34 item 11: corelat.load and each kind's load read a file by one path
    # (SavedResult._from_file), which runs the checks corelat._results.schema registers per kind.
    assert set(protocol.file_checks()) == set(schema.HEADERS)
    assert all(check is schema.check_file for check in protocol.file_checks().values())


def _saved_kinds():
    """A builder for every kind a file can hold (corelat.load's table), the topology included."""
    built = {build()._KIND: build for build, _, _ in KINDS.values()}
    built["topology"] = corelat.topology
    return built


@pytest.mark.parametrize("kind", sorted(_LOAD_KINDS))
def test_every_saved_kind_takes_arrays_in_to_dict(kind):
    # Issue 34 item 12: docs/results.md promises arrays= on every saved kind's to_dict.
    assert set(_saved_kinds()) == set(_LOAD_KINDS)
    r = _saved_kinds()[kind]()
    full, small = r.to_dict(arrays=True), r.to_dict(arrays=False)
    assert json.dumps(full, allow_nan=False) == json.dumps(r.to_dict(), allow_nan=False)
    json.dumps(small, allow_nan=False)
    assert set(small) <= set(full) and small["kind"] == kind
