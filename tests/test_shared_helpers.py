"""Helpers several modules share (folded from copies): one reading of "a name or a list of names",
one way a result made of other results labels their warnings and notes."""

import pytest

import corelat


@pytest.mark.hw
def test_a_name_or_a_list_of_names_and_nothing_else():
    with pytest.raises(corelat.InputError, match="kernel must be a pattern string or a list of them, not 5"):
        corelat.locks([0], kernel=5)
    with pytest.raises(corelat.InputError, match=r"homes must be 'nodes' or a list of homes .*, not 5"):
        corelat.placement([0, 1], homes=5)
    assert corelat.locks([0], kernel="inc-atomic-relaxed", duration=0.01).tests == \
        corelat.locks([0], kernel=("inc-atomic-relaxed",), duration=0.01).tests


def _result(name, warnings=(), notes=()):
    return corelat.LatencyResult.from_matrix([[0, 50], [50, 0]], kernel="cas", name=name,
                                             metadata={"warnings": list(warnings), "notes": list(notes)})


def test_composite_results_label_their_parts_texts():
    a, b = _result("a", ["slow"], ["n1"]), _result("b", ["noisy", "late"])
    c = corelat.compare(a, b)
    assert c.warnings == ("a: slow", "b: noisy", "b: late")
    assert c.notes == ("a: n1",)
    p = corelat.PlacementResult(homes=["initiator", "responder"], results=[a, b])
    assert p.warnings == ("[initiator] slow", "[responder] noisy", "[responder] late")
    assert p.notes == ("[initiator] n1",)
