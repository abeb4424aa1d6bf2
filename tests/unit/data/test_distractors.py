"""Distractors: the mistakes a solver makes, drawn reproducibly."""

from __future__ import annotations

import random

import pytest

from breadth.data.distractors import expression_distractors, numeric_distractors
from breadth.data.expressions import evaluate, parse_expression


@pytest.mark.parametrize("question,answer,expected_mistakes", [
    ("65+82", "147", {"47"}),           # carry forgotten: 6+8 -> 4, 5+2 -> 7
    ("52-38", "14", {"26"}),            # borrow slip: |2-8| = 6, |5-3| = 2
    ("12+7*3", "33", {"57"}),           # precedence ignored: (12+7)*3
])
def test_classic_slips_are_candidates(question, answer, expected_mistakes) -> None:
    seen = set()
    for seed in range(40):  # which candidates appear is drawn; over seeds each shows up
        seen |= set(numeric_distractors(answer, 3, random.Random(seed),
                                        expression=parse_expression(question)))
    assert expected_mistakes <= seen


def test_numbers_without_an_expression_are_near_misses() -> None:
    options = numeric_distractors("72", 3, random.Random(0))
    assert len(set(options)) == 3 and "72" not in options
    assert all(abs(int(o) - 72) <= 45 for o in options)  # 27 (digit swap) is the farthest


def test_decimals_and_small_values() -> None:
    decimals = numeric_distractors("2.5", 3, random.Random(0))
    assert len(set(decimals)) == 3 and "2.5" not in decimals
    zeros = numeric_distractors("0", 3, random.Random(0))
    assert len(set(zeros)) == 3 and all(int(z) > 0 for z in zeros)


def test_same_seed_same_distractors() -> None:
    def draw(seed):
        return numeric_distractors("33", 3, random.Random(seed),
                                   expression=parse_expression("12+7*3"))

    assert draw(1) == draw(1)
    assert len({tuple(draw(seed)) for seed in range(10)}) > 1


def test_countdown_distractors_miss_the_target() -> None:
    solution = parse_expression("(15-1)*9")
    for seed in range(20):
        wrong = expression_distractors(solution, [1, 9, 7, 15], 126, 3, random.Random(seed))
        assert len(set(wrong)) == 3 and "(15-1)*9" not in wrong
        assert all(evaluate(parse_expression(w)) != 126 for w in wrong)


def test_non_numeric_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="not a number"):
        numeric_distractors("Paris", 3, random.Random(0))
