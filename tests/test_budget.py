"""A time budget (``budget=``, ``--budget SECONDS``): the sweep plans its pairs to fit, stops at the
budget with an honest partial result and never aborts for it. The timing logic runs on a fake clock
that advances only when the fake measurer says time passed; one real tiny run checks the invariants."""

import math

import numpy as np
import pytest

import corelat
from corelat._core.errors import InputError
from corelat._measure import sampling as _sampling
from corelat._measure import smt as _smt
from corelat._measure import sweep as _sweep
from corelat._results.latency import PairFlag
from corelat._system import validate as _validate


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Pairs:
    """A fixed-size pair measurer: each call costs ``cost(a, b)`` fake seconds (default 1 s)."""

    symmetric = True

    def __init__(self, clock, cost=None, latency=None):
        self.clock, self.cost = clock, cost or (lambda a, b: 1.0)
        self.latency = latency or (lambda a, b: 50.0 + 50.0 * (a // 4 != b // 4))
        self.calls = []
        self.rng = np.random.default_rng(0)

    def __call__(self, a, b, k):
        self.calls.append((a, b))
        self.clock.now += self.cost(a, b)
        mu = self.latency(a, b)
        return self.rng.normal(mu, mu * 0.01, k)


class Budgeted(Pairs):
    """A precision-driven measurer that takes a budget per call (as the C kernels do) and never
    meets its target: 1 fake second per 1000 samples."""

    budgeted = True

    def __call__(self, a, b, k, budget=None):
        k = min(k, max(1, int((budget or math.inf) * 1000)))
        self.calls.append((a, b))
        self.clock.now += k / 1000
        return self.rng.normal(50.0, 20.0, k)


@pytest.fixture
def cpus(monkeypatch):
    """16 CPUs to measure (the measurer is a fake; nothing is pinned)."""
    monkeypatch.setattr(_validate, "allowed_cpus", lambda: list(range(16)))
    return list(range(16))


def topology(n=16):
    """2 packages x 2 L3 groups x 4 cores, no SMT."""
    return [{"cpu": c, "package": c // 8, "node": c // 8, "l3": c // 4, "l2": c, "core": c} for c in range(n)]


def lower(n):
    return np.tril(np.ones((n, n), bool), -1)


def assert_partial_invariants(r):
    """Measured, estimated and not reached add up, NaN where not reached, the flags say which."""
    b, n = r.metadata["budget"], r.n
    low = lower(n)
    measured = (r.flags & PairFlag.MEASURED).astype(bool) | (r.flags.T & PairFlag.MEASURED).astype(bool)
    estimated = (r.flags & PairFlag.ESTIMATED).astype(bool)
    missing = (r.flags & PairFlag.NOT_REACHED).astype(bool)
    assert b["pairs"] == n * (n - 1) // 2
    assert b["pairs"] == b["pairs_measured"] + b["pairs_estimated"] + b["pairs_not_reached"]
    assert int(measured[low].sum()) == b["pairs_measured"]
    assert int(estimated[low].sum()) == b["pairs_estimated"]
    assert int(missing[low].sum()) == b["pairs_not_reached"]
    assert (missing == missing.T).all()
    assert not (missing & (measured | estimated)).any()
    assert np.isnan(r.samples[missing]).all()
    assert b["pairs_estimated"] == r.metadata["sampling"]["pairs_estimated"]
    assert not (b["pairs_not_reached"] and b["complete"])
    assert sum("budget" in note for note in r.notes) == 1


# -- the stop rule ------------------------------------------------------------------------------------
def test_a_full_sweep_stops_when_the_time_left_is_less_than_a_pair(cpus):
    clock = FakeClock()
    m = Pairs(clock)
    r = _sweep.measure_with(m, cpus, clock=clock, samples=20, retest=False, budget=3.5)
    # 1 s a pair: after 3 pairs 0.5 s is left, less than what a pair cost: none is started
    assert len(m.calls) == 3 and clock.now == 3.0
    b = r.metadata["budget"]
    assert (b["seconds"], b["used_s"], b["complete"]) == (3.5, 3.0, False)
    assert (b["pairs_measured"], b["pairs_estimated"], b["pairs_not_reached"]) == (3, 0, 117)
    assert_partial_invariants(r)
    assert any("partial result, 3 of 120 pairs measured" in n for n in r.notes)


def test_set_up_counts_against_the_budget(cpus, monkeypatch):
    clock = FakeClock()
    real = _sweep._assemble.topology_metadata

    def slow_set_up():  # the machine's description, read before the first pair, costs 2 fake seconds
        clock.now += 2.0
        return real()

    monkeypatch.setattr(_sweep._assemble, "topology_metadata", slow_set_up)
    m = Pairs(clock)
    r = _sweep.measure_with(m, cpus, clock=clock, samples=20, retest=False, budget=3.5)
    assert len(m.calls) == 1 and r.metadata["budget"]["used_s"] == 3.0


def test_time_spent_before_the_sweep_counts_when_said(cpus):
    from corelat._measure.options import SweepOptions

    clock = FakeClock()
    m = Pairs(clock)
    options = SweepOptions.build(cpus, samples=20, retest=False, budget=3.5)
    r = _sweep.run(options, measurer=m, clock=clock, spent=2.0)  # a command's start-up, say
    assert len(m.calls) == 1 and r.metadata["budget"]["used_s"] == 3.0


def test_the_command_counts_its_start_up():
    from corelat.cli.cmd_measure import process_age

    assert process_age() > 0  # this process started before this test


def test_nothing_measured_is_a_result_not_an_exception(cpus, monkeypatch):
    clock = FakeClock()
    real = _sweep._assemble.topology_metadata

    def slow_set_up():
        clock.now += 5.0
        return real()

    monkeypatch.setattr(_sweep._assemble, "topology_metadata", slow_set_up)
    r = _sweep.measure_with(Pairs(clock), cpus, clock=clock, samples=20, budget=1.0)
    assert r.metadata["budget"]["pairs_measured"] == 0
    assert (r.flags[lower(16)] == PairFlag.NOT_REACHED).all()
    assert_partial_invariants(r)


def test_a_precision_driven_pair_is_capped_by_the_time_left(cpus):
    clock = FakeClock()
    m = Budgeted(clock)
    r = _sweep.measure_with(m, cpus[:4], clock=clock, precision=0.0001, max_samples=10**6,
                            max_time_per_pair=100.0, retest=False, budget=2.5)
    # the first pair may take what is left (2.5 s), not its 100 s cap, and ends the sweep
    assert clock.now <= 2.5 + 1e-9 and r.metadata["budget"]["pairs_measured"] == 1
    assert r.metadata["budget"]["pairs_not_reached"] == 5
    assert_partial_invariants(r)


def test_a_budget_that_suffices_changes_nothing(cpus):
    def sweep(budget):
        clock = FakeClock()
        return _sweep.measure_with(Pairs(clock), cpus[:6], clock=clock, samples=20, budget=budget)

    r = sweep(1000.0)
    b = r.metadata["budget"]
    assert b["complete"] and (b["pairs_measured"], b["pairs_not_reached"]) == (15, 0)
    assert not (r.flags & PairFlag.NOT_REACHED).any() and not np.isnan(r.median[lower(6)]).any()
    assert any("every pair done" in n for n in r.notes)
    assert "budget" not in sweep(None).metadata


def test_re_tests_wait_for_time_left(cpus):
    clock = FakeClock()

    class Unstable(Pairs):
        def __call__(self, a, b, k):
            super().__call__(a, b, k)
            return np.r_[np.full(k // 2, 50.0), np.full(k - k // 2, 150.0)]  # bimodal: a re-test wanted

    r = _sweep.measure_with(Unstable(clock), cpus[:3], clock=clock, samples=40, budget=3.5)
    assert r.metadata["budget"]["pairs_measured"] == 3 and r.metadata["sampling"]["pairs_retested"] == 0
    # Every pair was measured: a re-test left for want of time does not make the result partial
    # (CI's 3.13 run: "complete" False, "a partial result, 1 of 1 pairs measured, 0 not reached").
    b = r.metadata["budget"]
    assert b["complete"] and b["pairs_not_reached"] == 0 and b["retests_left"] == 1
    assert any("every pair done" in n and "1 re-test left" in n for n in r.notes)
    assert_partial_invariants(r)


# -- the order: every class first, the caller's pairs before -------------------------------------------
def test_budget_order_interleaves_the_classes():
    pairs = [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)]
    class_of = {(1, 0): "a", (2, 0): "a", (2, 1): "b", (3, 0): "a", (3, 1): "b", (3, 2): "c"}
    assert _sampling.budget_order(pairs, class_of) == [(1, 0), (2, 1), (3, 2), (2, 0), (3, 1), (3, 0)]
    assert _sampling.budget_order(pairs, class_of, [(3, 0)]) == [(3, 0), (1, 0), (2, 1), (3, 2), (2, 0),
                                                                  (3, 1)]


def test_index_pairs_reads_cpu_ids_and_interleaves_the_callers_classes():
    first = {"smt": [(5, 4), (7, 6)], "package": [(4, 9), (4, 99)], "l3": [(4, 5)]}
    assert _sampling.index_pairs([4, 5, 6, 7, 9], first) == [(1, 0), (4, 0), (3, 2)]
    assert _sampling.index_pairs([4, 5], None) == []


def test_sample_strategy_reaches_every_class_before_a_second_pair_of_any(cpus):
    clock = FakeClock()
    m = Pairs(clock)
    classes = _sampling.pair_classes(cpus, topology=topology())
    r = _sweep.measure_with(m, cpus, clock=clock, samples=20, retest=False, strategy="sample",
                            topology=topology(), budget=len(classes) + 0.5)
    b = r.metadata["budget"]
    assert len(m.calls) == len(classes) == b["classes"] == b["classes_reached"]
    assert b["pairs_not_reached"] == 0 and b["pairs_estimated"] == 120 - len(classes)
    assert_partial_invariants(r)


def test_sample_strategy_leaves_unreached_classes_nan(cpus):
    clock = FakeClock()
    r = _sweep.measure_with(Pairs(clock), cpus, clock=clock, samples=20, retest=False, strategy="sample",
                            topology=topology(), budget=3.5)
    b = r.metadata["budget"]
    assert b["classes_reached"] == 3 < b["classes"] and b["pairs_not_reached"] > 0
    assert_partial_invariants(r)


def test_the_callers_pairs_are_measured_first(cpus):
    clock = FakeClock()
    m = Pairs(clock)
    first = {"across packages": [(15, 0), (9, 1)], "same l3": [(1, 2)]}
    _sweep.measure_with(m, cpus, clock=clock, samples=20, retest=False, budget=3.5, first=first)
    assert m.calls[:3] == [(0, 15), (1, 2), (1, 9)]  # the measurer is called (lower id, higher id)


def test_the_callers_pairs_lead_their_classes_in_the_sample_strategy(cpus):
    clock = FakeClock()
    m = Pairs(clock)
    _sweep.measure_with(m, cpus, clock=clock, samples=20, retest=False, strategy="sample",
                        topology=topology(), budget=1.5, first={"package": [(0, 15)]})
    assert m.calls == [(0, 15)]


# -- bad budgets ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -1, -0.5, math.nan, math.inf, -math.inf, "10", True, [5]])
def test_bad_budgets_are_refused_before_anything_is_measured(cpus, bad):
    clock = FakeClock()
    m = Pairs(clock)
    with pytest.raises(InputError, match="budget"):
        _sweep.measure_with(m, cpus, clock=clock, samples=20, budget=bad)
    assert not m.calls


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "ten", ""])
@pytest.mark.parametrize("command", [[], ["fleet", "-o", "d"]])
def test_bad_budgets_on_the_command_line_exit_2(bad, command, capsys):
    from corelat.cli import main

    assert main([*command, f"--budget={bad}"]) == 2
    assert "--budget" in capsys.readouterr().err


def test_every_sweeping_function_takes_budget():
    import inspect

    for fn in (corelat.measure, corelat.smt, corelat.placement, corelat.measure_fleet):
        assert inspect.signature(fn).parameters["budget"].default is None, fn.__name__
        assert "budget : float | None" in fn.__doc__, fn.__name__


def test_fleet_nodes_measure_within_the_budget(tmp_path):
    from corelat.cli import _parser, cmd_fleet

    lines = tmp_path / "nodes.txt"
    lines.write_text("gpu[01-02] --cpus 0\n")
    args = _parser("fleet", cmd_fleet).parse_args(["--budget", "30", "-o", str(tmp_path),
                                                   "--node-options", str(lines)])
    assert cmd_fleet.cmd_measure.request_options(args).budget == 30.0
    assert [o.budget for _, o in cmd_fleet.node_options(args)] == [30.0]


def test_smt_stops_at_its_budget(monkeypatch):
    clock = FakeClock()

    class Time:
        monotonic = perf_counter = staticmethod(clock)

    monkeypatch.setattr(_smt, "time", Time)

    def busy(cpus, loop, seconds):
        clock.now += 1.0
        return np.full(len(cpus), 1e9)

    rows = [{"cpu": c, "package": 0, "die": 0, "cluster": None, "core": c - c % 2, "core_id": c - c % 2,
             "l2": c - c % 2, "l3": 0, "node": 0, "nodes": (0,), "siblings": (c - c % 2, c - c % 2 + 1),
             "thread": c % 2, "allowed": True, "core_type": None, "capacity": None} for c in range(8)]
    topo = corelat.Topology(rows, root="/made-up")
    r = _smt.smt_with(Pairs(clock), busy, list(range(8)), topology=topo, samples=10, budget=10.5)
    b = r.metadata["budget"]
    assert b["pairs"] == 4 and 0 < b["pairs_measured"] < 4 and not b["complete"]
    assert b["pairs_measured"] + b["pairs_not_reached"] == 4
    assert np.isnan(r.sibling_samples[b["pairs_measured"]:]).all()
    assert any("not reached" in w for w in r.warnings)


# -- on this machine -------------------------------------------------------------------------------------
@pytest.mark.hw
def test_a_real_budget_gives_a_partial_result_with_its_invariants():
    cpus = sorted(corelat.allowed_cpus())[:2]
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    none = corelat.measure(cpus, round_trips=100, budget=1e-6)  # spent by set-up: nothing measured
    assert none.metadata["budget"]["pairs_not_reached"] == 1
    assert_partial_invariants(none)
    r = corelat.measure(cpus, round_trips=100, precision=0.0001, max_time_per_pair=100.0,
                        max_samples=10**6, budget=0.5)  # the one pair is capped by the budget
    b = r.metadata["budget"]
    assert b["pairs_measured"] == 1 and b["complete"]
    assert r.flags[1, 0] & PairFlag.MEASURED and not np.isnan(r.median[1, 0])
    assert_partial_invariants(r)


@pytest.mark.hw
def test_the_command_says_the_budget_in_one_line_and_exits_1_when_nothing_was_measured():
    from conftest import run_cli

    p = run_cli("--cpus", "0,1", "100", "--budget", "1e-6")
    assert p.returncode == 1, p.stderr
    assert p.stderr.count("budget 1e-06 s") == 1 and "nothing measured" in p.stderr
    p = run_cli("--cpus", "0,1", "100", "--budget", "20")
    assert p.returncode == 0, p.stderr
    assert sum(line.startswith("note: budget 20 s") for line in p.stderr.splitlines()) == 1
