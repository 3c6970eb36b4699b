"""The command line as a new user meets it (issue 34): core-to-core-latency's flags (-c/--cores,
-b/--bench), --names and --pairs before the files, plot's picture named after its input and never
replacing a file not named with -o, plot of a fleet's folder, an output's needs (matplotlib) checked
before measuring, and output names without a known suffix refused, never changed.

Measuring is replaced by a canned result (in this process, or tests/fake_cli.py): no kernel runs."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import corelat
from corelat import LatencyResult
from corelat._fleet import synth
from corelat._measure import sweep
from corelat.cli import main

FAKE_CLI = pathlib.Path(__file__).resolve().parent / "fake_cli.py"
CPUS = sorted(os.sched_getaffinity(0))
needs2 = pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 allowed CPUs")


def latency(name="lat", seed=1, n=3):
    s = np.random.default_rng(seed).lognormal(3, 0.3, size=(n, n, 8))
    s[np.arange(n), np.arange(n)] = np.nan
    md = {"parameters": {"samples": 8, "round_trips": 50}, "cpu_model": "Test CPU"}
    return LatencyResult(cpus=tuple(range(n)), kernel="cas", samples=s, name=name, metadata=md)


@pytest.fixture
def measured(monkeypatch):
    """Each sweep the command asks for, recorded; a canned result of its kernel comes back."""
    calls = []

    def run(options, **_hooks):  # sweep.run's hooks (measurer, clock, spent) unused here
        calls.append(options)
        r = latency()
        return LatencyResult(cpus=r.cpus, kernel=options.kernel, samples=r.samples, name="lat",
                             metadata=r.metadata)

    monkeypatch.setattr(sweep, "run", run)
    return calls


# -- item 8: core-to-core-latency's flags ----------------------------------------------------------
@needs2
@pytest.mark.parametrize("flag", ["--cores", "-c"])
def test_cores_and_a_bench_list_as_core_to_core_latency_takes_them(measured, capsys, flag):
    assert main([flag, f"{CPUS[0]},{CPUS[1]}", "-b", "1,3", "20", "5"]) == 0, capsys.readouterr().err
    assert [o.kernel for o in measured] == ["cas", "oneway"]
    assert all(o.cpus == (CPUS[0], CPUS[1]) for o in measured)
    out = capsys.readouterr().out
    assert out.count("Kernel: cas") == 1 and out.count("Kernel: oneway") == 1


@needs2
@pytest.mark.parametrize("words, kernel", [(["-b", "2"], "rw"), (["--bench", "3"], "oneway"),
                                           (["--bench=1"], "cas"), ([], "cas"), (["-k", "rw"], "rw")])
def test_one_bench_is_the_kernel_it_numbers(measured, capsys, words, kernel):
    assert main([*words, "--cpus", f"{CPUS[0]},{CPUS[1]}", "20", "5"]) == 0, capsys.readouterr().err
    assert [o.kernel for o in measured] == [kernel]


@pytest.mark.parametrize("words, said", [
    (["-b", "4"], "-b/--bench: 4 is not a bench: 1 = cas, 2 = rw, 3 = oneway"),
    (["-b", "1,x"], "-b/--bench: 'x' is not a bench"),
    (["-b", ","], "-b/--bench: ',' names no bench"),
    (["-b", "2", "-k", "cas"], "-b/--bench and --kernel both choose the kernel"),
    (["-b", "1,2", "-o", "r.npz"], "-o saves one result"),
    (["-b", "1,2", "--json"], "--json prints one result"),
])
def test_a_bench_that_is_not_one_is_a_usage_error(measured, capsys, tmp_path, monkeypatch, words, said):
    monkeypatch.chdir(tmp_path)
    assert main([*words, "20", "5"]) == 2
    err = capsys.readouterr().err
    assert said in err, err
    assert not measured and not list(tmp_path.iterdir())


def _two_files(tmp_path):
    a, b = tmp_path / "A.npz", tmp_path / "B.npz"
    latency("host", seed=1).save(a)
    latency("host", seed=2).save(b)
    return str(a), str(b)


@pytest.mark.parametrize("order", ["names first", "names between", "names last", "comma list"])
def test_compare_names_before_the_files_leave_the_files(tmp_path, capsys, order):
    a, b = _two_files(tmp_path)
    argv = {"names first": ["--names", "first", "second", a, b],
            "names between": [a, "--names", "first", "second", b],
            "names last": [a, b, "--names", "first", "second"],
            "comma list": ["--names", "first,second", a, b]}[order]
    assert main(["compare", *argv, "--json"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert '"first"' in out and '"second"' in out


def test_plot_names_and_pairs_before_the_files_leave_the_files(tmp_path, capsys):
    a, b = _two_files(tmp_path)
    assert main(["plot", "--names", "first", "second", a, b, "-o", str(tmp_path / "two.png")]) == 0, \
        capsys.readouterr().err
    assert (tmp_path / "two.png").stat().st_size > 0
    violin = ["plot", "--kind", "violin", "--pairs", "0,1", "1,2", a, "-o", str(tmp_path / "v.png")]
    assert main(violin) == 0, capsys.readouterr().err
    assert (tmp_path / "v.png").stat().st_size > 0


def test_too_many_names_are_still_said(tmp_path, capsys):
    a, b = _two_files(tmp_path)
    assert main(["compare", "--names", "x", "y", "z", a, b]) == 2
    assert "3 names for 2 results" in capsys.readouterr().err


# -- item 9: plot's picture named after its input, never replacing a file not named with -o -------
def test_plot_names_the_picture_after_its_input(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = _two_files(tmp_path)  # both of host "host": the old default wrote host.png twice
    assert main(["plot", a]) == 0, capsys.readouterr().err
    assert main(["plot", b]) == 0, capsys.readouterr().err
    assert (tmp_path / "A.png").is_file() and (tmp_path / "B.png").is_file()
    assert "saved to B.png" in capsys.readouterr().err
    assert main(["plot", a, "--kind", "hist"]) == 0
    assert (tmp_path / "A-hist.png").is_file()
    assert main(["plot", a, b]) == 0
    assert (tmp_path / "A-vs-B.png").is_file()


def test_plot_never_replaces_a_file_it_was_not_told_to(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, _ = _two_files(tmp_path)
    (tmp_path / "A.png").write_bytes(b"mine")
    assert main(["plot", a]) == 2
    err = capsys.readouterr().err
    assert "A.png exists" in err and "-o A.png" in err, err
    assert (tmp_path / "A.png").read_bytes() == b"mine"
    assert main(["plot", a, "-o", "A.png"]) == 0  # named with -o: replaced
    assert (tmp_path / "A.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_draws_a_fleet_folder_as_report_does(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "nodes"
    folder.mkdir()
    for i, r in enumerate(synth.copies(latency("base", n=4), 6, seed=3)):
        r.save(folder / f"node{i:02d}.npz")
    assert main(["plot", str(folder)]) == 0, capsys.readouterr().err
    assert (tmp_path / "nodes.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", str(folder), "--node", "node01", "-o", "n1.png"]) == 0, capsys.readouterr().err


# -- item 7: what an output needs, checked before measuring -----------------------------------------
def _without_matplotlib(tmp_path):
    """An environment in which ``import matplotlib`` fails as where it is not installed."""
    blocker = tmp_path / "blocker" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n")
    path = os.pathsep.join(p for p in (str(blocker.parent), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.parametrize("command, report", [(["50", "20"], "x.pdf"), (["50", "20"], "x.html"),
                                             (["locks"], "x.html"), (["smt", "10", "3"], "x.pdf"),
                                             (["placement", "10", "3"], "x.html")])
def test_a_report_without_matplotlib_is_refused_before_measuring(tmp_path, command, report):
    canned = tmp_path / "canned.npz"
    latency().save(canned)
    env = {**_without_matplotlib(tmp_path), "CORELAT_FAKE_RESULT": str(canned)}
    env.pop("CORELAT_DEBUG", None)
    p = subprocess.run([sys.executable, str(FAKE_CLI), *command, "-o", "r.npz", "-o", report], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 2, p.stderr
    assert f"-o {report}: the report needs matplotlib; install it with:" in p.stderr, p.stderr
    assert "nothing was measured" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r.npz").exists()  # refused before measuring: no data file either


# -- item 23: an output name without a known suffix is refused, never changed ------------------------
@pytest.mark.parametrize("argv", [
    ["50", "20", "-o", "{out}"], ["--csv", "50", "20", "-o", "{out}"], ["locks", "-o", "{out}"],
    ["smt", "10", "3", "-o", "{out}"], ["placement", "10", "3", "-o", "{out}"],
    ["plot", "{file}", "-o", "{out}"], ["report", "{file}", "--html", "{out}"],
    ["report", "{file}", "--pdf", "{out}"], ["fleet-report", "{folder}", "-o", "{out}"],
])
@pytest.mark.parametrize("out", ["noext", "/dev/full"])
def test_an_output_name_without_a_known_suffix_is_refused(tmp_path, argv, out):
    canned = tmp_path / "canned.npz"
    latency().save(canned)
    folder = tmp_path / "nodes"
    folder.mkdir()
    for i, r in enumerate(synth.copies(latency("base", n=4), 3, seed=3)):
        r.save(folder / f"node{i}.npz")
    words = [w.format(out=out, file=canned, folder=folder) for w in argv]
    env = {**os.environ, "CORELAT_FAKE_RESULT": str(canned)}
    before = sorted(os.listdir(tmp_path)), sorted(os.listdir("/dev"))
    p = subprocess.run([sys.executable, str(FAKE_CLI), *words], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=60, check=False)
    assert p.returncode == 2, p.stderr
    assert "saved to" not in p.stderr and "written to" not in p.stderr and "Traceback" not in p.stderr
    assert (sorted(os.listdir(tmp_path)), sorted(os.listdir("/dev"))) == before
    assert corelat.load(canned).n == 3
