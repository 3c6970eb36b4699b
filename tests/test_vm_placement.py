"""Where the line lives, on the emulated 2-node machine (2 packages = 2 NUMA nodes: CPUs 0-3 are
node 0, 4-7 node 1). Runs only inside ``../shared/tools/vmtopo.sh --numa 2`` (CI's 90-vm step); sizes
are tiny and no latency is asserted, only where the pages were found.
"""

import os

import numpy as np
import pytest

import corelat
from corelat import PairFlag

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(os.environ.get("VMTOPO_GUEST") != "1",
                       reason="runs inside the emulated 8-CPU machine only (../shared/tools/vmtopo.sh)"),
]

TIMEOUT = 10.0
SMALL = {"samples": 3, "round_trips": 10, "timeout": TIMEOUT, "retest": False}


def node(cpu):
    return 0 if cpu < 4 else 1


def off(n):
    return ~np.eye(n, dtype=bool)


def test_node_1_puts_every_page_on_node_1():
    r = corelat.measure([0, 1, 4], home="node:1", **SMALL)
    found = r.extras["home_node"]
    assert np.all(found[off(3)] == 1), found
    assert not any("home" in w for w in r.warnings), r.warnings


def test_responder_puts_the_page_on_the_responders_node():
    cpus = [0, 4, 5]
    r = corelat.measure(cpus, home="responder", **SMALL)
    found = r.extras["home_node"]
    for i in range(3):
        for j in range(3):
            if r.flags[i, j] & PairFlag.MEASURED:  # cell (i, j) timed by cpus[j], answered by cpus[i]
                assert found[i, j] == found[j, i] == node(cpus[i]), (i, j, found)
    assert not any("not where it was asked" in w for w in r.warnings)


def test_a_third_cpu_homes_the_page_on_its_node():
    r = corelat.measure([0, 1], home="cpu:5", **SMALL)
    assert np.all(r.extras["home_node"][off(2)] == 1)
    assert "third thread on CPU 5" in r.metadata["home"]["method"]


def test_a_third_cpu_homes_the_one_way_kernels_page_on_its_node_too():
    try:
        r = corelat.measure([0, 1], kernel="oneway", home="cpu:5", **SMALL)
    except corelat.MeasurementError as e:  # timers that disagree: not this test's business
        pytest.skip(str(e))
    assert np.all(r.extras["home_node"][off(2)] == 1)
    assert np.all(r.count[off(2)] == SMALL["samples"])  # one kernel call per sample, each kept


def test_read_modified_with_a_node_home():
    r = corelat.measure([0, 4], kernel="read-modified", home="node:0", **SMALL)
    assert np.all(r.extras["home_node"][off(2)] == 0)
    assert np.all(np.isfinite(r.median[off(2)]) & (r.median[off(2)] > 0))


def test_node_7_is_a_clean_input_error():
    with pytest.raises(corelat.InputError, match="no NUMA node 7"):
        corelat.measure([0, 4], home="node:7", **SMALL)


def test_placement_gives_one_matrix_per_node():
    p = corelat.placement([0, 4], **SMALL)
    assert p.homes == ("node:0", "node:1")
    assert p.median.shape == (2, 2, 2)
    assert [int(p.home_node[k][1, 0]) for k in range(2)] == [0, 1]
    # describe(): the homes' table, then one line per kind of pair (the old summary_text())
    across = [line for line in p.describe().splitlines() if line.startswith("across packages:")]
    assert len(across) == 1 and "homed with the initiator" in across[0]
    assert "homed with the responder" in across[0]
