"""Every exception raised through the public API is a CorelatError (issue 9): a missing file, a bad
argument, a missing optional package, each of the kind the docs promise."""

import sys

import numpy as np
import pytest

import corelat
import corelat.plot
from corelat import (
    CorelatError,
    InputError,
    InputFileNotFoundError,
    InputTypeError,
    LatencyResult,
    MissingDependencyError,
)


def _result():
    m = np.array([[0.0, 50.0, 90.0], [50.0, 0.0, 90.0], [90.0, 90.0, 0.0]])
    return LatencyResult.from_matrix(m, name="three")


def test_missing_dependency_error_is_a_corelat_error_and_an_import_error():
    assert issubclass(MissingDependencyError, CorelatError)
    assert issubclass(MissingDependencyError, ImportError)
    assert "MissingDependencyError" in corelat.__all__


@pytest.mark.parametrize("call", [
    pytest.param(lambda p: corelat.load(p / "missing.npz"), id="load-npz"),
    pytest.param(lambda p: corelat.load(p / "missing.csv"), id="load-text"),
    pytest.param(lambda p: corelat.load(p / "fleet.json"), id="load-json"),
    pytest.param(lambda p: corelat.LatencyResult.load(p / "missing.npz"), id="LatencyResult.load"),
    pytest.param(lambda p: corelat.FleetResult.load(p / "fleet.json"), id="FleetResult.load"),
    pytest.param(lambda p: corelat.fleet(p / "missing"), id="fleet-path"),
    pytest.param(lambda p: corelat.fleet([_result()], expect=str(p / "nodes.txt")), id="fleet-expect-file"),
    pytest.param(lambda p: corelat.topology(root=p / "no-dump"), id="topology-root"),
])
def test_a_missing_file_is_an_input_file_not_found_error(tmp_path, call):
    # docs/api.md: InputFileNotFoundError "a named file or folder does not exist"; load() and
    # fleet() raised a plain InputError.
    with pytest.raises(InputFileNotFoundError) as e:
        call(tmp_path)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, InputError)
    assert str(tmp_path) in str(e.value) or "no-dump" in str(e.value)


def test_a_fleet_folder_that_cannot_be_listed_is_still_an_input_error(tmp_path):
    from corelat._fleet.nodes import node_files

    with pytest.raises(InputFileNotFoundError, match="cannot read the folder"):
        node_files(str(tmp_path / "gone"))


def test_measure_fleet_refuses_name_with_an_input_type_error(monkeypatch):
    from corelat._fleet import run as _fleet_run

    monkeypatch.setattr(_fleet_run, "mpi", lambda: type("MPI", (), {"COMM_WORLD": object()}))
    with pytest.raises(InputTypeError, match="do not pass name"):
        corelat.measure_fleet(name="x")


def test_measure_fleet_without_mpi4py_is_a_missing_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    with pytest.raises(MissingDependencyError, match=r"mpi4py.*-m pip install .*\[mpi\].*MPI library"):
        corelat.measure_fleet()


def test_plot_without_matplotlib_is_a_missing_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    for draw, arg in ((corelat.plot.heatmap, _result()), (corelat.plot.compare, [_result(), _result()]),
                      (corelat.plot.fleet, corelat.fleet([_result()]))):
        with pytest.raises(MissingDependencyError,
                           match=r"corelat.plot needs matplotlib.*-m pip install .*\[plot\]"):
            draw(arg)


def test_structure_without_scipy_is_a_missing_dependency_error(monkeypatch):
    # scipy is a dependency, imported when the structure is first read: a broken install says so.
    monkeypatch.setitem(sys.modules, "scipy.cluster.hierarchy", None)
    rng = np.random.default_rng(3)
    m = np.kron(np.array([[20.0, 90.0], [90.0, 20.0]]), np.ones((4, 4))) + rng.uniform(0, 1, (8, 8))
    m = (m + m.T) / 2
    np.fill_diagonal(m, 0)
    with pytest.raises(MissingDependencyError, match=r"needs scipy.*-m pip install"):
        corelat.structure(LatencyResult.from_matrix(m))


def test_install_command_without_an_extra_installs_corelat_itself():
    from corelat._core.extras import install_command

    assert install_command(None, read_direct_url=lambda: None, checkout=lambda: None, cwd="/x",
                           python="/usr/bin/python3") == "/usr/bin/python3 -m pip install corelat"


# -- bad arguments: an InputError (or InputTypeError), never a bare TypeError/AttributeError/KeyError --
@pytest.mark.parametrize("call", [
    pytest.param(lambda: corelat.placement(no_such_keyword=1), id="placement-keyword"),
    pytest.param(lambda: corelat.fleet(3), id="fleet-int"),
    pytest.param(lambda: corelat.fleet([_result()], expect=3), id="fleet-expect-int"),
    pytest.param(lambda: corelat.structure(3), id="structure-int"),
    pytest.param(lambda: corelat.load(3), id="load-int"),
    pytest.param(lambda: corelat.load(None), id="load-none"),
    pytest.param(lambda: corelat.topology(root=3), id="topology-root-int"),
    pytest.param(lambda: corelat.plot.heatmap(3), id="plot.heatmap-int"),
    pytest.param(lambda: corelat.plot.fleet(3), id="plot.fleet-int"),
])
def test_a_wrong_type_is_an_input_type_error(call):
    with pytest.raises(InputTypeError):
        call()


def test_measure_fleet_refuses_an_unknown_keyword_on_every_rank_first(monkeypatch):
    from corelat._fleet import run as _fleet_run

    monkeypatch.setattr(_fleet_run, "mpi", lambda: type("MPI", (), {"COMM_WORLD": object()}))
    monkeypatch.setattr(_fleet_run, "run", lambda *a, **k: pytest.fail("started measuring"))
    with pytest.raises(InputTypeError, match="no_such_keyword"):
        corelat.measure_fleet(no_such_keyword=1)


@pytest.mark.parametrize("call", [
    pytest.param(lambda r: r.records(statistic="bogus"), id="records-statistic"),
    pytest.param(lambda r: r.ordered([99]), id="ordered-not-its-cpus"),
])
def test_a_bad_argument_to_a_result_method_is_an_input_error(call):
    with pytest.raises(InputError):
        call(_result())


def test_a_fleet_without_that_node_is_an_input_error_and_still_a_key_error():
    with pytest.raises(InputError, match="no node 'nope'") as e:
        corelat.fleet([_result()]).group_of("nope")
    assert isinstance(e.value, KeyError) and isinstance(e.value, CorelatError)


@pytest.mark.parametrize("where", ["missing-folder", "a-folder", "dev-null"])
def test_a_save_that_cannot_be_written_is_a_corelat_error_and_an_oserror(tmp_path, where):
    r = corelat.load(corelat.example_files()[0])
    path = {"missing-folder": tmp_path / "no" / "r.npz", "a-folder": tmp_path, "dev-null": "/dev/null"}[where]
    with pytest.raises(corelat.SaveError) as e:
        r.save(path)
    assert isinstance(e.value, corelat.CorelatError) and isinstance(e.value, OSError)
    assert e.value.errno and str(path) in str(e.value)
    with pytest.raises(corelat.SaveError):
        r.to_csv(path)


@pytest.mark.parametrize("make", [
    lambda: corelat.LatencyResult.from_matrix("x"),
    lambda: corelat.LatencyResult.from_matrix([["a", "b"], ["c", "d"]]),
    lambda: corelat.LatencyResult(cpus=["a", "b"], kernel="cas", samples=np.ones((2, 2, 1))),
    lambda: corelat.LatencyResult(cpus=[0, 1], kernel="cas", samples=[[["x"]]]),
])
def test_results_from_non_numbers_are_input_errors(make):
    with pytest.raises(corelat.InputError):
        make()
