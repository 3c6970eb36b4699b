"""``corelat check`` on fake sysfs/procfs trees: each item's verdict, unreadable items, the CLI."""

import json
import os

import pytest

import corelat
from corelat._measure.check import run_checks
from corelat._system.conditions import (
    INFO,
    OK,
    UNKNOWN,
    WARN,
    check_boost,
    check_busy,
    check_clocksource,
    check_hypervisor,
    check_isolated,
    check_load,
    check_smt,
    check_tsc,
)

STAT_IDLE = "cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 100 1000 0 0 0 0 0 0\ncpu1 100 0 100 1000 0 0 0 0 0 0\n"


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.fixture
def bare(tmp_path):
    """A quiet 2-CPU bare-metal machine with cpufreq, SMT off, invariant TSC."""
    r = tmp_path
    for c in (0, 1):
        write(r, f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor", "performance\n")
    write(r, "sys/devices/system/cpu/online", "0-1\n")
    write(r, "sys/devices/system/cpu/cpufreq/boost", "0\n")
    write(r, "sys/devices/system/cpu/smt/active", "0\n")
    write(r, "sys/devices/system/cpu/smt/control", "off\n")
    write(r, "sys/devices/system/cpu/isolated", "\n")
    write(r, "sys/devices/system/cpu/nohz_full", "(null)\n")
    write(r, "sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
    write(r, "sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm\n")
    write(r, "proc/cpuinfo",
          "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n")
    write(r, "proc/loadavg", "0.01 0.05 0.10 1/100 1234\n")
    write(r, "proc/stat", STAT_IDLE)
    return r


def by_name(items):
    return {i.name: i for i in items}


def test_quiet_bare_metal_is_all_ok(bare):
    items = run_checks(str(bare), interval=0, sleep=lambda s: None)
    d = by_name(items)
    assert "timer_skew" not in d  # only measured on the live machine
    assert d["governor"].status == OK and "performance on CPU 0-1" in d["governor"].found
    assert d["boost"].status == OK and d["boost"].value is False
    assert d["smt"].status == OK
    assert d["isolated"].status == INFO and d["isolated"].value == {"isolated": [], "nohz_full": []}
    assert d["hypervisor"].status == OK
    assert d["load"].status == OK and d["load"].value["cpus"] == 2
    assert d["clocksource"].status == OK
    assert d["tsc"].status == OK and "invariant" in d["tsc"].found
    assert d["busy"].status == UNKNOWN  # the fake /proc/stat did not move
    assert not any(i.matters for i in items)
    for i in items:
        assert i.found and i.why
        json.dumps(i.to_dict())


def test_noisy_virtual_machine_items_warn(bare):
    for c in (0, 1):
        write(bare, f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor",
              "powersave" if c else "schedutil")
    write(bare, "sys/devices/system/cpu/cpufreq/boost", "1\n")
    write(bare, "sys/devices/system/cpu/smt/active", "1\n")
    write(bare, "sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n")
    write(bare, "proc/cpuinfo", "flags\t\t: fpu tsc hypervisor\n")
    write(bare, "sys/hypervisor/type", "xen\n")
    write(bare, "proc/loadavg", "3.50 2.00 1.00 5/100 99\n")
    d = by_name(run_checks(str(bare), interval=0, sleep=lambda s: None))
    assert d["governor"].status == WARN and d["governor"].value == {"powersave": [1], "schedutil": [0]}
    assert d["boost"].status == WARN
    assert d["smt"].status == INFO and "SMT on" in d["smt"].found
    assert d["clocksource"].status == WARN and "hpet" in d["clocksource"].found
    assert d["tsc"].status == WARN and "not invariant" in d["tsc"].found
    assert d["hypervisor"].status == WARN and "xen" in d["hypervisor"].found
    assert d["load"].status == WARN


def test_intel_pstate_turbo_and_kvm_clock(bare):
    (bare / "sys/devices/system/cpu/cpufreq/boost").unlink()
    write(bare, "sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
    assert check_boost(str(bare)).status == OK
    write(bare, "sys/devices/system/cpu/intel_pstate/no_turbo", "0\n")
    assert check_boost(str(bare)).status == WARN
    write(bare, "sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n")
    assert check_clocksource(str(bare)).status == INFO


def test_isolated_cpus_reported(bare):
    write(bare, "sys/devices/system/cpu/isolated", "2-3\n")
    write(bare, "sys/devices/system/cpu/nohz_full", "2-3\n")
    item = check_isolated(str(bare))
    assert item.status == OK and item.value == {"isolated": [2, 3], "nohz_full": [2, 3]}
    assert "isolated: CPU 2-3" in item.found


def test_busy_cpus_and_steal_from_two_reads(bare):
    def advance(_seconds):
        # CPU 0 was busy 60 % of the interval, CPU 1 idle but 10 % stolen by the host
        write(bare, "proc/stat", "cpu  0 0 0 0 0 0 0 0\n"
                                 "cpu0 160 0 100 1040 0 0 0 0 0 0\n"
                                 "cpu1 100 0 100 1090 0 0 0 10 0 0\n")

    item = check_busy(str(bare), 0.1, sleep=advance)
    assert item.status == WARN
    assert item.value["busy"][0] == pytest.approx(0.6) and item.value["busy"][1] == pytest.approx(0.1)
    assert item.value["steal"][1] == pytest.approx(0.1)
    assert "CPU 0 60%" in item.found and "steal CPU 1 10%" in item.found


def test_missing_tree_says_unknown_never_raises(tmp_path):
    items = run_checks(str(tmp_path), interval=0, sleep=lambda s: None)
    assert len(items) == 9
    for i in items:
        assert i.status == UNKNOWN, i
        assert "missing" in i.found or "not" in i.found or "no " in i.found


def test_unreadable_item_when_a_folder_stands_in_for_a_file(bare):
    # (works as root too: reading a directory fails with EISDIR)
    (bare / "proc/loadavg").unlink()
    (bare / "proc/loadavg").mkdir()
    item = check_load(str(bare))
    assert item.status == UNKNOWN and "unreadable" in item.found


def test_parsing_oddities(bare):
    write(bare, "proc/loadavg", "garbage\n")
    assert check_load(str(bare)).status == UNKNOWN
    write(bare, "sys/devices/system/cpu/smt/active", "maybe\n")
    assert check_smt(str(bare)).status == UNKNOWN
    write(bare, "proc/cpuinfo", "processor : 0\nFeatures : fp asimd evtstrm\n")  # aarch64
    assert check_tsc(str(bare)).status == INFO
    write(bare, "proc/cpuinfo", "flags : fpu tsc hypervisor\n")
    assert check_hypervisor(str(bare)).status == WARN
    write(bare, "sys/class/dmi/id/sys_vendor", "QEMU\n")
    assert "QEMU" in check_hypervisor(str(bare)).found


@pytest.mark.hw
def test_live_machine_report_and_api():
    items = corelat.check(interval=0.05)
    names = [i.name for i in items]
    assert names[:9] == ["governor", "boost", "smt", "isolated", "hypervisor", "load", "busy",
                         "clocksource", "tsc"]
    if len(os.sched_getaffinity(0)) >= 2:
        assert names[-1] == "timer_skew"
    for i in items:
        assert i.status in (OK, INFO, WARN, UNKNOWN)


def test_cli(bare):
    from conftest import run_cli

    p = run_cli("check", "--root", str(bare), "--interval", "0.01")
    assert p.returncode == 0, p.stderr
    assert "governor" in p.stdout and "nothing found that is likely to distort results" in p.stdout
    p = run_cli("check", "--root", str(bare), "--interval", "0.01", "--json")
    assert p.returncode == 0
    records = json.loads(p.stdout)["records"]
    assert {r["name"] for r in records} >= {"governor", "tsc", "busy"}
    p = run_cli("check", "--interval", "-1")
    assert p.returncode == 2 and "interval" in p.stderr


def test_timer_skew_is_judged_against_the_latencies_it_would_distort():
    from corelat._measure.check import judge_timer_skew

    def rec(lo, hi):
        return {"cpu": 1, "reference": 0, "low_ns": lo, "high_ns": hi, "bound_ns": max(abs(lo), abs(hi))}

    # A VM: the bound (281 ns) is as large as the latencies themselves.
    item = judge_timer_skew([rec(-281.0, 270.0)], "tsc")
    assert item.status == WARN
    assert "within 281 ns, against one-way latencies from 276 ns" in item.found
    assert "a typical 20 ns SMT/L3 transfer" in item.found
    assert "below 562 ns cannot be told apart from a timer offset" in item.why
    # Fast pairs: the limit is a tenth of the smallest latency.
    item = judge_timer_skew([rec(-1.5, 12.0), rec(-0.6, 14.0)])
    assert item.status == WARN and "more than 0.7 ns, a tenth of the smallest latency" in item.found
    # The fastest-message bracket's bound is at least the offset-free latency itself, so it can never
    # certify the timers to a tenth of it: this check always says so, rather than "ok".
    for lo, hi in ((-5.0, 300.0), (-150.0, 150.0), (-0.2, 40.0)):
        assert judge_timer_skew([rec(lo, hi)]).status == WARN


@pytest.mark.parametrize("interval", [1e6, 61, -1, 0, float("nan"), float("inf"), True, None, [1]])
def test_check_refuses_an_interval_no_check_needs(bare, monkeypatch, interval):
    """corelat.check(interval=1e6) slept for 11 days: the interval is bounded as the command's
    --interval is (0 < s <= 60), and refused, naming it, before anything is read or slept."""
    def watch(root, interval, **kwargs):
        pytest.fail(f"watched /proc/stat for {interval!r} s")

    monkeypatch.setattr("corelat._measure.check.check_busy", watch)
    with pytest.raises(corelat.InputError, match="^interval "):
        corelat.check(str(bare), interval=interval, measure_skew=False)


def test_check_refuses_a_measure_skew_that_is_not_a_bool(bare, monkeypatch):
    monkeypatch.setattr("corelat._measure.check.check_timer_skew", lambda cpus: pytest.fail("measured"))
    with pytest.raises(corelat.InputError, match="measure_skew"):
        corelat.check(str(bare), interval=0.01, measure_skew="no")


def test_cli_interval_is_the_api_bound():
    from conftest import run_cli

    from corelat._measure.check import MAX_INTERVAL

    p = run_cli("check", "--no-skew", "--interval", str(MAX_INTERVAL * 2))
    assert p.returncode == 2 and "--interval" in p.stderr and "60" in p.stderr, p.stderr
