"""`breadth prepare` with default flags on GSM8K- and AQuA-format test files: every row kept,
gold answers intact, both formats, and reasoning targets that agree with their own letter."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from breadth.cli import app
from breadth.data.extraction import LETTERS
from breadth.data.generators import verify
from breadth.data.verifiers import verify_mcq

FIXTURES = Path(__file__).parent / "fixtures"
GSM8K_FILE = FIXTURES / "gsm8k_test.jsonl"
AQUA_FILE = FIXTURES / "aqua_test.jsonl"
runner = CliRunner()


def source_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def gsm8k_gold(row: dict) -> str:
    return str(int(row["answer"].rsplit("####", 1)[1].strip().replace(",", "")))


def aqua_gold(row: dict) -> str:
    text = row["options"]["ABCDE".index(row["correct"])].split(")", 1)[1]
    return text.split(")", 1)[1] if re.match(r"[A-E]\)", text) else text


def prepare(tmp_path: Path, source: Path, fmt: str, *extra: str) -> list[dict]:
    out = tmp_path / f"{source.stem}-{fmt}-{len(extra)}"
    result = runner.invoke(app, ["prepare", "--source", f"jsonl:{source}", "--format", fmt,
                                 "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    rows = [*pq.read_table(out / "train.parquet").to_pylist(),
            *pq.read_table(out / "eval.parquet").to_pylist()]
    assert manifest["counts"] == manifest["available"]  # no limit unless one is given
    assert min(manifest["counts"].values()) > 0
    return rows


@pytest.mark.parametrize("fmt", ["free_form", "mcq"])
@pytest.mark.parametrize("reasoning", [[], ["--reasoning"]], ids=["plain", "reasoning"])
@pytest.mark.parametrize("path,gold_of", [(GSM8K_FILE, gsm8k_gold), (AQUA_FILE, aqua_gold)],
                         ids=["gsm8k", "aqua"])
def test_default_prepare_keeps_every_row_and_its_gold(tmp_path, path, gold_of, fmt,
                                                      reasoning) -> None:
    source = source_rows(path)
    rows = prepare(tmp_path, path, fmt, *reasoning)
    assert len(rows) == len(source)
    gold = {row["question"]: gold_of(row) for row in source}
    assert {row["question"]: row["answer"] for row in rows} == gold
    for row in rows:
        assert verify(row["target"], row).correct, row["target"]
        if fmt == "mcq":
            assert row["options"][LETTERS.index(row["letter"])] == row["answer"]


def test_aqua_duplicated_options_are_kept_and_a_duplicated_gold_takes_both_letters(
        tmp_path) -> None:
    rows = {row["question"]: row for row in prepare(tmp_path, AQUA_FILE, "mcq")}
    doubled_gold = rows["A number is doubled and 9 is added. If the result is trebled, it "
                        "becomes 75. What is that number?"]
    letters = [LETTERS[i] for i, text in enumerate(doubled_gold["options"]) if text == "8"]
    assert len(letters) == 2 and len(doubled_gold["options"]) == 5
    assert all(verify_mcq(f"Answer: {letter}", doubled_gold["options"],
                          doubled_gold["letter"]).correct for letter in letters)
    doubled_distractor = rows["The average of 5 numbers is 27. If one number is excluded, the "
                              "average becomes 25. What is the excluded number?"]
    wrong = [LETTERS[i] for i, text in enumerate(doubled_distractor["options"]) if text == "12"]
    assert len(wrong) == 2
    assert not any(verify_mcq(f"Answer: {letter}", doubled_distractor["options"],
                              doubled_distractor["letter"]).correct for letter in wrong)
    relabelled = rows["If 3x - 5 = 172, what is x?"]
    assert "59" in relabelled["options"] and not any(")" in o for o in relabelled["options"])
    assert relabelled["answer"] == "59"


def test_aqua_reasoning_targets_name_the_shuffled_letter(tmp_path) -> None:
    rows = prepare(tmp_path, AQUA_FILE, "mcq", "--reasoning")
    reference = re.compile(r"(?i:answer|ans|option)\W{0,6}(?:is\W{0,3})?\(?([A-E])\b|\n\(?([A-E])\)?$|"
                           r"\(([A-E])\)")
    moved = 0
    for row in rows:
        named = [a or b or c for a, b, c in reference.findall(row["target"])]
        assert named, row["target"]
        # The source's rationale and the final line name the same (shuffled) letter, even
        # where the gold text is listed twice.
        assert set(named) == {row["letter"]}, row["target"]
        source_letter = next(r for r in source_rows(AQUA_FILE)
                             if r["question"] == row["question"])["correct"]
        moved += row["letter"] != source_letter
    assert moved > len(rows) // 3  # the shuffle really moved most golds
