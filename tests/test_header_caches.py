"""Checks done once per distinct value (a fleet's nodes share their topology) still refuse what
differs from a good value only in ways ``==`` does not see, or only in where it sits."""

import copy

import pytest

import corelat
from corelat._core import npz as _npz
from corelat._core.errors import InputError
from corelat._results import schema as _schema


def _topology():
    return corelat.Topology([{"cpu": c, "package": 0, "core": c, "l3": 0, "l2": c, "siblings": (c,),
                              "node": 0, "nodes": (0,), "thread": 0, "allowed": True} for c in range(80)],
                            root="/synthetic").to_dict()


def _header(topo):
    return {"kernel": "cas", "name": "n", "metadata": {"topology": topo}, "extras": []}


@pytest.mark.parametrize("change", [1.0, "1"])
def test_a_topology_like_a_good_one_but_of_other_types_is_still_refused(change):
    good = _topology()
    _schema.check_header(_header(good), "good.npz")  # now remembered as good
    bad = copy.deepcopy(good)
    bad["cpus"][1]["cpu"] = change
    assert (bad == good) == (change == 1)  # 1.0 == 1: a cache keyed by value would take it as good
    with pytest.raises(InputError, match="bad.npz"):
        _schema.check_header(_header(bad), "bad.npz")


def test_a_long_list_checked_once_is_refused_where_it_sits_too_deep():
    deep = [[[0]]] * 70  # three levels
    ok = {"a": deep}
    _npz._check_tree(ok, "ok.npz")  # remembered at depth 2
    bad = ok
    for _ in range(_npz.MAX_DEPTH - 3):
        bad = {"a": bad}
    with pytest.raises(InputError, match="nested deeper"):
        _npz._check_tree(bad, "bad.npz")
    long = {"a": ["x" * (_npz.MAX_STRING_CHARS + 1)] + ["y"] * 70}
    with pytest.raises(InputError, match="characters"):
        _npz._check_tree(long, "long.npz")
