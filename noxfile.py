"""The version matrix: `nox` runs the tests on every supported CPython (those of 3.9-3.13 on PATH, e.g.
pyenv's), each with the newest numpy and scipy it can have; `nox -s oldest` once with the oldest
supported ones. `nox -l` lists the sessions.

- `tests-3.X`: the whole suite (less the tiers with a CI step of their own: the emulated machine, MPI,
  Sphinx and the notebooks).
- `light-3.X`: what differs between Pythons without the whole suite: the package installs from its
  wheel, imports and measures once (.ci/one-measurement.py), its files write and read back, and the
  command starts, ends and is interrupted as it should (LIGHT_TESTS: the tests of those). The Pythons
  on either side run everything.
- `pure-3.X`: the pure tier (no kernel runs: the markers in pyproject.toml) and one real measurement.
- `oldest`: the whole suite on 3.9 with numpy 1.23 and scipy 1.9, the floors pyproject.toml declares.

CI (.ci/steps/75-matrix.sh) runs the whole suite on the oldest stack, `pure` on the newest
(`pure-3.13`) and `light` on the Pythons between (3.11 gets the whole suite from 30-tests).

The package is installed, never imported from the checkout: from a wheel of CORELAT_WHEELHOUSE when
one fits the session's Python (CI passes the manylinux wheels it built), otherwise built from the
checkout.
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
# The selections, as .ci/run spells them.
PURE_TIER = "not (hw or slow or signals or vm or mpi or notebooks or docs)"
WHOLE_SUITE = "not (vm or mpi or docs or notebooks or browser or campaign)"
# Two workers: the pure tests spread over both, the tests that use the CPUs (one xdist group, see
# tests/conftest.py) one after another in one of them.
PARALLEL = ["-n", "2", "--dist", "loadgroup"]
# What `light` runs: the files (every kind, the formats) and the command's start and end
# (sys.argv and signals at start-up and exit differ between Pythons: 3.9's runpy is where a Ctrl-C
# hold was lost).
LIGHT_TESTS = ["test_formats.py", "test_result.py", "test_messages.py"]
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


def _pytest(session, selection, files=None):
    args = ["-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), "-m", selection,
            *PARALLEL]
    env = {"CORELAT_TEST_INSTALLED": "1"}
    if "CORELAT_SHARED" in os.environ:
        env["CORELAT_SHARED"] = os.environ["CORELAT_SHARED"]
    session.chdir(session.create_tmp())  # outside the source tree
    where = [str(ROOT / "tests" / f) for f in files] if files else [str(ROOT / "tests")]
    session.run("python", "-m", "pytest", *args, *session.posargs, *where, env=env)


def _versions(session):
    session.run("python", "-c", "import numpy, scipy; print('numpy', numpy.__version__, 'scipy', scipy.__version__)")


@nox.session(python=PYTHONS)
def tests(session):
    """The whole suite with the newest numpy and scipy this Python can have."""
    session.install("--only-binary", "numpy,scipy,matplotlib", f"{_package(session)}[test]")
    _versions(session)
    _pytest(session, WHOLE_SUITE)


@nox.session(python=PYTHONS)
def pure(session):
    """The pure tier (no kernel runs) and one real measurement, with the newest numpy and scipy."""
    session.install("--only-binary", "numpy,scipy,matplotlib", f"{_package(session)}[test]")
    _versions(session)
    _pytest(session, PURE_TIER)
    session.run("python", str(ROOT / ".ci" / "one-measurement.py"))


@nox.session(python=PYTHONS)
def light(session):
    """One real measurement and the tests of files and of the command's start and end (LIGHT_TESTS),
    with the newest numpy and scipy this Python can have."""
    session.install("--only-binary", "numpy,scipy,matplotlib", f"{_package(session)}[test]")
    _versions(session)
    _pytest(session, WHOLE_SUITE, LIGHT_TESTS)
    session.run("python", str(ROOT / ".ci" / "one-measurement.py"))


@nox.session(python=PYTHONS[0])
def oldest(session):
    """The whole suite with the oldest numpy and scipy pyproject.toml allows, on the oldest Python."""
    session.install("--only-binary", ":all:", f"{_package(session)}[test]", *OLDEST)
    versions = session.run("python", "-c", "import numpy, scipy; print(numpy.__version__, scipy.__version__)",
                           silent=True).split()
    print("numpy", versions[0], "scipy", versions[1], file=sys.stderr)
    for want, have in zip(OLDEST, versions):
        if not have.startswith(want.split("==")[1].rstrip("*")):
            session.error(f"asked for {want}, got {have}")
    _pytest(session, WHOLE_SUITE)
