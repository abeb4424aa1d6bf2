"""prepare_dataset: GSM8K/AQuA round trips in both formats, content hashes, splits, bad rows."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from breadth.data.generators import verify
from breadth.data.prepare import Manifest, prepare_dataset
from breadth.data.records import BadRowsError

GSM8K = [
    {"question": f"Sam has {n} apples and buys {n + 3} more. How many now?",
     "answer": f"{n}+{n + 3} = <<{n}+{n + 3}={2 * n + 3}>>{2 * n + 3}\n#### {2 * n + 3:,}"}
    for n in range(1, 400, 13)
]
AQUA = [
    {"question": f"What is {n} times 3?",
     "options": [f"A){3 * n - 3}", f"B){3 * n}", f"C){3 * n + 3}", f"D){3 * n + 6}",
                 f"E){n + 3}"],
     "rationale": f"{n} x 3 = {3 * n}", "correct": "B"}
    for n in range(10, 40)
]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((json.dumps(r) if not isinstance(r, str) else r) + "\n"
                            for r in rows), encoding="utf-8")
    return path


def read(out: Path, split: str) -> list[dict]:
    return pq.read_table(out / f"{split}.parquet").to_pylist()


@pytest.mark.parametrize("fmt", ["mcq", "free_form"])
@pytest.mark.parametrize("reasoning", [False, True])
def test_gsm8k_round_trip(tmp_path, fmt, reasoning) -> None:
    source = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K)
    gold = {row["question"]: str(int(row["answer"].split("####")[1].replace(",", "")))
            for row in GSM8K}
    out = tmp_path / "out"
    manifest = prepare_dataset(f"jsonl:{source}", fmt=fmt, out_dir=out, seed=0,
                               reasoning=reasoning, eval_fraction=0.3)
    rows = read(out, "train") + read(out, "eval")
    assert manifest.schema == "gsm8k" and len(rows) == len(GSM8K)
    assert manifest.counts == {"train": len(read(out, "train")), "eval": len(read(out, "eval"))}
    assert manifest.counts["eval"] > 0
    for row in rows:
        assert row["answer"] == gold[row["question"]]
        assert row["format"] == fmt
        if fmt == "mcq":
            assert row["options"]["ABCD".index(row["letter"])] == row["answer"]
        assert verify(row["target"], row).correct


@pytest.mark.parametrize("fmt", ["mcq", "free_form"])
def test_aqua_round_trip(tmp_path, fmt) -> None:
    source = write_jsonl(tmp_path / "aqua.jsonl", AQUA)
    gold = {row["question"]: row["options"][1][2:] for row in AQUA}
    out = tmp_path / "out"
    manifest = prepare_dataset(f"jsonl:{source}", fmt=fmt, out_dir=out, seed=0)
    rows = read(out, "train") + read(out, "eval")
    assert manifest.schema == "aqua" and len(rows) == len(AQUA)
    for row in rows:
        assert row["answer"] == gold[row["question"]]
        assert len(row["choices"]) == 5
        if fmt == "mcq":
            assert sorted(row["options"]) == sorted(row["choices"])
            assert row["options"]["ABCDE".index(row["letter"])] == row["answer"]
        assert verify(row["target"], row).correct
    if fmt == "mcq":  # the shuffle moves the gold away from the source's letter B
        assert len({row["letter"] for row in rows}) > 2


def test_same_inputs_same_hash_and_bytes(tmp_path) -> None:
    first = prepare_dataset("synthetic:countdown", fmt="mcq", out_dir=tmp_path / "a", seed=3,
                            num_train=200, num_eval=50, difficulty=2)
    again = prepare_dataset("synthetic:countdown", fmt="mcq", out_dir=tmp_path / "b", seed=3,
                            num_train=200, num_eval=50, difficulty=2)
    assert first.content_hash == again.content_hash
    assert first.files == again.files
    assert (tmp_path / "a" / "manifest.json").read_bytes() == \
        (tmp_path / "b" / "manifest.json").read_bytes()


@pytest.mark.parametrize("change", [
    {"fmt": "free_form"}, {"reasoning": True}, {"seed": 4}, {"difficulty": 3},
    {"num_train": 199},
])
def test_any_change_changes_the_hash(tmp_path, change) -> None:
    base = {"fmt": "mcq", "seed": 3, "num_train": 200, "num_eval": 50, "difficulty": 2,
            "reasoning": False}
    reference = prepare_dataset("synthetic:arithmetic", out_dir=tmp_path / "a", **base)
    changed = prepare_dataset("synthetic:arithmetic", out_dir=tmp_path / "b",
                              **{**base, **change})
    assert reference.content_hash != changed.content_hash


def test_manifest_contents(tmp_path) -> None:
    manifest = prepare_dataset("synthetic:arithmetic", fmt="free_form", out_dir=tmp_path,
                               seed=1, num_train=30, num_eval=10, difficulty=None)
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == manifest.to_dict()
    assert Manifest.read(tmp_path) == manifest
    assert on_disk["source"] == "synthetic:arithmetic" and on_disk["format"] == "free_form"
    assert on_disk["seed"] == 1 and on_disk["difficulty"] is None
    assert on_disk["counts"] == {"train": 30, "eval": 10}
    assert on_disk["bad_rows_count"] == 0 and on_disk["bad_rows"] == []
    assert len(on_disk["content_hash"]) == 64
    for name in ("train.parquet", "eval.parquet"):
        assert on_disk["files"][name]["bytes"] == (tmp_path / name).stat().st_size


def test_a_mix_short_of_a_level_fails_unless_mixed_fill_is_asked_for(tmp_path) -> None:
    # Difficulty-1 arithmetic holds 6 eval problems (keys), a third of 60 is 20.
    kwargs = {"fmt": "free_form", "seed": 0, "num_train": 30, "num_eval": 60, "difficulty": None}
    with pytest.raises(ValueError, match="level 1 of arithmetic holds only 6 .* 'eval' split"):
        prepare_dataset("synthetic:arithmetic", out_dir=tmp_path / "a", **kwargs)
    manifest = prepare_dataset("synthetic:arithmetic", out_dir=tmp_path / "b", mixed_fill=True,
                               **kwargs)
    assert manifest.counts == {"train": 30, "eval": 60}
    levels = collections.Counter(r["difficulty"] for r in read(tmp_path / "b", "eval"))
    assert levels == {1: 6, 2: 34, 3: 20}


def test_synthetic_splits_are_disjoint(tmp_path) -> None:
    prepare_dataset("synthetic:arithmetic", fmt="mcq", out_dir=tmp_path, seed=0,
                    num_train=500, num_eval=100, difficulty=2)
    train, evaluation = read(tmp_path, "train"), read(tmp_path, "eval")
    assert {r["question"] for r in train}.isdisjoint(r["question"] for r in evaluation)
    assert {r["split"] for r in train} == {"train"} and {r["split"] for r in evaluation} == {"eval"}


def test_file_split_follows_the_record_not_the_file_order(tmp_path) -> None:
    source = tmp_path / "g.jsonl"

    def eval_questions(rows: list, out: str) -> set[str]:
        write_jsonl(source, rows)
        prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / out,
                        eval_fraction=0.3)
        return {r["question"] for r in read(tmp_path / out, "eval")}

    held_out = eval_questions(GSM8K, "forward")
    assert 0 < len(held_out) < len(GSM8K)
    assert eval_questions(GSM8K[::-1], "backward") == held_out


def test_caps_and_duplicates(tmp_path) -> None:
    source = write_jsonl(tmp_path / "g.jsonl", GSM8K + GSM8K[:5])
    manifest = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "o",
                               num_train=10, num_eval=2, eval_fraction=0.3, seed=5)
    assert manifest.duplicates_dropped == 5
    assert manifest.counts == {"train": 10, "eval": 2}
    again = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "p",
                            num_train=10, num_eval=2, eval_fraction=0.3, seed=5)
    assert again.content_hash == manifest.content_hash


def test_bad_rows_fail_by_default_and_skip_into_the_manifest(tmp_path) -> None:
    rows = [GSM8K[0], {"question": "no answer here"}, GSM8K[1],
            {"question": "q", "answer": "#### lots"}]
    source = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(BadRowsError, match=r"line 2, field 'answer': missing(.|\n)*--on-bad-rows skip"):
        prepare_dataset(f"jsonl:{source}", fmt="mcq", out_dir=tmp_path / "fail")
    assert not (tmp_path / "fail" / "manifest.json").exists()

    manifest = prepare_dataset(f"jsonl:{source}", fmt="mcq", out_dir=tmp_path / "skip",
                               on_bad_rows="skip")
    assert manifest.counts["train"] + manifest.counts["eval"] == 2
    assert manifest.bad_rows_count == 2
    assert [(b["line"], b["field"]) for b in manifest.bad_rows] == [(2, "answer"), (4, "answer")]
    assert json.loads((tmp_path / "skip" / "manifest.json").read_text())["bad_rows_count"] == 2


def test_rows_mcq_cannot_render_are_bad_rows(tmp_path) -> None:
    source = write_jsonl(tmp_path / "text.jsonl", [
        {"question": "Capital of France?", "answer": "Paris"},
        # Thirty numeric rows: the hash split depends on the file's path (tmp_path), and with six
        # the one bad row was now and then the whole train split.
        *({"question": f"{n}+2?", "answer": str(n + 2)} for n in range(30)),
    ])
    # Named by its line in the file: "train record 3" counted records after the split.
    with pytest.raises(BadRowsError, match=r"\n  line 1, field 'answer': the answer 'Paris' is "
                                           "not a number"):
        prepare_dataset(f"jsonl:{source}", fmt="mcq", out_dir=tmp_path / "a", eval_fraction=0.5)
    manifest = prepare_dataset(f"jsonl:{source}", fmt="mcq", out_dir=tmp_path / "b",
                               on_bad_rows="skip", eval_fraction=0.5)
    assert manifest.bad_rows_count == 1
    assert manifest.counts["train"] + manifest.counts["eval"] == 30
    free = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "c",
                           eval_fraction=0.5)
    assert free.bad_rows_count == 0 and sum(free.counts.values()) == 31


@pytest.mark.parametrize("kwargs,message", [
    ({"fmt": "essay"}, "fmt"),
    ({"fmt": "mcq", "on_bad_rows": "ignore"}, "on_bad_rows"),
    ({"fmt": "mcq", "eval_fraction": 1.5}, "eval_fraction"),
])
def test_arguments_are_checked(tmp_path, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        prepare_dataset("synthetic:arithmetic", out_dir=tmp_path, **kwargs)


def test_mcq_num_options_sets_the_generated_choices_and_chance(tmp_path):
    import pandas as pd

    prepare_dataset("synthetic:arithmetic", fmt="mcq", out_dir=tmp_path, seed=0, num_train=8,
                    num_eval=4, difficulty=2, num_options=8)
    rows = pd.read_parquet(tmp_path / "eval.parquet")
    assert all(len(options) == 8 for options in rows["options"])
    assert all(row.options[ord(row.letter) - ord("A")] == row.answer for row in rows.itertuples())


def test_a_byte_order_mark_is_not_a_bad_first_row(tmp_path) -> None:
    """Files saved by Windows editors start with a UTF-8 BOM; it made line 1 "invalid JSON",
    which --on-bad-rows skip then dropped silently."""
    source = tmp_path / "bom.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + write_jsonl(tmp_path / "plain.jsonl", GSM8K).read_bytes())
    manifest = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "o")
    assert manifest.bad_rows_count == 0
    assert sum(manifest.counts.values()) == len(GSM8K)


def test_a_question_with_conflicting_answers_is_a_bad_row_not_two_problems(tmp_path) -> None:
    """The same question with answers 4 and 5 was kept twice: the model trained and was scored
    against both labels. Now every record of it is a bad row (which label is right is unknown);
    an exact repeat is still only a duplicate."""
    conflicting = {"question": GSM8K[3]["question"], "answer": "#### 999"}
    source = write_jsonl(tmp_path / "g.jsonl", [*GSM8K, conflicting, GSM8K[7]])
    with pytest.raises(BadRowsError, match=r"(?s)2 bad row.*'83'.*'999'"):
        prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "fail")
    manifest = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "o",
                               on_bad_rows="skip")
    assert manifest.bad_rows_count == 2 and manifest.duplicates_dropped == 1
    assert {row["field"] for row in manifest.bad_rows} == {"answer"}
    kept = {row["question"] for split in ("train", "eval") for row in read(tmp_path / "o", split)}
    assert GSM8K[3]["question"] not in kept and len(kept) == len(GSM8K) - 1


def test_conflicting_rows_are_named_by_their_line_and_id_with_both_answers(tmp_path) -> None:
    """The report said "record 3" and "record 5": positions among the rows that loaded, after
    blank lines and bad rows were left out, which no user can find in their file. Now each
    conflicting row is named by its line and its own id, with the answer the other row gives."""
    rows = [{"id": f"q{n}", "question": f"{n}+1?", "answer": str(n + 1)} for n in range(8)]
    rows[5] = {"id": "q5-copy", "question": "2+1?", "answer": "4"}
    source = write_jsonl(tmp_path / "g.jsonl", ["", *rows])  # a blank first line
    with pytest.raises(BadRowsError) as caught:
        prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "o")
    text = str(caught.value)
    assert f"2 bad row(s) in jsonl:{source}:" in text
    assert ("line 4 (id 'q2'), field 'answer': answers '3' to '2+1?', but line 7 (id 'q5-copy') "
            "answers '4'") in text
    assert ("line 7 (id 'q5-copy'), field 'answer': answers '4' to '2+1?', but line 4 (id 'q2') "
            "answers '3'") in text
    assert "record" not in text.replace("recorded", "")
    assert "correct the wrong answer in the source, or delete its row" in text
    assert "--on-bad-rows skip" in text
    # Skipped, they are listed in the manifest by the same line, after the load's own bad row.
    source = write_jsonl(tmp_path / "h.jsonl", [{"question": "no answer"}, *rows])
    manifest = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "s",
                               on_bad_rows="skip")
    assert [(row["unit"], row["line"], row["row_id"]) for row in manifest.bad_rows] == [
        ("line", 1, None), ("line", 4, "q2"), ("line", 7, "q5-copy")]


def test_a_conflict_names_three_other_rows_and_counts_the_rest(tmp_path) -> None:
    """Each conflicting row's message listed every other row of its question: thousands of
    rows of one question made a message (and its manifest entry) thousands of rows long."""
    rows = [{"question": "2+1?", "answer": "3" if n < 6 else "4"} for n in range(10)]
    source = write_jsonl(tmp_path / "g.jsonl", [*rows, *GSM8K])
    manifest = prepare_dataset(f"jsonl:{source}", fmt="free_form", out_dir=tmp_path / "o",
                               on_bad_rows="skip")
    reasons = {row["line"]: row["reason"] for row in manifest.bad_rows}
    assert reasons[1] == ("answers '3' to '2+1?', but line 7 answers '4'; line 8 answers '4'; "
                          "line 9 answers '4'; and 1 more")
    assert reasons[10] == ("answers '4' to '2+1?', but line 1 answers '3'; line 2 answers '3'; "
                           "line 3 answers '3'; and 3 more")
    assert reasons[7] == reasons[10]


class _CountedAnswer(str):
    """An answer that counts how often it is hashed (put in a set or dict)."""

    hashes = 0

    def __hash__(self) -> int:
        type(self).hashes += 1
        return str.__hash__(self)


@pytest.mark.parametrize("answers", [("3",), ("3", "4")], ids=["repeats", "two answers"])
def test_duplicate_and_conflict_detection_is_linear_in_the_rows(monkeypatch, answers) -> None:
    """Every record recomputed its question's answer set, and every conflicting row formatted
    every other row of its question: O(rows of one question squared), 1.6 s for 8,000 exact
    repeats. The work (answers hashed, rows formatted) now grows as the rows do."""
    from breadth.data import prepare
    from breadth.data.records import Record, RowOrigin

    formatted = []
    plain_str = RowOrigin.__str__
    monkeypatch.setattr(RowOrigin, "__str__", lambda self: formatted.append(1) or plain_str(self))

    def work(n: int) -> int:
        records = [Record.create(source="jsonl:x", split="train", question="2+1?",
                                 answer=_CountedAnswer(answers[i % len(answers)]),
                                 origin=RowOrigin(i + 1)) for i in range(n)]
        _CountedAnswer.hashes, formatted[:] = 0, []
        unique, repeats, conflicts = prepare._drop_duplicates(records)
        assert (len(unique), repeats, len(conflicts)) == ((1, n - 1, 0) if len(answers) == 1
                                                          else (0, 0, n))
        assert len(formatted) <= 3 * len(answers)  # 3 other rows named per answer
        return _CountedAnswer.hashes + len(formatted)

    small, large = work(200), work(400)
    assert large <= 2.2 * small, (small, large)
    assert large <= 4 * 400


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_conflicting_rows_of_a_table_are_named_by_their_0_based_row(offline_hub, kind) -> None:
    """A CSV or parquet file has rows, not lines: the report names the row, says that rows
    count from 0 (a CSV file's without the header), as pandas and datasets count them."""
    import pyarrow as pa
    import pyarrow.csv

    rows = [{"question": f"{n}+1?", "answer": str(n + 1)} for n in range(6)]
    rows[4] = {"question": "0+1?", "answer": "7"}
    table = pa.Table.from_pylist(rows)
    path = offline_hub / f"t.{kind}"
    if kind == "csv":
        pyarrow.csv.write_csv(table, path)
        assert path.read_text().splitlines()[5] == '"0+1?","7"'  # row 4 is line 6
    else:
        pq.write_table(table, path)
    spec = f"hf:{path}" if kind == "csv" else f"parquet:{path}"
    with pytest.raises(BadRowsError) as caught:
        prepare_dataset(spec, fmt="free_form", out_dir=offline_hub / "o")
    text = str(caught.value)
    assert "row 0, field 'answer': answers '1' to '0+1?', but row 4 answers '7'" in text
    assert "row 4, field 'answer': answers '7' to '0+1?', but row 0 answers '1'" in text
    numbering = ("rows are numbered from 0, as pandas and datasets number them"
                 + (", not counting the CSV header line or blank lines)" if kind == "csv" else ")"))
    assert numbering in text
    assert "train row" not in text  # a single file has no train split of its own


def test_a_bad_row_of_the_eval_source_names_that_source(tmp_path) -> None:
    """A row of the eval source that mcq cannot render was reported as "eval record 1" under
    the main source's name: the user looked in the wrong file. Skipped rows of the eval source
    were listed in the manifest by line alone, beside the main source's."""
    main = write_jsonl(tmp_path / "main.jsonl", GSM8K)
    tests = write_jsonl(tmp_path / "test.jsonl", [
        {"question": "7+2?", "answer": "9"}, {"question": "Capital of France?", "answer": "Paris"}])
    with pytest.raises(BadRowsError, match=(rf"\n  jsonl:{tests} line 2, field 'answer': the "
                                            "answer 'Paris' is not a number")):
        prepare_dataset(f"jsonl:{main}", fmt="mcq", out_dir=tmp_path / "fail",
                        eval_source=f"jsonl:{tests}")
    main = write_jsonl(tmp_path / "main.jsonl", [*GSM8K, {"question": "no answer"}])
    tests = write_jsonl(tmp_path / "test.jsonl", [{"question": "7+2?", "answer": "9"},
                                                  {"question": "no answer"}])
    manifest = prepare_dataset(f"jsonl:{main}", fmt="mcq", out_dir=tmp_path / "o",
                               eval_source=f"jsonl:{tests}", on_bad_rows="skip")
    # The unit is the unit alone; the source is its own key (None: the main source).
    assert [(row["source"], row["unit"], row["line"]) for row in manifest.bad_rows] == [
        (None, "line", len(GSM8K) + 1), (f"jsonl:{tests}", "line", 2)]
