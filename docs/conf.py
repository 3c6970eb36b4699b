"""Sphinx configuration: API reference (autodoc; napoleon reads the docstrings, which are Google style,
``Args:``/``Returns:``, and would read numpydoc's style too), the README as the user guide, the notebooks with
their outputs (myst-nb executes them), and the CLI reference generated from argparse. Built by
`make docs` (warnings are errors) against the installed package, never the source tree."""

import os
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
# Document the installed package: `python -m sphinx` from the checkout would import its corelat/.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != ROOT]

import corelat  # noqa: E402
GENERATED = HERE / "generated"

project = "corelat"
author = "the corelat developers"
copyright = "the corelat developers, MIT licence"
release = version = corelat.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
html_theme = "alabaster"
html_static_path = []

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_typehints = "description"  # hints (where the code has them) beside each argument's text
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_ivar = True  # "Attributes:" as fields, not entries that duplicate autodoc's members

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
             "Exit status: 0 success, 1 the measurement failed, 2 bad input, 130 interrupted.", ""]
    for name, (modname, summary) in cli.COMMANDS.items():
        module = __import__(f"corelat.cli.{modname}", fromlist=["add_arguments"])
        text = cli._parser(name, module).format_help()
        title = "corelat" if name == "measure" else f"corelat {name}"
        lines += [title, "-" * len(title), "", summary[:1].upper() + summary[1:] + ".", "", "::", ""]
        lines += ["   " + line if line else "" for line in text.splitlines()]
        lines += [""]
    (GENERATED / "cli.rst").write_text("\n".join(lines) + "\n")
    (GENERATED / "api.rst").write_text(_api())


def _api():
    """The reference of everything in ``corelat.__all__`` (so a new public name needs no docs edit),
    grouped as functions, classes, exceptions and constants, then ``corelat.plot``."""
    import inspect

    groups = {"Functions": [], "Classes": [], "Exceptions": [], "Constants": []}
    for name in sorted(set(corelat.__all__) - {"__version__"}, key=str.lower):
        obj = getattr(corelat, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            groups["Exceptions"].append(f".. autoexception:: corelat.{name}\n   :members:\n")
        elif inspect.isclass(obj):
            groups["Classes"].append(f".. autoclass:: corelat.{name}\n   :members:\n")
        elif callable(obj):
            groups["Functions"].append(f".. autofunction:: corelat.{name}\n")
        else:
            groups["Constants"].append(f".. py:data:: {name}\n   :value: {obj!r}\n")
    out = ["API reference", "=============", "", ".. module:: corelat", "", "Everything in ``corelat.__all__``.", ""]
    for title, entries in groups.items():
        if entries:
            out += [title, "-" * len(title), "", *entries, ""]
    out += ["Plots: ``corelat.plot``", "-----------------------", "",
            ".. automodule:: corelat.plot\n   :members:\n   :no-index:", ""]
    return "\n".join(out)


_generate()
