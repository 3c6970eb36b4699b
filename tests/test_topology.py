"""Tests for corelat.topology: real sysfs dumps (hwloc's test suite), the live machine, quirks."""

import csv
import json
import os

import numpy
import pytest
from conftest import HWLOC_DUMPS

from corelat._system.topology import Topology, TopologyWarning, topology

DUMPS = HWLOC_DUMPS

SUMMARIES = {
    "128arm-2pa2n8cluster4co": "2 packages × 64 cores × 1 thread, 4 NUMA nodes, 4 L3",
    "16amd64-8n2c": "8 packages × 2 cores × 1 thread, 8 NUMA nodes, no L3 known",
    "16em64t-4s2c2t-offlines": (
        "4 packages, 7 cores (5 with 2 threads), 12 CPUs, 1 NUMA node, 4 L3, 4 offline"
    ),
    "20em64t-hybrid-1p6c2t+2ca4co1t": "1 package, 14 cores (6 with 2 threads), 20 CPUs, 1 NUMA node, 1 L3",
    "256ppc-8n8s4t": "64 packages × 1 core × 4 threads, 8 NUMA nodes, 64 L3",
    "32intel64-2p8co2t+8ve": "2 packages × 8 cores × 2 threads, 2 NUMA nodes, 2 L3",
    "48amd64-4pa2n6c-sparse": "4 packages × 12 cores × 1 thread, 8 NUMA nodes, 8 L3",
    "memorysidecaches": "2 packages × 20 cores × 2 threads, 4 NUMA nodes, 2 L3",
    "offline-cpu0-node0": "2 packages, 17 cores × 1 thread, 17 CPUs, 2 NUMA nodes, 2 L3, 7 offline",
}


def _expected(shared_dir, name):
    path = shared_dir / "fixtures" / "topology" / "hwloc" / f"{name}.expected.csv"
    with open(path, newline="") as f:
        return {int(r["cpu"]): r for r in csv.DictReader(f)}


def _partition(labels):
    """The set of groups (frozensets of CPUs) that share a label."""
    groups = {}
    for cpu, label in labels.items():
        groups.setdefault(label, set()).add(cpu)
    return {frozenset(g) for g in groups.values()}


# ---------------------------------------------------------------------------------------------
# Real machines (unpacked and read once a session by tests/conftest.py; reading them must not warn)


@pytest.mark.slow
@pytest.mark.parametrize("name", DUMPS)
def test_dump_matches_hwloc(name, shared_dir, hwloc_topology):
    """Package, core, L2, L3 and NUMA partitions agree with hwloc's answer for every CPU."""
    topo = hwloc_topology(name, strict=True)  # first: it skips a dump that a plain clone lacks
    expected = _expected(shared_dir, name)
    rows = {r["cpu"]: r for r in topo.records()}

    # hwloc lists the online (and, in a dump, allowed) CPUs: exactly ours.
    assert set(expected) <= set(topo.cpus)
    assert sorted(expected) == list(topo.cpus)
    assert topo.allowed == topo.cpus

    for column in ("package", "core", "l2", "l3"):
        known = {cpu: e[column] for cpu, e in expected.items() if e[column] != ""}
        ours = {cpu: rows[cpu][column] for cpu in known}
        assert None not in ours.values(), f"{column}: unknown where hwloc knows it"
        assert _partition(ours) == _partition(known), column
        if not known and column in ("l2", "l3"):
            # No such cache in the dump at all: report it as unknown, not as a guess.
            assert all(r[column] is None for r in rows.values()), column

    # nodes: the NUMA nodes hwloc considers local to the CPU. Normally one; several when
    # CPU-less memory nodes (HBM, NVDIMM, CXL) share the CPUs' locality. Group CPUs by that set;
    # the kernel's node of each CPU (our label: the sysfs node id) must be one of them.
    known = {
        cpu: frozenset(int(n) for n in e["nodes"].split(";"))
        for cpu, e in expected.items()
        if e["nodes"] != ""
    }
    for cpu, ids in known.items():
        assert rows[cpu]["node"] in ids, cpu
    assert _partition({cpu: frozenset(rows[cpu]["nodes"]) for cpu in known}) == _partition(known)

    # Raw sysfs values and derived fields.
    for cpu, e in expected.items():
        row = rows[cpu]
        assert row["core_id"] == int(e["core_id"]), cpu
        if e["package"].isdigit():  # sysfs package ids are kept as labels
            assert row["package"] == int(e["package"]), cpu
        siblings = tuple(sorted(c for c in expected if expected[c]["core"] == e["core"]))
        assert row["siblings"] == siblings
        assert row["thread"] == siblings.index(cpu)


@pytest.mark.parametrize("name", DUMPS)
def test_dump_summary_and_views(name, hwloc_topology):
    topo = hwloc_topology(name, strict=True)
    assert topo.headline() == SUMMARIES[name]
    text = str(topo)
    # The result protocol: describe() is the text report print() shows; the one line is headline().
    assert text == topo.describe() == topo.table()
    assert "\n" not in topo.headline() and repr(topo).endswith(f"{topo.headline()}>")
    assert text.startswith(f"Topology of {topo.root}: {topo.headline()}")
    assert text.count("core ") >= len({r["core"] for r in topo.records()})
    ordered, boundaries = topo.order(reversed(topo.cpus))
    assert sorted(ordered) == list(topo.cpus)
    assert set(boundaries) == {"package", "node", "l3", "core"}
    # Every level's groups are contiguous in the order.
    for level in boundaries:
        labels = [topo.records()[topo.cpus.index(c)][level] for c in ordered]
        runs = [labels[i] for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1]]
        if level != "l3":  # an L3 may span NUMA nodes (sub-NUMA clustering)
            assert len(runs) == len(set(runs)), level
        assert boundaries[level] == [i for i in range(1, len(labels)) if labels[i] != labels[i - 1]]
    for cpu in topo.cpus:
        assert topo.describe_cpu(cpu)


def test_order_32intel64(hwloc_topology):
    """Siblings n and n+16 end up adjacent, packages contiguous, boundaries where groups start."""
    topo = hwloc_topology("32intel64-2p8co2t+8ve", strict=True)
    ordered, boundaries = topo.order(range(32))
    assert ordered == tuple(c for n in range(16) for c in (n, n + 16))
    assert boundaries == {
        "package": [16],
        "node": [16],
        "l3": [16],
        "core": list(range(2, 32, 2)),
    }
    assert topo.order([31, 0, 16, 8]) == (
        (0, 16, 8, 31),
        {"package": [2], "node": [2], "l3": [2], "core": [2, 3]},
    )
    assert topo.order([]) == ((), {"package": [], "node": [], "l3": [], "core": []})
    assert topo.order(numpy.array([17, 1]))[0] == (1, 17)
    assert topo.smt_groups() == [(n, n + 16) for n in range(16)]
    assert topo.smt_groups([0, 16, 1, 9, 25]) == [(0, 16), (9, 25)]
    assert topo.describe_cpu(17) == "P0 N0 L3#0 C1 T1"
    assert topo.describe_cpu(24) == "P1 N1 L3#1 C0 T1"
    with pytest.raises(ValueError):
        topo.order([0, 99])
    with pytest.raises(ValueError):
        topo.order([1, 1])
    with pytest.raises(TypeError):
        topo.order(["1"])
    with pytest.raises(ValueError):
        topo.smt_groups([32])


def test_hybrid_clusters(hwloc_topology):
    """E-cores share an L2 in clusters of 4; P-cores have their own L2 and two threads."""
    topo = hwloc_topology("20em64t-hybrid-1p6c2t+2ca4co1t", strict=True)
    rows = {r["cpu"]: r for r in topo.records()}
    assert _partition({c: r["l2"] for c, r in rows.items()} ) == {
        frozenset({0, 1}), frozenset({2, 3}), frozenset({4, 5}), frozenset({6, 7}),
        frozenset({8, 9}), frozenset({10, 11}), frozenset(range(12, 16)), frozenset(range(16, 20)),
    }  # fmt: skip
    assert "        L2 (CPUs 12-15)\n          core 24: CPU 12\n" in str(topo)
    assert _partition({c: r["cluster"] for c, r in rows.items()}) == _partition(
        {c: r["l2"] for c, r in rows.items()}
    )


def test_package_id_minus_one_grouped_by_lists(hwloc_topology):
    topo = hwloc_topology("256ppc-8n8s4t", strict=True)
    rows = topo.records()
    assert [r["package"] for r in rows] == [c // 4 for c in range(256)]
    assert all(r["die"] is None for r in rows)


def test_sparse_ids(hwloc_topology):
    arm = hwloc_topology("128arm-2pa2n8cluster4co", strict=True)
    assert {r["package"] for r in arm.records()} == {36, 8442}
    amd = hwloc_topology("48amd64-4pa2n6c-sparse", strict=True)
    assert {r["node"] for r in amd.records()} == {0, 1, 2, 33, 34, 45, 72, 73}
    ordered, boundaries = amd.order(amd.cpus)
    assert ordered == tuple(range(48))
    assert boundaries["package"] == [12, 24, 36]
    assert boundaries["node"] == boundaries["l3"] == list(range(6, 48, 6))


def test_offline_node_uses_cpu_link(hwloc_topology):
    """offline-cpu0-node0: node0 has no folder, but cpuN/node0 links still name it."""
    topo = hwloc_topology("offline-cpu0-node0", strict=True)
    assert topo.cpus == tuple(range(4, 21))
    assert topo.offline == (0, 1, 2, 3, 21, 22, 23)
    assert {r["cpu"]: r["node"] for r in topo.records()} == {c: c % 2 for c in range(4, 21)}


def test_json_round_trip(hwloc_topology):
    for name in ("16em64t-4s2c2t-offlines", "256ppc-8n8s4t"):
        topo = hwloc_topology(name, strict=True)
        d = json.loads(json.dumps(topo.to_dict()))
        assert d["root"] == topo.root and d["summary"] == topo.summary()
        again = Topology.from_dict(d)
        assert again == topo
        assert again.records() == topo.records()
        assert str(again) == str(topo)
    with pytest.raises(ValueError):
        Topology.from_dict({"format": "something else"})
    with pytest.raises(ValueError):
        Topology.from_dict({**topo.to_dict(), "cpus": [{"cpu": "x"}]})


# ---------------------------------------------------------------------------------------------
# The live machine


@pytest.mark.skipif(not os.path.isdir("/sys/devices/system/cpu"), reason="no Linux sysfs here")
def test_live_machine():
    topo = topology()
    assert topo.root == "/"
    assert topo.cpus and topo.headline()
    assert set(topo.allowed) <= set(topo.cpus)
    online = set(topo.cpus)
    try:
        with open("/sys/devices/system/cpu/online") as f:
            text = f.read().strip()
        assert online == {
            c
            for part in text.split(",")
            for c in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)
        }
    except FileNotFoundError:
        pass
    if hasattr(os, "sched_getaffinity"):
        assert set(topo.allowed) == os.sched_getaffinity(0) & online
    ordered, _ = topo.order(topo.allowed)
    assert sorted(ordered) == list(topo.allowed)
    assert str(topo)
    assert Topology.from_dict(json.loads(json.dumps(topo.to_dict()))) == topo


# ---------------------------------------------------------------------------------------------
# Quirks, on small synthetic sysfs trees


def _write(root, files):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir()
        else:
            path.write_text(content)
    return root


def _machine(cores, end="\n", lists=True, masks=False, node=True, online=True):
    """Files of a one-package machine; ``cores`` is a list of tuples of sibling CPUs."""
    cpus = sorted(c for core in cores for c in core)

    def fmt(cpu_set):
        if lists:
            return ",".join(map(str, sorted(cpu_set))) + end
        return format(sum(1 << c for c in cpu_set), "08x") + end

    suffix = "_list" if lists else ""
    sys = "sys/devices/system"
    files = {}
    if online:
        files[f"{sys}/cpu/online"] = ",".join(map(str, cpus)) + end
    for core_id, core in enumerate(cores):
        for cpu in core:
            d = f"{sys}/cpu/cpu{cpu}"
            files[f"{d}/topology/physical_package_id"] = f"0{end}"
            files[f"{d}/topology/core_id"] = f"{core_id}{end}"
            files[f"{d}/topology/thread_siblings{suffix}"] = fmt(core)
            files[f"{d}/topology/core_siblings{suffix}"] = fmt(cpus)
            for index, (level, kind, shared) in enumerate(
                [(1, "Data", core), (1, "Instruction", core), (2, "Unified", core), (3, "Unified", cpus)]
            ):
                files[f"{d}/cache/index{index}/level"] = f"{level}\n"
                files[f"{d}/cache/index{index}/type"] = f"{kind}\n"
                files[f"{d}/cache/index{index}/shared_cpu_map"] = (
                    format(sum(1 << c for c in shared), "08x") + "\n"
                )
                if lists:
                    files[f"{d}/cache/index{index}/shared_cpu_list"] = fmt(shared)
    if node:
        files[f"{sys}/node/node0/cpu{'list' if lists else 'map'}"] = fmt(cpus)
    return files


def _core_partition(topo):
    return _partition({r["cpu"]: r["core"] for r in topo.records()})


def test_nul_terminated_lists(tmp_path):
    _write(tmp_path, _machine([(0, 2), (1, 3)], end="\n\0"))
    topo = topology(tmp_path)
    assert _core_partition(topo) == {frozenset({0, 2}), frozenset({1, 3})}
    assert [r["siblings"] for r in topo.records()] == [(0, 2), (1, 3), (0, 2), (1, 3)]
    assert topo.headline() == "1 package × 2 cores × 2 threads, 1 NUMA node, 1 L3"
    assert topo.allowed == (0, 1, 2, 3)  # a dump: every online CPU is allowed


def test_hex_masks_only(tmp_path):
    """Old kernels: no *_list files, only comma-separated 32-bit hex words, no online file."""
    files = _machine([(0, 1), (2, 3)], lists=False, online=False)
    for cpu in (4, 33):  # one core whose siblings straddle two mask words
        d = f"sys/devices/system/cpu/cpu{cpu}"
        files[f"{d}/topology/physical_package_id"] = "0\n"
        files[f"{d}/topology/core_id"] = "7\n"
        files[f"{d}/topology/thread_siblings"] = "00000002,00000010\n"
        files[f"{d}/cache/index0/level"] = "2\n"
        files[f"{d}/cache/index0/type"] = "Unified\n"
        files[f"{d}/cache/index0/shared_cpu_map"] = "00000002,00000010\n"
    files["sys/devices/system/node/node0/cpumap"] = "0000ffff,ffffffff\n"  # includes absent CPUs
    _write(tmp_path, files)
    topo = topology(tmp_path)
    assert topo.cpus == (0, 1, 2, 3, 4, 33)
    rows = {r["cpu"]: r for r in topo.records()}
    assert _core_partition(topo) == {frozenset({0, 1}), frozenset({2, 3}), frozenset({4, 33})}
    assert rows[33]["siblings"] == (4, 33) and rows[33]["thread"] == 1
    assert rows[33]["l2"] == rows[4]["l2"] != rows[0]["l2"]
    assert rows[0]["l3"] == rows[3]["l3"] is not None and rows[33]["l3"] is None
    assert {r["node"] for r in rows.values()} == {0}


def test_malformed_core_id_warns(tmp_path):
    files = _machine([(0,), (1,)])
    files["sys/devices/system/cpu/cpu1/topology/core_id"] = "banana\n"
    _write(tmp_path, files)
    with pytest.warns(TopologyWarning, match=r"cpu1/topology/core_id.*malformed"):
        topo = topology(tmp_path)
    rows = topo.records()
    assert rows[1]["core_id"] is None
    assert rows[1]["core"] == 1  # the sibling list still identifies the core
    assert rows[0]["core_id"] == 0


def test_unreadable_and_malformed_lists_fall_back(tmp_path):
    files = _machine([(0, 1)])
    files["sys/devices/system/cpu/cpu0/topology/thread_siblings_list"] = "0-x\n"
    files["sys/devices/system/cpu/cpu0/topology/thread_siblings"] = "3\n"
    del files["sys/devices/system/cpu/cpu1/topology/thread_siblings_list"]
    files["sys/devices/system/cpu/cpu1/topology/thread_siblings_list"] = None  # a folder: unreadable
    files["sys/devices/system/cpu/cpu1/topology/physical_package_id"] = "\xff\n"
    _write(tmp_path, files)
    with pytest.warns(TopologyWarning) as record:
        topo = topology(tmp_path)
    messages = "\n".join(str(w.message) for w in record)
    assert "cpu0/topology/thread_siblings_list" in messages
    assert "cpu1/topology/thread_siblings_list" in messages
    assert "cpu1/topology/physical_package_id" in messages
    rows = topo.records()
    assert rows[0]["siblings"] == rows[1]["siblings"] == (0, 1)  # from cpu0's mask
    # cpu1's package id is unreadable, but its core_siblings_list still places it.
    assert rows[0]["package"] == rows[1]["package"] is not None


def test_no_node_folder_means_one_node(tmp_path):
    _write(tmp_path, _machine([(0,), (1,)], node=False))
    topo = topology(tmp_path)
    assert [(r["node"], r["nodes"]) for r in topo.records()] == [(0, (0,)), (0, (0,))]


def test_cpu_in_no_node_is_unknown(tmp_path):
    files = _machine([(0,), (1,)])
    files["sys/devices/system/node/node0/cpulist"] = "0,5\n"  # node lists may name offline CPUs
    _write(tmp_path, files)
    rows = topology(tmp_path).records()
    assert rows[0]["node"] == 0 and rows[1]["node"] is None and rows[1]["nodes"] == ()


def test_offline_cpu_without_topology(tmp_path):
    files = _machine([(0,), (1,), (3,)])
    files["sys/devices/system/cpu/online"] = "0-1,3\n"
    files["sys/devices/system/cpu/cpu2/online"] = "0\n"
    _write(tmp_path, files)
    topo = topology(tmp_path)
    assert topo.cpus == (0, 1, 3)
    assert topo.offline == (2,)
    # Same with per-CPU online files only (no global online file).
    os.remove(tmp_path / "sys/devices/system/cpu/online")
    (tmp_path / "sys/devices/system/cpu/cpu1/online").write_text("1\n")
    assert topology(tmp_path).cpus == (0, 1, 3)


def test_l3_found_by_level_not_index(tmp_path):
    files = _machine([(0,), (1,)])
    for cpu in (0, 1):
        d = f"sys/devices/system/cpu/cpu{cpu}/cache"
        for key in list(files):
            if key.startswith(f"{d}/index"):
                del files[key]
        files[f"{d}/index0/level"] = "1\n"
        files[f"{d}/index0/type"] = "Data\n"
        files[f"{d}/index0/shared_cpu_list"] = f"{cpu}\n"
        files[f"{d}/index1/level"] = "2\n"
        files[f"{d}/index1/type"] = "Instruction\n"  # not a data cache: ignored
        files[f"{d}/index1/shared_cpu_list"] = "0-1\n"
        files[f"{d}/index2/level"] = "3\n"
        files[f"{d}/index2/type"] = "Unified\n"
        files[f"{d}/index2/shared_cpu_list"] = "0-1\n"
    _write(tmp_path, files)
    rows = topology(tmp_path).records()
    assert [r["l2"] for r in rows] == [None, None]
    assert rows[0]["l3"] == rows[1]["l3"] is not None


def test_package_minus_one_and_core_id_not_unique(tmp_path):
    files = _machine([(0,), (1,), (2,), (3,)])
    for cpu in range(4):
        t = f"sys/devices/system/cpu/cpu{cpu}/topology"
        files[f"{t}/physical_package_id"] = "-1\n"
        files[f"{t}/core_siblings_list"] = "0-1\n" if cpu < 2 else "2-3\n"
        files[f"{t}/core_id"] = f"{cpu % 2}\n"  # core 0 and 1 in both packages
        del files[f"{t}/thread_siblings_list"]  # core identity from package + core_id
    _write(tmp_path, files)
    topo = topology(tmp_path)
    assert [r["package"] for r in topo.records()] == [0, 0, 1, 1]
    assert _core_partition(topo) == {frozenset({c}) for c in range(4)}
    assert topo.headline() == "2 packages × 2 cores × 1 thread, 1 NUMA node, 1 L3"


def test_unknown_info_sorts_last(tmp_path):
    files = _machine([(0, 2), (1, 3)])
    files["sys/devices/system/cpu/online"] = "0-4\n"  # cpu4 online, but no folder at all
    _write(tmp_path, files)
    topo = topology(tmp_path)
    assert topo.records()[4] == {
        "cpu": 4, "package": None, "die": None, "cluster": None, "core": None, "core_id": None,
        "l2": None, "l3": None, "node": None, "nodes": (), "siblings": None, "thread": None,
        "allowed": True, "core_type": None, "capacity": None,
    }  # fmt: skip
    assert topo.order([4, 3, 2, 1, 0])[0] == (0, 2, 1, 3, 4)
    assert topo.describe_cpu(4) == "P? N? L3#? C? T?"
    assert "1 package, 2 cores × 2 threads, 5 CPUs" in topo.headline()
    assert Topology.from_dict(json.loads(json.dumps(topo.to_dict()))) == topo


def test_not_a_sysfs_root(tmp_path):
    with pytest.raises(FileNotFoundError):
        topology(tmp_path)


def test_many_problems_are_summarised(tmp_path):
    cores = [(c,) for c in range(30)]
    files = _machine(cores)
    for cpu in range(30):
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/core_id"] = "?\n"
    _write(tmp_path, files)
    with pytest.warns(TopologyWarning) as record:
        topo = topology(tmp_path)
    assert len(record) == 21
    assert "10 more unreadable or malformed sysfs files" in str(record[-1].message)
    assert all(w.filename == __file__ for w in record)  # attributed to the caller
    assert len(topo.cpus) == 30 and all(r["core_id"] is None for r in topo.records())


def test_hybrid_core_types_and_capacity_read_from_sysfs(tmp_path):
    # A hybrid x86 part lists its P- and E-cores under /sys/devices/cpu_core and cpu_atom; Arm
    # big.LITTLE gives each CPU a cpu_capacity. Both reach the records, and structure() names its
    # classes from them.
    import corelat

    files = _machine([(c,) for c in range(8)])
    files["sys/devices/cpu_core/cpus"] = "0-3\n"
    files["sys/devices/cpu_atom/cpus"] = "4-7\n"
    for c in range(8):
        files[f"sys/devices/system/cpu/cpu{c}/cpu_capacity"] = "1024\n" if c < 4 else "446\n"
    topo = topology(_write(tmp_path, files))
    rows = topo.records()
    assert [r["core_type"] for r in rows] == ["core"] * 4 + ["atom"] * 4
    assert [r["capacity"] for r in rows] == [1024] * 4 + [446] * 4
    assert Topology.from_dict(json.loads(json.dumps(topo.to_dict()))) == topo

    m = numpy.full((8, 8), 60.0)
    m[:4, :4] = 20.0
    m[4:, 4:] = 45.0
    numpy.fill_diagonal(m, numpy.nan)
    m += numpy.random.default_rng(3).normal(0, 0.1, m.shape)
    s = corelat.structure(corelat.LatencyResult.from_matrix(m), topology=topo)
    assert s.levels[0].names == ("P-cores", "E-cores")


def test_machines_without_core_types_or_capacity_record_none(tmp_path):
    rows = topology(_write(tmp_path, _machine([(0,), (1,)]))).records()
    assert all(r["core_type"] is None and r["capacity"] is None for r in rows)
