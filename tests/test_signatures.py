"""One coherent public API: the same words and defaults across measure, smt and locks, and no test
switches in production code."""

import ast
import pathlib

import pytest

import corelat


def _sources():
    root = pathlib.Path(corelat.__file__).parent
    return sorted(root.rglob("*.py"))


def test_no_corelat_test_setting_is_read_by_production_code():
    # Test stand-ins live in tests/ (tests/partner_cli.py); the package reads no CORELAT_TEST_*
    # variable, whatever the spelling of the read (os.environ[...], .get, os.getenv).
    found = []
    for f in _sources():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "CORELAT_TEST" in node.value):
                found.append(f"{f.name}:{node.lineno}")
    assert not found, f"CORELAT_TEST settings in production code: {found}"


# -- one vocabulary across measure, smt and locks ----------------------------------------------------

MEASURING = ("measure", "smt", "locks")


def _params(name):
    import inspect

    return inspect.signature(getattr(corelat, name)).parameters


def test_keyword_only_after_cpus():
    import inspect

    for name in MEASURING:
        params = list(_params(name).values())
        assert params[0].name == "cpus" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, name
        assert params[0].default is None, name
        loose = [p.name for p in params[1:] if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        assert not loose, f"corelat.{name}: {loose} may be passed by position"


def test_one_timeout_default_and_one_word_for_the_kernel():
    from corelat._system.validate import DEFAULT_TIMEOUT

    for name in MEASURING:
        params = _params(name)
        assert params["timeout"].default == DEFAULT_TIMEOUT == 1.0, name
        assert "kernel" in params and "tests" not in params, name


def test_samples_none_is_precision_driven_an_integer_fixed_no_sentinels():
    from corelat._system import validate as _validate

    sampling = ("samples", "precision", "max_samples", "max_time_per_pair")
    measure, smt = _params("measure"), _params("smt")
    for word in sampling:
        assert measure[word].default == smt[word].default, word
    assert measure["samples"].default is None
    assert isinstance(measure["precision"].default, float) and isinstance(measure["max_samples"].default, int)
    assert not any(word in _params("locks") for word in sampling)  # locks runs for a duration
    for name in MEASURING:
        strings = {p.name: p.default for p in _params(name).values() if p.default == "auto"}
        assert not strings, f"corelat.{name} has string sentinels {strings}"
    assert _validate.check_sampling().mode == "precision"
    assert _validate.check_sampling(300) == _validate.SamplingPlan("fixed", 300)
    assert _validate.check_sampling(max_samples=64).samples == 64


# -- one bag of options: every measuring function's keywords map onto SweepOptions -------------------

#: Keywords that are a function's own, not a sweep's (what it varies or how it runs).
OWN_KEYWORDS = {
    "measure": set(),
    "smt": {"duration"},
    "placement": {"homes"},
    "measure_fleet": {"comm", "directory", "expect", "wait"},
}


def _option_fields():
    import dataclasses

    from corelat._measure.options import SweepOptions

    derived = ("plan", "resolved", "selection", "parameters")  # set by request and resolve
    return {f.name: f.default for f in dataclasses.fields(SweepOptions) if f.init and f.name not in derived}


@pytest.mark.parametrize("name", sorted(OWN_KEYWORDS))
def test_every_measuring_keyword_is_a_sweep_option_with_its_default(name):
    import inspect

    fields = _option_fields()
    params = _params(name)
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), (
        f"{name} passes **kwargs on")
    sweep = [p for p in params.values() if p.name not in OWN_KEYWORDS[name]]
    unknown = [p.name for p in sweep if p.name not in fields]
    assert not unknown, f"corelat.{name}: {unknown} are not SweepOptions fields"
    for p in sweep:
        assert p.default == fields[p.name], (name, p.name, p.default, fields[p.name])
        assert p.annotation is not inspect.Parameter.empty, (name, p.name)
    assert set(OWN_KEYWORDS[name]) <= set(params), name


def test_measure_takes_every_sweep_option_and_the_others_all_but_what_they_vary():
    fields = set(_option_fields())
    assert set(_params("measure")) == fields
    assert fields - set(_params("placement")) == {"home"}  # placement varies it (homes)
    assert fields - set(_params("measure_fleet")) == {"name"}  # each result is named after its node
    assert fields - set(_params("smt")) == {"order", "strategy", "partition", "retest", "home"}


# -- the sweep keywords written once: every sweeping function one to one with SweepOptions -----------

#: Every public function that sweeps: the keywords of SweepOptions it leaves out (what it sets itself).
OMITTED = {
    "measure": set(),
    "smt": {"order", "strategy", "partition", "retest", "home"},
    "placement": {"home"},
    "measure_fleet": {"name"},
}


def _documented(fn):
    """(name, description) of each entry of ``fn``'s numpydoc Parameters section, in order (read
    here, apart from the code that writes the section)."""
    import inspect
    import re

    doc = inspect.getdoc(fn) or ""
    m = re.search(r"^Parameters\n-+\n(.*?)(?=^[A-Z][A-Za-z ]*\n-+\n|\Z)", doc, re.MULTILINE | re.DOTALL)
    if m is None:
        return []
    entries = re.findall(r"^(\S[^\n]*)\n?((?:[ \t]+\S[^\n]*\n?)*)", m.group(1), re.MULTILINE)
    return [(head.split(" : ")[0].strip(), body.strip()) for head, body in entries]


def _one_to_one(fn, own, omitted):
    """What breaks the rule for a sweeping function ``fn``: its parameters are ``own`` and the sweep
    keywords but ``omitted``, each with SweepOptions's default, and its Parameters section documents
    each of them once, in the signature's order, and nothing else."""
    import inspect

    from corelat._measure.options import keywords

    fields = {f.name: f.default for f in keywords()}
    params = inspect.signature(fn).parameters
    problems = []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        problems.append("its signature shows **kwargs")
    sweep = {n for n in params if n not in own}
    if sweep != set(fields) - set(omitted):
        problems.append(f"keywords {sorted(sweep ^ (set(fields) - set(omitted)))} are not one to one with "
                        "SweepOptions")
    problems += [f"{n}={params[n].default!r}, SweepOptions has {fields[n]!r}" for n in sweep & set(fields)
                 if params[n].default != fields[n]]
    problems += [f"{n} has no type" for n, p in params.items() if p.annotation is inspect.Parameter.empty]
    documented = _documented(fn)
    if [n for n, _ in documented] != list(params):
        problems.append(f"documents {[n for n, _ in documented]}, takes {list(params)}")
    problems += [f"{n} is documented without a word" for n, text in documented if not text]
    return problems


def test_every_sweep_option_is_a_documented_keyword():
    from corelat._measure.options import keywords

    assert [f.name for f in keywords()] == list(_option_fields())
    for f in keywords():
        assert f.metadata["doc"].strip(), f"SweepOptions.{f.name} has no documentation"


@pytest.mark.parametrize("name", sorted(OMITTED))
def test_every_sweeping_function_is_one_to_one_with_sweep_options(name):
    fn = getattr(corelat, name)
    assert not _one_to_one(fn, OWN_KEYWORDS[name], OMITTED[name]), _one_to_one(fn, OWN_KEYWORDS[name],
                                                                                OMITTED[name])


def test_every_sweeping_function_is_in_the_table():
    # a new public function that sweeps (its keywords made by sweep_keywords) is checked above too
    import inspect

    from corelat._measure.options import keywords

    fields = {f.name for f in keywords()}
    sweeping = {name for name in corelat.__all__ if inspect.isfunction(getattr(corelat, name))
                and len(fields & set(inspect.signature(getattr(corelat, name)).parameters)) > 5}
    assert sweeping == set(OMITTED)


def test_the_check_fails_where_a_keyword_or_a_doc_is_missing():
    # The rule is not vacuous: a function with a keyword of its own that SweepOptions lacks, one
    # that leaves a keyword out, one whose doc lost an entry, one with another default.
    from corelat._measure.options import sweep_keywords

    @sweep_keywords()
    def extra(cpus=None, *, colour="red", **options):
        """Sweep.

        Parameters
        ----------
        colour : str
            the colour.

        Returns
        -------
        None
        """

    assert any("not one to one" in p for p in _one_to_one(extra, set(), set()))
    assert not any("not one to one" in p for p in _one_to_one(extra, {"colour"}, set()))
    assert any("not one to one" in p for p in _one_to_one(corelat.smt, OWN_KEYWORDS["smt"], set()))

    def undocumented(cpus=None, *, kernel="cas"):
        """Sweep.

        Parameters
        ----------
        cpus : CPUs
            the CPUs.
        """

    assert any("documents ['cpus'], takes ['cpus', 'kernel']" in p
               for p in _one_to_one(undocumented, set(), set(_option_fields()) - {"cpus", "kernel"}))

    def blank(cpus=None):
        """Sweep.

        Parameters
        ----------
        cpus : CPUs
        """

    assert "cpus is documented without a word" in _one_to_one(blank, set(), set(_option_fields()) - {"cpus"})
    with pytest.raises(TypeError, match="SweepOptions's default is 1000"):
        sweep_keywords()(lambda cpus=None, *, round_trips=10, **options: None)


def test_help_and_the_signature_show_every_keyword_with_its_doc():
    import inspect
    import pydoc

    from corelat._measure.options import keywords

    for name, omitted in OMITTED.items():
        fn = getattr(corelat, name)
        text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
        for f in keywords():
            if f.name in omitted:
                assert f.name not in inspect.signature(fn).parameters, (name, f.name)
                continue
            assert f"{f.name}: " in text.split("\n\n", 2)[1], (name, f.name)  # the signature line
            assert f"\n    {f.name} : " in text, (name, f.name)  # its entry in Parameters
    # help() shows what it showed before the keywords were written once
    assert str(inspect.signature(corelat.measure)).startswith(
        "(cpus: 'CPUs' = None, *, kernel: 'Kernel' = 'cas', round_trips: 'int' = 1000, samples: 'int | None'")


def test_a_keyword_a_sweep_does_not_take_is_refused_in_the_same_words():
    with pytest.raises(TypeError, match=r"^measure\(\) got an unexpected keyword argument 'bogus'$"):
        corelat.measure([0, 1], bogus=1)
    # a field of SweepOptions that is no keyword, and one a function leaves out
    with pytest.raises(TypeError, match=r"^measure\(\) got an unexpected keyword argument 'resolved'$"):
        corelat.measure([0, 1], resolved=True)
    with pytest.raises(TypeError, match=r"^smt\(\) got an unexpected keyword argument 'order'$"):
        corelat.smt(order="os")
    with pytest.raises(TypeError, match=r"got multiple values for argument 'cpus'"):
        corelat.measure([0, 1], cpus=[0, 1])
    with pytest.raises(TypeError, match=r"takes from 0 to 1 positional arguments but 2 were given"):
        corelat.measure([0, 1], 1000)


def test_placement_and_fleet_refuse_what_they_set_themselves_in_corelats_words(monkeypatch):
    from corelat import InputTypeError
    from corelat._fleet import run as _fleet_run

    with pytest.raises(InputTypeError, match="do not pass home"):
        corelat.placement([0, 1], home="responder")
    with pytest.raises(InputTypeError, match=r"placement\(\) takes no 'bogus'"):
        corelat.placement([0, 1], bogus=1)
    monkeypatch.setattr(_fleet_run, "mpi", lambda: type("MPI", (), {"COMM_WORLD": object()}))
    monkeypatch.setattr(_fleet_run, "run", lambda *a, **k: pytest.fail("started measuring"))
    with pytest.raises(InputTypeError, match="do not pass name"):
        corelat.measure_fleet(name="x")
    with pytest.raises(corelat.InputError, match="unknown kernel 'bogus'"):  # on every rank, first
        corelat.measure_fleet(kernel="bogus")


def test_one_measurer_entry_per_kernel():
    from corelat._measure.measurers import MEASURERS

    assert set(MEASURERS) == set(corelat.ALL_KERNELS)
    for kernel, entry in MEASURERS.items():
        assert callable(getattr(entry.measurer, "build", None)), kernel
        assert entry.function in ("pingpong", "oneway", "chase"), kernel


def test_options_are_validated_once_with_measures_messages():
    from corelat._measure.options import SweepOptions

    opts = SweepOptions.request([0, 1], samples=20)
    assert opts.plan.mode == "fixed" and opts.warmup == 2 and not opts.resolved
    with pytest.raises(corelat.InputError, match="unknown strategy 'most'"):
        SweepOptions.request(strategy="most")
    with pytest.raises(corelat.InputError, match="partition and topology are used by strategy='sample' only"):
        SweepOptions.request(partition=[[0], [1]])
    with pytest.raises(corelat.InputError, match="retest must be True, False or a number of pairs"):
        SweepOptions.request(retest=-1)
    with pytest.raises(corelat.InputError, match="unknown kernel 'rw2' for smt"):
        SweepOptions.for_smt(kernel="rw2")


def _cli_option(command, flag):
    import importlib

    from corelat import cli

    p = cli._parser(command, importlib.import_module(f"corelat.cli.{cli.COMMANDS[command][0]}"))
    for action in p._actions:
        if flag in action.option_strings:
            return action
    return None


def test_one_order_vocabulary_and_one_default_everywhere():
    import inspect

    from corelat import plot
    from corelat._core.types import DEFAULT_ORDER, ORDERS

    assert ORDERS == ("os", "topology", "structure")
    assert _params("measure")["order"].default is DEFAULT_ORDER
    for fn in (plot.heatmap, plot.compare, plot.placement):
        assert inspect.signature(fn).parameters["order"].default is DEFAULT_ORDER, fn.__name__
    for command in ("measure", "placement", "plot"):
        action = _cli_option(command, "--order")
        assert tuple(action.choices) == ORDERS and action.default is DEFAULT_ORDER, command


def test_one_set_of_statistics_everywhere():
    from corelat import LatencyResult
    from corelat._core.types import STATISTICS

    assert STATISTICS == LatencyResult.STATISTICS == ("median", "mean", "min", "max", "std")
    for command in ("measure", "report", "compare", "plot"):
        action = _cli_option(command, "--statistic")
        assert tuple(action.choices) == STATISTICS and action.default == "median", command
    # every one is accepted by the result, structure and compare (and refused alike when unknown)
    import numpy as np
    import pytest

    rng = np.random.default_rng(0)
    r = LatencyResult(cpus=(0, 1, 2), kernel="cas", samples=50 + rng.random((3, 3, 8)), name="r")
    for s in STATISTICS:
        assert r.statistic(s).shape == (3, 3)
        assert corelat.structure(r, statistic=s).statistic == s
        assert corelat.compare(r, r, statistic=s).statistic == s
    for call in (lambda: r.statistic("p99"), lambda: corelat.compare(r, statistic="p99")):
        with pytest.raises(corelat.InputError, match="unknown statistic 'p99'; use one of: 'median'"):
            call()


def test_one_order_vocabulary_in_results():
    import numpy as np
    import pytest

    from corelat import LatencyResult

    rng = np.random.default_rng(0)
    r = LatencyResult(cpus=(2, 0, 1), kernel="cas", samples=50 + rng.random((3, 3, 8)), name="r")
    assert r.ordered("os").cpus == (0, 1, 2)
    with pytest.raises(corelat.InputError, match="unknown order 'random'; use one of: 'os', 'topology'"):
        r.ordered("random")


def test_a_result_is_ordered_by_the_structure_the_analysis_hands_it():
    # A result never analyses itself (the results layer is below the analysis): the structure's
    # order is computed by corelat.structure and handed to the result.
    import numpy as np
    import pytest

    from corelat import LatencyResult

    rng = np.random.default_rng(0)
    lat = np.full((4, 4), 100.0)
    lat[np.ix_([0, 2], [0, 2])] = lat[np.ix_([1, 3], [1, 3])] = 20.0
    r = LatencyResult(cpus=(0, 1, 2, 3), kernel="cas",
                      samples=lat[:, :, None] + rng.random((4, 4, 8)), name="r")
    st = corelat.structure(r)
    got = r.ordered(st)
    assert list(got.cpus) == st.order() and got.metadata["order"]["by"] == "structure"
    assert got.boundaries == st.boundaries
    with pytest.raises(corelat.InputError, match=r"r.ordered\(corelat.structure\(r\)\)"):
        r.ordered("structure")
    assert r.ordered([3, 1, 2, 0]).cpus == (3, 1, 2, 0)
    assert r.ordered(np.array([3, 1, 2, 0])).metadata["order"]["by"] == "cpus"
    with pytest.raises(corelat.InputError, match="each of the result's CPUs"):
        r.ordered([0, 1, 2])
    with pytest.raises(corelat.InputError, match=r"r.ordered\(corelat.structure\(r\)\)"):
        corelat.measure([0, 1], order="structure")


@pytest.mark.hw
def test_cli_sampling_words(tmp_path):
    import os

    import pytest
    from conftest import run_cli

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs at least 2 allowed CPUs")
    p = run_cli("10", "5", "--precision", "0.05")
    assert p.returncode == 2 and "SAMPLES (5) takes exactly that many per pair" in p.stderr, p.stderr
    out = tmp_path / "r.npz"
    p = run_cli("10", "--max-samples", "40", "--max-time-per-pair", "0.05", "-o", out)
    assert p.returncode == 0, p.stderr
    params = corelat.load(out).metadata["parameters"]
    assert params["max_samples"] == 40 and params["precision"] == 0.02 and "samples" not in params
    assert (corelat.load(out).extras["samples_taken"] <= 40).all()
