"""Answer extraction helpers: segments, numbers, letters and expressions."""

from __future__ import annotations

import pytest

from breadth.data.extraction import (
    MAX_SEGMENT_CHARS,
    answer_marker,
    answer_segment,
    canonical_number,
    extract_choice,
    extract_expression,
    extract_number,
    format_number,
    normalize_option,
    normalize_text,
    parse_number,
)


@pytest.mark.parametrize("text,segment,marked", [
    ("Answer: 33", "33", True),
    ("the answer is 7", "7", True),
    ("a\n#### 72", "72", True),
    ("x \\boxed{\\frac{1}{2}} y", "\\frac{1}{2}", True),
    ("Answer: 1. Answer: 2", "2", True),
    ("33", "33", False),
    ("", "", False),
    (None, "", False),
])
def test_answer_segment(text, segment, marked) -> None:
    assert answer_segment(text) == (segment, marked)


def test_segment_is_bounded() -> None:
    segment, marked = answer_segment("Answer: " + "x" * 1_500)
    assert marked and MAX_SEGMENT_CHARS - 1 <= len(segment) <= MAX_SEGMENT_CHARS
    # Only the end of a completion is searched: a marker a megabyte back is not seen.
    segment, marked = answer_segment("Answer: 33 " + "x" * 1_000_000)
    assert not marked and "33" not in segment
    segment, marked = answer_segment("y" * 100_000)
    assert not marked and len(segment) == MAX_SEGMENT_CHARS


def test_normalize_text_maps_digits_of_other_scripts() -> None:
    assert normalize_text("\uff13\uff13") == "33"          # fullwidth
    assert normalize_text("\u0663\u0663") == "33"          # Arabic-Indic
    assert normalize_text("\u096a\u096b") == "45"          # Devanagari
    assert normalize_text("plain") == "plain"


@pytest.mark.parametrize("token,value", [
    ("33", 33.0), ("-5", -5.0), ("1,000", 1000.0), ("3/4", 0.75), ("2e3", 2000.0),
    ("1e999999", None), ("1/0", None), ("9" * 65, None),
])
def test_parse_number(token, value) -> None:
    assert parse_number(token) == value


@pytest.mark.parametrize("text,canonical", [
    ("72", "72"), ("1,000", "1000"), ("3.50", "3.5"), ("-0.0", "0"), ("$18", "18"),
    ("18.", "18"), ("1e3", "1000"), ("abc", None), ("3/4", None), ("", None),
])
def test_canonical_number(text, canonical) -> None:
    assert canonical_number(text) == canonical


def test_format_number() -> None:
    assert [format_number(x) for x in (33.0, -5.0, 0.5, 1e22)] == ["33", "-5", "0.5", "1e+22"]


@pytest.mark.parametrize("text,token", [
    ("Answer: 33 or 34", "33"),
    ("first 12 then 33", "33"),
    ("12-7", "7"),
    ("is -5", "-5"),
    ("1,234,567 total", "1,234,567"),
    ("none", None),
])
def test_extract_number(text, token) -> None:
    assert extract_number(text) == token


def test_extract_choice_reports_out_of_range_letters() -> None:
    assert extract_choice("Answer: E", ["1", "2"]) == (None, "E")
    assert extract_choice("Answer: B", ["1", "2"]) == ("B", "B")


def test_normalize_option() -> None:
    assert normalize_option("  5  AND 1. ") == normalize_option("5 and 1") == "5 and 1"


@pytest.mark.parametrize("text,expression", [
    ("3*5+7", "3*5+7"),
    ("Answer: 3*5+7 = 22", "3*5+7"),
    ("first line\n(3+5)*2", "(3+5)*2"),
    ("use 3 \u00d7 5 + 7.", "3 * 5 + 7"),
    ("3.0*5", None),
    ("1e999", None),
    ("3^5", None),
    ("nothing", None),
])
def test_extract_expression(text, expression) -> None:
    assert extract_expression(text) == expression


@pytest.mark.parametrize("text,token", [
    # After a marker: the answer line's first number, or an equation's result from its start.
    ("The answer is 48 - 37 = 11.", "11"),
    ("The answer is $7 + 6 = 13$", "13"),
    ("The answer is 13, as 7 + 6 = 13 and 2 < 5.", "13"),
    ("The answer is N.\nLet me know if 5 more would help.", None),
    ("The answer is:\n\n21", "21"),
    ("**Answer:** **21**", "21"),
    # Without one: the final line's last number, never an earlier line's.
    ("First, 7 + 6 = 13.\nSo the sum is 21.", "21"),
    ("So the sum is 21.\n\nI hope this helps!", None),
    ("2**99999999", "99999999"),  # "**" inside a token is not bold
])
def test_extract_number_from_real_model_text(text, token) -> None:
    assert extract_number(text) == token


@pytest.mark.parametrize("text,work", [
    ("3 + 4 = 7.\nThe answer is 7.", "3 + 4 = 7.\nThe "),
    ("3+4=7. Answer: 7", "3+4=7. "),
    ("x \\boxed{7} and the answer is 7", "x "),
    ("3 + 4 = 7", None),
])
def test_answer_marker_cuts_the_work_from_the_answer(text, work) -> None:
    at = answer_marker(text)
    assert (text[:at] if at is not None else None) == work
