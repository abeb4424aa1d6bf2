import json

import numpy as np
import pytest

from breadth.rewards.ucb import OutcomeUCB

from ._cases import params


@pytest.mark.parametrize("case", params("ucb"))
def test_outcome_ucb_bonus_table(case):
    ucb = OutcomeUCB(case["coef"], case["variant"], case["apply_to"], baseline=case["baseline"])
    for problem_id, outcomes in case["history"]:
        ucb.update(problem_id, outcomes)
    got = ucb.bonus(case["problem_id"], case["outcomes"], case["correct"])
    np.testing.assert_allclose(got, case["expected"], atol=1e-6)


def test_bonus_does_not_update_counts():
    ucb = OutcomeUCB()
    ucb.bonus("p", ["4", "4"])
    assert ucb.count("p", "4") == 0
    ucb.update("p", ["4", "4"])
    assert ucb.count("p", "4") == 2


def test_state_dict_is_json_and_round_trips_none_outcomes():
    ucb = OutcomeUCB(0.7, "ucb_mean", "correct")
    ucb.update("p1", ["4", None, None])
    ucb.update(12, ["x"])  # non-string ids are stored as strings
    state = json.loads(json.dumps(ucb.state_dict()))
    restored = OutcomeUCB(0.7, "ucb_mean", "correct")
    restored.load_state_dict(state)
    assert restored.count("p1", None) == 2
    assert restored.count("p1", "4") == 1
    assert restored.count("12", "x") == 1
    assert restored.state_dict() == ucb.state_dict()
    query = (["4", None, "5"], [True, True, False])
    np.testing.assert_array_equal(restored.bonus("p1", *query), ucb.bonus("p1", *query))


@pytest.mark.parametrize(
    ("state", "match"),
    [
        ({"format": "other", "counts": {}}, "not an OutcomeUCB state"),
        ({"format": "breadth.OutcomeUCB/2", "counts": {"p": [["4", -1]]}}, "bad entry"),
        ({"format": "breadth.OutcomeUCB/2", "counts": {"p": [["4"]]}}, "bad entry"),
    ],
)
def test_load_state_dict_rejects_bad_state(state, match):
    with pytest.raises(ValueError, match=match):
        OutcomeUCB().load_state_dict(state)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"coef": -1.0}, "coef must be >= 0"),
        ({"variant": "ucb_max"}, "variant must be one of"),
        ({"apply_to": "wrong"}, "apply_to must be one of"),
        ({"baseline": 1.5}, "baseline b0 must be in"),
    ],
)
def test_constructor_validates(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OutcomeUCB(**kwargs)


def test_apply_to_correct_requires_flags():
    with pytest.raises(ValueError, match="needs one `correct` flag per outcome"):
        OutcomeUCB(apply_to="correct").bonus("p", ["4"])
