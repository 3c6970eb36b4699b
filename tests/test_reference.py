"""References: what a known-good machine looks like, per latency class, from one result or several,
from corelat's files and peers' files; the result protocol (save, load, to_dict, from_dict)."""

import math

import numpy as np
import pytest
from machines import LATENCY, MODEL, machine
from peers import PEERS

import corelat
from corelat._core.errors import InputError

RYZEN = "AMD Ryzen 9 5950X @ 3.40 GHz.csv"
XEON = "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv"


def test_one_machine_the_centre_is_the_class_median_and_the_floor_holds():
    ref = corelat.reference(machine(jitter=0.02), name="epyc")
    assert ref.classes == ("smt", "l2", "l3", "package", "packages")
    assert ref.metadata["class_source"] == "topology" and ref.cpu_model == MODEL
    for k, cls in enumerate(ref.classes):
        assert ref.centre[k] == pytest.approx(LATENCY[cls], rel=0.02)
        assert ref.tolerance[k] >= 0.05
    assert ref.machines == 1 and len(ref.cpus) == 32 and ref.kernel == "cas"
    assert ref.metadata["sources"][0]["hostname"] == "cn001"


def test_a_quiet_machine_gets_the_floor_not_a_razor_thin_band():
    ref = corelat.reference(machine(jitter=0.0), floor=0.07)
    assert np.all(ref.tolerance == 0.07) and ref.floor == 0.07


def test_several_machines_median_of_class_medians_and_a_tolerance_from_their_spread():
    nodes = [machine(f"cn{i:03d}", jitter=0.02, seed=i) for i in range(9)]
    # one node 40 % slower in one class: the median across machines does not follow it
    nodes.append(machine("cn009", jitter=0.02, seed=9, slow=("l3", 1.4)))
    ref = corelat.reference(nodes)
    assert ref.machines == 10
    assert ref.centre[ref.index("l3")] == pytest.approx(LATENCY["l3"], rel=0.02)
    assert np.all(ref.tolerance >= 0.05)
    # identical machines: no spread at all, still the floor
    same = corelat.reference([machine(f"n{i}") for i in range(3)])
    assert np.all(same.tolerance == 0.05)
    # spread machines: the band follows their spread, beyond the floor
    spread = [machine(f"s{i}", slow=("smt", f)) for i, f in enumerate((0.9, 0.95, 1.0, 1.05, 1.1))]
    wide = corelat.reference(spread)
    assert wide.tolerance[wide.index("smt")] > 0.05


def test_mixed_machines_are_refused():
    with pytest.raises(InputError, match="alike machines.*30 CPUs"):
        corelat.reference([machine(), machine("b", missing=(30, 31))])
    other = machine("c")
    other = corelat.LatencyResult.from_matrix(other.median, other.cpus, kernel="cas", name="c",
                                              metadata={**dict(other.metadata), "cpu_model": "Other CPU"})
    with pytest.raises(InputError, match="Other CPU"):
        corelat.reference([machine(), other])
    with pytest.raises(InputError, match="kernel|measured with"):
        corelat.reference([machine(), machine("d", kernel="rw")])
    with pytest.raises(InputError, match="floor"):
        corelat.reference(machine(), floor=0)


def test_peer_files_make_references(shared_dir):
    folder = shared_dir / PEERS
    ref = corelat.reference(folder / RYZEN)
    assert ref.metadata["class_source"] == "structure" and ref.kernel == "unknown"
    assert "smt" in ref.classes and len(ref.cpus) == 32
    assert ref.name == "AMD Ryzen 9 5950X @ 3.40 GHz"
    with pytest.raises(InputError, match="alike"):
        corelat.reference([folder / RYZEN, folder / XEON])


def test_not_a_latency_result_is_refused(tmp_path):
    ref = corelat.reference(machine())
    ref.save(tmp_path / "ref.npz")
    with pytest.raises(InputError, match="not a latency result"):
        corelat.reference(tmp_path / "ref.npz")


def test_protocol_round_trips(tmp_path):
    ref = corelat.reference([machine("a", jitter=0.02), machine("b", jitter=0.02, seed=1)], name="epyc")
    path = tmp_path / "ref.npz"
    ref.save(path)
    assert corelat.load(path) == ref and corelat.Reference.load(path) == ref
    assert corelat.Reference.from_dict(ref.to_dict()) == ref
    assert "codes" not in ref.to_dict(arrays=False)
    assert [r["class"] for r in ref.records()] == list(ref.classes)
    assert "epyc" in ref.describe() and "packages" in ref.table() and "epyc" in repr(ref)
    assert ref.summary()["machines"] == 2
    with pytest.raises(Exception, match="cannot assign"):
        ref.name = "x"


def test_a_tampered_reference_file_is_an_input_error(tmp_path):
    from corelat._core import npz as _npz

    ref = corelat.reference(machine())
    header, arrays = ref._to_npz()
    bad = dict(header, records=[dict(r, tolerance=-1) for r in header["records"]])
    _npz.write(tmp_path / "bad.npz", "reference", bad, arrays)
    with pytest.raises(InputError, match="tolerance"):
        corelat.load(tmp_path / "bad.npz")
    _npz.write(tmp_path / "codes.npz", "reference", header, {**arrays, "codes": arrays["codes"][:3]})
    with pytest.raises(InputError, match="codes"):
        corelat.load(tmp_path / "codes.npz")
    assert math.isfinite(ref.centre[0])
