"""Rendering: seeded option order, plausible distractors, short ASCII prompts, verifiable targets."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import pickle
import subprocess
import sys

import pytest

from breadth.data.expressions import evaluate, parse_expression
from breadth.data.formats import RenderError, render, render_free_form, render_mcq
from breadth.data.generators import generate_arithmetic, generate_countdown, verify
from breadth.data.records import Record, RowOrigin

ROW_KEYS = {"id", "source", "split", "question", "answer", "choices", "solution", "difficulty",
            "task", "meta", "problem_id", "format", "prompt", "target", "options", "letter"}


def arithmetic(question: str, answer: str, solution: str) -> Record:
    return Record.create(source="synthetic:arithmetic", split="train", question=question,
                         answer=answer, solution=solution, difficulty=3, task="arithmetic")


SAMPLE = arithmetic("12+7*3", "33", "7*3=21, 12+21=33")


def synthetic_records() -> list[Record]:
    records = []
    for difficulty in (1, 2, 3):
        records += generate_arithmetic(20, seed=5, difficulty=difficulty, split="train")
        records += generate_countdown(20, seed=5, difficulty=difficulty, split="train")
    return records


def test_examples_from_the_design() -> None:
    free = render_free_form(SAMPLE)
    assert (free["prompt"], free["target"]) == ("12+7*3=", "33")
    mcq = render_mcq(SAMPLE)
    listed = " ".join(f"{letter}){option}" for letter, option in zip("ABCD", mcq["options"]))
    assert mcq["prompt"] == f"12+7*3=? {listed} Answer:"
    assert mcq["target"] == mcq["letter"]
    assert mcq["options"]["ABCD".index(mcq["letter"])] == "33"


def test_rows_have_the_contract_columns() -> None:
    for fmt in ("mcq", "free_form"):
        row = render(SAMPLE, fmt)
        assert set(row) == ROW_KEYS
        assert row["problem_id"] == row["id"] == SAMPLE.id
        assert row["format"] == fmt
        assert json.loads(row["meta"]) == {}


def test_mcq_is_identical_on_every_run_and_in_another_process() -> None:
    assert render_mcq(SAMPLE) == render_mcq(SAMPLE)
    code = ("import json; from breadth.data.formats import render_mcq; "
            "from breadth.data.records import Record; "
            "r = Record.create(source='synthetic:arithmetic', split='train', question='12+7*3', "
            "answer='33', solution='7*3=21, 12+21=33', difficulty=3, task='arithmetic'); "
            "print(json.dumps(render_mcq(r)['options']))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == render_mcq(SAMPLE)["options"]


def test_option_order_varies_across_records() -> None:
    rows = [render_mcq(r) for r in generate_arithmetic(200, seed=1, difficulty=2, split="train")]
    letters = collections.Counter(row["letter"] for row in rows)
    assert set(letters) == set("ABCD")
    assert max(letters.values()) < 0.4 * len(rows)  # roughly uniform, not a fixed position


def test_distractors_are_near_misses_not_noise() -> None:
    # 12+7*3 = 33. Mistakes: precedence ignored (57), one operator misread (252, 22, 16),
    # off by one / two / ten / eleven (34 32 35 31 43 23 44), swapped digits (33 -> none).
    plausible = {57, 252, 22, 16, 34, 32, 35, 31, 43, 23, 44}
    wrong = {int(o) for o in render_mcq(SAMPLE)["options"]} - {33}
    assert len(wrong) == 3 and wrong <= plausible


def test_mcq_options_are_distinct_and_only_one_is_right() -> None:
    for record in synthetic_records():
        row = render_mcq(record)
        assert len(row["options"]) == len(set(row["options"])) == 4
        if record.task == "countdown":
            target = record.meta["target"]
            hits = [o for o in row["options"] if evaluate(parse_expression(o)) == target]
            assert hits == [row["options"]["ABCD".index(row["letter"])]]
        else:
            assert row["options"].count(record.answer) == 1
            assert all(int(o) >= 0 for o in row["options"])


@pytest.mark.parametrize("fmt", ["mcq", "free_form"])
@pytest.mark.parametrize("reasoning", [False, True])
def test_every_target_verifies_as_correct(fmt, reasoning) -> None:
    for record in synthetic_records():
        row = render(record, fmt, reasoning=reasoning)
        result = verify(row["target"], row)
        assert result.correct, (row["prompt"], row["target"], result)


def test_synthetic_prompts_are_short_ascii() -> None:
    for record in synthetic_records():
        for fmt in ("mcq", "free_form"):
            for reasoning in (False, True):
                row = render(record, fmt, reasoning=reasoning)
                assert (row["prompt"] + row["target"]).isascii()
    for record in generate_arithmetic(50, seed=0, difficulty=1, split="train"):
        for fmt in ("mcq", "free_form"):
            row = render(record, fmt)
            assert len(row["prompt"] + row["target"]) < 40, row


def test_reasoning_traces() -> None:
    free = render_free_form(SAMPLE, reasoning=True)
    assert free["target"] == "7*3=21, 12+21=33. Answer: 33"
    mcq = render_mcq(SAMPLE, reasoning=True)
    letter = mcq["letter"]
    assert mcq["target"].startswith("7*3=21, 12+21=33. ")
    assert mcq["target"].endswith(f"Answer: {letter}")
    for position, option in zip("ABCD", mcq["options"]):  # every option is weighed
        verdict = "yes" if position == letter else "no"
        assert f"{position}){option} {verdict}" in mcq["target"]
    assert "Answer:" not in mcq["prompt"]  # the trace follows the options, not "Answer:"


def test_arithmetic_without_a_solution_derives_the_steps() -> None:
    record = arithmetic("12+7*3", "33", "")
    assert render_free_form(record, reasoning=True)["target"] == "7*3=21, 12+21=33. Answer: 33"


def test_countdown_rendering() -> None:
    record = Record.create(source="synthetic:countdown", split="train", question="Reach 22 with 3 5 7",
                           answer="22", solution="3*5+7", difficulty=1, task="countdown",
                           meta={"numbers": [3, 5, 7], "target": 22})
    free = render_free_form(record)
    assert (free["prompt"], free["target"]) == ("Reach 22 with 3 5 7:", "3*5+7")
    assert render_free_form(record, reasoning=True)["target"] == "3*5=15, 15+7=22. Answer: 3*5+7"
    mcq = render_mcq(record, reasoning=True)
    assert f"{mcq['letter']})3*5+7=22 yes" in mcq["target"]


def test_source_choices_become_the_options() -> None:
    record = Record.create(source="jsonl:aqua.jsonl", split="train", question="Pick",
                           answer="5 and 1", choices=("3 and 1", "1/2 and 8", "5 and 1",
                                                      "3/5 and 5", "1/5 and 1"))
    row = render_mcq(record)
    assert sorted(row["options"]) == sorted(record.choices)
    assert row["options"]["ABCDE".index(row["letter"])] == "5 and 1"
    assert row["prompt"].endswith("\nAnswer:")


def test_mcq_needs_choices_or_a_numeric_answer() -> None:
    record = Record.create(source="jsonl:x.jsonl", split="train", question="Capital of France?",
                           answer="Paris")
    with pytest.raises(RenderError, match="not a number"):
        render_mcq(record)
    assert render_free_form(record)["target"] == "Paris"


def test_a_render_error_names_the_rows_line_not_only_the_hash_id() -> None:
    """The error said "record 50e4a3b7b93a8abb", a hash of the row no user can search for."""
    record = Record.create(source="jsonl:x.jsonl", split="train", question="Capital?",
                           answer="Paris", origin=RowOrigin(12, "line", "geo-3"))
    with pytest.raises(RenderError) as caught:
        render_mcq(record)
    assert str(caught.value).startswith("line 12 (id 'geo-3'): the answer 'Paris' is not a number")
    assert caught.value.reason.startswith("the answer 'Paris'")
    # A task's failure is pickled between processes; the error must come back whole.
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)
    generated = dataclasses.replace(record, origin=None)
    with pytest.raises(RenderError, match=f"^record {record.id}: the answer"):
        render_mcq(generated)


def test_unknown_format_is_named() -> None:
    with pytest.raises(ValueError, match="mcq"):
        render(SAMPLE, "essay")
