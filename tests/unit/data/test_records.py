"""Record ids, construction and the bad-row report."""

from __future__ import annotations

import pytest

from breadth.data.records import BadRow, BadRowsError, Record, RowOrigin, make_record_id


def test_id_is_stable_and_content_derived() -> None:
    first = make_record_id("synthetic:arithmetic", "3+4", "7")
    assert first == make_record_id("synthetic:arithmetic", "3+4", "7")
    assert len(first) == 16 and int(first, 16) >= 0
    assert first != make_record_id("synthetic:arithmetic", "3+4", "8")
    assert first != make_record_id("synthetic:countdown", "3+4", "7")
    # The parts are separated, so shifting text between them changes the id.
    assert make_record_id("s", "ab", "c") != make_record_id("s", "a", "bc")


def test_create_fills_the_id_and_copies_meta() -> None:
    meta = {"numbers": [3, 5, 7], "target": 22}
    record = Record.create(source="synthetic:countdown", split="train",
                           question="Reach 22 with 3 5 7", answer="22", task="countdown",
                           meta=meta, choices=["a", "b"])
    meta["target"] = 0
    assert record.meta["target"] == 22
    assert record.choices == ("a", "b")
    assert record.id == make_record_id("synthetic:countdown", "Reach 22 with 3 5 7", "22")
    assert hash(record) == hash(record)  # frozen and hashable despite the meta dict


def test_records_are_frozen() -> None:
    record = Record.create(source="s", split="train", question="q", answer="1")
    with pytest.raises(AttributeError):
        record.answer = "2"  # type: ignore[misc]


def test_bad_rows_error_names_rows_fields_and_the_fix() -> None:
    error = BadRowsError([BadRow(3, "answer", "no '#### N' final answer"),
                          BadRow(7, "options", "expected 5 options A-E, got 4", "row")],
                         "jsonl:x.jsonl")
    text = str(error)
    assert "2 bad row(s) in jsonl:x.jsonl" in text
    assert "line 3, field 'answer': no '#### N' final answer" in text
    assert "row 7, field 'options': expected 5 options A-E, got 4" in text
    assert text.endswith("pass --on-bad-rows skip to drop them (they are then recorded in the "
                         "manifest)")
    assert isinstance(error, ValueError) and len(error.bad_rows) == 2
    assert "numbered from 0" in text  # "row 7" could be read from 0 or from 1


def test_a_report_of_lines_only_says_nothing_of_row_numbering() -> None:
    assert "numbered from 0" not in str(BadRowsError([BadRow(3, "answer", "empty")], "jsonl:x"))


def test_a_report_says_what_rows_count_for_each_source_that_has_rows() -> None:
    """A row of the main source and one of the eval source, read from files of other formats:
    each source's note says what its rows count (a CSV header is no JSON file's)."""
    text = str(BadRowsError([BadRow(0, "answer", "empty", "row"),
                             BadRow(2, "answer", "empty", "row", source="hf:/t.jsonl"),
                             BadRow(5, "answer", "empty", source="jsonl:/u.jsonl")],
                            "hf:/m.csv", rendered_as="mcq"))
    assert text.startswith("3 bad row(s) in hf:/m.csv (rendered as mcq):\n")
    assert ("\n  (hf:/m.csv: rows are numbered from 0, as pandas and datasets number them, not "
            "counting the CSV header line or blank lines)") in text
    assert ("\n  (hf:/t.jsonl: rows are numbered from 0, as datasets numbers them, not by file "
            "line: blank lines are not counted;") in text
    assert "jsonl:/u.jsonl:" not in text  # lines need no note


def test_a_bad_row_names_the_rows_own_id_and_survives_the_manifest() -> None:
    """The manifest keeps the id, and `breadth prepare` lists skipped rows from it."""
    bad = BadRow.at(RowOrigin(4, "test row", "q-17"), "answer", "empty")
    assert str(bad) == "test row 4 (id 'q-17'), field 'answer': empty"
    assert BadRow.from_dict(bad.to_dict()) == bad
    written_before_ids = {"unit": "line", "line": 2, "field": "answer", "reason": "missing"}
    assert str(BadRow.from_dict(written_before_ids)) == "line 2, field 'answer': missing"


def test_a_bad_row_of_another_source_keeps_the_source_out_of_its_unit() -> None:
    """A row of the eval source had its source put into `unit` ("jsonl:/t.jsonl line"): two
    facts in one manifest field. The source is its own key; a manifest written before it (the
    source inside the unit) still reads, and reads the same."""
    bad = BadRow(2, "answer", "empty", "line", "q-2", source="jsonl:/t.jsonl")
    assert str(bad) == "jsonl:/t.jsonl line 2 (id 'q-2'), field 'answer': empty"
    assert bad.to_dict() == {"unit": "line", "line": 2, "field": "answer", "reason": "empty",
                             "row_id": "q-2", "source": "jsonl:/t.jsonl"}
    assert BadRow.from_dict(bad.to_dict()) == bad
    assert BadRow(2, "answer", "empty").to_dict()["source"] is None
    written_before = {"unit": "jsonl:/t.jsonl line", "line": 2, "field": "answer",
                      "reason": "empty", "row_id": "q-2"}
    assert str(BadRow.from_dict(written_before)) == str(bad)


def test_the_origin_is_not_part_of_the_record() -> None:
    """The same problem on another line is the same record: same id, equal, same hash."""
    at_line_2 = Record.create(source="s", split="train", question="q", answer="1",
                              origin=RowOrigin(2))
    at_line_9 = Record.create(source="s", split="train", question="q", answer="1",
                              origin=RowOrigin(9))
    assert at_line_2 == at_line_9 and hash(at_line_2) == hash(at_line_9)
    assert at_line_2.id == at_line_9.id and at_line_2.origin != at_line_9.origin


@pytest.mark.parametrize("pickler", ["pickle", "cloudpickle"])
def test_a_bad_rows_error_survives_pickling(pickler) -> None:
    """Prefect persists a failed task's exception: BadRowsError was rebuilt from its message
    alone and failed with "missing 1 required positional argument: 'source'"."""
    module = pytest.importorskip(pickler)
    error = BadRowsError([BadRow(1, "answer", "empty", "row", "q-1"),
                          BadRow(3, "answer", "missing", source="jsonl:/t.jsonl")],
                         "hf:x.csv", "the cause, and how to fix it", "mcq")
    error.add_note("a note")
    copy = module.loads(module.dumps(error))
    assert type(copy) is BadRowsError and str(copy) == str(error)
    assert (copy.bad_rows, copy.source, copy.cause, copy.rendered_as) == (
        error.bad_rows, "hf:x.csv", "the cause, and how to fix it", "mcq")
    assert copy.__notes__ == ["a note"]
