"""A 4,096-CPU machine's topology takes memory in proportion to its CPUs (issue 34, item 17).

Every CPU of a 2-package Intel Xeon lists the 2,048 CPUs of its package's L3 (and, where its package
id is unknown, of its package): kept per CPU, those lists were 750 MB at 4,096 CPUs, and the
adversary's `corelat topology --root` was killed at 1 GiB. The bound here is a behaviour, not a
timing: the peak Python heap (tracemalloc) stays under 200 MB (about 10 MB now, 2.3 KB per CPU).
Times and figures at 512, 4,096 and 8,192 CPUs: ``benchmarks/topology_scale.py``.
"""

import importlib.util
import json
import pathlib
import subprocess
import sys
import tracemalloc

import pytest

import corelat

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "topology_scale.py"
CPUS = 4096
PEAK_BOUND = 200 * 2**20


def _bench():
    spec = importlib.util.spec_from_file_location("topology_scale", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big_tree():
    bench = _bench()
    with bench.scratch() as root:
        yield bench.write_tree(root, CPUS, masks=False)


def _peak(what):
    tracemalloc.start()
    try:
        value = what()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_topology_of_4096_cpus_is_small(big_tree):
    topo, peak = _peak(lambda: corelat.topology(big_tree))
    assert topo.headline() == "2 packages × 1024 cores × 2 threads, 4 NUMA nodes, 2 L3"
    assert topo.records()[5]["siblings"] == (5, 2053)
    assert peak < PEAK_BOUND, f"{peak / 2**20:.0f} MB for {CPUS} CPUs"


@pytest.mark.slow
def test_package_lists_of_4096_cpus_are_small(big_tree, tmp_path):
    """Unknown package ids (-1): the packages come from each CPU's list of its package's CPUs."""
    for cpu in range(CPUS):
        (pathlib.Path(big_tree) / f"sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id").write_text(
            "-1\n"
        )
    try:
        topo, peak = _peak(lambda: corelat.topology(big_tree))
    finally:
        for cpu in range(CPUS):
            (
                pathlib.Path(big_tree) / f"sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
            ).write_text(f"{(cpu % (CPUS // 2)) // (CPUS // 4)}\n")
    assert topo.summary()["packages"] == 2
    assert peak < PEAK_BOUND, f"{peak / 2**20:.0f} MB for {CPUS} CPUs"


#: Runs the command and prints its peak resident memory in bytes after its output (the only child of
#: a fresh interpreter: RUSAGE_CHILDREN is the command's own).
_PEAK_RSS = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120, check=False)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(proc.returncode)
"""


@pytest.mark.slow
def test_topology_command_of_4096_cpus(big_tree):
    """``corelat topology --root`` and ``--json`` end, in little memory (the adversary's were killed at
    1 GiB), and say what the API says."""
    for extra in ([], ["--json"]):
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _PEAK_RSS,
                sys.executable,
                "-m",
                "corelat",
                "topology",
                "--root",
                big_tree,
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        out, _, rss = proc.stdout.rstrip("\n").rpartition("\n")
        assert int(rss) < 2 * PEAK_BOUND, f"corelat topology {' '.join(extra)}: {int(rss) / 2**20:.0f} MB"
    assert len(json.loads(out)["cpus"]) == CPUS


def test_shared_lists_are_walked_once():
    """CPUs that list the same set join the first one that listed it; the groups are the same."""
    from corelat._system import sysfs

    cpus = list(range(8))
    shared, other = frozenset(range(4)), frozenset(range(4, 8))
    grouping = sysfs._Grouping(cpus)
    for cpu in cpus:
        grouping.add(cpu, shared if cpu < 4 else other)
    assert grouping.labels() == {c: (0 if c < 4 else 4) for c in cpus}
    # A set that names CPUs beyond the machine's, or not the CPU itself, still joins the lister.
    grouping = sysfs._Grouping(cpus)
    grouping.add(0, frozenset({1, 99}))
    grouping.add(2, frozenset({1, 99}))
    grouping.add(5, frozenset())
    assert grouping.labels() == {0: 0, 1: 0, 2: 0, 3: None, 4: None, 5: 5, 6: None, 7: None}
