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
