"""The public face: everything users need is in ``corelat.__all__``; implementation modules are private."""

import pkgutil

import corelat


def test_all_names_exist_and_none_is_a_submodule():
    submodules = {m.name for m in pkgutil.iter_modules(corelat.__path__)}
    assert sorted(corelat.__all__) == sorted(set(corelat.__all__))
    for name in corelat.__all__:
        assert hasattr(corelat, name), name
        assert name not in submodules, f"corelat.{name} is both a public name and a submodule"


def test_only_plot_and_cli_are_public_modules():
    public = {m.name for m in pkgutil.iter_modules(corelat.__path__) if not m.name.startswith("_")}
    assert public == {"cli", "plot"}


def test_public_functions_are_functions_not_modules():
    import types

    for name in ("measure", "smt", "locks", "check", "topology", "structure", "compare", "load"):
        assert isinstance(getattr(corelat, name), types.FunctionType), name


def _internal_imports():
    """corelat module -> the corelat modules it imports anywhere (function-level imports included)."""
    import ast
    import pathlib

    root = pathlib.Path(corelat.__file__).parent
    graph = {}
    for f in sorted(root.rglob("*.py")):
        parts = f.relative_to(root.parent).with_suffix("").parts
        mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
        deps = set()
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # annotation-only imports never run: no cycle
            if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                       "typing.TYPE_CHECKING"):
                node.body = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:  # a module taken from its package is that module
                    sub = f"{target}.{a.name}"
                    is_module = (root.parent / (sub.replace(".", "/") + ".py")).exists()
                    deps.add(sub if node.module is None or target == "corelat" or is_module else target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[mod] = {d for d in deps if d.startswith("corelat.") and d != mod}
    return graph


def test_file_layers():
    graph = _internal_imports()
    # bounded reads and atomic writes: below everything but the exceptions (a failed save is a SaveError)
    assert graph["corelat._core.files"] <= {"corelat._core.errors"}
    # the container is a leaf
    assert graph["corelat._core.npz"] <= {"corelat._core.errors", "corelat._core.files"}
    assert graph["corelat._results.formats"] <= {"corelat._core.errors", "corelat._core.files",
                                                 "corelat._core.types", "corelat._results.latency",
                                                 "corelat._results.matrix"}
    assert "corelat._results.load" not in (graph["corelat._results.latency"]
                                           | graph["corelat._results.formats"])


def test_docs_api_table_lists_every_public_name():
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)", text))
    missing = [n for n in corelat.__all__ if n not in shown]
    assert not missing, f"docs/api.md does not list {missing}"


def test_public_signatures_have_no_test_hooks():
    import inspect

    for name in corelat.__all__:
        fn = getattr(corelat, name)
        if callable(fn) and not isinstance(fn, type):
            hooks = [p for p in inspect.signature(fn).parameters if p.startswith("_")]
            assert not hooks, f"corelat.{name} has private parameters {hooks}"


def test_one_timeout_rule_for_every_measuring_function():
    import pytest

    messages = set()
    for call in (lambda: corelat.measure(timeout=1e-4), lambda: corelat.smt(timeout=1e-4),
                 lambda: corelat.locks(timeout=1e-4)):
        with pytest.raises(corelat.InputError) as info:
            call()
        messages.add(str(info.value))
    assert messages == {"timeout must be between 0.001 and 3600 seconds, got 0.0001"}


def test_one_cpu_list_parser_strides_everywhere():
    from corelat._system import cpulist as _cpulist
    from corelat._system import sysfs as _sysfs

    assert sorted(_sysfs._parse_cpulist("0-6:2,9")) == _cpulist.parse("0-6:2,9") == [0, 2, 4, 6, 9]
    assert _sysfs._parse_cpulist("") == frozenset()


def test_normal_quantile_from_the_standard_library():
    import statistics

    from corelat._core import stats as _stats

    assert _stats._z(0.95) == statistics.NormalDist().inv_cdf(0.975)


def test_docstring_examples_run():
    import doctest
    import inspect

    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for name in ("measure", "smt", "locks", "check", "load", "compare", "topology"):
        fn = getattr(corelat, name)
        # cleandoc: Python 3.13 strips the docstring's indentation at compile time, older ones do not
        assert "Examples\n--------" in inspect.cleandoc(fn.__doc__), f"corelat.{name} has no Examples section"
        for test in finder.find(fn, name, globs={"corelat": corelat}):
            runner.run(test)
    assert runner.failures == 0


def test_clock_skew_checks_its_sizes_as_measure_does(monkeypatch):
    """clock_skew(samples=10**12) ended in MemoryError, messages=-5 or timeout=-1 in the binding's
    raw "ValueError: invalid one-way arguments": each is refused, naming the argument, before any
    timer or kernel is touched."""
    import pytest

    from corelat._measure import measurers

    def no_kernel(*args, **kwargs):
        raise AssertionError("the one-way kernel was set up for arguments that should be refused")

    monkeypatch.setattr(measurers, "OneWayMeasurer", no_kernel)
    cases = [({"samples": 10**12}, "samples"), ({"messages": 2**62, "samples": 2**39}, "messages"),
             ({"samples": 2**39}, "samples"), ({"messages": -5}, "messages"), ({"samples": -5}, "samples"),
             ({"messages": 0}, "messages"), ({"samples": 0}, "samples"), ({"timeout": -1}, "timeout"),
             ({"timeout": float("nan")}, "timeout"), ({"timeout": 1e9}, "timeout"),
             ({"messages": 2.5}, "messages"), ({"samples": True}, "samples")]
    for kwargs, name in cases:
        with pytest.raises(corelat.InputError, match=f"^{name} ") as info:
            corelat.clock_skew("0,1", **kwargs)
        assert "between" in str(info.value) or "must be" in str(info.value), (kwargs, info.value)
    with pytest.raises(corelat.InputError) as info:
        corelat.clock_skew("0,1", timeout=1e-4)
    assert str(info.value) == "timeout must be between 0.001 and 3600 seconds, got 0.0001"
