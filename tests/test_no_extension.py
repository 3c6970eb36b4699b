"""Without the C extension (a platform other than Linux, or built with CORELAT_NO_EXTENSION=1) the
analysis side works and every measuring entry point raises a CorelatError that says measuring needs
Linux, or on Linux how to reinstall (CI also installs such a build and runs the analysis tests against
it: .ci/steps/60-wheels.sh)."""

import os
import subprocess
import sys

import pytest

# A fresh interpreter where importing the extension fails as it does where it is not built.
NO_EXTENSION = "import sys; sys.modules['corelat._corelat'] = None\nimport corelat\n"


def run(code):
    return subprocess.run([sys.executable, "-c", NO_EXTENSION + code], capture_output=True,
                          text=True, timeout=60,
                          check=False)


@pytest.mark.parametrize("call", [
    "corelat.measure()", "corelat.timer_info()", "corelat.locks()",
    "corelat.measure(); del os.sched_getaffinity", "corelat.allowed_cpus(); del os.sched_getaffinity",
])
def test_measuring_without_the_extension_raises_a_clear_corelat_error(call):
    call, _, setup = call.partition("; ")  # setup: what else such a platform lacks (macOS: CPU affinity)
    p = run(f"""
import os
{setup}
try:
    {call}
except corelat.CorelatError as e:
    print("CorelatError:", e)
""")
    assert p.returncode == 0, p.stderr
    # elsewhere "measuring needs Linux"; on Linux x86-64 and aarch64, how to reinstall (issue 24)
    assert ("CorelatError: measuring needs Linux" in p.stdout
            or "CorelatError: this corelat was installed without its measuring core" in p.stdout), p.stdout


def test_analysis_works_without_the_extension():
    p = run("""
r = corelat.load(corelat.example_files()[0])
print(corelat.structure(r) is not None, corelat.compare(r, r) is not None, r.to_csv().count(","))
""")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("True True ")


def _clone_without_extension(tmp_path):
    """A copy of the package laid out as a clone of the repository that was never built in place
    (the README's ``pip install .`` builds the extension into the environment, not the clone)."""
    import pathlib
    import shutil

    import corelat

    clone = tmp_path / "corelat-clone"
    clone.mkdir()
    shutil.copytree(pathlib.Path(corelat.__file__).parent, clone / "corelat",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    (clone / "pyproject.toml").write_text("[project]\nname = 'corelat'\n")
    (clone / "setup.py").write_text("")
    return clone


def _plain(tmp_path):
    """The user's environment after ``pip install .``: no test hooks, and no editable install's finder
    (the venv of an editable install finds the built extension of its own checkout from anywhere)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if not getattr(f, '__module__', '').startswith('__editable__')]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORELAT_", "PYTHON"))}
    return {**env, "PYTHONPATH": str(site)}


@pytest.mark.parametrize("how", [["-m", "corelat", "20", "5"],
                                 ["-c", "import corelat; corelat.measure('0,1', round_trips=20, samples=5)"]])
def test_importing_from_the_source_folder_says_so_not_reinstall(tmp_path, how):
    clone = _clone_without_extension(tmp_path)
    p = subprocess.run([sys.executable, *how], cwd=clone, env=_plain(tmp_path), capture_output=True,
                       text=True, timeout=60, check=False)
    assert p.returncode != 0
    assert "you are importing corelat from its source folder" in p.stderr, p.stderr
    assert "run from another folder, or build it there with" in p.stderr and "pip install -e ." in p.stderr
    assert "reinstall" not in p.stderr
    assert how[0] == "-c" or "Traceback" not in p.stderr  # the command says one line


def test_an_installed_copy_without_the_extension_still_says_reinstall(tmp_path):
    clone = _clone_without_extension(tmp_path)
    (clone / "pyproject.toml").unlink()
    (clone / "setup.py").unlink()  # site-packages: no project files beside the package
    p = subprocess.run([sys.executable, "-m", "corelat", "20", "5"], cwd=clone, env=_plain(tmp_path),
                       capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode != 0
    assert "this corelat was installed without its measuring core" in p.stderr, p.stderr
