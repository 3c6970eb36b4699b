"""Integration tests on an emulated multi-socket SMT NUMA machine.

They run only inside ``../shared/tools/vmtopo.sh --smp 8,sockets=2,cores=2,threads=2 --numa 2``
(``.ci/run`` boots it once for every test marked ``vm``)::

    ../shared/tools/vmtopo.sh --smp 8,sockets=2,cores=2,threads=2 --numa 2 --timeout 900 -- \\
        python -m pytest -m vm tests/test_vm.py -q -p no:cacheprovider

The guest numbers SMT siblings adjacently (0-1, 2-3, ...), package 0 = CPUs 0-3 = NUMA node 0.
Its vCPUs are emulated and overcommitted: sizes are tiny, time-outs generous, and no latency or
throughput value is asserted, only behaviour.
"""

import os
import time

import numpy as np
import pytest
from conftest import run_cli

import corelat

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(os.environ.get("VMTOPO_GUEST") != "1",
                       reason="runs inside the emulated 8-CPU machine only (../shared/tools/vmtopo.sh)"),
]

SIBLINGS = [(0, 1), (2, 3), (4, 5), (6, 7)]
PACKAGES = [set(range(4)), set(range(4, 8))]
TIMEOUT = 10.0  # seconds a thread waits for its partner: vCPUs are descheduled for long stretches
SUMMARY = "2 packages × 2 cores × 2 threads, 2 NUMA nodes"


def _groups(rows, key):
    out = {}
    for r in rows:
        out.setdefault(r[key], set()).add(r["cpu"])
    return sorted(out.values(), key=min)


def test_topology():
    topo = corelat.topology()
    rows = topo.records()
    assert topo.cpus == tuple(range(8)) and topo.allowed == tuple(range(8))
    assert _groups(rows, "package") == PACKAGES
    assert _groups(rows, "node") == PACKAGES
    assert _groups(rows, "core") == [set(p) for p in SIBLINGS]
    assert all(r["siblings"] == p for p in SIBLINGS for r in rows if r["cpu"] in p)
    assert topo.smt_groups() == SIBLINGS
    assert topo.headline().startswith(SUMMARY)
    ordered, boundaries = topo.order([7, 3, 5, 1, 6, 2, 4, 0])
    assert ordered == tuple(range(8))
    assert boundaries["package"] == boundaries["node"] == [4]
    assert boundaries["core"] == [2, 4, 6]


def test_measure_sweeps_all_cpus_in_topology_order():
    started = time.monotonic()
    r = corelat.measure([5, 0, 7, 2, 4, 1, 6, 3], round_trips=20, samples=5,
                        timeout=TIMEOUT, order="topology")
    assert time.monotonic() - started < 600
    assert r.cpus == tuple(range(8))
    assert r.samples.shape[:2] == (8, 8)
    off = ~np.eye(8, dtype=bool)
    median = r.median
    assert np.all(np.isfinite(median[off]) & (median[off] > 0))  # every pair measured
    assert np.all(np.isnan(np.diag(median)))
    b = r.boundaries
    assert b["package"] == b["node"] == (4,)
    assert b["core"] == (2, 4, 6)
    assert r.metadata["topology_summary"].startswith(SUMMARY)
    assert r.ordered("os").cpus == tuple(range(8))
    assert r.ordered("topology").cpus == tuple(range(8))


def test_smt_finds_the_four_sibling_pairs():
    r = corelat.smt(round_trips=20, samples=5, duration=0.01, timeout=TIMEOUT)
    assert not r.empty and r.reason is None
    assert [tuple(p) for p in r.pairs.tolist()] == SIBLINGS
    # Nearest non-sibling: the other core of the same package (same L3).
    assert r.partners.tolist() == [2, 0, 6, 4]
    assert r.partner_levels == ("l3",) * 4
    for a in (r.sibling_samples, r.nonsibling_samples, r.alone, r.together):
        assert np.all(np.isfinite(a) & (a > 0))
    assert r.alone.shape == r.together.shape == (4, 2, len(r.loops))
    assert r.table().startswith("Hyper-threads: 4 pairs of SMT siblings")


def test_cli_topology_order():
    p = run_cli("--order", "topology", 10, 3, timeout=600)
    assert p.returncode == 0, p.stderr
    assert f"Topology: {SUMMARY}" in p.stdout
    assert "Traceback" not in p.stderr


def test_cli_smt():
    p = run_cli("smt", "--duration", "0.005", "--timeout", TIMEOUT, 10, 3, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Hyper-threads: 4 pairs of SMT siblings")
    for a, b in SIBLINGS:
        assert any(line.split()[:1] == [f"{a},{b}"] for line in p.stdout.splitlines())
