"""`import corelat` stays light: the measuring, fleet and analysis modules load on first use (issue 23)."""

import json
import subprocess
import sys

import pytest

import corelat

HEAVY = ("scipy", "matplotlib", "mpi4py", "tqdm", "corelat._fleet", "corelat._measure", "corelat._analysis",
         "corelat._results", "corelat._system", "corelat.plot", "corelat.cli")


def _modules_after(code):
    report = "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code + report], capture_output=True, text=True, timeout=60,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_corelat_loads_no_heavy_module():
    loaded = _modules_after("import corelat")
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert heavy == []
    assert "corelat._core.errors" in loaded  # the exceptions are there at once, for `except` clauses


def test_a_name_loads_its_module_and_no_other_layer():
    loaded = _modules_after("import corelat\ncorelat.load")
    assert "corelat._results.load" in loaded
    others = ("corelat._fleet", "corelat._measure", "scipy", "matplotlib")
    assert not [m for m in loaded if m.startswith(others)]


def test_every_public_name_resolves_to_the_module_that_defines_it():
    from corelat._fleet.run import measure_fleet
    from corelat._measure.sweep import measure

    assert corelat.measure is measure and corelat.measure_fleet is measure_fleet
    assert all(getattr(corelat, name) is not None for name in corelat.__all__)
    assert set(corelat.__all__) <= set(dir(corelat))
    with pytest.raises(AttributeError, match="no_such_name"):
        corelat.no_such_name  # noqa: B018
