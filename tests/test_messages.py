"""Messages, signals and argument checks of issue 15 (items 4 and 10): one line, the right exit
status, never a traceback; every bad API argument an InputError naming it; validation linear."""

import errno
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from conftest import before_corelat_ran, run_cli

import corelat
from corelat import _early
from corelat._core import stats as _stats

CMD = [sys.executable, "-m", "corelat"]


# A Ctrl-C that lands while NumPy imports the datetime module (its C core does, through
# PyCapsule_Import): NumPy turns the KeyboardInterrupt into an ImportError. `import corelat` no longer
# loads NumPy, the command's module does, so the quiet handler of _early must still be in place then.
_CTRL_C_IN_NUMPY = """
import os, signal, sys, time
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "datetime" and "numpy" in sys.modules:
            os.write(2, b"hook: Ctrl-C while NumPy loads\\n")
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # a Python-level handler runs between bytecodes, here
        return None
sys.meta_path.insert(0, Hook())
sys.argv = ["corelat", "topology"]
import runpy
runpy.run_module("corelat", run_name="__main__", alter_sys=True)
"""


@pytest.mark.signals
def test_ctrl_c_while_numpy_loads_is_an_interruption_not_an_internal_error():
    p = subprocess.run([sys.executable, "-c", _CTRL_C_IN_NUMPY], capture_output=True, text=True, timeout=60)
    assert "hook: Ctrl-C while NumPy loads" in p.stderr, p.stderr  # else the case was not made
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 130 and p.stderr.strip().splitlines()[-1] == "corelat: interrupted", p.stderr


@pytest.mark.signals
def test_sigint_while_starting_never_prints_a_traceback():
    # Signals spread over the start-up (NumPy's import and the extension load, before main() runs).
    ended = []
    for k in range(12):
        p = subprocess.Popen([*CMD, "topology"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.03 + 0.02 * k)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        if before_corelat_ran(err):
            continue
        assert "Traceback" not in err, err
        assert p.returncode in (0, 130, -signal.SIGINT), (p.returncode, err)
        if p.returncode == 130:
            assert err.strip().splitlines()[-1] == "corelat: interrupted"
        ended.append(p.returncode)
    assert 130 in ended, ended  # at least one signal arrived while corelat was running


def _with_closed_stdout(args):
    r, w = os.pipe()
    os.close(r)  # nobody will read: the first write gets EPIPE, as with `corelat ... | true`
    try:
        # Buffered, as in a user's shell (CI machines often set PYTHONUNBUFFERED): the write then
        # fails at the flush, not at the print.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        p = subprocess.run([*CMD, *args], check=False, stdout=w, stderr=subprocess.PIPE,
                           text=True, timeout=120,
                           env=env)
    finally:
        os.close(w)
    return p


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["topology"], ["locks", "--list"]])
def test_broken_pipe_exits_quietly(args):
    p = _with_closed_stdout(args)
    assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr)


@pytest.mark.parametrize("blas_threads", ["1", None])
def test_import_under_a_small_memory_limit_is_one_line(blas_threads):
    # ulimit -v: Python starts, NumPy's import runs out of address space. The limits are tried from
    # high to low; each gives either a working command or a one-line error, never a traceback, and
    # never a hang: NumPy < 2.3's OpenBLAS retried its buffer forever (60-120 MiB on 3.10, with its
    # default thread count 85-105 MiB on 3.9), unless corelat refuses the limit first.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                            "OMP_NUM_THREADS")}
    if blas_threads:
        env["OPENBLAS_NUM_THREADS"] = blas_threads
    seen = set()
    for mib in (400, 200, 140, 120, 110, 100, 90, 80, 70, 60):
        limit = mib * 1024 * 1024

        def cap(limit=limit):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        try:
            p = subprocess.run([*CMD, "topology"], check=False, capture_output=True, text=True, timeout=60,
                               preexec_fn=cap, env=env)
        except subprocess.TimeoutExpired:
            pytest.fail(f"corelat topology under ulimit -v {mib} MiB still running after 60 s")
        seen.add(p.returncode)
        if "Fatal Python error" in p.stderr or "Could not find platform" in p.stderr:
            continue  # the interpreter itself could not start: nothing of ours ran
        if "failed to map segment from shared object" in p.stderr and "corelat" not in p.stderr.split(
                "failed to map segment")[-1]:
            continue  # the interpreter could not map one of its own extension modules (seen on 3.9)
        assert "Traceback" not in p.stderr, (mib, p.stderr[-1500:])
        assert p.returncode in (0, 1), (mib, p.returncode, p.stderr)
        if p.returncode == 1:  # ours, or OpenBLAS's own line (it exits from C as NumPy loads it)
            assert p.stderr.count("\n") == 1, p.stderr
            assert "corelat: error: cannot start" in p.stderr or p.stderr.startswith("OpenBLAS"), p.stderr


@pytest.mark.parametrize("argv, command", [
    (["python", "-m", "corelat"], True),
    (["python", "-m", "corelat.__main__", "topology"], True),
    (["python", "-mcorelat"], True),
    (["python", "-X", "dev", "-W", "error", "-Bm", "corelat"], True),
    (["python", "-m", "corelatx"], False),
    (["python", "-m", "pytest", "-m", "corelat"], False),
    (["python", "-c", "import corelat", "-m", "corelat"], False),
    (["python", "script.py", "-m", "corelat"], False),
    (["python"], False),
])
def test_command_recognised_from_the_interpreter_command_line(argv, command):
    # Python 3.9 has no sys.orig_argv: while `python -m corelat` imports corelat, sys.argv[0] is "-m"
    # and only the interpreter's command line (/proc/self/cmdline) says which module runs.
    assert _early._runs_module(argv) is command


def test_command_recognised_without_orig_argv(monkeypatch):
    monkeypatch.delattr(sys, "orig_argv", raising=False)
    monkeypatch.setattr(sys, "argv", ["-m"])
    monkeypatch.setattr(_early, "_read", lambda path, limit=0: b"python3.9\0-m\0corelat\0topology\0")
    assert _early.running_as_command()
    monkeypatch.setattr(sys, "argv", ["/usr/bin/script.py"])
    assert not _early.running_as_command()


def test_command_still_recognised_without_orig_argv_once_runpy_named_the_main_module(monkeypatch):
    # Once `python -m corelat` has imported corelat, runpy sets sys.argv[0] to corelat/__main__.py:
    # on 3.9 the command then stopped being recognised, so the Ctrl-C hold of its ending was not
    # taken (a Ctrl-C as it finalised killed it by SIGINT, status -2, without a word).
    monkeypatch.delattr(sys, "orig_argv", raising=False)
    main = os.path.join(os.path.dirname(_early.__file__), "__main__.py")
    monkeypatch.setattr(sys, "argv", [main, "fleet-report", "dir"])
    monkeypatch.setattr(_early, "_read", lambda path, limit=0: b"python3.9\0-m\0corelat\0fleet-report\0dir\0")
    assert _early.running_as_command()
    monkeypatch.setattr(_early, "_read", lambda path, limit=0: b"python3.9\0-m\0pytest\0")
    assert not _early.running_as_command()


@pytest.mark.parametrize("args, message", [
    (["--no-such-flag"], "unrecognized arguments"),
    (["--kernel", "bogus"], "invalid choice"),
    (["locks", "--bogus"], "unrecognized arguments"),
    (["report"], "required"),
    (["-o", ""], "empty file name"),
    (["smt", "-o", ""], "empty file name"),
    (["check", "--root", "/nonexistent"], "not a folder"),
])
def test_usage_errors_one_line_exit_2(args, message):
    p = run_cli(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and message in p.stderr, p.stderr


@pytest.mark.hw
def test_dangling_symlink_as_output_is_followed_not_replaced(tmp_path):
    link = tmp_path / "link.npz"
    link.symlink_to("real.npz")
    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    p = run_cli("-o", link, "--cpus", f"{cpus[0]},{cpus[1]}", "5", "2", timeout=300)
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and (tmp_path / "real.npz").is_file()
    assert corelat.load(link).n == 2


@pytest.mark.parametrize("exc, words", [
    (MemoryError(), "out of memory"),
    (OSError(errno.EAGAIN, "Resource temporarily unavailable"), "cannot start a thread"),
    (OSError(errno.ENOSPC, "No space left on device", "/x/out.npz"), "/x/out.npz: No space left"),
])
def test_runtime_failures_are_one_clear_line(monkeypatch, capsys, exc, words):
    from corelat.cli import cmd_topology, main

    def fail(args):
        raise exc

    monkeypatch.setattr(cmd_topology, "run", fail)
    assert main(["topology"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "internal error" not in err, err


@pytest.mark.parametrize("kwargs, argument", [
    ({"kernel": ["cas"]}, "kernel"),
    ({"cpus": b"0,1"}, "cpus"),
    ({"cpus": 5}, "cpus"),
    ({"cpus": ["0", "1"]}, "cpus"),
    ({"topology": 5, "strategy": "sample"}, "topology"),
    ({"topology": "x", "strategy": "sample"}, "topology"),
    ({"topology": [1, 2], "strategy": "sample"}, "topology"),
])
def test_bad_api_arguments_are_input_errors_naming_them(kwargs, argument):
    with pytest.raises(corelat.InputError, match=argument):
        corelat.measure(**kwargs)


@pytest.mark.parametrize("topology", [5, "x", [1, 2]])
def test_bad_topology_for_smt_and_structure(topology):
    with pytest.raises(corelat.InputError, match="topology"):
        corelat.smt(topology=topology)
    r = corelat.load(corelat.example_files()[0])
    with pytest.raises(corelat.InputError, match="topology"):
        corelat.structure(r, topology=topology)


@pytest.mark.parametrize("cpus",
                         ["0-50000", "0-1000000", "0-999999,0-999999", range(10**9), iter(range(10**9))])
def test_absurd_cpu_lists_refused_at_once(cpus):
    t = time.monotonic()
    with pytest.raises(corelat.InputError, match="can have"):
        corelat.measure(cpus)
    with pytest.raises(corelat.InputError, match="can have"):
        corelat.locks(cpus)
    assert time.monotonic() - t < 5  # was 60 s and more (quadratic checks)


def test_validation_is_linear_for_long_allowed_lists(monkeypatch):
    # A 20000-CPU machine: checking every CPU must not cost n² (it took 10 s).
    from corelat._system import validate as _validate

    big = list(range(20000))
    monkeypatch.setattr(_validate, "allowed_cpus", lambda: big)
    monkeypatch.setattr(_validate, "possible_cpus", lambda: len(big))
    t = time.monotonic()
    assert len(_validate.resolve_cpus("0-19999")) == 20000
    assert len(_validate.resolve_cpus(big)) == 20000
    assert time.monotonic() - t < 5


def test_nan_statistics_match_numpy_without_warnings():
    rng = np.random.default_rng(3)
    a = rng.uniform(1, 9, (6, 6, 9))
    a[a < 3] = np.nan
    a[2, 2] = np.nan
    refs = {"median": np.nanmedian, "mean": np.nanmean, "minimum": np.nanmin, "maximum": np.nanmax}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = {k: f(a, axis=-1) for k, f in refs.items()}
        want["std"] = np.where(np.sum(~np.isnan(a), -1) >= 2, np.nanstd(a, axis=-1, ddof=1), np.nan)
        want_p = np.nanpercentile(a, 90, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, v in want.items():
            np.testing.assert_allclose(getattr(_stats, k)(a), v, equal_nan=True, err_msg=k)
        np.testing.assert_allclose(_stats.percentile(a, 90), want_p, equal_nan=True)


def test_concurrent_statistics_print_no_warnings():
    code = (
        "import threading, corelat\n"
        "r = corelat.load(corelat.example_files()[0])\n"
        "def work():\n"
        "    for _ in range(50):\n"
        "        x = corelat.LatencyResult(cpus=r.cpus, kernel=r.kernel, samples=r.samples)\n"
        "        x.median; x.mean; x.min; x.max; x.std\n"
        "ts = [threading.Thread(target=work) for _ in range(8)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print('done')\n"
    )
    p = subprocess.run([sys.executable, "-W", "always", "-c", code], check=False, capture_output=True,
                       text=True, timeout=300)
    assert p.stdout.strip() == "done" and "Warning" not in p.stderr, p.stderr[-1000:]


def test_sigint_handler_left_alone_for_library_users():
    code = ("import signal, corelat\n"
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n")
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "True", p.stderr


def test_threads_do_not_break_import():
    errors = []

    def imp():
        try:
            import corelat  # noqa: F401
        except (ImportError, ValueError, RuntimeError) as e:  # pragma: no cover - the assertion shows it
            errors.append(e)

    t = threading.Thread(target=imp)
    t.start()
    t.join()
    assert not errors


@pytest.mark.hw
def test_tiny_sizes_warn_and_say_the_minimum():
    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    r = corelat.measure(cpus, round_trips=1, samples=1, retest=False)
    text = " | ".join(r.warnings)
    assert "at least 100 round_trips" in text and "at least 6 samples" in text, text
    r = corelat.measure(cpus, round_trips=100, samples=6, retest=False)
    assert not any("at least 100 round_trips" in w or "at least 6 samples" in w for w in r.warnings)
    p = run_cli("--cpus", f"{cpus[0]},{cpus[1]}", "1", "1", timeout=120)
    assert p.returncode == 0 and "at least 100 round_trips" in p.stderr, p.stderr
