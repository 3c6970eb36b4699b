"""corelat.place and `corelat place`: where to put k threads, read off published matrices (the gallery
shipped with the package), checked against a brute-force optimum on small matrices (issue 37)."""

import csv
import itertools
import math
import pathlib

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from machines import machine

import corelat
from corelat._analysis import place as _place

GALLERY = pathlib.Path(corelat.__file__).parent / "examples" / "gallery"
C2C = GALLERY / "core-to-core-latency"
RYZEN = C2C / "AMD Ryzen 9 5950X @ 3.40 GHz.csv"
DUAL_XEON = C2C / "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv"
ALDER_LAKE = C2C / "Intel Core i9-12900K.csv"


def _index():
    with open(GALLERY / "index.csv", newline="", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f)}


def _groups(result, level=-1):
    """The latency groups (CPU id sets) of a level of the matrix's structure, coarsest by default."""
    return [set(g) for g in corelat.structure(result).levels[level].groups]


def _siblings(result):
    return [set(p) for p in corelat.structure(result).smt_pairs]


def _one_thread_per_core(result, cpus):
    return all(len(set(cpus) & pair) <= 1 for pair in _siblings(result))


def _worst(m, idx):
    return max((m[i][j] for i, j in itertools.combinations(idx, 2)), default=-math.inf)


def _brute(m, k, goal="close"):
    """The optimum by enumeration: least worst pair (close) or largest smallest pair (spread)."""
    combos = itertools.combinations(range(len(m)), k)
    if goal == "close":
        return min(_worst(m, c) for c in combos)
    return max(min((m[i][j] for i, j in itertools.combinations(c, 2)), default=math.inf) for c in combos)


# -- published machines ---------------------------------------------------------------------------


def test_the_files_are_the_machines_the_tests_say():
    index = _index()
    assert index[f"core-to-core-latency/{RYZEN.name}"]["cpus"] == "32"
    assert index[f"core-to-core-latency/{DUAL_XEON.name}"]["sockets"] == "2"
    assert index[f"core-to-core-latency/{ALDER_LAKE.name}"]["cores"] == "8P+8E"


def test_ryzen_two_ccds_close_8_stays_in_one_ccd_one_thread_per_core():
    r = corelat.load(RYZEN)
    ccds = _groups(r)
    assert len(ccds) == 2 and all(len(g) == 16 for g in ccds)  # 8 cores x 2 threads each
    p = corelat.place(r, 8)
    assert len(p.cpus) == 8 and len(set(p.cpus)) == 8
    assert any(set(p.cpus) <= g for g in ccds)
    assert _one_thread_per_core(r, p.cpus)
    # the worst pair inside one CCD is below every pair across the CCDs
    across = min(r.median[r.cpus.index(a), r.cpus.index(b)] for a in ccds[0] for b in ccds[1])
    assert p.worst < across


def test_dual_socket_xeon_close_16_stays_in_one_socket():
    r = corelat.load(DUAL_XEON)
    sockets = _groups(r)
    assert len(sockets) == 2
    p = corelat.place(r, 16)
    assert any(set(p.cpus) <= g for g in sockets)
    assert _one_thread_per_core(r, p.cpus)


def test_dual_socket_spread_2_crosses_the_sockets():
    r = corelat.load(DUAL_XEON)
    sockets = _groups(r)
    p = corelat.place(r, 2, goal="spread")
    assert p.goal == "spread"
    assert not any(set(p.cpus) <= g for g in sockets)
    assert p.best == p.worst  # one pair


def test_alder_lake_close_8_is_the_p_cores_one_thread_each():
    r = corelat.load(ALDER_LAKE)
    p_cores = {c for pair in _siblings(r) for c in pair}  # the P-cores are the cores with SMT
    assert len(p_cores) == 16
    p = corelat.place(r, 8)
    assert set(p.cpus) <= p_cores
    assert _one_thread_per_core(r, p.cpus)


def test_smt_true_allows_siblings_and_picks_them_when_they_are_closest():
    r = corelat.load(ALDER_LAKE)
    p = corelat.place(r, 2, smt=True)
    assert set(p.cpus) in _siblings(r)
    assert corelat.place(r, 2).worst > p.worst


@pytest.mark.parametrize("path", [RYZEN, DUAL_XEON, ALDER_LAKE], ids=["ryzen", "xeon", "alderlake"])
def test_the_figures_are_the_chosen_pairs_and_close_beats_the_naive_choice(path):
    r = corelat.load(path)
    for k in (2, 4, 8):
        p = corelat.place(r, k)
        worst, median, best = _place.pair_latencies(r, p.cpus)
        assert (p.worst, p.median, p.best) == (worst, median, best)
        assert p.best <= p.median <= p.worst
        naive = _place.pair_latencies(r, tuple(r.cpus[::2][:k]))  # one thread per core, either numbering
        assert p.worst <= naive[0] or not _one_thread_per_core(r, r.cpus[::2][:k])
        s = corelat.place(r, k, goal="spread")
        assert s.best >= p.best and s.best >= corelat.place(r, k).best


# -- the cores a topology names ---------------------------------------------------------------------


def test_the_topology_names_the_cores_when_the_result_has_one():
    with_topology = machine()  # 32 CPUs, siblings (0,1), (2,3), ...: 16 cores
    p = corelat.place(with_topology, 16)
    assert p.cpus == tuple(range(0, 32, 2))
    with pytest.raises(corelat.InputError, match="16 cores"):
        corelat.place(with_topology, 17)
    # the same CPUs flat (no sibling is faster than the rest): the topology still says cores
    flat = np.full((32, 32), 30.0)
    md = dict(with_topology.metadata)
    r = corelat.LatencyResult.from_matrix(flat, with_topology.cpus, metadata=md)
    with pytest.raises(corelat.InputError, match="16 cores"):
        corelat.place(r, 17)
    assert len(corelat.place(r, 17, smt=True).cpus) == 17
    # without a topology, a flat matrix shows no siblings: 32 cores
    assert len(corelat.place(corelat.LatencyResult.from_matrix(flat), 17).cpus) == 17


# -- the value --------------------------------------------------------------------------------------


def test_the_paste_ready_forms():
    m = np.full((6, 6), 50.0)
    p = _place.ThreadPlacement((0, 2, 3, 4), 1.0, 1.0, 1.0, "close")
    assert p.taskset == "taskset -c 0,2,3,4"
    assert p.numactl == "numactl --physcpubind=0,2,3,4"
    assert p.omp_places == "OMP_PLACES={0},{2},{3},{4}"
    assert p.srun == "srun --cpu-bind=map_cpu:0,2,3,4"
    assert p.selector == "0,2-4"
    # the selector reads back as the same CPUs in corelat's own syntax
    from corelat._system import cpulist

    assert cpulist.parse(p.selector) == [0, 2, 3, 4]
    q = corelat.place(corelat.LatencyResult.from_matrix(m), 3)
    with pytest.raises(AttributeError):
        q.cpus = (1,)  # frozen


def test_one_cpu_has_no_pair():
    p = corelat.place(corelat.LatencyResult.from_matrix(np.full((3, 3), 40.0)), 1)
    assert len(p.cpus) == 1 and math.isnan(p.worst) and math.isnan(p.median) and math.isnan(p.best)


def test_k_equal_to_the_cores_takes_them_all():
    r = corelat.LatencyResult.from_matrix(np.full((5, 5), 40.0), [3, 5, 7, 9, 11])
    assert corelat.place(r, 5).cpus == (3, 5, 7, 9, 11)


def test_an_unmeasured_pair_is_avoided():
    m = np.full((4, 4), 50.0)
    m[0, 1] = m[1, 0] = np.nan
    m[0, 2] = m[2, 0] = 20.0  # fast, not as fast as siblings
    p = corelat.place(corelat.LatencyResult.from_matrix(m), 3)
    assert not {0, 1} <= set(p.cpus)


@pytest.mark.parametrize("kwargs, match", [
    ({"k": 0}, "at least 1"),
    ({"k": -3}, "at least 1"),
    ({"k": 5}, "cannot choose 5"),
    ({"k": 2, "goal": "far"}, "goal must be"),
])
def test_bad_input_raises_input_error(kwargs, match):
    r = corelat.LatencyResult.from_matrix(np.full((4, 4), 40.0))
    with pytest.raises(corelat.InputError, match=match):
        corelat.place(r, **kwargs)


def test_bad_types_and_nan_only_matrices():
    r = corelat.LatencyResult.from_matrix(np.full((4, 4), 40.0))
    for k in (2.5, "2", True):
        with pytest.raises(corelat.InputTypeError):
            corelat.place(r, k)
    with pytest.raises(corelat.InputTypeError):
        corelat.place(machine().metadata, 2)
    empty = corelat.LatencyResult.from_matrix(np.full((4, 4), np.nan))
    with pytest.raises(corelat.InputError, match="no measured pair"):
        corelat.place(empty, 2)


# -- against brute force ------------------------------------------------------------------------------


def _random_symmetric(n, seed, levels=6):
    rng = np.random.default_rng(seed)
    a = rng.integers(1, levels + 1, (n, n)).astype(float) * 10.0  # few values: ties happen
    a = np.triu(a, 1)
    return a + a.T


@settings(max_examples=150, deadline=None)
@given(n=st.integers(2, 8), k_frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1),
       goal=st.sampled_from(["close", "spread"]))
def test_place_is_the_brute_force_optimum_on_small_matrices(n, k_frac, seed, goal):
    # Up to 16 candidates place() enumerates every choice: exact, whatever the matrix.
    m = _random_symmetric(n, seed)
    k = 1 + round(k_frac * (n - 1))
    p = corelat.place(corelat.LatencyResult.from_matrix(m), k, goal=goal, smt=True)
    assert len(p.cpus) == k
    if k == 1:
        return
    want = _brute(m.tolist(), k, goal)
    assert (p.worst if goal == "close" else p.best) == want


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 8), k_frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_the_heuristic_is_never_worse_than_the_naive_choice_nor_better_than_the_optimum(n, k_frac, seed):
    # The heuristic (what runs above 16 candidates) called directly on small matrices: it is not
    # exact on arbitrary ones, so only its bounds are asserted here.
    m = _random_symmetric(n, seed, levels=50)
    k = 2 + round(k_frac * (n - 2))
    cost = _place._cost(m.copy(), "close")
    got = _place._heuristic(cost, k)
    assert len(set(got)) == k
    assert _brute(m.tolist(), k) <= _worst(m, got) <= _worst(m, range(k))


@settings(max_examples=40, deadline=None)
@given(groups=st.integers(2, 6), size=st.integers(2, 8), k_frac=st.floats(0, 1),
       seed=st.integers(0, 2**32 - 1))
def test_the_heuristic_is_optimal_on_block_structured_matrices(groups, size, k_frac, seed):
    # Caches, dies, sockets: pairs inside a group all faster than any across. The optimum lies inside
    # one group (k <= size); the best group's brute-force optimum is the answer.
    rng = np.random.default_rng(seed)
    n = groups * size
    perm = rng.permutation(n)  # groups scattered over the numbering
    group_of = np.empty(n, dtype=int)
    group_of[perm] = np.repeat(np.arange(groups), size)
    same = group_of[:, None] == group_of[None, :]
    a = np.where(same, rng.uniform(10, 20, (n, n)), rng.uniform(50, 90, (n, n)))
    a = np.triu(a, 1)
    m = a + a.T
    k = 2 + round(k_frac * (size - 2))
    got = _place._heuristic(_place._cost(m.copy(), "close"), k)
    members = [np.flatnonzero(group_of == i) for i in range(groups)]
    optimum = min(_brute(m[np.ix_(g, g)].tolist(), k) for g in members)
    assert len(set(group_of[got])) == 1
    assert _worst(m, got) == optimum


def test_a_large_block_matrix_goes_through_the_heuristic_and_stays_in_one_group():
    n, size = 64, 16
    m = np.full((n, n), 100.0)
    for g in range(0, n, size):
        m[g:g + size, g:g + size] = 30.0
    m[32:48, 32:48] = 25.0
    assert math.comb(n, 8) * 64 > _place.EXACT_LIMIT
    p = corelat.place(corelat.LatencyResult.from_matrix(m), 8)
    assert set(p.cpus) <= set(range(32, 48)) and p.worst == 25.0
    s = corelat.place(corelat.LatencyResult.from_matrix(m), 4, goal="spread")
    assert len({c // size for c in s.cpus}) == 4


# -- the command ----------------------------------------------------------------------------------------


def test_cli_prints_the_cpus_the_figures_and_the_lines_to_paste():
    proc = run_cli("place", str(ALDER_LAKE), "--threads", "8")
    assert proc.returncode == 0, proc.stderr
    p = corelat.place(corelat.load(ALDER_LAKE), 8)
    out = proc.stdout
    for line in (p.taskset, p.numactl, p.omp_places, p.srun, f"corelat --cpus {p.selector}"):
        assert line in out.splitlines()
    assert "chosen" in out and "first 8" in out and "worst" in out and "median" in out and "best" in out
    assert f"{p.worst:.1f} ns" in out


def test_cli_spread_and_smt():
    proc = run_cli("place", str(DUAL_XEON), "--threads", "2", "--spread")
    assert proc.returncode == 0, proc.stderr
    assert corelat.place(corelat.load(DUAL_XEON), 2, goal="spread").taskset in proc.stdout
    proc = run_cli("place", str(ALDER_LAKE), "--threads", "2", "--smt")
    assert proc.returncode == 0, proc.stderr
    assert corelat.place(corelat.load(ALDER_LAKE), 2, smt=True).taskset in proc.stdout


@pytest.mark.parametrize("args", [
    ["--threads", "0"],
    ["--threads", "99"],
    ["--threads", "x"],
    ["--threads", "2", "--spread", "--smt", "--no-such-option"],
    [],
])
def test_cli_bad_input_exits_2_with_one_line(args):
    proc = run_cli("place", str(ALDER_LAKE), *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_cli_a_file_that_is_no_matrix_exits_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a\nmatrix\n")
    for path in (str(bad), str(tmp_path / "missing.csv"), str(C2C / "published.csv")):
        proc = run_cli("place", path, "--threads", "2")
        assert proc.returncode == 2, (path, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
