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
