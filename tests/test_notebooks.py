"""Every notebook in notebooks/ runs top to bottom without an error, and is committed without outputs;
its parameters (a first code cell tagged ``parameters``, papermill-style) can be set, and what its
comments claim about corelat's defaults is what the API's signature says."""

import ast
import inspect
import pathlib
import re

import pytest
from conftest import REPO

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120


def test_notebooks_are_there():
    names = {p.name for p in NOTEBOOKS}
    assert {"measure_and_explore.ipynb", "compare_machines.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs"


def parameters_cell(nb):
    """Index of the cell tagged ``parameters``; it must be the first code cell."""
    code = [k for k, c in enumerate(nb.cells) if c.cell_type == "code"]
    tagged = [k for k in code if "parameters" in nb.cells[k].metadata.get("tags", [])]
    assert tagged == code[:1], "the first code cell, and only it, must be tagged 'parameters' (papermill)"
    return tagged[0]


def execute(path, folder, monkeypatch, **params):
    """Run a notebook in ``folder`` with ``params`` injected after its parameters cell, as papermill
    does; returns the executed notebook and its text output."""
    # jupyter_core warns about its path migration unless told which layout to use.
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # let the kernel use its inline backend
    nb = nbformat.read(path, as_version=4)
    if params:
        cell = nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params.items()))
        cell.metadata["tags"] = ["injected-parameters"]
        nb.cells.insert(parameters_cell(nb) + 1, cell)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},  # run in a scratch folder
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{pathlib.Path(path).name} drew no figure"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    return nb, text


@pytest.mark.notebooks
@pytest.mark.hw
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, monkeypatch):
    # Its own temporary folder, so that what the notebook leaves behind in it can be seen.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    _, text = execute(path, tmp_path, monkeypatch)
    assert not list(scratch.glob("fleet-demo-*")), "the notebook left its demo fleet behind"
    if path.stem == "compare_machines":  # the shipped examples: two kernels of one VM, and it says so
        assert "come from one machine (vm): this compares kernels cas, rw, not machines" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_code_cell_holds_the_parameters(path):
    nb = nbformat.read(path, as_version=4)
    tree = ast.parse(nb.cells[parameters_cell(nb)].source)
    assert tree.body and all(isinstance(st, ast.Assign) for st in tree.body), "parameters: assignments only"


#: The API function whose arguments each notebook's parameters set.
API = {"measure_and_explore": "measure"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_documented_defaults_are_the_api_defaults(path):
    """A comment ``NAME = ...  # ... (default: VALUE)`` claims that the API's argument ``name``
    defaults to VALUE: the signature must agree (a stale ``(default 300)`` fails)."""
    import corelat

    nb = nbformat.read(path, as_version=4)
    claims = re.findall(r"^(\w+)\s*=.*#.*\(default:?\s*([^)]*)\)", nb.cells[parameters_cell(nb)].source,
                        re.MULTILINE)
    if path.stem not in API:
        assert not claims, f"{path.name} claims defaults: name the API function they belong to in API"
        return
    assert claims
    sig = inspect.signature(getattr(corelat, API[path.stem]))
    for name, value in claims:
        arg = sig.parameters.get(name.lower())
        assert arg is not None, (
            f"{path.name}: {name} claims a default, but {API[path.stem]}() has no {name.lower()}")
        assert ast.literal_eval(value) == arg.default, (
            f"{path.name}: {name} says the default is {value}; {API[path.stem]}() says {arg.default!r}")


@pytest.mark.notebooks
@pytest.mark.slow
def test_compare_machines_on_two_real_machines(shared_dir, tmp_path, monkeypatch):
    peers = shared_dir / "fixtures/peer-results/core-to-core-latency"
    files = [str(peers / "AMD Ryzen 9 5950X @ 3.40 GHz.csv"), str(peers / "AMD Ryzen 9 7950X.csv")]
    _, text = execute(REPO / "notebooks/compare_machines.ipynb", tmp_path, monkeypatch, FILES=files)
    assert "AMD Ryzen 9 5950X @ 3.40 GHz" in text and "AMD Ryzen 9 7950X" in text
    assert "not machines" not in text
