"""Shared test fixtures.

Tests run against the installed package. Real-machine fixtures live in ``../shared`` beside the
checkout (CI lays it there); where it is absent (a user's clone) the tests that need it skip and say so.
"""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("CORELAT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir():
    """The ``shared/`` folder with real-machine fixtures, or skip with the reason."""
    if not (SHARED / "fixtures").is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED} (set CORELAT_SHARED to point at them)")
    return SHARED


@pytest.fixture(scope="session", autouse=True)
def _outside_the_source_tree(tmp_path_factory):
    """Run from an empty folder, so that the subprocesses tests start (``python -m corelat``,
    ``python -c``) import the installed package even when pytest was started in the checkout, whose
    ``corelat/`` has no compiled extension."""
    old = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(old)


@pytest.fixture(scope="session", autouse=True)
def _installed_package():
    """With CORELAT_TEST_INSTALLED=1 (as .ci/run sets), refuse to test the source tree by mistake."""
    if os.environ.get("CORELAT_TEST_INSTALLED") == "1":
        import corelat

        where = pathlib.Path(corelat.__file__).resolve()
        assert REPO / "corelat" not in where.parents, f"testing the source tree ({where}), not the installed package"


def run_cli(*args, env=None, timeout=60):
    """Run ``python -m corelat ARGS`` in a subprocess; returns CompletedProcess (text)."""
    import subprocess
    import sys

    full_env = dict(os.environ)
    full_env.pop("CORELAT_DEBUG", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "corelat", *map(str, args)],
        check=False, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=str(REPO.parent),
    )
