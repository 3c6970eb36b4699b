"""corelat.smt: sibling pairs and nearest non-siblings on real topologies (hwloc dumps) with test
doubles for the kernels; the real kernels on two CPUs of this machine; the empty result; the CLI."""

import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ENDS_WITHIN_S, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from leakcheck import assert_flat

import corelat
from corelat import InputError, SMTResult, Topology
from corelat._measure import smt as smt_mod
from corelat._measure.measurers import PairMeasurer
from corelat._system.validate import check_sampling

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")
LOOPS = tuple(smt_mod.LOOPS)


# ---------------------------------------------------------------------------------------------
# Test doubles and topologies


class FakeMeasurer:
    """Latency double: records (cpu_a, cpu_b, samples); siblings 5 ns, others 50 ns + a/1000."""

    def __init__(self, topo):
        self.core = {r["cpu"]: r["core"] for r in topo.records()}
        self.calls = []

    def __call__(self, a, b, samples):
        self.calls.append((a, b, samples))
        value = 5.0 if self.core[a] == self.core[b] else 50.0 + a / 1000
        return np.full(samples, value)


class FakeBusy:
    """Throughput double: records (cpus, loop, duration); alone 1e9 (alu) / 1e8 (mem) per second,
    divided by the number of threads running together."""

    def __init__(self):
        self.calls = []
        self.rate = {"alu": 1e9, "mem": 1e8}

    def __call__(self, cpus, loop, duration):
        self.calls.append((tuple(cpus), loop, duration))
        return np.full(len(cpus), self.rate[loop] / len(cpus))


def run_fake(topo, cpus=None, **kw):
    m, b = FakeMeasurer(topo), FakeBusy()
    kw.setdefault("samples", 4)
    kw.setdefault("duration", 0.01)
    r = smt_mod.smt_with(m, b, cpus, topology=topo, **kw)
    return r, m, b


@pytest.fixture(scope="session")
def dump(hwloc_topology):
    """NAME -> Topology of the hwloc dump NAME (unpacked and read once a session by
    tests/conftest.py; reading must not warn)."""
    return lambda name: hwloc_topology(name, strict=True)


def synthetic(spec, root="synthetic"):
    """A Topology from ``{cpu: (package, node, l3, l2, core)}``; siblings are the CPUs of a core."""
    cores = {}
    for cpu, (_, _, _, _, core) in spec.items():
        cores.setdefault(core, []).append(cpu)
    rows = []
    for cpu, (package, node, l3, l2, core) in spec.items():
        siblings = tuple(sorted(cores[core]))
        rows.append({"cpu": cpu, "package": package, "die": 0, "cluster": l2, "core": core, "core_id": core,
                     "l2": l2, "l3": l3, "node": node, "nodes": (node,), "siblings": siblings,
                     "thread": siblings.index(cpu), "allowed": True})
    return Topology(rows, root=root)


#: 12 CPUs, 6 two-thread cores: (0,1) and (2,3) share an L2; (4,5) shares only the L3 with them;
#: (6,7) only the node; (10,11) only the package (another node); (8,9) nothing (another package).
LEVELS = synthetic({
    0: (0, 0, 0, 0, 0), 1: (0, 0, 0, 0, 0), 2: (0, 0, 0, 0, 2), 3: (0, 0, 0, 0, 2),
    4: (0, 0, 0, 4, 4), 5: (0, 0, 0, 4, 4), 6: (0, 0, 6, 6, 6), 7: (0, 0, 6, 6, 6),
    10: (0, 2, 10, 10, 10), 11: (0, 2, 10, 10, 10), 8: (1, 1, 8, 8, 8), 9: (1, 1, 8, 8, 8),
})


# ---------------------------------------------------------------------------------------------
# Pair selection on real topologies


def test_32intel64_siblings_n_and_n_plus_16(dump):
    topo = dump("32intel64-2p8co2t+8ve")
    r, m, b = run_fake(topo)
    pairs = [(n, n + 16) for n in range(16)]
    assert r.pairs.tolist() == [list(p) for p in pairs]
    # Nearest non-sibling: the next core in the same L3 (each core has its own L2), wrapping
    # around within the package.
    expect = [n + 1 if n % 8 != 7 else n - 7 for n in range(16)]
    assert r.partners.tolist() == expect
    assert r.partner_levels == ("l3",) * 16
    # Each sibling pair and each (cpu, partner) measured once, with the pair's first CPU timing.
    assert sorted(m.calls) == sorted([(a, b_, 4) for a, b_ in pairs]
                                     + [(n, p, 4) for n, p in zip(range(16), expect)])
    # Each CPU alone once per loop, each pair together once per loop; nothing else.
    alone = {((c,), loop) for c in range(32) for loop in LOOPS}
    together = {(p, loop) for p in pairs for loop in LOOPS}
    assert sorted((c, loop) for c, loop, _ in b.calls) == sorted(alone | together)
    assert all(d == 0.01 for _, _, d in b.calls)
    assert np.all(r.sibling_latency == 5.0)
    assert np.allclose(r.nonsibling_latency, [50 + n / 1000 for n in range(16)])
    assert r.alone.shape == r.together.shape == (16, 2, len(LOOPS))
    assert np.all(r.slowdown == 2.0)
    assert isinstance(r, SMTResult)
    assert r.reason is None and not r.empty and len(r) == 16 and r.warnings == ()
    assert r.metadata["topology_summary"] == topo.headline()


@pytest.mark.slow
def test_256ppc_smt4_all_pairs_within_a_core(dump):
    topo = dump("256ppc-8n8s4t")
    r, m, b = run_fake(topo, samples=2)
    cores = [tuple(range(c, c + 4)) for c in range(0, 256, 4)]
    assert r.pairs.tolist() == [list(p) for core in cores for p in itertools.combinations(core, 2)]
    assert len(r) == 64 * 6
    # Every core is its own package and L3, 8 cores per NUMA node: the partner is the next core's
    # first thread in the same node, the node's last core wrapping to its first.
    first = r.pairs[:, 0]
    core_start = first - first % 4
    node_start = first - first % 32
    expect = np.where(core_start % 32 == 28, node_start, core_start + 4)
    assert r.partners.tolist() == expect.tolist()
    assert set(r.partner_levels) == {"node"}
    # Non-sibling latency once per (first CPU, partner): threads 0, 1 and 2 of each core.
    nonsib = [(a, p) for a, p, _ in m.calls if m.core[a] != m.core[p]]
    assert len(nonsib) == len(set(nonsib)) == 64 * 3
    assert len([c for c in b.calls if len(c[0]) == 1]) == 256 * len(LOOPS)


def test_256ppc_selection(dump):
    topo = dump("256ppc-8n8s4t")
    r, m, _ = run_fake(topo, "0,1,2,4,5")
    assert r.pairs.tolist() == [[0, 1], [0, 2], [1, 2], [4, 5]]
    assert r.partners.tolist() == [4, 4, 4, 0]
    assert r.cpus == (0, 1, 2, 4, 5)
    assert {c for a, b_, _ in m.calls for c in (a, b_)} <= {0, 1, 2, 4, 5}


def test_hybrid_p_cores_only(dump):
    topo = dump("20em64t-hybrid-1p6c2t+2ca4co1t")
    r, _, b = run_fake(topo)
    assert r.pairs.tolist() == [[c, c + 1] for c in range(0, 12, 2)]
    # The last P-core's nearest other core in the shared L3 is the first E-core.
    assert r.partners.tolist() == [2, 4, 6, 8, 10, 12]
    assert r.partner_levels == ("l3",) * 6
    assert {c for cpus, _, _ in b.calls for c in cpus} == set(range(12))  # no E-core runs alone


def test_no_siblings_in_selection(dump):
    topo = dump("32intel64-2p8co2t+8ve")
    r, m, b = run_fake(topo, "0-7")
    assert r.empty and len(r) == 0 and m.calls == [] and b.calls == []
    assert "no two of the selected CPUs (0-7) are SMT siblings" in r.reason
    assert r.table().startswith("Hyper-threads: none to measure: no two of the selected CPUs")
    assert r.sibling_samples.shape == (0, 4) and r.alone.shape == (0, 2, len(LOOPS))


def test_dump_without_smt_is_empty(dump):
    r, m, _ = run_fake(dump("48amd64-4pa2n6c-sparse"))
    assert r.empty and m.calls == []
    assert r.reason.startswith("no SMT siblings: every core runs one thread")


def test_pair_without_partner(dump):
    r, m, _ = run_fake(dump("32intel64-2p8co2t+8ve"), [16, 0])
    assert r.pairs.tolist() == [[0, 16]] and r.partners.tolist() == [-1] and r.partner_levels == ("",)
    assert np.isnan(r.nonsibling_samples).all() and np.isnan(r.nonsibling_latency[0])
    assert m.calls == [(0, 16, 4)]
    assert r.warnings == ()  # no partner is not a dropped sample
    line = next(x for x in r.table().splitlines() if x.lstrip().startswith("0,16"))
    assert " - " in line


@pytest.mark.parametrize(
    "cpus, partner, level",
    [("0,1,2,4,6", 2, "l2"), ("0,1,4,6", 4, "l3"), ("0,1,6,10", 6, "node"), ("0,1,10,8", 10, "package"),
     ("0,1,8", 8, "any")],
)
def test_nearest_levels(cpus, partner, level):
    r, _, _ = run_fake(LEVELS, cpus)
    assert r.pairs[0].tolist() == [0, 1]
    assert (int(r.partners[0]), r.partner_levels[0]) == (partner, level)
    assert smt_mod.nearest_partner(LEVELS, 0, [int(c) for c in cpus.split(",")]) == (partner, level)


def test_nearest_partner_defaults_and_none():
    assert smt_mod.nearest_partner(LEVELS, 0) == (2, "l2")
    assert smt_mod.nearest_partner(LEVELS, 0, [1]) == (None, None)
    assert smt_mod.nearest_partner(LEVELS, 3) == (0, "l2")  # wraps around, skipping its sibling


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 31), min_size=1, max_size=32))
def test_selection_properties(dump, chosen):
    """For any CPU selection: exactly the sibling pairs inside it; partners on another core,
    inside it, and none nearer than the level reported."""
    topo = dump("32intel64-2p8co2t+8ve")
    rows = {x["cpu"]: x for x in topo.records()}
    r, _, _ = run_fake(topo, sorted(chosen), samples=1)
    want = {(a, b) for a in chosen for b in chosen if a < b and rows[a]["core"] == rows[b]["core"]}
    assert {tuple(p) for p in r.pairs.tolist()} == want
    order = ("l2", "l3", "node", "package", "any")
    for (a, _), p, level in zip(r.pairs.tolist(), r.partners.tolist(), r.partner_levels):
        others = [c for c in chosen if rows[c]["core"] != rows[a]["core"]]
        if not others:
            assert p == -1 and level == ""
            continue
        assert p in others
        if level != "any":
            assert rows[p][level] == rows[a][level]
        nearer = order[: order.index(level)]
        assert not any(rows[c][lv] == rows[a][lv] for c in others for lv in nearer)


def test_arguments_are_validated(dump):
    topo = dump("32intel64-2p8co2t+8ve")
    bad = [
        {"kernel": "oneway"}, {"kernel": "nope"}, {"round_trips": 0}, {"samples": 0},
        {"duration": 0}, {"duration": "x"}, {"timeout": -1}, {"cpus": "0,99"}, {"cpus": [0, 0]},
        {"cpus": ["a"]}, {"cpus": "x"},
    ]
    for kw in bad:
        with pytest.raises(InputError):
            run_fake(topo, **{"cpus": None, **kw})
    with pytest.raises(TypeError):
        corelat.smt(topology="/")


# ---------------------------------------------------------------------------------------------
# The result object


def test_result_is_frozen(dump):
    r, _, _ = run_fake(dump("32intel64-2p8co2t+8ve"), "0-1,16-17")
    for name in ("pairs", "partners", "sibling_samples", "nonsibling_samples", "alone", "together"):
        with pytest.raises(ValueError):
            getattr(r, name)[...] = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.kernel = "rw"
    with pytest.raises(TypeError):
        r.metadata["kernel"] = "rw"
    with pytest.raises(ValueError, match="alone must have shape"):
        dataclasses.replace(r, alone=np.zeros((1, 2, 2)))


def test_table_layout(dump):
    r, _, _ = run_fake(dump("32intel64-2p8co2t+8ve"), "0-1,16-17", kernel="rw")
    text = r.table()
    lines = text.splitlines()
    assert lines[0] == "Hyper-threads: 2 pairs of SMT siblings"
    assert "Kernel: rw" in text and "round-trip time / 2" in text
    header = next(x for x in lines if x.lstrip().startswith("CPUs"))
    for col in ("sibling", "non-sibling", "alu alone", "mem alone", "slowdown"):
        assert col in header
    row = next(x for x in lines if x.lstrip().startswith("0,16")).split()
    assert row[:5] == ["0,16", "5.0", "1", "(L3)", "50.0"]
    assert row[5:] == ["1000", "500", "2.00x", "100", "50.0", "2.00x"]
    assert lines[-1].startswith("Median over pairs: sibling 5.0 ns")
    assert [x["cpus"] for x in r.records()] == [(0, 16), (1, 17)]


# ---------------------------------------------------------------------------------------------
# This machine


def _live_has_smt():
    return bool(corelat.topology().smt_groups(corelat.topology().allowed))


def test_empty_result_on_this_machine():
    if _live_has_smt():
        pytest.skip("this machine has SMT siblings")
    r = corelat.smt(round_trips=10, samples=3)
    assert r.empty and r.reason and r.reason.startswith("no ")
    assert r.table().startswith(f"Hyper-threads: none to measure: {r.reason}")
    assert r.pairs.shape == (0, 2) and r.sibling_samples.shape == (0, 3)
    assert r.metadata["parameters"]["samples"] == 3 and r.cpus == tuple(CPUS)


@pytest.mark.hw
@needs2
@pytest.mark.parametrize("kernel", ["cas", "rw"])
def test_real_kernels_on_two_cpus(kernel):
    """The measuring path of smt() on two CPUs of this machine (siblings or not)."""
    a, b = CPUS[:2]

    def busy(cpus, loop, duration):
        return smt_mod.throughput(cpus, loop, duration=duration, timeout=5.0)

    data = smt_mod._measure_pairs([(a, b)], [b], PairMeasurer(kernel, 20, 1, 5.0), busy,
                                  check_sampling(5), 0.005,
                                  LOOPS)
    for key in ("sibling", "nonsibling"):
        assert data[key].shape == (1, 5)
        assert np.all(np.isfinite(data[key]) & (data[key] > 0))
    for key in ("alone", "together"):
        assert data[key].shape == (1, 2, len(LOOPS))
        assert np.all(np.isfinite(data[key]) & (data[key] > 0))


@pytest.mark.hw
@needs2
def test_throughput_kernel():
    a, b = CPUS[:2]
    corelat.timer_info()
    ext = smt_mod.extension()
    assert ext.SMT_LOOPS == LOOPS
    for loop in LOOPS:
        iterations, ticks = ext.smt_throughput([a, b], LOOPS.index(loop), 0.005, 5.0, smt_mod.MEM_BYTES)
        assert iterations.dtype == ticks.dtype == np.uint64 and iterations.shape == (2,)
        assert np.all(iterations > 0) and np.all(ticks > 0)
        rate = smt_mod.throughput([a], loop, duration=0.005)
        assert rate.shape == (1,) and np.isfinite(rate[0]) and rate[0] > 0
    for kw in ({"loop": "fpu"}, {"duration": 0}, {"duration": 61}, {"timeout": 0}):
        with pytest.raises(InputError):
            smt_mod.throughput([a], **{"loop": "alu", **kw})
    with pytest.raises(InputError):
        smt_mod.throughput([a, 10_000])
    with pytest.raises(ValueError):
        ext.smt_throughput([a], 0, 0.005, 1.0, 100)  # not a multiple of a cache line


@pytest.mark.hw
@needs2
def test_smt_end_to_end_with_a_fake_sibling_pair():
    """smt()'s own measurer and busy loops, told that two CPUs of this machine are siblings."""
    a, b = CPUS[:2]
    topo = synthetic({a: (0, 0, 0, 0, 0), b: (0, 0, 0, 0, 0)})
    r = corelat.smt(topology=topo, kernel="rw", round_trips=20, samples=5, duration=0.005, timeout=5.0)
    assert r.pairs.tolist() == [[a, b]] and r.partners.tolist() == [-1]
    assert np.all(r.sibling_samples > 0) and np.isnan(r.nonsibling_samples).all()
    assert np.all(np.isfinite(r.slowdown) & (r.slowdown > 0))
    assert r.metadata["timer"]["ticks_per_ns"] > 0
    assert f"{a},{b}" in r.table()


@pytest.mark.hw
@needs2
def test_throughput_kernel_does_not_leak():
    """Thousands of calls of the C entry point, success and error paths: flat blocks and RSS."""
    corelat.timer_info()
    ext = smt_mod.extension()
    a, b = CPUS[:2]
    loops = itertools.cycle((0, 1))

    def three_calls():  # success with each loop in turn, a bad CPU, a bad loop
        out = ext.smt_throughput([a, b], next(loops), 1e-4, 5.0, smt_mod.MEM_BYTES)
        assert [sys.getrefcount(x) for x in out] == [3, 3]  # the tuple, the argument, x
        for cpus, loop, error in (([a, 10_000], 0, corelat.MeasurementError), ([a], 7, ValueError)):
            try:
                ext.smt_throughput(cpus, loop, 1e-4, 5.0, smt_mod.MEM_BYTES)
            except error:
                pass
            else:
                raise AssertionError("expected an error")

    # a leak of one object on any path adds >= 500 blocks a round; of the 64 KiB buffers, >= 32 MiB
    assert_flat(three_calls, 500, warm=50, max_blocks=250, max_rss_kib=2048)



@pytest.mark.hw
@pytest.mark.signals
@needs2
def test_sigint_stops_a_long_busy_loop():
    """A 60 s busy loop ends within a second of Ctrl-C, as KeyboardInterrupt."""
    a, b = CPUS[:2]
    code = (
        "import corelat\n"
        "from corelat._measure import smt\n"
        "corelat.timer_info()\n"
        "print('go', flush=True)\n"
        "try:\n"
        f"    smt.throughput([{a}, {b}], 'mem', duration=60)\n"
        "except KeyboardInterrupt:\n"
        "    raise SystemExit(42)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "go\n"
        time.sleep(0.5)  # inside the C call
        assert p.poll() is None
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()  # also when an assertion failed before communicate(): no ResourceWarning
        p.stderr.close()  # blamed on whichever test runs next
    assert p.returncode == 42, err
    assert took < ENDS_WITHIN_S, f"took {took:.2f} s to stop"


# ---------------------------------------------------------------------------------------------
# CLI


def test_cli_on_this_machine():
    if _live_has_smt():
        pytest.skip("this machine has SMT siblings")
    p = run_cli("smt", "--kernel", "rw", 10, 3)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Hyper-threads: none to measure: no ")
    assert "Topology: " in p.stdout and p.stderr == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (["0"], "round_trips must be between"),
        (["10", "x"], "invalid int value"),
        (["--kernel", "oneway"], "invalid choice"),
        (["--cpus", "0,99999"], "not available to this process"),
        (["--duration", "0"], "duration must be between"),
    ],
)
def test_cli_bad_input(args, message):
    p = run_cli("smt", *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip().splitlines()[-1].startswith(("corelat: error:", "corelat smt: error:"))
    assert message in p.stderr and "Traceback" not in p.stderr and p.stdout == ""


def test_precision_driven_like_measure(dump):
    # samples=None samples each latency as measure() does: here quiet stand-in values meet ±2 %
    # in the first chunk; a noisy pair gets more, up to max_samples, the rest of its row NaN.
    topo = dump("32intel64-2p8co2t+8ve")

    class Noisy(FakeMeasurer):
        def __call__(self, a, b, samples):
            out = super().__call__(a, b, samples)
            if a == 0 and b == 16:  # one sibling pair is noisy: it never reaches ±0.1 %
                out = out * np.random.default_rng(len(self.calls)).uniform(0.5, 1.5, samples)
            return out

    m = Noisy(topo)
    r = smt_mod.smt_with(m, FakeBusy(), None, topology=topo, samples=None, precision=0.001, max_samples=80,
                         duration=0.01)
    taken = (~np.isnan(r.sibling_samples)).sum(axis=1)
    assert taken[0] == 80 and (taken[1:] == 32).all()  # the noisy pair to its cap, the others one chunk
    assert r.sibling_samples.shape == (16, 80) and r.warnings == ()  # NaN padding is not "dropped"
    params = r.metadata["parameters"]
    assert (params["precision"], params["max_samples"]) == (0.001, 80) and "samples" not in params
    assert "sampled until the median is within ±0.1%" in r.table()
    with pytest.raises(InputError, match="samples=None"):
        smt_mod.smt_with(m, FakeBusy(), None, topology=topo, samples=10, precision=0.05)
