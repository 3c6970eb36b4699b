"""The public docstrings: numpydoc style, an example on every public function and class, examples that
run, and the API reference page built by Sphinx with warnings as errors (what CI's docs step does,
here in seconds and without the notebooks)."""

from __future__ import annotations

import doctest
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest

import corelat
import corelat.plot

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def _top_level():
    """Dotted name -> object: every function and class in ``corelat.__all__`` and ``corelat.plot``'s
    functions."""
    out = {}
    for name in corelat.__all__:
        obj = getattr(corelat, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out[f"corelat.{name}"] = obj
    for name, obj in vars(corelat.plot).items():
        if inspect.isfunction(obj) and not name.startswith("_") and obj.__module__ == "corelat.plot":
            out[f"corelat.plot.{name}"] = obj
    return out


def _has_members(obj):
    """Whether ``obj`` is a class whose methods and properties are checked (not an exception, not an int
    flag)."""
    return inspect.isclass(obj) and not issubclass(obj, BaseException) and not issubclass(obj, int)


def _as_public_member(member):
    """The function or property a class attribute holds (classmethods and staticmethods unwrapped), or
    None when it holds neither."""
    if isinstance(member, (classmethod, staticmethod)):
        member = member.__func__
    if inspect.isfunction(member) or isinstance(member, property):
        return member
    return None


def _members(cls):
    """Attribute name -> public method or property of ``cls``, its own and those it inherits from
    corelat's own bases; the nearest definition in the MRO wins."""
    out = {}
    for base in cls.__mro__:
        if not base.__module__.startswith("corelat"):
            continue
        for attr, member in vars(base).items():
            if attr.startswith("_") or attr in out:
                continue
            member = _as_public_member(member)
            if member is not None:
                out[attr] = member
    return out


def _public_objects():
    """Dotted name -> object: every function and class in ``corelat.__all__``, ``corelat.plot``'s
    functions, and the public methods and properties of the classes (inherited from corelat's own
    bases included)."""
    out = _top_level()
    for qual, cls in list(out.items()):
        if _has_members(cls):
            out.update({f"{qual}.{attr}": member for attr, member in _members(cls).items()})
    return out


PUBLIC = _public_objects()
TOP_LEVEL = sorted(n for n in PUBLIC if n.count(".") == 1 or n.startswith("corelat.plot."))


def test_the_public_set_is_what_it_should_be():
    # A guard on the collection itself: a test over nothing passes.
    assert {"corelat.measure", "corelat.LatencyResult", "corelat.plot.heatmap", "corelat.InputError",
            "corelat.LatencyResult.ordered", "corelat.LatencyResult.save", "corelat.Topology.from_dict",
            "corelat.FleetResult.load"} <= set(PUBLIC)
    assert len(PUBLIC) > 150


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_every_public_function_and_class_has_an_example(name):
    doc = inspect.getdoc(PUBLIC[name]) or ""
    assert re.search(r"^Examples\n-{8}\n", doc, re.MULTILINE), f"{name} has no numpydoc Examples section"
    assert ">>> " in doc.split("Examples\n--------", 1)[1], f"{name}'s Examples section shows no example"


# What numpydoc's validator must not find. Style rules (capitals, full stops, See Also, extended
# summaries) are left out; these are the ones that make a section unreadable or wrong.
_STRUCTURE = {
    "GL06": "unknown section",
    "GL07": "sections in the wrong order",
    "GL08": "no docstring",
    "SS01": "no summary",
    "PR10": "parameter without a space before the colon",
}
_PARAMETERS = {"PR01": "parameter not documented", "PR02": "documented parameter that does not exist"}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstrings_are_well_formed_numpydoc(name):
    numpydoc_validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is in the test extra")
    obj = PUBLIC[name]
    doc = inspect.getdoc(obj) or ""
    # napoleon would read these as Google-style sections (last session's failed docs build)
    google = re.findall(r"^\s*(?:Args|Arguments|Returns|Raises|Attributes|Examples|Yields|Parameters):\s*$",
                        doc, re.MULTILINE)
    assert not google, f"{name}: Google-style section headers {google}; use numpydoc's underlined ones"
    wanted = dict(_STRUCTURE)
    if inspect.isfunction(obj) or inspect.ismethod(obj) or (inspect.isclass(obj) and "Parameters" in doc):
        wanted.update(_PARAMETERS)
    if isinstance(obj, property):
        errors = [(c, m) for c, m in numpydoc_validate.validate(name)["errors"]
                  if c in {"GL06", "GL07", "SS01"}]
    else:
        errors = [(c, m) for c, m in numpydoc_validate.validate(name)["errors"] if c in wanted]
    assert not errors, f"{name}: {errors}"


def test_raises_sections_name_real_exceptions():
    import builtins

    for name, obj in PUBLIC.items():
        doc = inspect.getdoc(obj) or ""
        m = re.search(r"^Raises\n-{6}\n(.*?)(?:\n\n[A-Z][a-z]+( [A-Z][a-z]+)?\n-+\n|\Z)", doc,
                      re.MULTILINE | re.DOTALL)
        if not m:
            continue
        for line in m.group(1).splitlines():
            if line and not line[0].isspace():
                exc = line.strip()
                assert re.fullmatch(r"[A-Za-z]+", exc), (
                    f"{name}: Raises entry {exc!r} is not one exception name")
                cls = getattr(corelat, exc, None) or getattr(builtins, exc, None)
                assert inspect.isclass(cls) and issubclass(cls, BaseException), f"{name}: Raises {exc!r}"


@pytest.mark.hw
def test_docstring_examples_run():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    ran = 0
    try:
        for name, obj in PUBLIC.items():
            target = obj.fget if isinstance(obj, property) else obj
            for test in finder.find(target, name, globs={"corelat": corelat}):
                ran += len(test.examples)
                runner.run(test)
    finally:
        plt.close("all")
    assert runner.failures == 0
    assert ran > 100


def test_help_shows_no_private_parameters():
    # Functions, methods and classes' constructors alike (help(corelat.Structure) showed '_cores').
    checked = 0
    for name, obj in PUBLIC.items():
        if inspect.isfunction(obj) or (inspect.isclass(obj) and not issubclass(obj, (BaseException, int))):
            hidden = [p for p in inspect.signature(obj).parameters if p.startswith("_")]
            assert not hidden, f"{name} has private parameters {hidden}"
            checked += inspect.isclass(obj)
    assert checked >= 10


def test_public_functions_are_annotated():
    # Issue 9: type hints on every public function (corelat.__all__ and corelat.plot): each
    # parameter and the return.
    missing = []
    for name in TOP_LEVEL:
        obj = PUBLIC[name]
        if not inspect.isfunction(obj):
            continue
        sig = inspect.signature(obj)
        missing += [f"{name}({p})" for p, v in sig.parameters.items()
                    if v.annotation is inspect.Parameter.empty]
        if sig.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
    assert not missing, f"public functions without type hints: {missing}"


@pytest.mark.docs
@pytest.mark.slow
def test_api_reference_builds_without_warnings(tmp_path):
    """The generated API page alone, built by Sphinx with autodoc and napoleon as docs/conf.py sets
    them, warnings as errors: ambiguous cross-references, malformed sections, bad reST."""
    pytest.importorskip("sphinx", reason="Sphinx comes with numpydoc in the test extra")
    if not (DOCS / "_apiref.py").is_file():
        pytest.skip(f"no docs/ beside the tests ({DOCS})")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(DOCS)!r})\n"
        "from _apiref import EXTENSIONS as extensions, SETTINGS\n"
        "globals().update(SETTINGS)\n"
        "project = 'corelat'\n"
    )
    sys.path.insert(0, str(DOCS))
    try:
        import _apiref
    finally:
        sys.path.remove(str(DOCS))
    (src / "index.rst").write_text(_apiref.api_rst(corelat))
    env = dict(os.environ)
    # the corelat this test imported (installed, or the checkout), not whatever the cwd would give
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(corelat.__file__).parents[1]),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "text",
                           str(src), str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (tmp_path / "out" / "index.txt").read_text(encoding="utf-8")
    assert "LatencyResult" in text and "heatmap" in text


def test_public_methods_and_properties_are_annotated():
    # Issue 9: the same for every public method and property of every public class (corelat's own
    # bases included): each parameter but self/cls, and the return (a property: its getter's).
    missing, checked = [], 0
    for name, obj in PUBLIC.items():
        if name.count(".") < 2 or name.startswith("corelat.plot."):
            continue
        func = obj.fget if isinstance(obj, property) else obj
        if not inspect.isfunction(func):
            continue
        checked += 1
        params = list(inspect.signature(func).parameters.values())
        if params and params[0].name in ("self", "cls"):
            params = params[1:]
        missing += [f"{name}({p.name})" for p in params if p.annotation is inspect.Parameter.empty]
        if inspect.signature(func).return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
    assert checked > 100, "a test over nothing passes"
    assert not missing, f"public methods and properties without type hints: {missing}"
