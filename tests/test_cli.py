"""The corelat command: output layout, bad input (exit 2, no traceback), failures (exit 1)."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest
from conftest import run_cli

import corelat

CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


@pytest.mark.hw
@needs2
def test_default_output_like_core_to_core_latency():
    p = run_cli(20, 5)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for text in ("CPU:", "Num cores: ", "Num round trips per samples: 20", "Num samples: 5",
                 "latency = round-trip time / 2 in ns", "median"):
        assert text in out
    assert re.search(r"Min  latency: [\d.]+ns ±[\d.]+ cores: \(\d+,\d+\)", out)
    assert re.search(r"Max  latency: [\d.]+ns ±[\d.]+ cores: \(\d+,\d+\)", out)
    assert re.search(r"Mean latency: [\d.]+ns", out)
    # one value±err cell per pair in the lower triangle
    assert len(re.findall(r"\d+(?:\.\d)?±\d+(?:\.\d)?", out)) >= len(CPUS) * (len(CPUS) - 1) // 2
    assert "Traceback" not in p.stderr


@pytest.mark.hw
@needs2
def test_csv_on_stdout_text_on_stderr(tmp_path):
    p = run_cli("--csv", "--cpus", f"{CPUS[0]},{CPUS[1]}", "--kernel", "rw", 10, 3)
    assert p.returncode == 0, p.stderr
    rows = p.stdout.strip("\n").split("\n")
    assert len(rows) == 2 and rows[0] == "," and float(rows[1].split(",")[0]) > 0
    assert "Num samples: 3" in p.stderr


@pytest.mark.hw
@needs2
def test_order_structure_is_the_structure_the_analysis_finds(tmp_path):
    # measure() orders by 'os' or 'topology' only; the command orders by structure after it
    out = tmp_path / "r.npz"
    p = run_cli("--order", "structure", "-o", out, 10, 3)
    assert p.returncode == 0, p.stderr
    r = corelat.load(out)
    assert r.metadata["order"]["by"] == "structure" and list(r.cpus) == corelat.structure(r).order()


@pytest.mark.hw
@needs2
def test_output_file_npz_and_python_m(tmp_path):
    out = tmp_path / "r.npz"
    p = run_cli("-o", out, 10, 3)
    assert p.returncode == 0, p.stderr
    r = corelat.load(out)
    assert r.samples.shape[2] == 3 and r.cpus == tuple(CPUS)
    out_csv = tmp_path / "r.csv"
    assert run_cli("-o", out_csv, 10, 3).returncode == 0
    assert corelat.load(out_csv).n == len(CPUS)


@pytest.mark.hw
@needs2
def test_console_script_installed():
    # The README runs `.venv/bin/pytest` without activating the venv, so the script is not on PATH:
    # look for it where pip put it, beside this interpreter, and run it with only the system on PATH.
    exe = pathlib.Path(sysconfig.get_path("scripts")) / "corelat"
    if not exe.is_file():
        pytest.fail(f"the corelat console script is not installed at {exe} (is the package installed?)")
    p = subprocess.run([str(exe), "--cpus", f"{CPUS[0]},{CPUS[1]}", "5", "2"], check=False,
                       capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, PATH="/usr/bin:/bin"))
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cpus", "0,99999"], "not available"),
        (["--cpus", "0"], "at least 2"),
        (["--cpus", "0,0"], "more than once"),
        (["--cpus", "zero"], "bad CPU list"),
        (["0"], "round_trips"),
        (["10", "-5"], "samples"),
        (["99999999999"], "round_trips"),
        (["abc"], "invalid int"),
        (["--kernel", "bogus"], "invalid choice"),
        (["--timeout", "0"], "timeout"),
        (["-o", "/nonexistent-dir/x.npz"], "does not exist"),
        (["-o", "/tmp"], "must end in"),
        (["--no-such-flag"], "unrecognized"),
    ],
)
def test_bad_input_exit_2_one_line(args, message):
    p = run_cli(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert message in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


def test_unwritable_output(tmp_path):
    if os.geteuid() == 0:
        target = "/proc/corelat-test.npz"  # root can write anywhere else
    else:
        d = tmp_path / "ro"
        d.mkdir()
        d.chmod(0o500)
        target = str(d / "x.npz")
    p = run_cli("-o", target, "10", "2")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_too_few_allowed_cpus_via_taskset():
    taskset = shutil.which("taskset")
    if taskset is None:
        pytest.skip("taskset (util-linux) not installed")
    p = subprocess.run([taskset, "-c", str(CPUS[0]), sys.executable, "-m", "corelat", "10", "2"], check=False,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "at least 2" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.hw
@pytest.mark.signals
@needs2
def test_timeout_exit_1():
    p = run_cli("--timeout", "0.2", "10", "2", partner="stall")
    assert p.returncode == 1
    assert "did not answer" in p.stderr and "Traceback" not in p.stderr


def test_help():
    p = run_cli("--help")
    assert p.returncode == 0 and "ROUND_TRIPS" in p.stdout and "commands:" in p.stdout
    p = run_cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"corelat {corelat.__version__}"


def test_matrix_text_layout():
    from corelat._core.text import matrix as matrix_text

    m = np.array([[np.nan, 1, 2], [1, np.nan, 3], [2, 3, np.nan]]) * 10
    r = corelat.LatencyResult.from_matrix(m, (0, 4, 8))
    lines = matrix_text(r, "median").splitlines()
    assert lines[0].split() == ["0", "4"]
    assert lines[1].split() == ["0"]
    assert lines[2].split() == ["4", "10"]
    assert lines[3].split() == ["8", "20", "30"]


def test_measure_json_prints_the_figures_without_raw_samples(capsys):
    """`corelat measure --json` prints through common.print_json: the summary and per-pair records,
    not every raw sample (n² × k numbers on a big machine; `-o` keeps them)."""
    import json

    from corelat.cli import common

    rng = np.random.default_rng(0)
    n, k = 3, 500
    samples = np.where(np.eye(n, dtype=bool)[:, :, None], np.nan, 50 + rng.random((n, n, k)))
    r = corelat.LatencyResult(cpus=range(n), kernel="cas", samples=samples, name="json")
    common.print_json(r)
    d = json.loads(capsys.readouterr().out)
    assert d == json.loads(json.dumps(r.to_dict(arrays=False)))
    assert not {"samples", "flags", "extras"} & set(d)
    assert d["summary"] and len(d["records"]) == n * (n - 1)


def test_topology_command():
    p = run_cli("topology")
    assert p.returncode == 0 and "package" in p.stdout
    p = run_cli("topology", "--json")
    assert p.returncode == 0
    import json

    rows = json.loads(p.stdout)["cpus"]
    assert {r["cpu"] for r in rows} >= set(CPUS)
    p = run_cli("topology", "--root", "/nonexistent")
    assert p.returncode == 2 and "Traceback" not in p.stderr
