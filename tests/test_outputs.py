"""What the command writes (issue 24): the -o files first (a broken, closed, full or ASCII stdout never
costs them), several -o files with reports after the data, plot's image atomic, no write through a
stranger's symlink, no set-id bits carried over, no .tmp left by SIGTERM, printable-only text, and the
messages of the command line (--retest=N, compare of other kinds, no extension, CORELAT_DEBUG, ...).

Measuring is replaced by a canned result (tests/fake_cli.py): these tests run no kernel."""

import os
import pathlib
import signal
import stat
import subprocess
import sys
import time
import types

import numpy as np
import pytest
from conftest import run_cli

import corelat
from corelat import LatencyResult, LockResult, SMTResult
from corelat._core.errors import SaveError
from corelat._measure.locks import summarise
from corelat.cli import main

FAKE_CLI = pathlib.Path(__file__).resolve().parent / "fake_cli.py"
IS_ROOT = os.geteuid() == 0
NOBODY = 65534


def latency(**metadata):
    s = np.random.default_rng(1).lognormal(3, 0.3, size=(3, 3, 8))
    s[np.arange(3), np.arange(3)] = np.nan
    md = {"parameters": {"samples": 8, "round_trips": 50}, "cpu_model": "Test CPU"}
    md.update(metadata)
    return LatencyResult(cpus=(0, 1, 2), kernel="cas", samples=s, name="lat", metadata=md)


def lock_result():
    raw = {"calls": [[100, 100], [20, 20]], "ticks": [[2000] * 2, [2000] * 2], "sermin": [[60, 60], [90, 90]],
           "sercalls": [[5, 5], [7, 7]], "counter": [0, 54]}
    data, threads = summarise(["baseline", "lock-pthread-mutex"], [0, 1], raw, 2.0, 50.0)
    return LockResult(cpus=(0, 1), shared=True, duration=1.0, data=data, threads=threads,
                      metadata={"timer": {"name": "tsc"}, "timer_mhz": 2000.0}, name="locks")


def smt_result():
    non = np.full((2, 4), 50.0)
    return SMTResult(cpus=(0, 1, 2, 3), kernel="rw", pairs=np.array([[0, 2], [1, 3]]),
                     partners=np.array([1, 0]), partner_levels=("l3", "l3"),
                     sibling_samples=np.full((2, 4), 5.0), nonsibling_samples=non,
                     loops=("alu", "mem"), alone=np.full((2, 2, 2), 2e9), together=np.full((2, 2, 2), 1e9),
                     metadata={}, name="smt")


def placement_result():
    a = latency()
    b = LatencyResult(cpus=a.cpus, kernel=a.kernel, samples=a.samples * 1.5, metadata=dict(a.metadata),
                      name=a.name, extras={"home_node": np.where(np.eye(3, dtype=bool), -1, 1)})
    return corelat.PlacementResult(["initiator", "node:1"], [a, b], name="homes")


#: command -> (the canned result, the arguments of a run)
COMMANDS = {
    "measure": (latency, ["50", "20"]),
    "csv": (latency, ["--csv", "50", "20"]),
    "locks": (lock_result, ["locks"]),
    "smt": (smt_result, ["smt", "10", "3"]),
    "placement": (placement_result, ["placement", "10", "3"]),
}


def fake_cli(tmp_path, command, *extra, stdout=subprocess.PIPE, env=None, shell_tail=""):
    """Run tests/fake_cli.py for ``command`` with ``extra`` arguments in ``tmp_path``."""
    make, args = COMMANDS[command]
    canned = tmp_path / f"canned-{command}.npz"
    if not canned.exists():
        make().save(canned)
    full_env = {**os.environ, "CORELAT_FAKE_RESULT": str(canned), **(env or {})}
    full_env.pop("CORELAT_DEBUG", None)
    argv = [sys.executable, str(FAKE_CLI), *args, *map(str, extra)]
    if shell_tail:  # through a shell, for redirections Python's subprocess cannot express (>&-)
        argv = ["bash", "-c", " ".join(f"'{a}'" for a in argv) + " " + shell_tail]
    return subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, env=full_env,
                          cwd=tmp_path, check=False)


# -- 1: the -o file is saved first ----------------------------------------------------------------
@pytest.mark.parametrize("command", COMMANDS)
def test_a_broken_stdout_never_costs_the_file(tmp_path, command):
    r, w = os.pipe()
    os.close(r)  # `| true`: the reader is gone before the first line
    try:
        p = fake_cli(tmp_path, command, "-o", "r.npz", stdout=w)
    finally:
        os.close(w)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    assert (tmp_path / "r.npz").is_file(), p.stderr
    corelat.load(tmp_path / "r.npz")


@pytest.mark.parametrize("command", ["measure", "locks", "placement"])
def test_stdout_on_a_full_disk_says_stdout_and_keeps_the_file(tmp_path, command):
    with open("/dev/full", "w") as full:
        p = fake_cli(tmp_path, command, "-o", "r.npz", stdout=full)
    assert p.returncode == 1
    assert "standard output: No space left on device" in p.stderr, p.stderr
    assert "saved to r.npz" in p.stderr and (tmp_path / "r.npz").is_file()
    assert "Exception ignored" not in p.stderr


def test_a_closed_stdout_is_no_internal_error(tmp_path):
    p = fake_cli(tmp_path, "measure", "-o", "r.npz", stdout=None, shell_tail=">&-")
    assert p.returncode == 0, p.stderr
    assert "internal error" not in p.stderr and "standard output is closed" in p.stderr
    assert (tmp_path / "r.npz").is_file()


@pytest.mark.parametrize("command", ["measure", "placement"])
def test_an_ascii_stdout_gets_escapes_not_an_error(tmp_path, command):
    p = fake_cli(tmp_path, command, "-o", "a.npz", env={"PYTHONIOENCODING": "ascii"})
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "a.npz").is_file()
    assert "\\xb1" in p.stdout  # the ± of every cell, escaped


def test_a_csv_output_is_saved_before_the_broken_stdout(tmp_path):
    r, w = os.pipe()
    os.close(r)
    try:
        p = fake_cli(tmp_path, "csv", "-o", "m.csv", stdout=w)
    finally:
        os.close(w)
    assert p.returncode == 0 and corelat.load(tmp_path / "m.csv").n == 3


# -- issue 21's command-line part: -o twice, reports after the data ------------------------------
@pytest.fixture
def canned(monkeypatch):
    """Measuring commands in this process return canned results at once."""
    from corelat._measure import placement, smt, sweep
    from corelat._measure.options import SweepOptions
    from corelat.cli import cmd_locks

    options = staticmethod(lambda *a, **k: types.SimpleNamespace(budget=None))  # all the command reads
    monkeypatch.setattr(SweepOptions, "build", options)
    monkeypatch.setattr(SweepOptions, "for_smt", options)
    monkeypatch.setattr(sweep, "run", lambda *a, **k: latency())
    monkeypatch.setattr(placement, "run", lambda *a, **k: placement_result())
    monkeypatch.setattr(smt, "run", lambda *a, **k: smt_result())
    monkeypatch.setattr(cmd_locks, "locks", lambda *a, **k: lock_result())
    monkeypatch.delenv("CORELAT_DEBUG", raising=False)


def fake_report(monkeypatch, write):
    module = types.ModuleType("corelat._report")
    module.write_report = write
    monkeypatch.setitem(sys.modules, "corelat._report", module)


@pytest.mark.parametrize("args", [["50", "20"], ["locks"], ["smt", "10", "3"], ["placement", "10", "3"]])
def test_o_twice_writes_the_data_then_the_report(tmp_path, monkeypatch, canned, capsys, args):
    order = []

    def write(result, path):
        order.append(("report", (tmp_path / "r.npz").exists()))
        pathlib.Path(path).write_text(f"<html>{type(result).__name__}</html>")

    fake_report(monkeypatch, write)
    status = main([*args, "-o", str(tmp_path / "r.html"), "-o", str(tmp_path / "r.npz")])
    err = capsys.readouterr().err
    assert status == 0, err
    assert order == [("report", True)]  # the data file was there before the report started
    assert corelat.load(tmp_path / "r.npz") is not None and (tmp_path / "r.html").is_file()
    assert err.index("saved to") < err.index("r.html") and err.count("saved to") == 2


def test_a_report_that_fails_never_costs_the_data(tmp_path, monkeypatch, canned, capsys):
    def write(result, path):
        raise RuntimeError("jinja2 is not installed")

    fake_report(monkeypatch, write)
    status = main(["50", "20", "-o", str(tmp_path / "r.npz"), "-o", str(tmp_path / "r.pdf")])
    out, err = capsys.readouterr()
    assert status == 1
    assert corelat.load(tmp_path / "r.npz").n == 3 and "Min  latency" in out
    errors = [line for line in err.splitlines() if line.startswith("corelat: error")]
    assert len(errors) == 1 and "r.pdf" in errors[0] and "report was not written" in errors[0], err
    assert "Traceback" not in err and not (tmp_path / "r.pdf").exists()


def test_a_report_corelat_cannot_write_is_refused_before_measuring(tmp_path, monkeypatch, canned, capsys):
    monkeypatch.setitem(sys.modules, "corelat._report", None)  # issue 34: once measured, then refused
    status = main(["50", "20", "-o", str(tmp_path / "r.npz"), "-o", str(tmp_path / "r.pdf")])
    err = capsys.readouterr().err
    assert status == 2 and "-o " in err and "r.pdf" in err and "nothing was measured" in err, err
    assert not (tmp_path / "r.npz").exists()


def test_o_twice_the_same_file_or_a_wrong_suffix_is_refused_before_measuring(tmp_path, canned, capsys):
    assert main(["50", "20", "-o", str(tmp_path / "r.npz"), "-o", str(tmp_path / "r.npz")]) == 2
    assert "given twice" in capsys.readouterr().err
    assert main(["locks", "-o", str(tmp_path / "r.csv")]) == 2
    assert ".html" in capsys.readouterr().err


# -- 2: plot writes through the atomic writer ----------------------------------------------------
def test_plot_leaves_an_old_image_whole_when_the_write_fails(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    old = tmp_path / "old.png"
    old.write_bytes(b"old image" * 1000)

    def savefig(self, fname, *args, **kwargs):  # what a full disk does: part written, then ENOSPC
        with open(fname, "wb") if isinstance(fname, (str, os.PathLike)) else _nullctx(fname) as f:
            f.write(b"x" * 4096)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", savefig)
    status = main(["plot", corelat.example_files()[0], "-o", str(old)])
    assert status == 1, capsys.readouterr().err
    assert old.read_bytes() == b"old image" * 1000
    assert os.listdir(tmp_path) == ["old.png"]


class _nullctx:
    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self.f

    def __exit__(self, *exc):
        return False


# -- 3, 4: symlinks of others, set-id bits -------------------------------------------------------
@pytest.fixture
def sticky(tmp_path):
    """A world-writable sticky folder (a /tmp) holding a link that user nobody planted."""
    if not IS_ROOT:
        pytest.skip("planting a link owned by another user needs root")
    folder = tmp_path / "sticky"
    folder.mkdir()
    folder.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "important.conf").write_text("keep me")
    (victim / "important.conf").chmod(0o600)
    return folder, victim


def plant(link, target):
    os.symlink(target, link)
    os.lchown(link, NOBODY, NOBODY)


@pytest.mark.parametrize("dangling", [False, True])
def test_no_write_through_a_strangers_link_in_a_sticky_folder(sticky, dangling, canned, capsys):
    folder, victim = sticky
    target = victim / ("newfile" if dangling else "important.conf")
    plant(folder / "result.npz", target)
    with pytest.raises(SaveError, match="another user"):
        latency().save(folder / "result.npz")
    status = main(["50", "5", "-o", str(folder / "result.npz")])
    err = capsys.readouterr().err
    assert status == 2 and "another user" in err and "not written through" in err, err
    assert (victim / "important.conf").read_text() == "keep me"
    assert not (victim / "newfile").exists()
    assert os.path.islink(folder / "result.npz")


def test_own_links_are_still_followed(tmp_path):
    (tmp_path / "real.npz").write_bytes(b"old")
    os.symlink("real.npz", tmp_path / "link.npz")
    latency().save(tmp_path / "link.npz")
    assert os.path.islink(tmp_path / "link.npz") and corelat.load(tmp_path / "real.npz").n == 3


def test_a_replaced_file_loses_set_id_bits(tmp_path):
    f = tmp_path / "owned.npz"
    f.write_bytes(b"old")
    if IS_ROOT:
        os.chown(f, NOBODY, NOBODY)  # before the chmod: a chown clears set-id bits
    f.chmod(0o6755)
    assert stat.S_IMODE(f.stat().st_mode) == 0o6755
    latency().save(f)
    assert stat.S_IMODE(f.stat().st_mode) == 0o755


# -- 9: SIGTERM during a save ----------------------------------------------------------------------
SLOW_SAVE = """
import sys, time
from corelat._core import files
def write(f):
    f.write(b"x" * 1000)
    print("writing", flush=True)
    for _ in range(200):
        time.sleep(0.05)
files.atomic_write(sys.argv[1], write)
"""


def _save_under(signum, disposition, path):
    # The disposition the saving process starts with, whatever this one inherited (under nohup,
    # SIGHUP comes ignored: CI started that way once, and the save rightly went on).
    return subprocess.Popen([sys.executable, "-c", SLOW_SAVE, str(path)], stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signum, disposition))


@pytest.mark.signals
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_during_a_save_leaves_no_temporary_file(tmp_path, signum):
    with _save_under(signum, signal.SIG_DFL, tmp_path / "big.npz") as p:
        try:
            assert p.stdout.readline() == "writing\n"
            p.send_signal(signum)
            assert p.wait(timeout=10) == -signum  # ended by the signal, as before
        finally:
            p.kill()
    assert os.listdir(tmp_path) == []


SWALLOWED = """
import os, signal, sys
from corelat._core import files
class Finaliser:
    def __del__(self):
        os.kill(os.getpid(), int(sys.argv[2]))  # its handler runs here, and Python ignores what it raises
def write(f):
    f.write(b"x" * 1000)
    Finaliser()
files.atomic_write(sys.argv[1], write)
print("survived", flush=True)
"""


@pytest.mark.signals
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_whose_handler_ran_in_a_finaliser_still_ends_the_process(tmp_path, signum):
    # A finaliser (__del__, a weakref callback: numpy's and zipfile's objects have them) runs at any
    # point of a save; a signal handled there raised an exception Python only prints: the process
    # went on as if never signalled (exit 0, "survived").
    p = subprocess.run([sys.executable, "-c", SWALLOWED, str(tmp_path / "out.npz"), str(int(signum))],
                       capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    assert (p.returncode, p.stdout) == (-signum, "")
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


@pytest.mark.signals
@pytest.mark.slow
def test_an_ignored_hangup_does_not_end_a_save(tmp_path):
    # nohup: SIGHUP is ignored on purpose, and the save is not cut short by it.
    with _save_under(signal.SIGHUP, signal.SIG_IGN, tmp_path / "big.npz") as p:
        try:
            assert p.stdout.readline() == "writing\n"
            p.send_signal(signal.SIGHUP)
            assert p.wait(timeout=60) == 0
        finally:
            p.kill()
    assert os.listdir(tmp_path) == ["big.npz"]


# -- 5, 13: printable output, one-line names ------------------------------------------------------
ESC = "\x1b]0;owned\x07\x1b[2J\r"


def test_text_from_a_file_reaches_the_terminal_escaped(tmp_path, capsys):
    f = tmp_path / f"x{ESC}.npz"
    latency(cpu_model=f"CPU{ESC}", hostname=f"host{ESC}", warnings=[f"warn{ESC}"]).save(f)
    assert main(["report", str(f)]) == 0
    out, err = capsys.readouterr()
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "CPU\\x1b]0;owned\\x07" in out
    assert main(["report", str(tmp_path / f"missing{ESC}.npz")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "missing\\x1b" in err


def test_saved_to_names_a_file_with_a_newline_on_one_line(tmp_path, canned, capsys):
    assert main(["50", "20", "-o", str(tmp_path / "a\nb.npz")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "saved to" in line]
    assert len(lines) == 1 and lines[0].endswith("a\\x0ab.npz"), lines


@pytest.mark.parametrize("value", ["0", "false", "no", "off", ""])
def test_corelat_debug_off_values_give_no_traceback(monkeypatch, capsys, value):
    from corelat.cli import cmd_compare

    monkeypatch.setenv("CORELAT_DEBUG", value)
    monkeypatch.setattr(cmd_compare, "compare", lambda *a, **k: 1 / 0)
    assert main(["compare", corelat.example_files()[0]]) == 1
    assert "internal error: ZeroDivisionError" in capsys.readouterr().err


def test_a_long_corelat_timer_is_not_echoed_whole():
    p = run_cli("10", "2", env={"CORELAT_TIMER": "x" * 10_000})
    assert p.returncode == 2
    assert "CORELAT_TIMER" in p.stderr and len(p.stderr) < 300, len(p.stderr)


# -- command line: --retest=N, compare of other kinds, no extension --------------------------------
def test_retest_takes_its_value_after_an_equals_sign_only(capsys, canned):
    from corelat.cli import _parser, cmd_measure

    args = _parser("measure", cmd_measure).parse_args(["--retest=5", "100", "3"])
    assert (args.retest, args.round_trips, args.samples) == (5, 100, 3)
    args = _parser("measure", cmd_measure).parse_args(["100", "3", "--retest"])
    assert (args.retest, args.round_trips, args.samples) == (True, 100, 3)
    assert main(["--retest", "1000", "300"]) == 2  # was: N=1000, ROUND_TRIPS=300, silently
    err = capsys.readouterr().err
    assert "--retest=1000" in err and "ambiguous" in err


def test_compare_of_other_kinds_names_each_file_and_kind(tmp_path, capsys):
    lock_result().save(tmp_path / "locks.npz")
    latency().save(tmp_path / "mine.npz")
    assert main(["compare", str(tmp_path / "locks.npz"), str(tmp_path / "mine.npz")]) == 2
    err = capsys.readouterr().err
    assert "locks.npz' holds a locks result" in err and "mine.npz' holds a latency matrix" in err
    assert "does not compare" in err


def test_no_extension_on_linux_x86_says_how_to_reinstall():
    code = ("import sys; sys.modules['corelat._corelat'] = None\nimport corelat\n"
            "try:\n    corelat.measure()\nexcept corelat.CorelatError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    assert "installed without its measuring core" in p.stdout and "reinstall" in p.stdout, p.stdout
    assert "needs Linux" not in p.stdout


def test_no_extension_elsewhere_still_says_linux():
    from corelat._core.binding import why_missing

    assert "needs Linux" in why_missing(ModuleNotFoundError("no", name="corelat._corelat"), supported=False)


# -- 12: limits --------------------------------------------------------------------------------------
def test_plot_with_matplotlib_installed_but_failing_does_not_say_install(tmp_path, monkeypatch, capsys):
    import builtins

    real = builtins.__import__

    def failing(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("libfreetype.so.6: failed to map segment from shared object")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    status = main(["plot", corelat.example_files()[0], "-o", str(tmp_path / "p.png")])
    err = capsys.readouterr().err
    assert status == 2 and "installed but did not load" in err and "pip install" not in err, err


def _limited(limit, value):
    def preexec():
        import resource

        resource.setrlimit(limit, (value, value))
    return preexec


#: Root is never bound by RLIMIT_NPROC (CI runs as root): the command runs as user nobody, keeping only
#: the capabilities to read files (this interpreter may live under a folder only root may enter).
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=+dac_override,+dac_read_search", "--ambient-caps=+dac_override,+dac_read_search"]


@pytest.mark.slow
@pytest.mark.parametrize("omp_threads", ["2", None], ids=["OMP_NUM_THREADS=2", "plain"])
def test_report_under_a_limit_of_one_process_is_not_interrupted(tmp_path, omp_threads):
    import resource
    import shutil

    if IS_ROOT and not shutil.which("setpriv"):
        pytest.skip("dropping root needs setpriv (util-linux)")
    f = tmp_path / "r.npz"
    latency().save(f)
    # A user's plain environment, and one with OMP_NUM_THREADS=2 (HPC sites set it): OpenBLAS wants 2.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                            "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if omp_threads:
        env["OMP_NUM_THREADS"] = omp_threads
    p = subprocess.run([*(AS_NOBODY if IS_ROOT else []), sys.executable, "-m", "corelat", "report", str(f)],
                       capture_output=True, text=True, preexec_fn=_limited(resource.RLIMIT_NPROC, 1), env=env,
                       cwd="/", timeout=60, check=False)
    assert "interrupted" not in p.stderr and p.returncode == 0, p.stderr
    assert "Structure:" in p.stdout


#: A loader's failure to map the extension, as under a low ``ulimit -v``.
NO_ROOM = """
import sys
class NoRoom:
    def find_spec(self, name, path=None, target=None):
        if name == "corelat._corelat":
            raise ImportError("_corelat.so: failed to map segment from shared object")
sys.meta_path.insert(0, NoRoom())
import corelat
try:
    corelat.measure()
except corelat.CorelatError as e:
    print(e)
"""


def test_an_extension_that_fails_to_load_does_not_say_linux_x86():
    p = subprocess.run([sys.executable, "-c", NO_ROOM], capture_output=True, text=True, timeout=60,
                       check=False)
    assert p.returncode == 0, p.stderr
    assert "needs Linux on x86-64" not in p.stdout and "ulimit -v" in p.stdout, p.stdout


#: ``corelat ARGS`` with an address-space limit 4 MiB above what the loaded command uses: less than a
#: thread's stack (8 MiB).
NO_ROOM_FOR_A_THREAD = """
import resource, sys
import numpy
import corelat._corelat, corelat._measure.sweep, corelat.cli.cmd_measure
from corelat.cli import main
size = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:"))
room = (size + 4096) * 1024
resource.setrlimit(resource.RLIMIT_AS, (room, room))
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.hw
@pytest.mark.slow
def test_no_room_for_a_thread_says_the_address_space(tmp_path):
    # The limit is set from inside, once the command's modules are loaded: the address space that
    # leaves room for them and not for a thread differs with the Python and NumPy (a fixed 115 MB
    # was enough to measure on 3.9 and 3.13).
    p = subprocess.run([sys.executable, "-c", NO_ROOM_FOR_A_THREAD, "10", "2"], capture_output=True,
                       text=True, cwd="/", timeout=60, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "needs Linux on x86-64" not in p.stderr and "ran out of threads" not in p.stderr, p.stderr
    assert "ulimit -v" in p.stderr


def test_escaping_keeps_layout_and_is_fast():
    from corelat._core.text import printable

    assert printable("a\tb\nc ±×") == "a\tb\nc ±×"
    assert printable("\x1b[2J\r\x9b\u202e") == "\\x1b[2J\\x0d\\x9b\\u202e"
    big = "1.0±0.1  " * 200_000 + "\n"
    t = time.perf_counter()
    assert printable(big) is big or printable(big) == big
    assert time.perf_counter() - t < 5


def test_a_failed_save_is_said_even_when_stdout_is_gone(tmp_path, monkeypatch, canned, capsys):
    from corelat.cli import cmd_measure

    def full(self, path):
        raise SaveError(28, "No space left on device", str(path))

    def gone(result, args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(LatencyResult, "save", full)
    monkeypatch.setattr(cmd_measure, "_print", gone)
    assert main(["50", "20", "-o", str(tmp_path / "r.npz")]) == 1  # not 0, as for a broken pipe alone
    assert "r.npz: No space left on device" in capsys.readouterr().err


def test_a_printable_finalised_after_its_stream_closed_says_nothing(monkeypatch):
    # Python 3.13 finalised a command's stdout wrapper in a later test, after pytest had closed the
    # stream under it: its close() flushed, and the flush's StreamError went to sys.unraisablehook
    # (3.13 reports what a finaliser's close() raises; 3.11 drops it, so this fails on 3.13 only).
    import gc
    import io

    from corelat.cli.outputs import Printable

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # its flush raises once closed
    p = Printable(stream, "standard output")
    p.write("x")
    stream.close()
    del p
    gc.collect()
    assert seen == []
