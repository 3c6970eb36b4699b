"""The version matrix: `nox` runs the tests on every supported CPython (those of 3.9-3.13 on PATH, e.g.
pyenv's), each with the newest numpy and scipy it can have; `nox -s oldest` once with the oldest
supported ones. CI runs both (.ci/steps/70-matrix.sh); `nox -l` lists the sessions.

The package is installed, never imported from the checkout: from a wheel of CORELAT_WHEELHOUSE when
one fits the session's Python (CI passes the manylinux wheels it built), otherwise built from the
checkout. CORELAT_NOX_FULL=1 runs the whole suite; by default the notebooks (slow, and run in full on
one version by the main test step) are left out. The tests on the emulated machine are marked `vm`
and never run here.
"""

import glob
import os
import pathlib
import sys

import nox

PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
# The floors pyproject.toml declares, proven by the `oldest` session.
OLDEST = ["numpy==1.23.*", "scipy==1.9.*"]
ROOT = pathlib.Path(__file__).resolve().parent

nox.options.sessions = ["tests", "oldest"]
nox.options.error_on_missing_interpreters = True


def _package(session):
    """A wheel for this session's Python from CORELAT_WHEELHOUSE, or the checkout."""
    house = os.environ.get("CORELAT_WHEELHOUSE")
    if house:
        tag = session.run("python", "-c", "import sys; print('cp%d%d' % sys.version_info[:2])", silent=True).strip()
        wheels = sorted(glob.glob(os.path.join(house, f"corelat-*-{tag}-{tag}-*x86_64.whl")))
        if wheels:
            return wheels[-1]
    return str(ROOT)


def _pytest(session, *extra):
    args = ["-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT)]
    if os.environ.get("CORELAT_NOX_FULL") != "1":
        args += ["--ignore", str(ROOT / "tests" / "test_notebooks.py")]
    env = {"CORELAT_TEST_INSTALLED": "1"}
    if "CORELAT_SHARED" in os.environ:
        env["CORELAT_SHARED"] = os.environ["CORELAT_SHARED"]
    session.chdir(session.create_tmp())  # outside the source tree
    session.run("python", "-m", "pytest", *args, *extra, *session.posargs, str(ROOT / "tests"), env=env)


@nox.session(python=PYTHONS)
def tests(session):
    """The tests with the newest numpy and scipy this Python can have."""
    session.install("--only-binary", "numpy,scipy,matplotlib", f"{_package(session)}[test]")
    session.run("python", "-c", "import numpy, scipy; print('numpy', numpy.__version__, 'scipy', scipy.__version__)")
    _pytest(session)


@nox.session(python=PYTHONS[0])
def oldest(session):
    """The tests with the oldest numpy and scipy pyproject.toml allows, on the oldest Python."""
    session.install("--only-binary", ":all:", f"{_package(session)}[test]", *OLDEST)
    versions = session.run("python", "-c", "import numpy, scipy; print(numpy.__version__, scipy.__version__)",
                           silent=True).split()
    print("numpy", versions[0], "scipy", versions[1], file=sys.stderr)
    for want, have in zip(OLDEST, versions):
        if not have.startswith(want.split("==")[1].rstrip("*")):
            session.error(f"asked for {want}, got {have}")
    _pytest(session)
