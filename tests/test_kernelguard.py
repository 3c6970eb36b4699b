"""The pure-test guard (tests/kernelguard.py): a test not marked ``hw`` that runs a kernel fails."""

import os
import subprocess
import sys
import textwrap

import kernelguard
import pytest


@pytest.fixture
def _corelat():
    return pytest.importorskip("corelat._corelat", reason="needs the C extension")


def test_every_entry_point_of_the_extension_is_a_kernel_or_a_helper(_corelat):
    # A new entry point must be sorted here, or a pure test could run it unguarded.
    functions = {n for n in dir(_corelat) if callable(getattr(_corelat, n)) and not n.startswith("_")}
    assert functions == set(kernelguard.KERNELS) | set(kernelguard.HELPERS)


def test_the_guard_refuses_kernels_in_process_and_gives_them_back(_corelat):
    # This test is pure itself, so the session's guard is installed: the one under test stacks on it.
    before = {n: getattr(_corelat, n) for n in kernelguard.KERNELS}
    guard = kernelguard.Guard()
    guard.install()
    try:
        for name in kernelguard.KERNELS:
            with pytest.raises(kernelguard.PureTestRanKernel, match=f"ran a kernel: {name}; mark it hw"):
                getattr(_corelat, name)()
        assert _corelat.hw_timer()["name"]  # helpers stay
        assert guard.take() == list(kernelguard.KERNELS)
        assert guard.take() == []
    finally:
        guard.close()
    assert {n: getattr(_corelat, n) for n in kernelguard.KERNELS} == before


def test_the_guard_log_names_a_kernel_a_subprocess_ran(tmp_path):
    # The subprocess half, without a kernel: a stand-in module takes corelat._corelat's place.
    fake = tmp_path / "fake"
    (fake / "corelat").mkdir(parents=True)
    (fake / "corelat" / "__init__.py").write_text("")
    (fake / "corelat" / "_corelat.py").write_text("def pingpong(*a):\n    return 'ran'\n\n\n"
                                                  "def ticks():\n    return 1\n")
    guard = kernelguard.Guard(str(tmp_path))
    guard.install()
    try:
        env = dict(os.environ)
        env["PYTHONPATH"] += os.pathsep + str(fake)
        code = "import corelat._corelat as c; print(c.ticks(), c.pingpong(1, 2))"
        p = subprocess.run([sys.executable, "-c", code, "arg"], env=env, capture_output=True, text=True,
                           timeout=60, check=True, cwd=str(tmp_path))
        assert p.stdout.split() == ["1", "ran"]  # the call went through
        assert guard.take() == ["pingpong (in a subprocess: -c arg)"]
    finally:
        guard.uninstall()


def test_the_guard_chains_to_the_sitecustomize_it_shadows(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.CHAINED = 1\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{kernelguard.PURECHECK}:{tmp_path}",
           kernelguard.LOG_VAR: str(tmp_path / "log")}
    p = subprocess.run([sys.executable, "-c", "import sitecustomize; print(CHAINED, sitecustomize.__file__)"],
                       env=env, capture_output=True, text=True, timeout=60, check=True)
    assert p.stdout.split() == ["1", str(kernelguard.PURECHECK / "sitecustomize.py")]


GUARDED = textwrap.dedent("""
    import subprocess
    import sys

    import pytest

    import corelat
    from corelat import _corelat

    corelat.timer_info()  # calibrates the timer: not a kernel
    TINY = (0, 1, _corelat.KERNEL_RW, 5, 2, 0, 5.0)
    CODE = ("import corelat; from corelat import _corelat; corelat.timer_info();"
            "_corelat.pingpong(0, 1, _corelat.KERNEL_RW, 5, 2, 0, 5.0)")

    def test_pure_in_process():
        _corelat.pingpong(*TINY)

    def test_pure_swallowing_it():
        try:
            _corelat.oneway(0, 1, 5, 2, 0, 5.0)
        except BaseException:
            pass

    def test_pure_in_a_subprocess():
        subprocess.run([sys.executable, "-c", CODE], check=True)

    def test_pure_without_a_kernel():
        assert _corelat.ticks() > 0

    @pytest.mark.hw
    def test_hw_in_process():
        assert len(_corelat.pingpong(*TINY)) == 2

    @pytest.mark.hw
    def test_hw_in_a_subprocess():
        subprocess.run([sys.executable, "-c", CODE], check=True)
""")


@pytest.mark.hw
@pytest.mark.skipif(len(os.sched_getaffinity(0) & {0, 1}) < 2, reason="needs CPUs 0 and 1")
def test_a_pure_test_that_runs_a_kernel_fails_and_an_hw_test_does_not(_corelat, pytester):
    pytester.makeconftest("import kernelguard\n\ndef pytest_configure(config):\n"
                          "    config.pluginmanager.register(kernelguard.Plugin())\n")
    pytester.makeini("[pytest]\nmarkers =\n    hw: runs kernels\n")
    pytester.makepyfile(test_guarded=GUARDED)
    reports = pytester.inline_run("-p", "no:cacheprovider").getreports("pytest_runtest_logreport")
    failed = {r.head_line: r.longreprtext for r in reports if r.failed}
    passed = {r.head_line for r in reports if r.when == "call" and r.passed}
    assert passed == {"test_pure_without_a_kernel", "test_hw_in_process", "test_hw_in_a_subprocess"}
    assert set(failed) == {"test_pure_in_process", "test_pure_swallowing_it", "test_pure_in_a_subprocess"}
    assert "PureTestRanKernel: pure test ran a kernel: pingpong; mark it hw" in failed["test_pure_in_process"]
    assert failed["test_pure_swallowing_it"] == "pure test ran a kernel: oneway; mark it hw"
    assert failed["test_pure_in_a_subprocess"] == ("pure test ran a kernel: pingpong (in a subprocess: -c); "
                                                   "mark it hw")
