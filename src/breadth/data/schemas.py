"""Turn one source row into a Record under a named schema: gsm8k, aqua, generic (or auto).

- gsm8k: `question`, `answer` ending in "#### N"; the solution is the text before "####".
- aqua: `question`, `options` ["A)21", "B)..."] (five), `rationale`, `correct` (a letter).
- generic: question / answer / choices / solution columns, found by the usual names or given
  explicitly (`columns={"question": "problem", "answer": "final"}`).

A row that cannot become a record raises `RowError(field, reason)`; the source loader turns it
into a `BadRow` with the row's line number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from breadth.data.extraction import LETTERS, canonical_number
from breadth.data.records import Record, RowOrigin

SCHEMAS = ("auto", "gsm8k", "aqua", "generic")
AQUA_NUM_OPTIONS = 5
MAX_CHOICES = len(LETTERS)
GENERIC_COLUMNS: dict[str, tuple[str, ...]] = {
    "question": ("question", "problem", "prompt", "input", "query"),
    "answer": ("answer", "final_answer", "target", "label", "output"),
    "choices": ("choices", "options"),
    "solution": ("solution", "rationale", "explanation", "reasoning"),
}
ID_COLUMNS = ("id", "unique_id", "problem_id", "question_id", "uid", "idx")
"""A row's own id, by the usual names: error messages quote it, as a user may search for it."""
_AQUA_OPTION = re.compile(r"\s*\(?([A-Z])\s*\)\s*(.*)", re.DOTALL)


class RowError(ValueError):
    """One row's problem: the field at fault and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field!r}: {reason}")
        self.field = field
        self.reason = reason


def detect_schema(row: Mapping[str, Any]) -> str:
    """The schema a row looks like, from its column names (and the GSM8K "####" marker).

    >>> detect_schema({"question": "q", "answer": "so 3\\n#### 3"})
    'gsm8k'
    >>> detect_schema({"question": "q", "options": ["A)1"], "correct": "A"})
    'aqua'
    >>> detect_schema({"problem": "q", "answer": "3"})
    'generic'
    """
    keys = set(row)
    if {"question", "options", "correct"} <= keys:
        return "aqua"
    if {"question", "answer"} <= keys and "####" in str(row.get("answer") or ""):
        return "gsm8k"
    return "generic"


def row_id(row: Any) -> str | None:
    """The row's own id (the first of ID_COLUMNS it has, as text), or None.

    >>> row_id({"id": 17, "question": "q"}), row_id({"question": "q"})
    ('17', None)
    """
    if not isinstance(row, Mapping):
        return None
    value = next((row[name] for name in ID_COLUMNS if row.get(name) is not None), None)
    return None if value is None else str(value)[:60]


def record_from_row(row: Any, *, schema: str, source: str, split: str,
                    columns: Mapping[str, str] | None = None,
                    origin: RowOrigin | None = None) -> Record:
    """One row under `schema` ("gsm8k" | "aqua" | "generic") as a Record; RowError if bad.

    >>> r = record_from_row({"question": "2+2?", "answer": "2+2=4\\n#### 4"}, schema="gsm8k",
    ...                     source="jsonl:x.jsonl", split="train")
    >>> r.answer, r.solution
    ('4', '2+2=4')
    """
    if not isinstance(row, Mapping):
        raise RowError("<row>", f"expected a JSON object, got {type(row).__name__}")
    if schema == "gsm8k":
        return _from_gsm8k(row, source, split, origin)
    if schema == "aqua":
        return _from_aqua(row, source, split, origin)
    if schema == "generic":
        return _from_generic(row, source, split, columns or {}, origin)
    raise ValueError(f"schema must be one of {SCHEMAS[1:]} here, got {schema!r}")


def _text(row: Mapping[str, Any], field: str) -> str:
    value = row.get(field)
    if value is None:
        raise RowError(field, "missing")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowError(field, f"expected text, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise RowError(field, "empty")
    return text


def _from_gsm8k(row: Mapping[str, Any], source: str, split: str,
                origin: RowOrigin | None) -> Record:
    question = _text(row, "question")
    answer_text = _text(row, "answer")
    if "####" not in answer_text:
        raise RowError("answer", "no '#### N' final answer")
    reasoning, final = answer_text.rsplit("####", 1)
    gold = canonical_number(final.strip())
    if gold is None:
        raise RowError("answer", f"final answer {final.strip()[:40]!r} after '####' is not a number")
    return Record.create(source=source, split=split, question=question, answer=gold,
                         solution=reasoning.strip() or None, origin=origin)


def _from_aqua(row: Mapping[str, Any], source: str, split: str,
               origin: RowOrigin | None) -> Record:
    question = _text(row, "question")
    options = row.get("options")
    if options is None:
        raise RowError("options", "missing")
    if not _is_list(options):
        raise RowError("options", f"expected a list of 'A)...' strings, got {type(options).__name__}")
    options = list(options)
    if len(options) != AQUA_NUM_OPTIONS:
        raise RowError("options", f"expected {AQUA_NUM_OPTIONS} options A-E, got {len(options)}")
    texts = []
    for index, option in enumerate(options):
        match = _AQUA_OPTION.fullmatch(str(option))
        if not match or match.group(1) != LETTERS[index]:
            raise RowError("options", f"option {index + 1} {str(option)[:30]!r} does not start "
                                      f"with '{LETTERS[index]})'")
        # "A)A)59": a label typed twice is one label, not part of the option's text.
        texts.append(_strip_label(match.group(2).strip(), LETTERS[index]))
    _check_choices(texts, "options")
    correct = _text(row, "correct").strip("() ").upper()
    if len(correct) != 1 or correct not in LETTERS[: len(texts)]:
        raise RowError("correct", f"{correct[:10]!r} is not one of the option letters "
                                  f"{LETTERS[:len(texts)]}")
    rationale = row.get("rationale")
    gold = texts[LETTERS.index(correct)]
    # With the gold text listed twice, keep which letter the source meant (its rationale says so).
    meta = {"answer_index": LETTERS.index(correct)} if texts.count(gold) > 1 else {}
    return Record.create(source=source, split=split, question=question, answer=gold,
                         choices=tuple(texts), meta=meta,
                         solution=str(rationale).strip() if rationale else None, origin=origin)


def _strip_label(text: str, letter: str) -> str:
    repeated = _AQUA_OPTION.fullmatch(text)
    return repeated.group(2).strip() if repeated and repeated.group(1) == letter else text


def _is_list(value: Any) -> bool:
    # JSON lists, numpy arrays from parquet and hub data sets' sequences all qualify.
    return not isinstance(value, str | bytes | Mapping) and hasattr(value, "__iter__")


def _check_choices(texts: list[str], field: str) -> None:
    if not 2 <= len(texts) <= MAX_CHOICES:
        raise RowError(field, f"expected 2 to {MAX_CHOICES} options, got {len(texts)}")
    if any(not text for text in texts):
        raise RowError(field, "an option is empty")
    # Two options with the same text are kept: free-form never shows them, and in mcq either
    # letter of a duplicated gold is accepted (a duplicated distractor is merely wrong twice).


def _column(row: Mapping[str, Any], role: str, columns: Mapping[str, str]) -> str | None:
    if role in columns:
        return columns[role]
    return next((name for name in GENERIC_COLUMNS[role] if name in row), None)


def _from_generic(row: Mapping[str, Any], source: str, split: str,
                  columns: Mapping[str, str], origin: RowOrigin | None) -> Record:
    unknown = set(columns) - set(GENERIC_COLUMNS)
    if unknown:
        raise ValueError(f"columns keys must be among {sorted(GENERIC_COLUMNS)}, got "
                         f"{sorted(unknown)}")
    question_column = _column(row, "question", columns) or "question"
    answer_column = _column(row, "answer", columns) or "answer"
    question = _text(row, question_column)
    answer = _text(row, answer_column)
    choices: tuple[str, ...] = ()
    choices_column = _column(row, "choices", columns)
    if choices_column is not None and row.get(choices_column) is not None:
        raw = row[choices_column]
        if not _is_list(raw):
            raise RowError(choices_column, f"expected a list, got {type(raw).__name__}")
        texts = [str(choice).strip() for choice in raw]
        _check_choices(texts, choices_column)
        choices = tuple(texts)
        if answer not in choices:
            letter = answer.strip("() ").upper()
            if len(letter) == 1 and letter in LETTERS[: len(choices)]:
                answer = choices[LETTERS.index(letter)]
            else:
                raise RowError(answer_column, f"{answer[:40]!r} is neither one of the choices "
                                              "nor a choice letter")
    else:
        answer = canonical_number(answer) or answer
    solution_column = _column(row, "solution", columns)
    solution = row.get(solution_column) if solution_column else None
    return Record.create(source=source, split=split, question=question, answer=answer,
                         choices=choices, solution=str(solution).strip() if solution else None,
                         origin=origin)
