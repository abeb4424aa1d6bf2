"""chain: every order of work is accepted, wrong work and wrong answers are refused, the trace
renders in both formats, generation is deterministic and levels do not overlap."""

from __future__ import annotations

import pytest

from breadth.data.formats import render
from breadth.data.generators import get_task, reasoning_path, verify
from breadth.data.records import Record

TASK = get_task("chain")
ROW = {"format": "free_form", "task": "chain", "answer": "24", "meta": '{"numbers": [12, 7, 5]}'}


@pytest.mark.parametrize("completion, path", [
    ("12+7=19, 19+5=24. Answer: 24", "7+12,5+19"),
    ("7+5=12, 12+12=24. Answer: 24", "5+7,12+12"),
    ("5+12=17, 17+7=24. Answer: 24", "5+12,7+17"),
    ("19+5=24, 12+7=19. Answer: 24", None),  # read as a path, refused as work below
])
def test_every_order_of_work_is_accepted_and_has_its_own_path(completion, path) -> None:
    verdict = verify(completion, ROW)
    if path is None:
        assert not verdict.correct and "not on the pad" in verdict.reason
        return
    assert (verdict.correct, verdict.outcome, verdict.score) == (True, "24", 1.0)
    assert reasoning_path(completion, ROW) == path


@pytest.mark.parametrize("completion, reason", [
    ("12+7=19, 19+5=25. Answer: 25", "step 19+5=25 is wrong"),
    ("12+7=19, 19+6=25. Answer: 25", "uses 6, which is not on the pad"),
    ("12+7=19. Answer: 19", "leaves 5 19 on the pad"),
    ("Answer: 24", "no work before the answer line"),
    ("12+7=19, 19+5=24", "no answer line"),
    ("12+7=19, 19+5=24. Answer: 23", "leaves 24 on the pad"),
])
def test_wrong_work_or_answer_is_refused_with_the_reason(completion, reason) -> None:
    verdict = verify(completion, ROW)
    assert not verdict.correct and verdict.score == 0.0
    assert reason in verdict.reason


def test_outcome_is_the_answer_even_when_the_work_is_wrong() -> None:
    assert verify("12+7=19, 19+5=25. Answer: 25", ROW).outcome == "25"


def record(question: str = "12+7+5", solution: str = "12+7=19, 19+5=24") -> Record:
    return Record.create(source="synthetic:chain", split="train", question=question,
                         answer="24", solution=solution, difficulty=1, task="chain",
                         meta={"numbers": [12, 7, 5]})


def test_the_trace_renders_in_both_formats_and_verifies() -> None:
    free = render(record(), "free_form", reasoning=True)
    assert (free["prompt"], free["target"]) == ("12+7+5=", "12+7=19, 19+5=24. Answer: 24")
    assert verify(free["target"], free).correct
    mcq = render(record(), "mcq", reasoning=True)
    assert mcq["prompt"].startswith("12+7+5=? A)") and mcq["prompt"].endswith("\n")
    weighed = "; ".join(f"{letter}){option} {'yes' if option == '24' else 'no'}"
                        for letter, option in zip("ABCD", mcq["options"]))
    assert mcq["target"] == f"12+7=19, 19+5=24. {weighed}. Answer: {mcq['letter']}"
    assert mcq["options"]["ABCD".index(mcq["letter"])] == "24"
    assert verify(mcq["target"], mcq).correct
    assert render(record(), "free_form")["target"] == "24"
    assert render(record(), "mcq")["prompt"].endswith(" Answer:")


def test_generation_is_deterministic_and_the_trace_orders_vary() -> None:
    first = TASK.generate(200, seed=3, difficulty=3, split="train")
    assert first == TASK.generate(200, seed=3, difficulty=3, split="train")
    assert first != TASK.generate(200, seed=4, difficulty=3, split="train")
    # The pair added first is drawn per problem: each of the three numbers is added last.
    last = {r.question.split("+").index(r.solution.split("+")[-1].split("=")[0]) for r in first}
    assert last == {0, 1, 2}
    for r in first:
        assert verify(render(r, "free_form", reasoning=True)["target"],
                      render(r, "free_form", reasoning=True)).correct


def test_levels_do_not_overlap_and_splits_do_not_share_problems() -> None:
    # Level 1 holds 34 eval problems (multisets): 30 of each split's problems per level.
    keys = {}
    for level in TASK.levels:
        for split in ("train", "eval"):
            for r in TASK.generate(30, seed=0, difficulty=level, split=split):
                assert keys.setdefault(TASK.problem_key(r), (level, split)) == (level, split)


def test_completion_lengths_fit_the_budget() -> None:
    # 10-40 tokens per completion (one character each, plus EOS), >= 3 of work first.
    for level in TASK.levels:
        for r in TASK.generate(300, seed=0, difficulty=level, split="train"):
            target = render(r, "free_form", reasoning=True)["target"]
            assert 10 <= len(target) + 1 <= 40
            assert len(target.split(". Answer:")[0]) >= 3
