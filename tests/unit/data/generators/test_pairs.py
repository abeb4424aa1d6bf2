"""pairs: every right pair is accepted, wrong ones refused, the graded score orders near and far
answers, the trace renders in both formats, generation is deterministic, levels disjoint."""

from __future__ import annotations

import pytest

from breadth.data.formats import render
from breadth.data.generators import get_task, verify
from breadth.data.generators.pairs import MIN_ANSWERS
from breadth.data.records import Record

TASK = get_task("pairs")
ROW = {"format": "free_form", "task": "pairs", "answer": "12",
       "meta": '{"numbers": [3, 5, 7, 9, 4], "target": 12}'}


@pytest.mark.parametrize("completion, outcome", [
    ("3+9=12. Answer: 3+9", "3+9"),
    ("Answer: 9+3", "3+9"),
    ("5+7", "5+7"),
])
def test_every_right_pair_is_accepted(completion, outcome) -> None:
    verdict = verify(completion, ROW)
    assert (verdict.correct, verdict.outcome, verdict.score) == (True, outcome, 1.0)


@pytest.mark.parametrize("completion, reason", [
    ("Answer: 5+9", "sum 14 is not the target 12"),
    ("Answer: 6+6", "uses numbers not given: 6 6"),
    ("Answer: 3+3+6", "not two numbers joined by +"),
    ("Answer: 12", "not two numbers joined by +"),
    ("no idea", "no pair found"),
])
def test_wrong_answers_are_refused(completion, reason) -> None:
    verdict = verify(completion, ROW)
    assert not verdict.correct and reason in verdict.reason


def test_the_graded_score_orders_near_and_far_answers() -> None:
    right, near, far, foreign = (verify(f"Answer: {pair}", ROW).score
                                 for pair in ("5+7", "9+4", "3+4", "6+6"))
    # 9+4=13 misses by 1, 3+4=7 by 5: 1 > 1 - 1/12 > 1 - 5/12 > 0 (numbers not given).
    assert (right, near, far, foreign) == (1.0, pytest.approx(11 / 12), pytest.approx(7 / 12), 0.0)


def sample() -> Record:
    return Record.create(source="synthetic:pairs", split="train",
                         question="Sum to 12 with two of 3 5 7 9 4", answer="12", solution="3+9",
                         difficulty=1, task="pairs", meta={"numbers": [3, 5, 7, 9, 4], "target": 12})


def test_valid_answers_are_enumerated() -> None:
    assert TASK.valid_answers(sample()) == ["3+9", "5+7"]


def test_the_trace_renders_in_both_formats_and_verifies() -> None:
    free = render(sample(), "free_form", reasoning=True)
    assert (free["prompt"], free["target"]) == ("Sum to 12 with two of 3 5 7 9 4:",
                                                "3+9=12. Answer: 3+9")
    assert verify(free["target"], free).correct
    mcq = render(sample(), "mcq", reasoning=True)
    assert mcq["target"] == f"3+9=12. Answer: {mcq['letter']}"
    right = [o for o in mcq["options"] if verify(f"Answer: {o}", ROW).correct]
    assert right == ["3+9"]  # one right option; the distractors are pairs that miss
    assert verify(mcq["target"], mcq).correct
    assert render(sample(), "free_form")["target"] == "3+9"


def test_every_generated_problem_has_several_answers_and_is_deterministic() -> None:
    for level in TASK.levels:
        records = TASK.generate(100, seed=1, difficulty=level, split="eval")
        assert records == TASK.generate(100, seed=1, difficulty=level, split="eval")
        for r in records:
            answers = TASK.valid_answers(r)
            assert len(answers) >= MIN_ANSWERS and r.solution in answers


def test_levels_do_not_overlap() -> None:
    seen = {}
    for level in TASK.levels:
        for r in TASK.generate(100, seed=0, difficulty=level, split="train"):
            assert seen.setdefault(r.question, level) == level
