"""Issue 24, item 11: crafted metadata never gives an internal error.

Hypothesis changes one valid file per kind at one place (a header field's type or range, a field removed
or added, an array of another dtype or shape; see ``tests/fuzzfiles.py``): ``corelat.load`` then gives a
result or raises InputError, and ``corelat report`` ends with 0 or 2 and no internal error. The
benchmark (``benchmarks/reliability.py --only schema``) runs 20,000 such files.
"""

import json
import os
import tempfile

import fuzzfiles as fz
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corelat
from corelat._core.errors import InputError

_SEEDS = {}


def _seeds():
    if not _SEEDS:
        _SEEDS.update(fz.seeds(tempfile.mkdtemp(prefix="corelat-seeds-")))
    return _SEEDS


@st.composite
def _header_change(draw, kind):
    header, arrays = _seeds()[kind]
    place = draw(st.sampled_from(fz.places(header)))
    op = draw(st.sampled_from(["set", "set", "del", "add"]))
    value = draw(st.sampled_from(fz.HOSTILE))
    return fz.change_header(header, place, op, value), arrays, (place, op, value)


@st.composite
def _array_change(draw, kind):
    header, arrays = _seeds()[kind]
    name = draw(st.sampled_from(sorted(arrays)))
    how = draw(st.sampled_from(fz.ARRAY_CHANGES))
    changed = dict(arrays)
    changed[name] = fz.change_array(arrays[name], how)
    return header, changed, (name, how)


def _holds(tmp_path, header, arrays, what):
    path = os.path.join(tmp_path, "crafted.npz")
    fz.write(path, header, arrays)
    assert fz.outcome(path) == "ok", what


_FUZZ = settings(max_examples=250, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("kind", sorted(fz.BUILDERS))
def test_crafted_headers_give_input_errors(tmp_path, kind):
    @_FUZZ
    @given(_header_change(kind))
    def run(change):
        _holds(tmp_path, *change)

    run()


@pytest.mark.parametrize("kind", ["latency", "locks", "smt", "placement", "fleet"])
def test_crafted_arrays_give_input_errors(tmp_path, kind):
    @settings(_FUZZ, max_examples=80)
    @given(_array_change(kind))
    def run(change):
        _holds(tmp_path, *change)

    run()


# The issue's own examples, each refused with the field named.
_EXAMPLES = [
    ("latency", ("metadata", "home"), 1, "metadata.home must be a mapping"),
    ("latency", ("metadata", "warnings"), None, "metadata.warnings must be"),
    ("locks", ("metadata", "timer"), [], "metadata.timer must be a mapping"),
    ("locks", ("metadata", "timer_mhz"), None, "metadata.timer_mhz must be a number"),
    ("placement", ("results", 0), 0, "results[0] must be a mapping"),
    ("fleet", ("nodes", 0, "classes"), [], "nodes[0].classes must be a mapping"),
    ("check", ("records", 0, "status"), ["x"], "records[0].status must be a string"),
    ("check", ("records", 0, "status"), "x", "records[0].status must be one of"),
    ("smt", ("partner_levels", 0), "nowhere", "partner_levels[0] must be one of"),
]


_KIND_CLASSES = {"latency": corelat.LatencyResult, "locks": corelat.LockResult, "smt": corelat.SMTResult,
                 "placement": corelat.PlacementResult, "fleet": corelat.FleetResult,
                 "check": corelat.CheckReport}


@pytest.mark.parametrize("door", ["corelat.load", "kind.load"])
@pytest.mark.parametrize("kind, place, value, message", _EXAMPLES)
def test_the_issues_examples(tmp_path, kind, place, value, message, door):
    # Issue 34 item 11: the kind's own load (SMTResult.load, ...) refuses what corelat.load refuses.
    header, arrays = _seeds()[kind]
    path = tmp_path / "crafted.npz"
    fz.write(path, fz.change_header(header, place, "set", value), arrays)
    load = corelat.load if door == "corelat.load" else _KIND_CLASSES[kind].load
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load(path)


def test_every_saved_kind_has_a_door_in_the_fuzzing():
    assert {cls.__name__ for cls in _KIND_CLASSES.values()} | {"Topology"} == {
        name.split(".")[0] for name in fz.DOORS if name != "corelat.load"}


@st.composite
def _dict_change(draw, kind):
    d = _dicts()[kind]
    place = draw(st.sampled_from(fz.places(d)))
    op = draw(st.sampled_from(["set", "set", "del", "add"]))
    value = draw(st.sampled_from(fz.HOSTILE))
    return fz.change_header(d, place, op, value), (place, op, value)


_DICTS = {}


def _dicts():
    if not _DICTS:
        _DICTS.update({kind: json.loads(json.dumps(b().to_dict())) for kind, b in fz.BUILDERS.items()})
        _DICTS["topology"] = json.loads(json.dumps(corelat.topology().to_dict()))
    return _DICTS


def _from_dict(kind):
    return corelat.Topology.from_dict if kind == "topology" else _KIND_CLASSES[kind].from_dict


@pytest.mark.parametrize("kind", [*sorted(fz.BUILDERS), "topology"])
def test_crafted_dicts_give_input_errors(kind):
    # Issue 34 item 11: from_dict is a public door too; what to_dict gives, changed at one place,
    # gives a result or an InputError (a KeyError, an OverflowError, ... was an internal error).
    @_FUZZ
    @given(_dict_change(kind))
    def run(change):
        d, what = change
        try:
            _from_dict(kind)(d)
        except InputError:
            pass
        except Exception as e:  # noqa: BLE001 - what the fuzzing looks for
            pytest.fail(f"{what}: {type(e).__name__}: {e}"[:400])

    run()


@pytest.mark.parametrize("kind", [*sorted(fz.BUILDERS), "topology"])
def test_from_dict_of_what_is_not_a_dict_is_refused(kind):
    for junk in (None, 5, "x", [], [1, 2]):
        with pytest.raises(InputError):
            _from_dict(kind)(junk)


def test_an_infinite_fleet_version_is_refused(tmp_path):
    # json.loads reads 1e999 as an infinite float: int() of it was an OverflowError.
    header, arrays = _seeds()["fleet"]
    text = json.dumps(fz.change_header(header, ("fleet_version",), "set", 12345)).replace("12345", "1e999")
    path = tmp_path / "crafted.npz"
    fz.write_text_header(path, text, arrays)
    with pytest.raises(InputError, match="fleet_version must be an integer"):
        corelat.load(path)


def test_a_numeric_lock_test_name_is_refused(tmp_path):
    header, arrays = _seeds()["locks"]
    arrays = dict(arrays)
    arrays["data.name"] = np.array([0.0, 1.0])
    path = tmp_path / "crafted.npz"
    fz.write(path, header, arrays)
    with pytest.raises(InputError, match="data.name must name lock tests"):
        corelat.load(path)


def test_valid_files_still_load(tmp_path):
    for kind, (header, arrays) in _seeds().items():
        path = tmp_path / f"{kind}.npz"
        fz.write(path, header, arrays)
        assert type(corelat.load(path)).__name__.lower().startswith(kind[:3]) or kind == "check"
