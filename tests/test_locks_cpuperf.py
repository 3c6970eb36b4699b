"""cpuperf's whole list in ``corelat locks``: names and aliases, files written by corelat 0.1,
tests that cannot run here, CPU feature tables, the robust mutex, groups, affinity, the leader,
the priority, -f, -H, -v, -t.

Hardware runs are tiny and assert invariants only, never a time.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import corelat
from corelat._core.errors import InputError
from corelat._measure import locks as measure_locks
from corelat._measure.locks import locks, resolve_groups, select_tests, summarise
from corelat._results.locks import LockResult
from corelat._results.locks_names import ALIASES, ARCH_ONLY, CPUPERF, EXCLUSIVE, OLD_TESTS, TESTS, describe

CPUS = sorted(os.sched_getaffinity(0))
DATA = pathlib.Path(__file__).parent / "data"
SHORT = 0.005


def _ext():
    from corelat import _corelat

    return _corelat


# -- names -------------------------------------------------------------------------------------

#: cpuperf's test names (cpuperf.c's testv), for the tests that exist on x86-64 Linux.
CPUPERF_NAMES = [
    "baseline", "inc-tls", "inc-atomic", "inc-atomic-cst", "prng-xoroshiro", "prng-mod128", "prng-mod127",
    "cpu-rdrand64", "cpu-rdtsc", "cpu-rdtscp", "cpu-rdpid", "sys-sched-getcpu", "cpu-lsl", "cpu-cpuid",
    "cpu-lfence", "cpu-sfence", "cpu-mfence", "cpu-pause", "sys-clock-gettime", "lock-ticket-spin",
    "lock-cmpxchg-spin", "lock-pthread-spin-default", "lock-pthread-spin-pshared",
    "lock-pthread-spin-trylock",
    "lock-pthread-mutex-default", "lock-pthread-mutex-pshared", "lock-pthread-mutex-robust",
    "lock-pthread-mutex-inherit", "lock-pthread-mutex-protect", "lock-pthread-mutex-trylock",
    "lock-binsema-mutex", "lock-binsema-mutex-pshared", "lock-pthread-rwlock-wrlock",
    "lock-pthread-rwlock-rdlock", "lock-semaphore", "stack-lockfree", "stack-mutex", "stack-sema",
    "stack-wrlock",
]


def test_every_cpuperf_test_has_a_corelat_test_of_its_name():
    ours = {(CPUPERF[n] or "").split(" (")[0] for n in TESTS}
    assert set(CPUPERF_NAMES) <= ours
    # cpuperf's own names are corelat's, in cpuperf's order, except the rows cpuperf tells apart by DESC
    same = [n for n in TESTS if CPUPERF[n] == n]
    assert same == [n for n in CPUPERF_NAMES if n in TESTS]
    assert set(CPUPERF) == set(TESTS)
    assert set(_ext().LOCK_TESTS) == set(TESTS) | {"lock-none"}


def test_old_names_are_aliases_of_existing_tests_and_keep_their_descriptions():
    assert set(ALIASES) == set(OLD_TESTS)
    assert all(new in TESTS for new in ALIASES.values())
    assert not set(ALIASES) & set(TESTS)
    for old, new in ALIASES.items():
        assert select_tests(old) == ["baseline", new]
        assert select_tests(f"-{old}", skip=()) == [n for n in TESTS if n != new]
        assert describe(old) == OLD_TESTS[old]


def test_instruction_tests_of_another_architecture_are_not_listed():
    machine = os.uname().machine
    listed = [n for n, _ in corelat.list_tests()]
    for name, arches in ARCH_ONLY.items():
        assert (name in listed) == (machine in arches), name
    assert "cpu-isb" not in select_tests("cpu-*", skip={"cpu-isb"})
    assert select_tests("cpu-isb", skip={"cpu-isb"}) == ["baseline", "cpu-isb"]  # an exact name still asks


# -- files written by corelat 0.1 (tests/data, made by `corelat locks -o` / `--json` at 1281e4b) ------


def test_a_01_npz_file_still_loads():
    r = corelat.load(DATA / "locks-0.1.npz")
    assert isinstance(r, LockResult)
    assert r.tests == ("baseline", "inc-atomic-relaxed", "lock-cas-spin", "lock-pthread-mutex",
                       "lock-pthread-rwlock-rd")
    assert r.violations == () and r.shared
    assert (r.data["group"] == 0).all() and (r.data["why"] == "").all()
    assert np.isnan(r.data["sermin_steps"]).all()
    assert (r.threads["ran_on"] == -1).all()
    text = r.table(per_thread=True)
    assert OLD_TESTS["lock-cas-spin"] in text and "(unknown test)" not in text
    assert r.summary()["avg_ns"].keys() == set(r.tests)
    assert LockResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_a_01_json_file_still_reads():
    d = json.loads((DATA / "locks-0.1.json").read_text())
    r = LockResult.from_dict(d)
    assert r.tests == ("baseline", "inc-atomic-seqcst", "lock-pthread-rwlock-wr")
    assert "lock-pthread-rwlock-wr" in r.table() and r.violations == ()


def test_new_fields_round_trip(tmp_path):
    names, cpus = ["baseline", "lock-ticket-spin"], [0, 1]
    raw = {"calls": [[10, 10]] * 2, "ticks": [[100, 100]] * 2, "sermin": [[60, 60]] * 2,
           "sercalls": [[5, 5]] * 2, "counter": [0, 30], "ran_on": [1, 0]}
    data, threads = summarise(names, cpus, raw, 1.0, 0.0, shared=True, group=3)
    data = np.concatenate([data, data[-1:]])
    data[-1]["name"], data[-1]["why"] = "cpu-rdpid", "the CPU has no rdpid (CPUID.7.0:ECX bit 22)"
    r = LockResult(cpus=cpus, shared=True, duration=1.0, data=data, threads=threads, metadata={})
    r.save(tmp_path / "r.npz")
    back = corelat.load(tmp_path / "r.npz")
    assert back == r and back.row("cpu-rdpid")["why"].startswith("the CPU has no rdpid")
    assert LockResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    assert (back.data["group"] == 3).all() and back.threads["ran_on"].tolist() == [1, 0, 1, 0]
    assert "[cannot run here: the CPU has no rdpid" in back.table()
    assert "1>0" in back.table(per_thread=True)  # a thread that ended on another CPU says so


# -- what can run here -------------------------------------------------------------------------

X86 = {"arch": 1, "max_leaf": 7, "max_ext": 0x80000001, "leaf1_edx": (1 << 4) | (1 << 25) | (1 << 26)}


@pytest.mark.hw
def test_fake_cpuid_tables_decide_the_instruction_tests():
    ext = _ext()
    code = {n: i for i, n in enumerate(ext.LOCK_TESTS)}
    bare = ext.lock_availability(X86)
    for name in ("cpu-rdrand64", "cpu-rdtscp", "cpu-rdpid"):
        ok, why, other = bare[code[name]]
        assert not ok and not other and name.split("-")[1].rstrip("64") in why, (name, why)
    assert all(bare[code[n]][0] for n in ("cpu-rdtsc", "cpu-lfence", "cpu-mfence", "cpu-sfence", "cpu-pause",
                                          "cpu-cpuid", "cpu-lsl") if os.uname().machine == "x86_64")
    full = ext.lock_availability(X86 | {"leaf1_ecx": 1 << 30, "leaf7_ecx": 1 << 22, "ext1_edx": 1 << 27})
    if os.uname().machine == "x86_64":
        assert all(full[code[n]][0] for n in ("cpu-rdrand64", "cpu-rdtscp", "cpu-rdpid"))
    # rdpid's bit is in leaf 7: a CPU whose CPUID stops at leaf 1 does not have it, whatever it says
    assert not ext.lock_availability(X86 | {"max_leaf": 1, "leaf7_ecx": 1 << 22})[code["cpu-rdpid"]][0]
    arm = ext.lock_availability({"arch": 2})
    assert arm[code["cpu-rdtsc"]][2] and not arm[code["cpu-rdtsc"]][0]  # another architecture
    assert not arm[code["cpu-rndr"]][0] and "rndr" in arm[code["cpu-rndr"]][1]
    assert ext.lock_availability({"arch": 2, "hwcap2": 1 << 16})[code["cpu-rndr"]][0] == (
        os.uname().machine == "aarch64")  # elsewhere the kernel is not built: never run
    with pytest.raises(TypeError):
        ext.lock_availability([1])


@pytest.mark.hw
def test_this_cpus_instruction_tests_match_its_cpuid():
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith(("flags", "Features")):
                flags = set(line.split(":", 1)[1].split())
                break
    why = measure_locks.unavailable()
    for name, flag in (("cpu-rdrand64", "rdrand"), ("cpu-rdtscp", "rdtscp"), ("cpu-rdpid", "rdpid"),
                       ("cpu-rndr", "rng")):
        if name not in ARCH_ONLY or os.uname().machine not in ARCH_ONLY[name]:
            continue
        assert (name not in why) == (flag in flags), (name, why.get(name))


@pytest.mark.hw
def test_a_test_that_cannot_run_is_a_row_saying_why(monkeypatch):
    real = measure_locks.unavailable
    monkeypatch.setattr(measure_locks, "unavailable", lambda: real() | {"inc-tls": "made up for a test"})
    r = locks(CPUS[:1], kernel="inc-tls,inc-atomic", duration=SHORT)
    row = r.row("inc-tls")
    assert row["why"] == "made up for a test" and np.isnan(row["avg_ns"]) and row["calls"] == 0
    assert r.threads["name"].tolist() == ["baseline", "inc-atomic"]  # it never ran
    assert "[cannot run here: made up for a test]" in r.table()
    assert r.metadata["unavailable"] == {"inc-tls": "made up for a test"}


@pytest.mark.hw
def test_inherit_and_protect_are_set_up_as_named_or_say_why():
    why = measure_locks.unavailable()
    for name in ("lock-pthread-mutex-inherit", "lock-pthread-mutex-protect", "lock-pthread-mutex-robust",
                 "lock-pthread-mutex-pshared"):
        if name in why:
            known = ("the C library", "not tried", "glibc lifts", "its threads")
            assert why[name].startswith(known), why[name]
    r = locks(CPUS, kernel="lock-pthread-mutex-*", shared=True, duration=SHORT)
    for row in r.data[1:]:
        assert bool(row["why"]) == (row["name"] in why)
        if not row["why"]:
            assert row["checked"] == (len(CPUS) > 1) and row["exclusive"]


@pytest.mark.hw
def test_robust_mutex_owner_death_gives_eownerdead_and_recovers():
    assert _ext().lock_robust_check() is None


# -- groups, affinity, leader, priority, -f --------------------------------------------------------


def test_resolve_groups():
    assert resolve_groups(f"{CPUS[0]}") == ((CPUS[0],), [0])
    if len(CPUS) > 1:
        assert resolve_groups(groups=[[CPUS[1]], str(CPUS[0])]) == ((CPUS[1], CPUS[0]), [0, 1])
    for bad in ({"groups": []}, {"groups": [[CPUS[0]], [CPUS[0]]]},
                {"cpus": [CPUS[0]], "groups": [[CPUS[0]]]}, {"groups": 5}):
        with pytest.raises(InputError):
            resolve_groups(**bad)


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="two groups need two CPUs")
@pytest.mark.parametrize("affinity", ["cpu", "group"])
def test_groups_have_their_own_objects_and_affinity(affinity):
    a, b = CPUS[0], CPUS[1]
    r = locks(groups=[[a], [b]], kernel="lock-ticket-spin,stack-lockfree,inc-atomic", shared=True,
              duration=SHORT, affinity=affinity)
    assert r.data["group"].tolist() == [0] * 4 + [1] * 4
    assert r.data["name"].tolist()[:4] == r.data["name"].tolist()[4:]
    for row in r.data[r.data["name"] != "baseline"]:
        # one shared object per group: each group's counter holds its own thread's calls, exactly
        assert row["counter"] == row["sections"] and not row["checked"], row
    assert [list(g) for g in r.metadata["groups"]] == [[a], [b]]
    lines = r.table().splitlines()
    assert f"# group 0: CPU {a}" in lines and f"# group 1: CPU {b}" in lines
    # each thread's affinity, read by the thread itself at its end
    ext = _ext()
    code = ext.LOCK_TESTS.index("baseline")
    for groups, spread, want in (([0, 0], affinity == "group", [2, 2] if affinity == "group" else [1, 1]),
                                 ([0, 1], affinity == "group", [1, 1])):
        raw = ext.locks([a, b], [code], False, 0.0005, 0.001, 30.0, group=groups, spread=spread)
        assert raw["affinity"].tolist() == want and raw["affinity_outside"].tolist() == [0, 0]
        assert set(raw["ran_on"].tolist()) <= {a, b}


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="the leader needs a CPU off the tested one")
def test_the_leader_runs_off_the_tested_cpus_and_comes_back():
    before = os.sched_getaffinity(0)
    with measure_locks._leader_off([CPUS[0]]) as note:
        assert os.sched_getaffinity(0) == set(CPUS[1:])
        assert "off the tested CPUs" in note
    assert os.sched_getaffinity(0) == before
    with measure_locks._leader_off(CPUS) as note:
        assert os.sched_getaffinity(0) == before and "no allowed CPU outside" in note


def test_priority_refused_is_said_not_an_error(monkeypatch):
    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "setpriority", refuse)
    with measure_locks._high_priority() as note:
        assert "refused" in note and "Operation not permitted" in note


def test_priority_is_restored():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with measure_locks._high_priority() as note:
        assert ("nice -20" in note) == (os.getpriority(os.PRIO_PROCESS, 0) == -20)
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


@pytest.mark.hw
def test_timer_mhz_given_is_used_and_said():
    r = locks(CPUS[:1], kernel="inc-atomic", duration=SHORT, timer_mhz=1000)
    assert r.data["mhz"].tolist() == [1000.0, 1000.0]
    assert "1000 MHz as given (-f)" in r.table().splitlines()[0]
    assert any(line.startswith("# priority: ") for line in r.table().splitlines())
    for bad in (0, -1, float("nan"), "x", True, 1e9):
        with pytest.raises(InputError):
            locks(CPUS[:1], kernel="inc-atomic", duration=SHORT, timer_mhz=bad)
    with pytest.raises(InputError):
        locks(CPUS[:1], affinity="core")


# -- exclusion of every lock and structure, by the kernels' own counters -------------------------


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="exclusion needs two threads")
def test_every_lock_and_stack_excludes_when_shared():
    r = locks(CPUS, kernel="lock-*,stack-*", shared=True, duration=0.01)
    ran = r.data[r.data["why"] == ""]
    assert {str(n) for n in ran["name"]} >= {"stack-lockfree", "stack-mutex", "stack-sema", "stack-wrlock",
                                             "lock-binsema-mutex", "lock-semaphore", "lock-cmpxchg-spin"}
    for row in ran[ran["name"] != "baseline"]:
        assert row["checked"] and row["counter"] == row["sections"], row["name"]
        shared_by_design = ("lock-pthread-rwlock-rdlock", "lock-pthread-rwlock-rdlock-pshared",
                            "lock-semaphore")
        assert (row["name"] in EXCLUSIVE) != (row["name"] in shared_by_design)


# -- the command -------------------------------------------------------------------------------


def _corelat(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "corelat", "locks", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.hw
@pytest.mark.skipif(len(CPUS) < 2, reason="two groups need two CPUs")
def test_cli_groups_headers_and_per_thread():
    p = _corelat("-s", "-g", str(CPUS[0]), "-g", str(CPUS[1]), "-t", "inc-atomic", "-d", "0.002", "-H", "-v")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert not any(line.startswith("#") or "MCALLS" in line for line in lines)
    assert [line.split()[0] for line in lines] == ["-", str(CPUS[0]), "-", str(CPUS[0]),
                                                   "-", str(CPUS[1]), "-", str(CPUS[1])]
    p = _corelat("-g", "0", "0")
    assert p.returncode == 2 and "not both" in p.stderr and "Traceback" not in p.stderr
    p = _corelat("-f", "abc")
    assert p.returncode == 2 and "Traceback" not in p.stderr
