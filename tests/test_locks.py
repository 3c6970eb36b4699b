"""Lock and atomic kernels: mutual exclusion, selection, arithmetic, table, bad input, Ctrl-C.

Hardware runs are tiny (tens of ms per test) and assert invariants only, never a time.
"""

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ENDS_WITHIN_S, interrupt_when_measuring
from hypothesis import given, settings
from hypothesis import strategies as st
from leakcheck import assert_flat

from corelat._core.errors import InputError
from corelat._measure.locks import (
    HIDDEN_TESTS,
    TESTS,
    LockResult,
    list_tests,
    locks,
    select_tests,
    summarise,
)
from corelat._results.locks_names import COUNTED, describe, other_arch

CPUS = sorted(os.sched_getaffinity(0))
#: Valgrind runs one thread at a time, so no two threads ever race (and a broken lock goes unseen).
UNDER_VALGRIND = "vgpreload" in os.environ.get("LD_PRELOAD", "")
SHORT = 0.02
CHECKED = [n for n in TESTS if n != "baseline"]
#: The tests listed on this machine (instruction tests of another architecture left out).
HERE = [n for n in TESTS if n not in other_arch()]


def _ext():
    from corelat import _corelat

    return _corelat


def _assert_exclusive(result):
    """Every lock kept its counter equal to the calls completed, and did run (or says why not)."""
    for row in result.data:
        if row["why"]:
            assert row["sections"] == 0 and not row["checked"] and np.isnan(row["avg_ns"]), row["name"]
            continue
        assert row["sections"] > 0, row["name"]
        if row["checked"]:
            assert row["counter"] == row["sections"], f"{row['name']}: {row['counter']} != {row['sections']}"
            assert row["exclusive"]
    assert result.violations == ()


# -- mutual exclusion on this machine's CPUs ---------------------------------------------------


@pytest.fixture(scope="module")
def shared_run():
    return locks(CPUS, shared=True, duration=SHORT)


@pytest.fixture(scope="module")
def own_run():
    return locks(CPUS, shared=False, duration=SHORT)


@pytest.mark.hw
def test_every_lock_excludes_when_shared(shared_run):
    assert shared_run.tests == tuple(HERE)
    assert shared_run.shared and shared_run.mode == "shared"
    _assert_exclusive(shared_run)


@pytest.mark.hw
def test_every_lock_counts_right_uncontended(own_run):
    assert not own_run.shared and own_run.mode == "uncontended"
    _assert_exclusive(own_run)


@pytest.mark.hw
@pytest.mark.parametrize("shared", [True, False])
def test_rows_and_threads_are_consistent(shared_run, own_run, shared):
    r = shared_run if shared else own_run
    ran = [str(row["name"]) for row in r.data if not row["why"]]
    nt, n = len(ran), len(CPUS)
    assert r.cpus == tuple(CPUS)
    assert r.data.shape == (len(HERE),) and r.threads.shape == (nt * n,)
    assert list(r.threads["cpu"]) == CPUS * nt
    assert (r.threads["calls"] > 0).all() and (r.threads["elapsed_ticks"] > 0).all()
    assert (r.threads["sercalls"] > 0).all()
    assert np.isfinite(r.threads["mcalls_per_s"]).all() and (r.threads["mcalls_per_s"] > 0).all()
    ran_rows = r.data[r.data["why"] == ""]
    assert np.isfinite(ran_rows["avg_ns"]).all() and np.isfinite(ran_rows["sermin_ns"]).all()
    for row in ran_rows:
        mine = r.threads[r.threads["name"] == row["name"]]
        assert row["calls"] == mine["calls"].sum()
        assert row["sections"] == (mine["calls"] + mine["sercalls"]).sum()
        assert row["threads"] == n
    # exclusion (or the count) is only testable where several threads share one counter
    assert r.data["checked"].tolist() == [shared and n > 1 and name in COUNTED and name in ran
                                          for name in HERE]
    md = r.metadata
    assert md["mode"] == r.mode and list(md["cpus"]) == CPUS and md["duration_s"] == SHORT
    assert ran_rows["mhz"] == pytest.approx(md["timer"]["ticks_per_ns"] * 1e3)
    assert "hostname" in md and "timer ticks" in md["cycles"]


@pytest.mark.hw
def test_result_is_frozen(shared_run):
    with pytest.raises(dataclasses.FrozenInstanceError):
        shared_run.shared = False
    with pytest.raises(ValueError):
        shared_run.data["calls"][0] = 1
    with pytest.raises(ValueError):
        shared_run.threads["calls"][0] = 1
    with pytest.raises(TypeError):
        shared_run.metadata["mode"] = "x"
    assert "shared" in repr(shared_run)


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2 or UNDER_VALGRIND,
                    reason="a lock can only be broken by two threads running at once")
def test_broken_lock_is_caught():
    # No lock around a plain increment: two threads hammering it for 50 ms lose updates (millions
    # here), and the check must say so.
    r = locks(CPUS, kernel="lock-none", shared=True, duration=0.05)
    row = r.row("lock-none")
    assert row["checked"] and row["counter"] < row["sections"]
    assert r.violations == ("lock-none",)
    assert "MUTUAL EXCLUSION VIOLATED" in r.table()


@pytest.mark.hw
def test_broken_lock_is_fine_alone():
    r = locks(CPUS, kernel="lock-none", shared=False, duration=0.005)
    assert r.violations == ()


@pytest.mark.hw
def test_one_cpu_and_a_selection():
    r = locks(CPUS[:1], kernel="lock-pthread-mutex-*", shared=True, duration=0.005)
    assert r.tests == ("baseline",) + MUTEXES
    assert r.threads.shape == ((r.data["why"] == "").sum(),)
    _assert_exclusive(r)


@pytest.mark.vm
def test_vm_every_lock_excludes_on_8_cpus():
    # Run inside ../shared/tools/vmtopo.sh --smp 8,...: eight emulated CPUs, one thread each.
    cpus = sorted(os.sched_getaffinity(0))
    assert len(cpus) == 8
    r = locks(cpus, shared=True, duration=SHORT, timeout=120)
    assert r.threads.shape == ((r.data["why"] == "").sum() * 8,)
    assert (r.threads["calls"] > 0).all()
    _assert_exclusive(r)


# -- the names ---------------------------------------------------------------------------------


def test_list_tests_matches_the_kernels():
    names = [n for n, _ in list_tests()]
    assert names == HERE and names[0] == "baseline"
    assert all(desc for _, desc in list_tests())
    assert set(_ext().LOCK_TESTS) == set(TESTS) | set(HIDDEN_TESTS)
    assert not set(HIDDEN_TESTS) & set(names)


# -- selection ---------------------------------------------------------------------------------

ALL = list(HERE)
MUTEXES = ("lock-pthread-mutex-default", "lock-pthread-mutex-pshared", "lock-pthread-mutex-robust",
           "lock-pthread-mutex-inherit", "lock-pthread-mutex-protect", "lock-pthread-mutex-trylock")
RWLOCKS = ["lock-pthread-rwlock-wrlock", "lock-pthread-rwlock-wrlock-pshared", "lock-pthread-rwlock-rdlock",
           "lock-pthread-rwlock-rdlock-pshared"]
SPINS = ["lock-ticket-spin", "lock-cmpxchg-spin", "lock-ttas-spin", "lock-pthread-spin-default",
         "lock-pthread-spin-pshared", "lock-pthread-spin-trylock"]


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (None, ALL),
        # words in order: lock-mutex is every mutex (the binary semaphore one too)
        ("lock-mutex", ["baseline", *MUTEXES, "lock-binsema-mutex", "lock-binsema-mutex-pshared"]),
        ("lock-pthread-mutex-default", ["baseline", "lock-pthread-mutex-default"]),
        ("inc-*", ["baseline", "inc-tls", "inc-atomic", "inc-atomic-cst"]),
        ("-inc-*", [n for n in ALL if not n.startswith("inc-")]),
        ("!lock-*", [n for n in ALL if not n.startswith("lock-")]),
        ("rwlock", ["baseline", *RWLOCKS]),
        ("spin", ["baseline", *SPINS]),
        ("lock-*,-*-spin", ["baseline"] + [n for n in ALL
                                           if n.startswith("lock-") and not n.endswith("-spin")]),
        (["lock-ticket-spin", "inc-atomic"], ["baseline", "inc-atomic", "lock-ticket-spin"]),
        (" lock-ticket-spin , cst ", ["baseline", "inc-atomic-cst", "lock-ticket-spin"]),
        ("baseline", ["baseline"]),
        ("-baseline", ALL),  # the baseline is always measured: the others are reported against it
        ("lock-*", [n for n in ALL if n.startswith("lock-") or n == "baseline"]),  # never lock-none
        ("lock-none", ["baseline", "lock-none"]),
        ("lock-none,!lock-none", ["baseline"]),
        # corelat 0.1's names select the tests that replaced them
        ("inc-atomic-relaxed", ["baseline", "inc-atomic"]),
        ("inc-atomic-seqcst", ["baseline", "inc-atomic-cst"]),
        ("lock-cas-spin", ["baseline", "lock-cmpxchg-spin"]),
        ("lock-pthread-mutex", ["baseline", "lock-pthread-mutex-default"]),
        ("lock-pthread-spin", ["baseline", "lock-pthread-spin-default"]),
        ("lock-pthread-rwlock-wr,lock-pthread-rwlock-rd", ["baseline", "lock-pthread-rwlock-wrlock",
                                                          "lock-pthread-rwlock-rdlock"]),
        ("spin,!lock-cas-spin", ["baseline"] + [n for n in SPINS if n != "lock-cmpxchg-spin"]),
    ],
)
def test_select_tests(pattern, expected):
    assert select_tests(pattern) == expected


@pytest.mark.parametrize("pattern", ["nope", "", ",", " , ", "-nope", "!", "-", "lock-nonexistent*", 5, [1],
                                     ["lock-ticket-spin", "zzz"], "lock-non"])
def test_select_tests_rejects(pattern):
    with pytest.raises(InputError):
        select_tests(pattern)


@given(st.lists(st.sampled_from(ALL), unique=True, min_size=1))
def test_select_exact_names_property(chosen):
    assert select_tests(",".join(chosen)) == (
        ["baseline"] + [n for n in ALL if n in chosen and n != "baseline"])


# -- arithmetic --------------------------------------------------------------------------------


def _reference(names, cpus, raw, tpn, overhead):
    """The summary, computed the slow, obvious way."""
    nt, n = len(names), len(cpus)
    rate = [[raw["calls"][t][i] / (raw["ticks"][t][i] / tpn / 1e9) / 1e6 for i in range(n)]
            for t in range(nt)]
    avg_raw = [[raw["ticks"][t][i] / raw["calls"][t][i] for i in range(n)] for t in range(nt)]
    # a bracket's cost over the timer's (the empty bracket's minimum, or the overhead given); never
    # negative
    empty = raw.get("serempty", [[overhead] * n] * nt)
    ser_raw = [[max(raw["sermin"][t][i] - empty[t][i], 0) for i in range(n)] for t in range(nt)]
    threads, rows = [], []
    for t in range(nt):
        base = names[t] == "baseline"
        for i in range(n):
            avg = avg_raw[t][i] - (0 if base else avg_raw[0][i])
            ser = ser_raw[t][i] - (0 if base else ser_raw[0][i])
            threads.append({"rate": rate[t][i], "avg_raw": avg_raw[t][i], "avg": avg, "avg_ns": avg / tpn,
                            "ser_raw": ser_raw[t][i], "ser": ser, "ser_ns": ser / tpn})
        mean_rate = sum(rate[t]) / n
        row_avg_raw = tpn * 1000 / mean_rate
        base_avg_raw = tpn * 1000 / (sum(rate[0]) / n)
        avg = row_avg_raw - (0 if base else base_avg_raw)
        sers = [ser_raw[t][i] - (0 if base else ser_raw[0][i]) for i in range(n)]
        sections = sum(raw["calls"][t][i] + raw["sercalls"][t][i] for i in range(n))
        rows.append({"calls": sum(raw["calls"][t]), "rate": mean_rate, "avg_raw": row_avg_raw, "avg": avg,
                     "avg_ns": avg / tpn, "ser_raw": sum(ser_raw[t]) / n, "ser": sum(sers) / n,
                     "ser_ns": sum(sers) / n / tpn, "sections": sections,
                     "exclusive": not (n > 1 and names[t] in COUNTED) or raw["counter"][t] == sections})
    return rows, threads


def _check_against_reference(names, cpus, raw, tpn, overhead):
    data, threads = summarise(names, cpus, raw, tpn, overhead)
    rows, ref_threads = _reference(names, cpus, raw, tpn, overhead)

    def approx(v):
        return pytest.approx(v, rel=1e-9, abs=1e-9)

    for got, ref in zip(data, rows):
        assert got["calls"] == ref["calls"] and got["sections"] == ref["sections"]
        assert got["mhz"] == approx(tpn * 1000)
        for key, refkey in [("mcalls_per_s", "rate"), ("avg_ticks_raw", "avg_raw"), ("avg_ticks", "avg"),
                            ("avg_ns", "avg_ns"), ("sermin_ticks_raw", "ser_raw"), ("sermin_ticks", "ser"),
                            ("sermin_ns", "ser_ns")]:
            assert got[key] == approx(ref[refkey]), key
        assert bool(got["exclusive"]) == ref["exclusive"]
    for got, ref in zip(threads, ref_threads):
        for key, refkey in [("mcalls_per_s", "rate"), ("avg_ticks_raw", "avg_raw"), ("avg_ticks", "avg"),
                            ("avg_ns", "avg_ns"), ("sermin_ticks_raw", "ser_raw"), ("sermin_ticks", "ser"),
                            ("sermin_ns", "ser_ns")]:
            assert got[key] == approx(ref[refkey]), key
    return data, threads


def test_summary_by_hand():
    # 2 GHz timer, 1 s: baseline 100 Mcalls/s = 20 ticks = 10 ns a call, mutex 20 Mcalls/s = 100
    # ticks, so 80 ticks = 40 ns over the baseline. sermin 60 and 90 ticks with a 50-tick timer:
    # 10 for the baseline, 40 - 10 = 30 ticks = 15 ns for the mutex.
    raw = {"calls": [[100_000_000], [20_000_000]], "ticks": [[2_000_000_000], [2_000_000_000]],
           "sermin": [[60], [90]], "sercalls": [[5], [7]], "counter": [0, 20_000_007]}
    data, threads = _check_against_reference(["baseline", "lock-pthread-mutex"], [3], raw, 2.0, 50.0)
    base, mutex = data
    assert base["mcalls_per_s"] == pytest.approx(100) and base["avg_ns"] == pytest.approx(10)
    assert mutex["mcalls_per_s"] == pytest.approx(20)
    assert mutex["avg_ticks"] == pytest.approx(80) and mutex["avg_ns"] == pytest.approx(40)
    assert base["sermin_ticks"] == pytest.approx(10) and mutex["sermin_ticks"] == pytest.approx(30)
    assert mutex["sermin_ns"] == pytest.approx(15)
    assert mutex["sections"] == 20_000_007 and mutex["exclusive"]
    assert threads["cpu"].tolist() == [3, 3]


@st.composite
def _raw_runs(draw):
    n = draw(st.integers(1, 4))
    extra = draw(st.lists(st.sampled_from(CHECKED + list(HIDDEN_TESTS)), unique=True, max_size=4))
    names = ["baseline"] + extra
    nt = len(names)

    def cell(lo, hi):
        return draw(st.lists(st.lists(st.integers(lo, hi), min_size=n, max_size=n), min_size=nt, max_size=nt))

    raw = {"calls": cell(64, 10**10), "ticks": cell(1, 10**12), "sermin": cell(0, 10**6),
           "sercalls": cell(1, 10**8)}
    sections = [sum(raw["calls"][t]) + sum(raw["sercalls"][t]) for t in range(nt)]
    raw["counter"] = [s - draw(st.sampled_from([0, 0, 1])) for s in sections]
    if draw(st.booleans()):
        raw["serempty"] = cell(0, 300)
    tpn = draw(st.floats(0.024, 5.0))
    overhead = draw(st.floats(0.0, 200.0))
    return names, list(range(n)), raw, tpn, overhead


@settings(max_examples=60, deadline=None)
@given(_raw_runs())
def test_summary_matches_reference(run):
    _check_against_reference(*run)


def test_summary_needs_the_baseline_first():
    raw = {"calls": [[1]], "ticks": [[1]], "sermin": [[1]], "sercalls": [[1]], "counter": [1]}
    with pytest.raises(ValueError):
        summarise(["lock-ticket-spin"], [0], raw, 1.0, 0.0)


# -- the table ---------------------------------------------------------------------------------


def _fake_result(counter_ok=True):
    raw = {"calls": [[100_000_000, 100_000_000], [20_000_000, 20_000_000]],
           "ticks": [[2_000_000_000] * 2, [2_000_000_000] * 2],
           "sermin": [[60, 60], [90, 90]], "sercalls": [[5, 5], [7, 7]],
           "counter": [0, 40_000_014 if counter_ok else 39_000_000]}
    names, cpus = ["baseline", "lock-pthread-mutex"], [0, 1]
    data, threads = summarise(names, cpus, raw, 2.0, 50.0)
    meta = {"timer": {"name": "tsc", "ticks_per_ns": 2.0}, "timer_mhz": 2000.0}
    return LockResult(cpus=cpus, shared=True, duration=1.0, data=data, threads=threads, metadata=meta)


def _body(lines):
    """The table's rows: neither comments nor the two header lines."""
    rows = [line for line in lines if not line.startswith("#")]
    return rows[2:]


def test_table_like_cpuperf():
    lines = _fake_result().table().splitlines()
    assert lines[0].startswith("# shared on CPU 0-1 (2 threads), 1 s per test")
    assert "timer ticks" in lines[0] and "2000 MHz" in lines[0]
    assert lines[1] == "# mutual exclusion: checked for lock-pthread-mutex"
    head = [line for line in lines if not line.startswith("#")]
    assert head[0].split() == ["MHz", "tot", "avg", "avg", "avg", "sermin", "sermin"]
    assert head[1].split() == ["TSC", "MCALLS", "MCALLS/s", "CYCLES", "NSECS", "CYCLES",
                               "NSECS", "NAME", "DESC"]
    base, mutex = _body(lines)
    assert base.split()[:8] == ["2000", "200.00", "100.00", "20.0", "10.00", "10.0", "5.00", "baseline"]
    assert mutex.split()[:8] == ["2000", "40.00", "20.00", "80.0", "40.00", "30.0", "15.00",
                                 "lock-pthread-mutex"]
    assert mutex.endswith(describe("lock-pthread-mutex"))  # a 0.1 name keeps its description
    # columns line up: every name starts under NAME, every number ends under its header
    col = head[1].index("NAME")
    assert base.index("baseline") == col and mutex.index("lock-pthread-mutex") == col
    assert base.index("  10.00") + len("  10.00") == head[1].index("NSECS") + len("NSECS")
    assert len(lines) == 6 and not any(line != line.rstrip() for line in lines)
    # -H: the rows alone
    assert _fake_result().table(headers=False).splitlines() == [base, mutex]


def test_table_says_exclusion_not_tested_where_it_cannot_be():
    names, cpus = ["baseline", "lock-pthread-mutex-default", "lock-pthread-rwlock-rdlock", "inc-tls"], [0, 1]
    raw = {"calls": [[10, 10]] * 4, "ticks": [[100, 100]] * 4, "sermin": [[60, 60]] * 4,
           "sercalls": [[5, 5]] * 4, "counter": [0, 30, 30, 0]}
    for shared, expect in (
            (False, "# mutual exclusion: not tested for lock-pthread-mutex-default, "
                    "lock-pthread-rwlock-rdlock (each thread had its own objects); not tested for inc-tls "
                    "(no shared counter)"),
            (True, "# mutual exclusion: checked for lock-pthread-mutex-default; counts checked for "
                   "lock-pthread-rwlock-rdlock (several holders by design, atomic increments); not tested "
                   "for inc-tls (no shared counter)")):
        data, threads = summarise(names, cpus, raw, 1.0, 0.0, shared=shared)
        r = LockResult(cpus=cpus, shared=shared, duration=1.0, data=data, threads=threads, metadata={})
        assert expect in r.table().splitlines()


def test_sermin_subtracts_and_says_when_it_is_at_the_timer_resolution():
    # brackets of 64 calls, a timer stepping 24 ticks (one step per bracket = 0.375 ticks a call), its
    # own cost 100 ticks; the baseline's bracket 24 * 20 + 100. Over the baseline: half a step (below
    # the timer: '<' one step), 5 steps (at the timer's resolution: '~'), 40 steps (a figure).
    names, cpus = ["baseline", "inc-atomic", "lock-ticket-spin", "lock-pthread-mutex-default"], [0]
    raw = {"calls": [[10]] * 4, "ticks": [[100]] * 4,
           "sermin": [[24 * 20 + 100], [24 * 20 + 12 + 100], [24 * 25 + 100], [24 * 60 + 100]],
           "serk": [[64]] * 4, "sercalls": [[5]] * 4, "counter": [0, 15, 15, 15]}
    data, threads = summarise(names, cpus, raw, 1.0, 100.0, resolution_ticks=24.0)
    assert data["sermin_ticks"][0] == pytest.approx(24 * 20 / 64)  # the timer's cost taken off
    assert data["sermin_ticks"][1] == pytest.approx(12 / 64)
    assert data["sermin_steps"].tolist()[1:] == pytest.approx([0.5, 5.0, 40.0])
    assert data["sermin_floor_ns"][1] == pytest.approx(0.375)
    r = LockResult(cpus=cpus, shared=False, duration=1.0, data=data, threads=threads, metadata={})
    lines = r.table().splitlines()
    rows = {line.split()[7]: line.split()[5:7] for line in _body(lines)}
    assert rows["inc-atomic"] == ["<0.4", "<0.38"]  # never 0.19: below one step of the timer
    assert rows["lock-ticket-spin"] == ["1.9~", "1.88~"]
    assert rows["lock-pthread-mutex-default"] == ["15.0", "15.00"]
    assert any("at the timer's resolution (under 20 timer steps" in line for line in lines)
    threads_of = {line.split()[-1]: line.split()[6:8] for line in _body(r.table(per_thread=True).splitlines())
                  if line.split()[0] != "-"}
    assert threads_of["inc-atomic"] == ["<0.4", "<0.38"]
    assert threads_of["lock-ticket-spin"] == ["1.9~", "1.88~"]


def test_table_per_thread_and_violation():
    lines = _fake_result(counter_ok=False).table(per_thread=True).splitlines()
    head = [line for line in lines if not line.startswith("#")]
    assert head[1].split()[0] == "CPU"
    body = [line.split() for line in _body(lines)]
    assert [b[0] for b in body] == ["-", "0", "1", "-", "0", "1"]
    assert body[1][1:9] == ["2000", "100.00", "100.00", "20.0", "10.00", "10.0", "5.00", "baseline"]
    rows = _body(lines)
    assert "[MUTUAL EXCLUSION VIOLATED]" in rows[3] and "VIOLATED" not in rows[0]


def test_table_shows_missing_values_as_dashes():
    raw = {"calls": [[0]], "ticks": [[0]], "sermin": [[0]], "sercalls": [[0]], "counter": [0]}
    data, threads = summarise(["baseline"], [0], raw, 1.0, 0.0)
    r = LockResult(cpus=[0], shared=False, duration=0.1, data=data, threads=threads, metadata={})
    assert _body(r.table().splitlines())[0].split()[2] == "-"


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cpus": "abc"}, {"cpus": [0, 0]}, {"cpus": [99999]}, {"cpus": []}, {"cpus": "0-"},
        {"cpus": [True]}, {"cpus": 1.5}, {"kernel": "nope"}, {"kernel": ""}, {"kernel": 5},
        {"duration": 0}, {"duration": -1}, {"duration": 1e9}, {"duration": float("nan")},
        {"duration": "x"}, {"duration": True}, {"duration": None}, {"timeout": 0},
        {"timeout": "x"}, {"shared": "yes"}, {"serial_duration": 0},
    ],
)
def test_locks_rejects_bad_input(kwargs):
    with pytest.raises(InputError):
        locks(**kwargs)


@pytest.mark.hw
@pytest.mark.parametrize(
    "args",
    [
        ([0], [0], False, 0.001, 0.001, 1.0, "x"),  # too many
        ("x", [0], False, 0.001, 0.001, 1.0),
        ([0], [99], False, 0.001, 0.001, 1.0),
        ([0], [0, 0], False, 0.001, 0.001, 1.0),
        ([0], [-1], False, 0.001, 0.001, 1.0),
        ([], [0], False, 0.001, 0.001, 1.0),
        ([0], [], False, 0.001, 0.001, 1.0),
        ([0], [0], False, 0.0, 0.001, 1.0),
        ([0], [0], False, 0.001, float("nan"), 1.0),
        ([0], [0], False, 0.001, 0.001, 0.0),
        ([0], ["a"], False, 0.001, 0.001, 1.0),
    ],
)
def test_binding_refuses_what_is_unsafe(args):
    with pytest.raises((TypeError, ValueError)):
        _ext().locks(*args)


@pytest.mark.hw
def test_binding_does_not_leak():
    ext = _ext()
    locks(CPUS[:1], kernel="baseline", duration=0.001)  # timer ready, thread stacks cached

    outs = []

    def two_calls():
        outs[:] = [ext.locks(CPUS, [0, 6], True, 0.0002, 0.0005, 30.0)]
        with pytest.raises(ValueError):
            ext.locks(CPUS, [0, 0], True, 0.0002, 0.0005, 1.0)

    # A generous time-out: on a loaded machine a partner may not run for a second (failed once so).
    # A leaked lock page per run would be 200 x 4 KiB.
    assert_flat(two_calls, 200, warm=20, max_rss_kib=400)
    out = outs.pop()
    assert all(sys.getrefcount(a) == 3 for a in out.values())  # the dict, the loop name, the call
    assert out["calls"].shape == (2, len(CPUS)) and out["counter"].shape == (2,)


# -- the command -------------------------------------------------------------------------------


def _corelat(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "corelat", "locks", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.parametrize(
    "args, message",
    [
        (["-k", "nope"], "no lock test matches 'nope'"),
        (["-k", ","], "empty test selection"),
        (["-d", "0"], "duration must be between"),
        (["-d", "1000"], "duration must be between"),
        (["-d", "nan"], "duration must be between"),
        (["--timeout", "0"], "timeout must be between"),
        (["0-"], "bad CPU list"),
        (["99999"], "not available"),
        (["0,0"], "more than once"),
    ],
)
def test_cli_subprocess_bad_input(args, message):
    p = _corelat(*args)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.startswith("corelat: error: ") and p.stderr.count("\n") == 1, p.stderr
    assert message in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("args", [["-d", "abc"], ["--nope"], ["-k"]])
def test_cli_subprocess_bad_usage(args):
    p = _corelat(*args)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[-1].startswith("corelat locks: error: ")


def test_cli_subprocess_list():
    p = _corelat("--list", "-H")
    assert p.returncode == 0, p.stderr
    names = [line.split()[0] for line in p.stdout.splitlines()]
    assert names == HERE
    assert "[cpuperf: sys-clock-gettime (monotonic time (default))]" in p.stdout
    assert "(0.1 name: lock-cas-spin)" in p.stdout
    assert _corelat("--list").stdout.splitlines()[0].split()[0] == "NAME"


@pytest.mark.hw
def test_cli_subprocess_shared_mutex_run():
    p = _corelat("-s", "-t", "lock-pthread-mutex-*", "-d", "0.005", "-v", ",".join(map(str, CPUS)))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("# shared on CPU")
    rows = [line.split() for line in lines if not line.startswith("#")][2:]
    named = [r[8] for r in rows if r[0] == "-" and len(r) > 8 and r[1] != "-"]
    unavailable = [r[8] for r in rows if r[:2] == ["-", "-"]]
    assert sorted(named + unavailable) == sorted(["baseline", *MUTEXES])
    assert len(rows) == len(named) * (1 + len(CPUS)) + len(unavailable)
    quiet = _corelat("-s", "-k", "lock-pthread-mutex-default", "-d", "0.005", "-H", ",".join(map(str, CPUS)))
    rows = [line.split()[7] for line in quiet.stdout.splitlines()]
    assert rows == ["baseline", "lock-pthread-mutex-default"]


# -- Ctrl-C ------------------------------------------------------------------------------------


@pytest.mark.hw
@pytest.mark.signals
def test_cli_subprocess_sigint_stops_a_long_run():
    # 10 tests x 12.5 s: minutes if not interrupted.
    rc, took, err = interrupt_when_measuring([sys.executable, "-m", "corelat", "locks", "-s", "-d", "10"])
    assert rc == 130, err
    assert took < ENDS_WITHIN_S, f"took {took:.2f} s to stop"
    assert "Traceback" not in err and "interrupted" in err


@pytest.mark.hw
@pytest.mark.signals
def test_api_subprocess_sigint_raises_keyboardinterrupt():
    code = (
        "from corelat._measure.locks import locks\n"
        "try:\n"
        "    locks(shared=True, duration=10)\n"
        "except KeyboardInterrupt:\n"
        "    raise SystemExit(42)\n"
    )
    rc, took, err = interrupt_when_measuring([sys.executable, "-c", code])
    assert rc == 42, err
    assert took < ENDS_WITHIN_S
