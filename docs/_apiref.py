"""The API reference page and the autodoc/napoleon settings it is built with.

Shared by ``conf.py`` and ``tests/test_docstrings.py``, which builds this page alone with warnings as
errors, so the test suite catches in seconds what the full docs build would.
"""

import inspect

EXTENSIONS = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

SETTINGS = {
    "autodoc_default_options": {"members": True, "undoc-members": False, "show-inheritance": True},
    "autodoc_typehints": "description",  # hints (where the code has them) beside each argument's text
    "autodoc_member_order": "bysource",
    # The docstrings are numpydoc; with Google style read too, a stray "Returns:" line would become a
    # section of its own.
    "napoleon_google_docstring": False,
    "napoleon_numpy_docstring": True,
    "napoleon_use_ivar": True,  # "Attributes" as fields, not entries that duplicate autodoc's members
}


def api_rst(corelat):
    """The reference of everything in ``corelat.__all__`` (so a new public name needs no docs edit),
    grouped as functions, classes, exceptions and constants, then ``corelat.plot``."""
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
