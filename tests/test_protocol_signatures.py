"""One result protocol, read from the code and from docs/results.md: every kind's public methods, their
positional arguments and keyword-only options, as the page lists them (issue 35 item 3); and the old
names and positional options still working one release, each call warning once with the new name."""

import inspect
import json
import pathlib
import re
import warnings

import pytest
from test_protocol import (
    built_check_report,
    fleet_result,
    latency,
    lock_result,
    placement_result,
    smt_result,
)

import corelat
from corelat._core.protocol import Result, keyword_options

DOC = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text(encoding="utf-8")

#: What each verb acts on: its positional arguments (after self or cls); every other parameter is an
#: option, and keyword-only.
ACTS_ON = {"records": (), "table": (), "describe": (), "summary": (), "to_dict": (), "from_dict": ("d",),
           "save": ("path",), "load": ("path",)}

#: The old names, kept one release: what docs/results.md's "Renamed" table lists.
DEPRECATED = {"LatencyResult.take", "LatencyResult.with_cpus_order", "Structure.boundaries",
              "FleetResult.group"}


def _section(title):
    """The text of the docs page's ``## title`` section."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", DOC, re.MULTILINE | re.DOTALL)
    assert m, f"docs/results.md has no section {title!r}"
    return m.group(1)


def _table(title):
    """The first Markdown table of a section: (header cells, [row cells])."""
    block = next(part.strip() for part in _section(title).split("\n\n") if part.strip().startswith("|"))
    lines = block.splitlines()
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    assert len(cells) > 2 and set(cells[1][0]) <= {"-"}, f"no table in {title!r}"
    return cells[0], cells[2:]


def _name(cell):
    m = re.fullmatch(r"`(\w+)`", cell)
    assert m, f"not one `Name`: {cell!r}"
    return m.group(1)


def _options(cell):
    """``None`` for n/a, else the set of ``name=`` options a cell lists (``—``: none)."""
    if cell == "n/a":
        return None
    if cell == "—":
        return set()
    names = re.findall(r"`(\w+)=`", cell)
    assert names and re.fullmatch(r"(`\w+=`(, )?)+", cell), f"unreadable options cell {cell!r}"
    return set(names)


def documented_options():
    """{kind: {verb: set of options, or None where the kind has no such verb}}."""
    head, rows = _table("Every kind's options")
    verbs = [_name(c) for c in head[1:]]
    return {_name(r[0]): dict(zip(verbs, map(_options, r[1:]))) for r in rows}


def documented_methods():
    """{kind: {method: (positional names, keyword-only names)}} of the methods beyond the protocol."""
    heads = [part for part in _section("Every kind's options").split("\n\n")
             if "Methods beyond the protocol" in part]
    assert heads, "no table of the methods beyond the protocol"
    out = {}
    for ln in heads[0].splitlines()[2:]:
        kind, cell = (c.strip() for c in ln.strip().strip("|").split("|"))
        methods = {}
        for name, args in re.findall(r"`(\w+)\(([^)]*)\)`", cell):
            parts = [a.strip() for a in args.split(",") if a.strip()]
            star = parts.index("*") if "*" in parts else len(parts)
            methods[name] = (tuple(parts[:star]), set(parts[star + 1:]))
        assert methods or cell == "—", f"unreadable methods cell {cell!r}"
        out[_name(kind)] = methods
    return out


KINDS = {name: getattr(corelat, name) for name in documented_options()}


def _parameters(cls, name):
    """(positional names, keyword-only names, any *args or **kwargs) of a method as ``help()`` shows it."""
    params = list(inspect.signature(getattr(cls, name)).parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    positional = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    keyword = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    star = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
    return positional, keyword, star


def _public_methods(cls):
    return {n for n in dir(cls) if not n.startswith("_") and inspect.isroutine(getattr(cls, n))}


def test_the_page_lists_every_kind():
    # Every public result class (corelat.__all__, deriving from Result) has its row, and no row names
    # something else.
    def below(c):
        for s in c.__subclasses__():
            yield s
            yield from below(s)

    public = {c.__name__ for c in below(Result) if getattr(corelat, c.__name__, None) is c}
    missing = sorted(public - set(KINDS))
    assert not missing, f"result kinds without a row in docs/results.md's 'Every kind's options': {missing}"
    assert not set(KINDS) - public, f"rows of no public result kind: {sorted(set(KINDS) - public)}"
    assert len(KINDS) >= 9
    assert set(documented_methods()) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_protocol_verbs_take_the_documented_options_by_keyword_only(kind):
    cls = KINDS[kind]
    for verb, options in documented_options()[kind].items():
        if options is None:
            assert not hasattr(cls, verb), f"{kind}.{verb} exists, docs/results.md says n/a"
            continue
        positional, keyword, star = _parameters(cls, verb)
        assert not star, f"{kind}.{verb} takes *args or **kwargs"
        assert positional == ACTS_ON[verb], (
            f"{kind}.{verb}: positional {positional}, the protocol says {ACTS_ON[verb]} "
            "(an option must be keyword-only)")
        assert keyword == options, (
            f"{kind}.{verb}: options {sorted(keyword)}, docs/results.md {sorted(options)}")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_other_public_method_is_on_the_page(kind):
    cls = KINDS[kind]
    documented = documented_methods()[kind]
    protocol = {v for v, o in documented_options()[kind].items() if o is not None}
    old = {d.split(".")[1] for d in DEPRECATED if d.startswith(f"{kind}.")}
    assert _public_methods(cls) - old == protocol | set(documented), (
        f"{kind}: public methods and docs/results.md differ")
    for name, (positional, keyword) in documented.items():
        got = _parameters(cls, name)
        assert got[:2] == (positional, keyword) and not got[2], (
            f"{kind}.{name}{got[:2]}: docs/results.md says {(positional, keyword)}")


def test_the_shared_keywords_table_says_which_kinds_take_them():
    head, rows = _table("The shared keywords of `records()` and `table()`")
    assert head[:2] == ["Keyword", "Kinds"]
    table = documented_options()
    for row in rows:
        (option,) = _options(row[0])
        kinds = {k.strip("` ") for k in row[1].split(",")}
        for verb in ("records", "table"):
            assert kinds == {k for k, verbs in table.items() if option in (verbs[verb] or ())}, (option, verb)


def test_boundaries_is_one_kind_on_results_and_structures():
    import numpy as np

    for cls in (corelat.LatencyResult, corelat.Structure):
        assert isinstance(inspect.getattr_static(cls, "boundaries"), property)
    same = {inspect.signature(cls.boundaries.fget).return_annotation
            for cls in (corelat.LatencyResult, corelat.Structure)}
    assert same == {"dict[str, tuple[int, ...]]"}
    lat = np.full((4, 4), 100.0)
    lat[np.ix_([0, 2], [0, 2])] = lat[np.ix_([1, 3], [1, 3])] = 20.0
    r = corelat.LatencyResult.from_matrix(lat)
    st = corelat.structure(r)
    got = r.ordered(st).boundaries
    assert got == st.boundaries == {"level0": (2,)}
    assert all(isinstance(v, tuple) for b in (got, st.boundaries) for v in b.values())
    assert r.ordered("os").boundaries == {}


def test_the_renamed_table_names_the_old_names():
    _, rows = _table("Renamed: the old names, for one release")
    old = {re.match(r"`(\w+\.\w+)", r[0]).group(1) for r in rows if re.match(r"`\w+\.\w+", r[0])}
    assert old == DEPRECATED


def _one_warning(call, new):
    """``call()``'s value, after checking that it warned exactly once, a DeprecationWarning naming
    ``new``, at the caller's line (this file)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value = call()
    assert [w.category for w in seen] == [DeprecationWarning], [str(w.message) for w in seen]
    assert new in str(seen[0].message), str(seen[0].message)
    assert seen[0].filename == __file__
    return value


def test_old_reorder_names_still_work_and_warn_once():
    r = latency()
    rev = list(reversed(r.cpus))
    assert _one_warning(lambda: r.with_cpus_order(rev), "ordered(cpus)").cpus == tuple(rev)
    taken = _one_warning(lambda: r.take([2, 1, 0]), "ordered(cpus)")
    assert taken.cpus == tuple(rev) and taken.median[0, 1] == r.median[2, 1]
    sub = _one_warning(lambda: r.with_cpus_order(rev[:2]), "ordered(cpus)")  # a subset, as before
    assert sub.cpus == tuple(rev[:2]) and sub.median[0, 1] == r.median[2, 1]
    with pytest.deprecated_call(match=r"take\(indices\) is deprecated: use ordered"), \
            pytest.raises(corelat.InputError, match="positions 0 to 2"):
        r.take([9])


def test_old_boundaries_call_still_works_and_warns_once():
    import numpy as np

    lat = np.full((4, 4), 100.0)
    lat[np.ix_([0, 2], [0, 2])] = lat[np.ix_([1, 3], [1, 3])] = 20.0
    st = corelat.structure(corelat.LatencyResult.from_matrix(lat))
    assert _one_warning(lambda: st.boundaries(), "property Structure.boundaries") == {0: [2]}


def test_old_fleet_group_still_works_and_warns_once():
    f = fleet_result()
    node = f.nodes[0]["node"]
    assert _one_warning(lambda: f.group(node), "group_of(node)") == f.group_of(node)
    with pytest.deprecated_call(match="group_of"), pytest.raises(KeyError, match="no node 'nope'"):
        f.group("nope")


#: kind -> a builder (pure: no C kernel).
BUILD = {"LatencyResult": latency, "PlacementResult": placement_result, "SMTResult": smt_result,
         "LockResult": lock_result, "FleetResult": fleet_result, "CheckReport": built_check_report}

#: (kind, verb) -> how many of its options it took by position before they became keyword-only (the
#: others always were keyword-only: by position they are a TypeError).
WAS_POSITIONAL = {
    ("LatencyResult", "records"): 1, ("LatencyResult", "table"): 1, ("LatencyResult", "summary"): 1,
    ("LatencyResult", "to_dict"): 1,
    ("PlacementResult", "records"): 1, ("PlacementResult", "table"): 1, ("PlacementResult", "summary"): 1,
    ("SMTResult", "records"): 1, ("SMTResult", "table"): 1, ("SMTResult", "summary"): 1,
    ("LockResult", "records"): 1, ("LockResult", "table"): 2,
    ("FleetResult", "records"): 1, ("FleetResult", "table"): 1, ("FleetResult", "describe"): 1,
    ("FleetResult", "to_dict"): 1, ("FleetResult", "from_dict"): 1,
}

#: An option -> a value to pass it, other than its default.
VALUE = {"statistic": "min", "per_thread": True, "headers": False, "group": 1, "max_rows": 1, "arrays": False}


def _same(a, b):
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


@pytest.mark.parametrize("kind", sorted(BUILD))
def test_options_by_position_still_work_one_release_and_warn_once(kind):
    r = BUILD[kind]()
    checked = 0
    for verb, options in documented_options()[kind].items():
        if not options or verb in ("from_dict", "save", "load"):
            continue
        method = getattr(r, verb)
        order = [n for n in inspect.signature(method).parameters if n in VALUE]
        values = [VALUE[n] for n in order]
        if (kind, verb) not in WAS_POSITIONAL:  # keyword-only before: no shim
            with pytest.raises(TypeError):
                method(values[0])
            continue
        order, values = order[:WAS_POSITIONAL[kind, verb]], values[:WAS_POSITIONAL[kind, verb]]
        by_keyword = method(**dict(zip(order, values)))
        shown = ", ".join(f"{n}=" for n in order)
        got = _one_warning(lambda m=method, v=values: m(*v), f"pass {shown} by keyword")
        assert _same(got, by_keyword), f"{kind}.{verb}: by position gives another answer"
        with pytest.raises(TypeError, match="positional"):
            method(*values, None)
        with pytest.raises(TypeError, match="multiple values"), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            method(values[0], **{order[0]: values[0]})
        checked += 1
    assert checked == sum(k == kind for k, _ in WAS_POSITIONAL) - (kind == "FleetResult")  # from_dict: below


def test_fleet_from_dict_group_arrays_by_position_still_works():
    f = fleet_result()
    d = f.to_dict(arrays=False)
    stored = {g.id: (g.values, g.median_matrix) for g in f.groups}
    back = _one_warning(lambda: corelat.FleetResult.from_dict(d, stored), "pass group_arrays= by keyword")
    assert back == corelat.FleetResult.from_dict(d, group_arrays=stored) == f


def test_keyword_options_shows_the_new_signature():
    # What help() and the checks above read is the keyword-only signature, not the shim's (*args).
    @keyword_options("statistic")
    def verb(self, *, statistic="median"):
        """A verb."""
        return statistic

    assert str(inspect.signature(verb)) == "(self, *, statistic='median')"
    with pytest.deprecated_call(match=r"verb\(\): pass statistic= by keyword"):
        assert verb(None, "min") == "min"
    assert verb(None) == "median" and verb(None, statistic="max") == "max"
