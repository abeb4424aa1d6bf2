"""Train/eval splits: a source's own split names, a separate eval source, eval-only, hashed
hold-out, limits recorded in the manifest, and empty sources refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from breadth.config import ConfigError, PipelineConfig, load_config
from breadth.data.generators import problem_key
from breadth.data.prepare import SYNTHETIC_NUM_EVAL, SYNTHETIC_NUM_TRAIN, prepare_dataset
from breadth.data.records import Record
from breadth.data.splits import SplitError, limit, split_source

ROWS = [{"question": f"Sam has {n} apples and buys {n + 3}. How many now?",
         "answer": f"{n}+{n + 3} = {2 * n + 3}\n#### {2 * n + 3}"} for n in range(40)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_folder_holding_only_a_test_split_is_never_trained_on(offline_hub) -> None:
    folder = offline_hub / "only-test"
    write_jsonl(folder / "test.jsonl", ROWS)
    with pytest.raises(SplitError, match="only an evaluation split.*--eval-only"):
        prepare_dataset(f"hf:{folder}", fmt="free_form", out_dir=offline_hub / "a")
    assert not (offline_hub / "a").exists()
    manifest = prepare_dataset(f"hf:{folder}", fmt="free_form", out_dir=offline_hub / "b",
                               eval_only=True)
    assert manifest.counts == {"train": 0, "eval": len(ROWS)}
    assert manifest.split_origin == "eval only"


def test_a_folder_with_train_and_test_keeps_them(offline_hub) -> None:
    folder = offline_hub / "both"
    write_jsonl(folder / "train.jsonl", ROWS[:30])
    write_jsonl(folder / "test.jsonl", ROWS[30:])
    manifest = prepare_dataset(f"hf:{folder}", fmt="free_form", out_dir=offline_hub / "o")
    assert manifest.counts == {"train": 30, "eval": 10}
    assert manifest.split_origin == "source splits"
    only_test = prepare_dataset(f"hf:{folder}", fmt="free_form", out_dir=offline_hub / "e",
                                eval_only=True)
    assert only_test.counts == {"train": 0, "eval": 10}
    assert only_test.left_out == {"source train split (eval only)": 30}


def test_an_eval_source_gives_every_eval_row_and_keeps_its_questions_out_of_training(
        tmp_path) -> None:
    train = write_jsonl(tmp_path / "train.jsonl", ROWS[:30])
    test = write_jsonl(tmp_path / "test.jsonl", ROWS[25:])  # 5 questions overlap
    manifest = prepare_dataset(f"jsonl:{train}", fmt="free_form", out_dir=tmp_path / "o",
                               eval_source=f"jsonl:{test}")
    assert manifest.counts == {"train": 25, "eval": 15}
    assert manifest.left_out == {"train questions also in the eval source": 5}
    assert manifest.eval_source == f"jsonl:{test}" and manifest.split_origin == "eval source"


def test_a_synthetic_source_can_evaluate_on_a_file(tmp_path) -> None:
    test = write_jsonl(tmp_path / "test.jsonl", ROWS)
    manifest = prepare_dataset("synthetic:arithmetic", fmt="free_form", out_dir=tmp_path / "o",
                               num_train=20, difficulty=2, eval_source=f"jsonl:{test}")
    assert manifest.counts == {"train": 20, "eval": len(ROWS)}
    assert manifest.limits == {"train": 20, "eval": None}
    sampled = prepare_dataset("synthetic:arithmetic", fmt="free_form", out_dir=tmp_path / "s",
                              num_train=20, num_eval=5, difficulty=2,
                              eval_source=f"jsonl:{test}")
    assert sampled.counts == {"train": 20, "eval": 5}
    assert sampled.available == {"train": 20, "eval": len(ROWS)}


def test_file_sources_keep_every_row_unless_limited(tmp_path) -> None:
    source = write_jsonl(tmp_path / "all.jsonl", ROWS)
    whole = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "a")
    assert sum(whole.counts.values()) == len(ROWS)
    assert whole.limits == {"train": None, "eval": None}
    limited = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "b",
                              num_train=5, num_eval=1)
    assert limited.counts == {"train": 5, "eval": 1}
    assert limited.available == whole.counts  # the counts before the limit are recorded
    assert limited.limits == {"train": 5, "eval": 1}


def test_synthetic_defaults_come_from_one_place(tmp_path) -> None:
    config = PipelineConfig()  # no preset: the default preset sets its own sizes
    assert (config.data.num_train, config.data.num_eval) == (None, None)
    manifest = prepare_dataset("synthetic:arithmetic", fmt="free_form", out_dir=tmp_path,
                               difficulty=config.data.difficulty)
    assert manifest.counts == {"train": SYNTHETIC_NUM_TRAIN, "eval": SYNTHETIC_NUM_EVAL}


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank"])
def test_an_empty_or_blank_source_is_an_error(tmp_path, text) -> None:
    source = tmp_path / "empty.jsonl"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="has no usable rows"):
        prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def records(count: int) -> list[Record]:
    return [Record.create(source="s", split="train", question=str(n), answer="1")
            for n in range(count)]


def test_hash_split_gives_each_split_a_record_and_is_stable_under_reordering() -> None:
    two = split_source(records(2), (), spec="s", eval_fraction=0.01, eval_only=False)
    assert two.counts() == {"train": 1, "eval": 1}
    many = records(200)
    forward = split_source(many, (), spec="s", eval_fraction=0.1, eval_only=False)
    backward = split_source(many[::-1], (), spec="s", eval_fraction=0.1, eval_only=False)
    assert {r.id for r in forward.eval} == {r.id for r in backward.eval}
    assert 5 < len(forward.eval) < 40


def _question(text: str, answer: str = "4") -> Record:
    return Record.create(source="s", split="train", question=text, answer=answer)


def test_a_hashed_split_keeps_each_question_on_one_side_however_it_is_written() -> None:
    # 40 questions, each written three ways (case, spacing, end punctuation): 120 records.
    written = [_question(form.format(n)) for n in range(40)
               for form in ("What is {0} + 1?", "what is {0} +  1", "  WHAT IS {0} + 1.")]
    splits = split_source(written, (), spec="s", eval_fraction=0.2, eval_only=False)
    train_keys = {problem_key(r) for r in splits.train}
    assert len(train_keys) + len(splits.eval) == 40 and splits.eval
    assert train_keys.isdisjoint(problem_key(r) for r in splits.eval)
    # An eval set holds each problem once; its other wordings are counted as left out.
    assert splits.left_out == {"eval repeats of a problem (same key)": 2 * len(splits.eval)}


def test_a_source_split_loses_the_training_rows_that_ask_an_eval_problem() -> None:
    train = [dataclasses.replace(_question(f"What is {n}+1?"), split="train") for n in range(10)]
    test = [dataclasses.replace(_question(f"what is {n}+1"), split="eval") for n in (3, 4)]
    splits = split_source(train + test, ("train", "eval"), spec="s", eval_fraction=0.1,
                          eval_only=False)
    assert splits.counts() == {"train": 8, "eval": 2}
    assert splits.left_out == {"train problems also in the eval split": 2}


def test_a_prepared_file_source_records_no_leakage(tmp_path) -> None:
    # Each question twice, the second in capitals: a hashed split keeps the two together.
    rows = ROWS + [{**row, "question": row["question"].upper()} for row in ROWS]
    manifest = prepare_dataset(f"jsonl:{write_jsonl(tmp_path / 'a.jsonl', rows)}",
                               fmt="free_form", out_dir=tmp_path / "o", eval_fraction=0.2)
    assert manifest.leakage == {"train": 0.0, "grpo_pool": 0.0}
    assert manifest.problems["eval"] == manifest.counts["eval"]
    assert manifest.problems["train"] + manifest.problems["eval"] == len(ROWS)


def test_limit_is_a_seeded_sample_in_source_order() -> None:
    rows = records(50)
    first, again, other = limit(rows, 10, 0, "train"), limit(rows, 10, 0, "train"), limit(
        rows, 10, 1, "train")
    assert first == again and first != other
    assert [rows.index(r) for r in first] == sorted(rows.index(r) for r in first)
    assert limit(rows, None, 0, "train") == rows


@pytest.mark.parametrize("overrides,must_mention", [
    (["data.eval_only=true"], "sft.enabled=false and rl.enabled=false"),
    (["data.eval_only=true", "data.eval_source=jsonl:t.jsonl", "sft.enabled=false",
      "rl.enabled=false"], "exclude each other"),
    (["data.eval_fraction=1"], "data.eval_fraction"),
    (["data.eval_source=synthetic:arithmetic"], "cannot be synthetic"),
    (["data.source=csv:x.csv"], "jsonl:PATH"),
    (["data.num_train=0"], "data.num_train"),
])
def test_bad_data_config_is_refused_before_compute(overrides, must_mention) -> None:
    with pytest.raises(ConfigError, match=must_mention.replace(".", r"\.")):
        load_config("default", overrides)


def test_an_eval_only_config_validates() -> None:
    config = load_config("default", ["data.eval_only=true", "sft.enabled=false",
                                     "rl.enabled=false", "data.source=jsonl:test.jsonl"])
    assert config.data.eval_only
