"""Sphinx configuration: API reference (autodoc; napoleon reads the numpydoc docstrings; the page and
its settings are in ``_apiref.py``, which ``tests/test_docstrings.py`` builds alone), the user guide
(guide.md and the pages of index.rst's toctree; the README is the five-minute tour), the notebooks
with their outputs (myst-nb executes them), and the CLI reference generated from argparse. Built by `make docs` (warnings are errors) against the installed package, never the
source tree."""

import os
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
# Document the installed package: `python -m sphinx` from the checkout would import its corelat/.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != ROOT]

import corelat  # noqa: E402

sys.path.insert(0, str(HERE))
import _apiref  # noqa: E402

GENERATED = HERE / "generated"

project = "corelat"
author = "the corelat developers"
copyright = "the corelat developers, MIT licence"
release = version = corelat.__version__

extensions = [*_apiref.EXTENSIONS, "myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
html_theme = "alabaster"
html_static_path = []

globals().update(_apiref.SETTINGS)

myst_heading_anchors = 3
nb_execution_mode = "force"  # render the notebooks with fresh outputs, from the shipped example results
nb_execution_raise_on_error = True
nb_execution_timeout = 600


def _generate():
    """The notebooks (copied: Sphinx reads sources only below docs/) and the CLI reference."""
    shutil.rmtree(GENERATED, ignore_errors=True)
    (GENERATED / "notebooks").mkdir(parents=True)
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy(nb, GENERATED / "notebooks" / nb.name)
    os.environ["COLUMNS"] = "100"  # argparse wraps its help to the terminal's width
    from corelat import cli

    lines = ["Command line", "============", "", "Generated from the ``corelat`` command's argparse parsers.", "",
             "Exit status: 0 success, 1 the measurement failed, 2 bad input, 130 interrupted; ``verify``, ``fleet``",
             "and ``fleet-report`` also exit 3: a class or a node is off (the verdicts and fleet pages).", ""]
    for name, (modname, summary) in cli.COMMANDS.items():
        module = __import__(f"corelat.cli.{modname}", fromlist=["add_arguments"])
        text = cli._parser(name, module).format_help()
        title = "corelat" if name == "measure" else f"corelat {name}"
        lines += [title, "-" * len(title), "", summary[:1].upper() + summary[1:] + ".", "", "::", ""]
        lines += ["   " + line if line else "" for line in text.splitlines()]
        lines += [""]
    (GENERATED / "cli.rst").write_text("\n".join(lines) + "\n")
    (GENERATED / "api.rst").write_text(_apiref.api_rst(corelat))


_generate()
