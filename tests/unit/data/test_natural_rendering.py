"""The natural rendering (data.rendering=natural): problems in words for an instruct model, each
asking for an answer line its verifier reads; the compact rendering and the problems unchanged."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from breadth.config import ConfigError, validated
from breadth.data.formats import render
from breadth.data.generators import get_task, reasoning_path, verify
from breadth.data.prepare import prepare_dataset
from breadth.data.records import Record

TASKS = ("arithmetic", "chain", "countdown", "pairs")
NUMBER_REQUEST = "End your reply with 'The answer is' followed by the number."
LETTER_REQUEST = "End your reply with 'The answer is' followed by the letter of the right option."


def subtraction() -> Record:
    return Record.create(source="synthetic:arithmetic", split="train", question="48-37",
                         answer="11", solution="48-37=11", difficulty=2, task="arithmetic")


def chain_record(numbers: list[int]) -> Record:
    return Record.create(source="synthetic:chain", split="eval", question="+".join(map(str, numbers)),
                         answer=str(sum(numbers)), solution=f"{numbers[0]}+{numbers[1]}="
                         f"{numbers[0] + numbers[1]}", difficulty=1, task="chain",
                         meta={"numbers": numbers})


def drawn(task: str) -> list[Record]:
    return [record for level in (1, 2, 3)
            for record in get_task(task).generate(12, seed=11, difficulty=level, split="train")]


def test_the_free_form_example() -> None:
    row = render(subtraction(), "free_form", rendering="natural")
    assert row["prompt"] == f"What is 48 - 37?\n{NUMBER_REQUEST}"
    assert row["target"] == "48 - 37 = 11.\nThe answer is 11."


def test_the_mcq_example() -> None:
    row = render(subtraction(), "mcq", rendering="natural")
    listed = "\n".join(f"{letter}) {option}" for letter, option in zip("ABCD", row["options"]))
    assert row["prompt"] == f"What is 48 - 37?\n{listed}\n{LETTER_REQUEST}"
    assert row["target"] == f"The answer is {row['letter']}."


def test_a_trace_is_in_words_before_the_answer_line() -> None:
    record = Record.create(source="synthetic:arithmetic", split="train", question="12+7*3",
                           answer="33", solution="7*3=21, 12+21=33", difficulty=3,
                           task="arithmetic")
    free = render(record, "free_form", reasoning=True, rendering="natural")
    assert free["target"] == "First, 7 * 3 = 21. Then 12 + 21 = 33.\nThe answer is 33."
    mcq = render(record, "mcq", reasoning=True, rendering="natural")
    assert mcq["target"] == (f"First, 7 * 3 = 21. Then 12 + 21 = 33, which is option "
                             f"{mcq['letter']}.\nThe answer is {mcq['letter']}.")


@pytest.mark.parametrize("task", TASKS)
def test_every_natural_target_is_read_as_right(task: str) -> None:
    for record in drawn(task):
        for fmt in ("free_form", "mcq"):
            for reasoning in (False, True):
                row = render(record, fmt, reasoning=reasoning, rendering="natural")
                verdict = verify(row["target"], row)
                assert verdict.correct, (row["prompt"], row["target"], verdict)
                assert row["target"].rsplit("\n", 1)[-1].startswith("The answer is ")
                assert row["prompt"].rsplit("\n", 1)[-1].startswith("End your reply with 'The answer is'")
                assert row["prompt"].isascii() and row["target"].isascii()


@pytest.mark.parametrize("task", TASKS)
def test_natural_rows_ask_the_same_problem_as_compact_ones(task: str) -> None:
    for record in drawn(task):
        for fmt in ("free_form", "mcq"):
            compact = render(record, fmt)
            natural = render(record, fmt, rendering="natural")
            assert compact == render(record, fmt, rendering="compact")
            same = ("id", "problem_id", "question", "answer", "options", "letter", "solution")
            assert {k: natural[k] for k in same} == {k: compact[k] for k in same}
            assert natural["prompt"] != compact["prompt"]
            # Only a natural row's meta says how it was rendered; the compact meta is the record's.
            assert json.loads(compact["meta"]) == record.meta
            assert json.loads(natural["meta"]) == {**record.meta, "rendering": "natural"}


def test_an_unknown_rendering_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="rendering must be one of"):
        render(subtraction(), "free_form", rendering="verbose")
    with pytest.raises(ConfigError, match="rendering"):
        validated({"data": {"rendering": "verbose"}})


# --- chain: the scratchpad's work is the compact rendering's rule --------------------------

CHAIN_CASES = [
    # (completion, right in natural, right in compact)
    ("7 + 6 + 2 + 6 = 21.\nThe answer is 21.", True, False),
    ("The answer is 18.", False, False),
    ("**Answer:** 21", True, False),
    ("7+6=13, 13+2=15, 15+6=21. Answer: 21", True, True),
    ("7+6=13, 13+2=16, 16+6=22. Answer: 21", True, False),
]


@pytest.mark.parametrize("completion,natural_right,compact_right", CHAIN_CASES)
def test_chain_checks_the_work_only_in_the_compact_rendering(completion, natural_right,
                                                             compact_right) -> None:
    record = chain_record([7, 6, 2, 6])
    natural = render(record, "free_form", rendering="natural")
    compact = render(record, "free_form")
    assert verify(completion, natural).correct is natural_right
    assert verify(completion, compact).correct is compact_right


def test_chain_reads_a_path_in_words_only_from_valid_work() -> None:
    row = render(chain_record([3, 5, 7]), "free_form", rendering="natural")
    assert reasoning_path("First, 5 + 7 = 12. Then 12 + 3 = 15.\nThe answer is 15.", row) == (
        "5+7,3+12")
    assert reasoning_path("3 + 5 + 7 = 15.\nThe answer is 15.", row) is None
    assert reasoning_path("First, 5 + 7 = 13. Then 13 + 3 = 16.\nThe answer is 16.", row) is None


# --- prepare ----------------------------------------------------------------------------------


def test_prepare_words_the_same_problems_in_either_rendering(tmp_path) -> None:
    manifests = {
        rendering: prepare_dataset("synthetic:chain", fmt="free_form", out_dir=tmp_path / rendering,
                                   seed=3, num_train=24, num_eval=8, difficulty=1,
                                   rendering=rendering)
        for rendering in ("compact", "natural")}
    compact, natural = manifests["compact"], manifests["natural"]
    assert (compact.rendering, natural.rendering) == ("compact", "natural")
    assert compact.content_hash != natural.content_hash
    assert (compact.counts, compact.problems, compact.leakage) == (
        natural.counts, natural.problems, natural.leakage)
    for split in ("train", "eval"):
        rows = {name: pd.read_parquet(tmp_path / name / f"{split}.parquet")
                for name in manifests}
        assert rows["compact"]["id"].tolist() == rows["natural"]["id"].tolist()
        assert rows["natural"]["prompt"].str.startswith("What is ").all()
        assert rows["compact"]["prompt"].str.endswith("=").all()
