"""breadth.preflight.sequence_fit: which limits rendered rows exceed, and the values that fit them."""

from __future__ import annotations

import pytest

from breadth.preflight.sequence_fit import (
    MODEL_CONTEXT,
    SplitLengths,
    TokenLimits,
    check_rows_fit,
    fit_message,
    fitting_values,
    shortfalls,
)

# Two train rows and two eval rows; targets and sequences count their eos.
TRAIN = SplitLengths("train", prompt=[10, 30], target=[5, 3], sequence=[15, 33])
EVAL = SplitLengths("eval", prompt=[20, 12], target=[9, 2], sequence=[29, 14])


def _limits(**changes):
    return TokenLimits(**{"max_length": 40, "max_length_key": "model.max_length",
                          "max_new_tokens": 8, "max_completion_length": 8, **changes})


@pytest.mark.parametrize(("changes", "expected"), [
    # Everything fits: nothing to say.
    ({}, [("rollout.max_new_tokens",)]),
    ({"max_new_tokens": 9}, []),
    # SFT's whole sequence: row 1 needs 33.
    ({"max_new_tokens": 9, "max_length": 32},
     [("model.max_length",), ("model.max_length", "rl.max_completion_length")]),
    # GRPO: target 5 > 4; prompt 30 + 12 > 40 (the limits of both keys).
    ({"max_new_tokens": 9, "max_completion_length": 4}, [("rl.max_completion_length",)]),
    ({"max_new_tokens": 9, "max_completion_length": 12},
     [("model.max_length", "rl.max_completion_length")]),
    # RL off, SFT off: only the rollouts' limits remain.
    ({"max_length": 20, "sft": False, "max_completion_length": None, "max_new_tokens": 9},
     [("model.max_length", "rollout.max_new_tokens")]),
    # GRPO on the first row only (rl.num_problems=1): row 1's long prompt is not its concern.
    ({"max_new_tokens": 9, "max_completion_length": 12, "rl_rows": 1}, []),
    # The search's child prompts add their attempts to the longest eval prompt: 20 + 12 + 9.
    ({"max_new_tokens": 9, "search_prompt_extra": lambda new: 12},
     [("model.max_length", "rollout.max_new_tokens", "evaluation.search_max_attempt_chars")]),
])
def test_each_limit_is_named_by_its_keys(changes, expected):
    assert [s.keys for s in shortfalls(TRAIN, EVAL, _limits(**changes))] == expected


def test_a_shortfall_names_its_longest_row_and_how_many_do_not_fit():
    (found,) = shortfalls(TRAIN, EVAL, _limits(max_new_tokens=9, max_length=32, sft=True,
                                               max_completion_length=None))
    assert (found.split, found.row, found.needed, found.limit, found.over, found.total) == (
        "train", 1, 33, 32, 1, 2)


@pytest.mark.parametrize("changes", [
    {}, {"max_length": 16}, {"max_completion_length": 2, "max_new_tokens": 1},
    {"search_prompt_extra": lambda new: 30}, {"rl_rows": 1, "max_length": 20},
    # Attempts shown in a child prompt are completions: a longer budget, a longer prompt.
    {"search_prompt_extra": lambda new: 10 + 2 * new, "max_new_tokens": 2},
])
def test_the_fitting_values_fit_every_row(changes):
    limits = _limits(**changes)
    fitting = fitting_values(TRAIN, EVAL, limits)
    fixed = _limits(**{**changes, **{
        {"model.max_length": "max_length", "rl.max_completion_length": "max_completion_length",
         "rollout.max_new_tokens": "max_new_tokens"}[key]: value
        for key, value in fitting.items()}})
    assert shortfalls(TRAIN, EVAL, fixed) == []
    # Only keys at fault are given, each at the least value that fits.
    for key, value in fitting.items():
        assert value > {"model.max_length": limits.max_length,
                        "rl.max_completion_length": limits.max_completion_length,
                        "rollout.max_new_tokens": limits.max_new_tokens}[key]


def test_the_message_names_keys_values_rows_and_the_fix():
    limits = _limits(max_length=32)
    found = shortfalls(TRAIN, EVAL, limits)
    message = fit_message(found, fitting_values(TRAIN, EVAL, limits), limits,
                          lambda split, index: f"<{split} row {index}>",
                          {"model.max_length": 32, "rl.max_completion_length": 8,
                           "rollout.max_new_tokens": 8})
    assert "(model.max_length=32)" in message and "<train row 1>" in message
    assert "needs 9 tokens, over the limit of 8 (rollout.max_new_tokens=8), in 1 of 2 eval rows" \
        in message
    assert "--set rollout.max_new_tokens=9 --set model.max_length=38" in message


def test_a_hub_models_context_is_named_as_the_models_not_a_key():
    limits = _limits(max_length=20, max_length_key=None, sft=False, max_completion_length=None,
                     max_new_tokens=9)
    found = shortfalls(TRAIN, EVAL, limits)
    assert found[0].keys == (MODEL_CONTEXT, "rollout.max_new_tokens")
    message = fit_message(found, fitting_values(TRAIN, EVAL, limits), limits,
                          lambda split, index: "r", {"rollout.max_new_tokens": 9})
    assert "--set" not in message  # no key sets a hub model's context
    assert "The model's context is 20 tokens and these rows need 29" in message


def test_check_rows_fit_refuses_a_row_past_the_limit_and_passes_rows_at_it():
    rows = [{"problem_id": "p1", "prompt": "a" * 5}, {"problem_id": "p2", "prompt": "b" * 9}]
    check_rows_fit([5, 9], 9, what="x", rows=rows, fix="f")
    with pytest.raises(ValueError, match=r"1 of 2 rows do not fit: x needs up to 9 tokens, "
                                         r"over the limit of 8 \(problem p2"):
        check_rows_fit([5, 9], 8, what="x", rows=rows, fix="f")
