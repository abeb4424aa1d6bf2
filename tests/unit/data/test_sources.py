"""Source specs, schemas (gsm8k, aqua, generic, auto) and bad-row reports, on local files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from breadth.data.records import BadRow, BadRowsError, RowOrigin
from breadth.data.sources import SourceError, SourceSpec, load_records, parse_source_spec

GSM8K_ROWS = [
    {"question": "Natalia sold clips to 48 friends in April and half as many in May. How many "
                 "in all?",
     "answer": "In May she sold 48/2 = <<48/2=24>>24.\nIn all 48+24 = <<48+24=72>>72.\n#### 72"},
    {"question": "Weng earns $12 an hour. She worked 50 minutes. How much did she earn?",
     "answer": "12/60 = $<<12/60=0.2>>0.2 per minute.\n0.2 x 50 = $<<0.2*50=10>>10.\n#### 10"},
    {"question": "A shop sold 1,000 pens at $1.50 each. Revenue?",
     "answer": "1000 * 1.5 = 1500\n#### 1,500"},
]
AQUA_ROWS = [
    {"question": "Two friends walk a 43-km trail from opposite ends...",
     "options": ["A)21", "B)21.5", "C)22", "D)22.5", "E)23"],
     "rationale": "Q walks 25% faster...", "correct": "E"},
    {"question": "Points (x, 1) and (5, y) are on line k...",
     "options": ["A)3 and 1", "B)1/2 and 8", "C)5 and 1", "D)3/5 and 5", "E)1/5 and 1"],
     "rationale": "Line k passes through the origin", "correct": "C"},
]


def write_jsonl(path: Path, rows: list, blank_after: int | None = None) -> Path:
    lines = [json.dumps(row) if not isinstance(row, str) else row for row in rows]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("spec,parsed", [
    ("synthetic:arithmetic", SourceSpec("synthetic", "arithmetic")),
    ("synthetic:countdown", SourceSpec("synthetic", "countdown")),
    ("jsonl:/data/a.jsonl", SourceSpec("jsonl", "/data/a.jsonl")),
    ("parquet:rel/b.parquet", SourceSpec("parquet", "rel/b.parquet")),
    ("hf:gsm8k", SourceSpec("hf", "gsm8k")),
    ("hf:openai/gsm8k:main", SourceSpec("hf", "openai/gsm8k", "main")),
    ("hf:/local/dir", SourceSpec("hf", "/local/dir")),
])
def test_parse_source_spec(spec, parsed) -> None:
    assert parse_source_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["csv:x.csv", "jsonl:", "synthetic:sudoku", "arithmetic", ""])
def test_bad_specs_list_the_accepted_forms(spec) -> None:
    with pytest.raises(ValueError, match="synthetic"):
        parse_source_spec(spec)


def test_gsm8k_file(tmp_path) -> None:
    path = write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K_ROWS)
    result = load_records(f"jsonl:{path}")
    assert result.schema == "gsm8k" and result.bad_rows == []
    assert [r.answer for r in result.records] == ["72", "10", "1500"]
    assert result.records[0].solution.startswith("In May she sold")
    assert "####" not in result.records[0].solution
    assert {r.split for r in result.records} == {"train"}
    assert {r.source for r in result.records} == {f"jsonl:{path}"}


def test_aqua_file(tmp_path) -> None:
    path = write_jsonl(tmp_path / "aqua.jsonl", AQUA_ROWS)
    result = load_records(f"jsonl:{path}")
    assert result.schema == "aqua"
    first, second = result.records
    assert first.choices == ("21", "21.5", "22", "22.5", "23") and first.answer == "23"
    assert second.answer == "5 and 1" and second.solution == "Line k passes through the origin"


def test_generic_with_explicit_columns(tmp_path) -> None:
    rows = [{"problem": "2+2?", "final": "4", "why": "two and two"},
            {"problem": "Pick", "final": "b", "opts": ["x", "y", "z"]}]
    path = write_jsonl(tmp_path / "generic.jsonl", rows)
    result = load_records(f"jsonl:{path}", columns={"question": "problem", "answer": "final",
                                                    "choices": "opts", "solution": "why"})
    assert result.schema == "generic"
    plain, choice = result.records
    assert (plain.question, plain.answer, plain.solution) == ("2+2?", "4", "two and two")
    assert choice.choices == ("x", "y", "z") and choice.answer == "y"  # letter b -> "y"


def test_generic_by_usual_names(tmp_path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [{"problem": "3+3?", "answer": 6},
                                              {"question": "1,000 + 1?", "answer": "1,001"}])
    result = load_records(f"jsonl:{path}", schema="generic")
    assert [r.answer for r in result.records] == ["6", "1001"]


def test_parquet_file(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [*GSM8K_ROWS, {"question": "broken", "answer": "no final answer"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "gsm8k.parquet")
    result = load_records(f"parquet:{tmp_path / 'gsm8k.parquet'}", on_bad_rows="skip")
    assert [r.answer for r in result.records] == ["72", "10", "1500"]
    assert result.bad_rows == [BadRow(3, "answer", "no '#### N' final answer", "row")]


def test_hf_loader_takes_a_local_file(offline_hub) -> None:
    path = write_jsonl(offline_hub / "aqua.jsonl", AQUA_ROWS)
    result = load_records(f"hf:{path}")
    assert result.schema == "aqua"
    assert [r.answer for r in result.records] == ["23", "5 and 1"]


def test_hf_loader_takes_a_local_directory_with_splits(offline_hub) -> None:
    folder = offline_hub / "gsm8k"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", GSM8K_ROWS[:2])
    write_jsonl(folder / "test.jsonl", GSM8K_ROWS[2:] + [{"question": "q", "answer": "x"}])
    result = load_records(f"hf:{folder}", on_bad_rows="skip")
    assert [(r.split, r.answer) for r in result.records] == [
        ("train", "72"), ("train", "10"), ("eval", "1500")]
    assert result.bad_rows == [BadRow(1, "answer", "no '#### N' final answer", "test row")]
    assert result.records[2].origin == RowOrigin(0, "test row")
    only_eval = load_records(f"hf:{folder}", split="eval", on_bad_rows="skip")
    assert [r.split for r in only_eval.records] == ["eval"]


# --- bad rows -------------------------------------------------------------------------------

BAD_GSM8K = [
    GSM8K_ROWS[0],
    {"answer": "#### 3"},                                        # line 2: no question
    {"question": "q", "answer": "so the answer is three\n#### three"},  # line 3: not a number
    "{not json",                                                 # line 4
    GSM8K_ROWS[1],                                               # line 6 (after a blank line)
    {"question": "q", "answer": "reasoning without the marker"},   # line 7
]


def test_bad_rows_stop_the_load_with_a_report(tmp_path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", BAD_GSM8K, blank_after=4)
    with pytest.raises(BadRowsError) as caught:
        load_records(f"jsonl:{path}", schema="gsm8k")
    message = str(caught.value)
    assert "4 bad row(s)" in message
    assert "line 2, field 'question': missing" in message
    assert "line 3, field 'answer': final answer 'three' after '####' is not a number" in message
    assert "line 4, field '<json>': invalid JSON" in message
    assert "line 7, field 'answer': no '#### N' final answer" in message
    assert "pass --on-bad-rows skip to drop them" in message
    assert isinstance(caught.value, ValueError)
    assert [row.line for row in caught.value.bad_rows] == [2, 3, 4, 7]


def test_skip_keeps_the_good_rows_and_lists_the_bad(tmp_path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", BAD_GSM8K, blank_after=4)
    result = load_records(f"jsonl:{path}", schema="gsm8k", on_bad_rows="skip")
    assert [r.answer for r in result.records] == ["72", "10"]
    assert [(b.line, b.field) for b in result.bad_rows] == [
        (2, "question"), (3, "answer"), (4, "<json>"), (7, "answer")]


@pytest.mark.parametrize("row,field,reason", [
    ({"question": "q", "options": ["A)1", "B)2", "C)3", "D)4"], "correct": "A"},
     "options", "expected 5 options A-E, got 4"),
    ({"question": "q", "options": ["A)1", "B)2", "C)3", "D)4", "E)5", "F)6"], "correct": "A"},
     "options", "expected 5 options A-E, got 6"),
    ({"question": "q", "options": ["A)1", "B)2", "C)3", "D)4", "X)5"], "correct": "A"},
     "options", "does not start with 'E)'"),
    ({"question": "q", "options": ["A)1", "B)2", "C)3", "D)4", "E)5"], "correct": "F"},
     "correct", "not one of the option letters"),
    ({"question": "q", "options": "A)1 B)2", "correct": "A"}, "options", "expected a list"),
    ({"question": "", "options": ["A)1", "B)2", "C)3", "D)4", "E)5"], "correct": "A"},
     "question", "empty"),
    ({"question": "q", "options": ["A)1", "B)2", "C)3", "D)4", "E)5"]}, "correct", "missing"),
])
def test_aqua_bad_rows(tmp_path, row, field, reason) -> None:
    path = write_jsonl(tmp_path / "aqua.jsonl", [AQUA_ROWS[0], row])
    result = load_records(f"jsonl:{path}", schema="aqua", on_bad_rows="skip")
    assert len(result.records) == 1
    [bad] = result.bad_rows
    assert (bad.line, bad.field) == (2, field) and reason in bad.reason


@pytest.mark.parametrize("row,field,reason", [
    ({"question": "q", "answer": "z", "choices": ["x", "y"]}, "answer", "neither one of"),
    ({"question": "q", "answer": "x", "choices": ["x"]}, "choices", "expected 2 to 10"),
    ({"question": "q", "answer": "x", "choices": "x,y"}, "choices", "expected a list"),
    ({"question": "q"}, "answer", "missing"),
    ({"question": ["not", "text"], "answer": "1"}, "question", "expected text"),
])
def test_generic_bad_rows(tmp_path, row, field, reason) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [row])
    with pytest.raises(BadRowsError) as caught:
        load_records(f"jsonl:{path}", schema="generic")
    [bad] = caught.value.bad_rows
    assert (bad.line, bad.field) == (1, field) and reason in bad.reason


def test_the_report_lists_at_most_twenty_rows(tmp_path) -> None:
    path = write_jsonl(tmp_path / "many.jsonl", [{"question": "q"}] * 30)
    with pytest.raises(BadRowsError) as caught:
        load_records(f"jsonl:{path}", schema="gsm8k")
    message = str(caught.value)
    assert "30 bad row(s)" in message and "line 20," in message and "line 21," not in message
    assert "... and 10 more" in message


def test_synthetic_source_takes_generator_options() -> None:
    result = load_records("synthetic:countdown", split="eval", num=5, seed=2, difficulty=3)
    assert len(result.records) == 5 and {r.split for r in result.records} == {"eval"}
    with pytest.raises(ValueError, match="num"):
        load_records("synthetic:countdown")


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="on_bad_rows"):
        load_records("synthetic:arithmetic", num=1, on_bad_rows="ignore")
    with pytest.raises(ValueError, match="schema"):
        load_records("jsonl:x.jsonl", schema="mmlu")
    with pytest.raises(SourceError, match="does not exist"):
        load_records("jsonl:/nonexistent/x.jsonl")


@pytest.mark.parametrize(("raised", "permanent"), [
    (ConnectionError("hub unreachable"), False),
    (TimeoutError("read timed out"), False),
    (FileNotFoundError("no such data set"), True),
    (ValueError("bad config name"), True),
])
def test_a_hub_network_failure_may_be_retried_and_a_missing_data_set_not(
    monkeypatch, raised, permanent
):
    """Every hub failure became a SourceError (a ValueError), which the tasks' retry condition
    takes as permanent: a 503 from the hub was no longer retried."""
    import datasets

    from breadth.tracking.uploads import is_permanent

    def fail(*args, **kwargs):
        raise raised

    monkeypatch.setattr(datasets, "load_dataset", fail)
    with pytest.raises(SourceError, match="could not be loaded") as caught:
        load_records("hf:someone/data")
    assert is_permanent(caught.value) is permanent


def test_rows_are_located_by_line_or_row_and_their_own_id(offline_hub) -> None:
    """Records and bad rows carry where the row is in the user's file: the line of a jsonl
    file (from 1, blank lines counted), the row of a table (from 0, header not counted), and
    the row's own id column when it has one."""
    rows = [{"id": "a1", "question": "1+1?", "answer": "2"},
            {"question": "2+2?", "answer": "4"},
            {"id": 7, "question": "3+3?"}]
    path = write_jsonl(offline_hub / "g.jsonl", rows, blank_after=1)
    result = load_records(f"jsonl:{path}", on_bad_rows="skip")
    assert [r.origin for r in result.records] == [RowOrigin(1, "line", "a1"), RowOrigin(3)]
    assert result.bad_rows == [BadRow(4, "answer", "missing", "line", "7")]
    csv = offline_hub / "g.csv"
    csv.write_text('id,question,answer\na1,"two\nlines",2\nb2,2+2?,\n', encoding="utf-8")
    result = load_records(f"hf:{csv}", on_bad_rows="skip")
    assert [r.origin for r in result.records] == [RowOrigin(0, "row", "a1")]
    assert result.bad_rows == [BadRow(1, "answer", "missing", "row", "b2")]


def test_a_jsonl_file_read_through_hf_says_its_rows_are_not_file_lines(offline_hub) -> None:
    """datasets numbers a JSON Lines file's rows from 0 and skips blank lines: the empty answer
    on file line 3 is its row 1. The note under the report spoke of "a CSV header line", which
    a JSON file has not, and did not say a row is not a line; jsonl: names the line."""
    rows = [{"question": "1+1?", "answer": "2"}, {"question": "2+1?", "answer": ""},
            {"question": "3+1?", "answer": "4"}]
    path = write_jsonl(offline_hub / "d.jsonl", rows, blank_after=1)
    assert path.read_text().splitlines()[2] == json.dumps(rows[1])  # file line 3
    with pytest.raises(BadRowsError) as through_hub:
        load_records(f"hf:{path}")
    text = str(through_hub.value)
    assert "\n  row 1, field 'answer': empty\n" in text
    assert ("(rows are numbered from 0, as datasets numbers them, not by file line: blank lines "
            "are not counted; read a JSON Lines file as jsonl:PATH to have its rows named by "
            "line, from 1)") in text
    assert "CSV" not in text
    with pytest.raises(BadRowsError) as as_jsonl:
        load_records(f"jsonl:{path}")
    assert "\n  line 3, field 'answer': empty\n" in str(as_jsonl.value)
    assert "numbered" not in str(as_jsonl.value)


def test_a_csv_file_says_its_header_and_blank_lines_are_not_rows(offline_hub) -> None:
    path = offline_hub / "d.csv"
    path.write_text("question,answer\n1+1?,2\n\n2+1?,\n3+1?,4\n", encoding="utf-8")
    with pytest.raises(BadRowsError) as caught:
        load_records(f"hf:{path}")
    assert "\n  row 1, field 'answer': missing\n" in str(caught.value)  # file line 4
    assert ("(rows are numbered from 0, as pandas and datasets number them, not counting the "
            "CSV header line or blank lines)") in str(caught.value)
