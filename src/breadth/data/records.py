"""The canonical record (one problem) and the bad-row report shared by every source.

A `Record` is what every source turns its rows into and what every renderer reads: one shape
for synthetic problems, GSM8K-style and AQuA-style files and hub data sets alike.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal, get_args

SPLITS = ("train", "eval")
Format = Literal["free_form", "mcq"]
"""How a problem is shown to the model: the one list of formats (`data.format`, the grid's
formats, `prepare_dataset(fmt=...)` and the renderers all read it)."""
FORMATS: tuple[str, ...] = get_args(Format)
Rendering = Literal["compact", "natural"]
"""How a problem is worded: compact (short ASCII for the character model, "48-37=") or natural
(in words, asking for "The answer is ..." lines, for a pretrained instruct model)."""
RENDERINGS: tuple[str, ...] = get_args(Rendering)
OnBadRows = Literal["fail", "skip"]
ON_BAD_ROWS = ("fail", "skip")

# How many bad rows an error message lists before it says "and N more".
MAX_BAD_ROWS_IN_MESSAGE = 20
_ROWS_FROM_0 = "rows are numbered from 0, as pandas and datasets number them"
_ROW_NUMBERING = {
    "parquet": _ROWS_FROM_0,
    "csv": f"{_ROWS_FROM_0}, not counting the CSV header line or blank lines",
    "json": ("rows are numbered from 0, as datasets numbers them, not by file line: blank "
             "lines are not counted; read a JSON Lines file as jsonl:PATH to have its rows "
             "named by line, from 1"),
    "hub": (f"{_ROWS_FROM_0} within their split, not counting a CSV header line or blank "
            "lines"),
}


def row_numbering(spec: str) -> str:
    """What "row N" counts in a source (not a jsonl: source, whose lines are named): said
    under a report that lists rows, as "row 3" could be read from 0 or 1, as a line or not.

    >>> row_numbering("parquet:/data/x.parquet")
    'rows are numbered from 0, as pandas and datasets number them'
    >>> row_numbering("hf:/data/x.csv").endswith("not counting the CSV header line or blank lines")
    True
    """
    kind, _, name = spec.partition(":")
    suffix = PurePath(name).suffix.lower().lstrip(".") if kind == "hf" else kind
    return _ROW_NUMBERING.get({"jsonl": "json"}.get(suffix, suffix), _ROW_NUMBERING["hub"])


def make_record_id(source: str, question: str, answer: str) -> str:
    """Stable record id: the first 16 hex digits of sha256 over source, question and answer.

    The parts are joined with a unit separator so ("ab", "c") and ("a", "bc") differ.

    >>> make_record_id("synthetic:arithmetic", "3+4", "7") == make_record_id(
    ...     "synthetic:arithmetic", "3+4", "7")
    True
    >>> len(make_record_id("s", "q", "a"))
    16
    """
    payload = f"{source}\x1f{question}\x1f{answer}".encode()
    return hashlib.sha256(payload).hexdigest()[:16]


@dataclass(frozen=True)
class Record:
    """One problem, independent of how it is shown to a model.

    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="3+4",
    ...                   answer="7", task="arithmetic")
    >>> r.id == make_record_id("synthetic:arithmetic", "3+4", "7")
    True
    """

    id: str
    """Stable id: `make_record_id(source, question, answer)`."""
    source: str
    """The source spec the record came from, e.g. "synthetic:arithmetic", "jsonl:/data/x.jsonl"."""
    split: str
    """"train" or "eval"."""
    question: str
    """The problem text (for synthetic tasks the bare problem, e.g. "12+7*3")."""
    answer: str
    """Canonical gold: a number as a string, an option's text, or the countdown target value."""
    choices: tuple[str, ...] = ()
    """Option texts given by the source (multiple-choice sources), else ()."""
    solution: str | None = None
    """Reference reasoning; for countdown one valid expression."""
    difficulty: int | None = None
    """1 (easy) .. 3 (hard) for synthetic problems; None when unknown."""
    task: str = "generic"
    """The task the problem belongs to: a name in `breadth.data.generators` ("generic" for file
    and hub sources); it chooses the renderings, verifier and outcome key."""
    meta: dict[str, Any] = field(default_factory=dict, hash=False)
    """Task details, e.g. countdown: {"numbers": [...], "target": int}."""
    origin: RowOrigin | None = field(default=None, compare=False, repr=False)
    """Where the row is in the user's file, for error messages (None: generated). Not part of
    the id, the rendered row or equality: the same problem on another line is the same."""

    @classmethod
    def create(
        cls,
        *,
        source: str,
        split: str,
        question: str,
        answer: str,
        choices: tuple[str, ...] = (),
        solution: str | None = None,
        difficulty: int | None = None,
        task: str = "generic",
        meta: dict[str, Any] | None = None,
        origin: RowOrigin | None = None,
    ) -> Record:
        """Build a record, deriving its id from source, question and answer."""
        return cls(
            id=make_record_id(source, question, answer),
            source=source,
            split=split,
            question=question,
            answer=answer,
            choices=tuple(choices),
            solution=solution,
            difficulty=difficulty,
            task=task,
            meta=dict(meta or {}),
            origin=origin,
        )


@dataclass(frozen=True)
class RowOrigin:
    """Where a source row is, in the terms a user finds it by in their file.

    >>> str(RowOrigin(4, "line", "q-17"))
    "line 4 (id 'q-17')"
    """

    line: int
    """As `BadRow.line`: 1-based line for jsonl files, 0-based row index otherwise."""
    unit: str = "line"
    """As `BadRow.unit`."""
    row_id: str | None = None
    """The row's own id column (see schemas.ID_COLUMNS), if it has one."""

    def __str__(self) -> str:
        return f"{self.unit} {self.line}" + (f" (id {self.row_id!r})" if self.row_id else "")


@dataclass(frozen=True)
class BadRow:
    """A source row that could not become a record: where it is, which field, and why.

    >>> str(BadRow(3, "answer", "no '#### N' final answer"))
    "line 3, field 'answer': no '#### N' final answer"
    """

    line: int
    """1-based line number for jsonl files; the row index for parquet and hub data sets."""
    field: str
    """The field at fault."""
    reason: str
    """What is wrong with it."""
    unit: str = "line"
    """What `line` counts: "line" (jsonl, from 1), "row" (parquet or a single data file, from
    0), "<split> row" (hub or folder split, from 0), "<split> record" (generated records)."""
    row_id: str | None = None
    """The row's own id column, if it has one: what a user may search their file for."""
    source: str | None = None
    """The source spec the row is in when it is not the one the report or manifest is about
    (a row of the eval source); None: that source."""

    @classmethod
    def at(cls, origin: RowOrigin, field: str, reason: str) -> BadRow:
        """The bad row at a record's origin."""
        return cls(origin.line, field, reason, origin.unit, origin.row_id)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> BadRow:
        """Inverse of `to_dict`. A manifest written before row_id or source has neither (its
        eval source rows carry the source in `unit`, which reads the same)."""
        return cls(row["line"], row["field"], row["reason"], row["unit"], row.get("row_id"),
                   row.get("source"))

    def __str__(self) -> str:
        where = RowOrigin(self.line, self.unit, self.row_id)
        within = f"{self.source} " if self.source else ""
        return f"{within}{where}, field {self.field!r}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "line": self.line, "field": self.field, "reason": self.reason,
                "row_id": self.row_id, "source": self.source}


SKIP_HINT = "pass --on-bad-rows skip to drop them (they are then recorded in the manifest)"


class RenderError(ValueError):
    """A record that cannot be shown in the asked format: the message names where its row is
    (its line or row in the user's file; the record id for generated records) and why."""

    def __init__(self, record: Record, reason: str) -> None:
        super().__init__(record, reason)  # the arguments, so that a pickled error unpickles
        self.record = record
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.record.origin or f'record {self.record.id}'}: {self.reason}"


class BadRowsError(ValueError):
    """Raised (with on_bad_rows="fail") when a source has rows that cannot become records."""

    def __init__(self, bad_rows: list[BadRow], source: str, cause: str = "",
                 rendered_as: str | None = None) -> None:
        """`cause`: what is wrong with every bad row and how to fix it, said instead of the
        bare hint to skip them (which may leave nothing, or hide the cause). `rendered_as`:
        the format the rows could not be rendered in, if that is what is wrong."""
        self.bad_rows = list(bad_rows)
        self.source = source
        self.cause = cause
        self.rendered_as = rendered_as
        listed = "\n".join(f"  {row}" for row in self.bad_rows[:MAX_BAD_ROWS_IN_MESSAGE])
        more = len(self.bad_rows) - MAX_BAD_ROWS_IN_MESSAGE
        if more > 0:
            listed += f"\n  ... and {more} more"
        # Each source whose rows are listed by row says what its rows count.
        numbered = dict.fromkeys(row.source or source for row in self.bad_rows
                                 if row.unit.endswith("row"))
        for spec in numbered:
            within = f"{spec}: " if len(numbered) > 1 else ""
            listed += f"\n  ({within}{row_numbering(spec)})"
        fix = cause or SKIP_HINT
        where = f"{source} (rendered as {rendered_as})" if rendered_as else source
        super().__init__(f"{len(self.bad_rows)} bad row(s) in {where}:\n{listed}\n{fix}")

    def __reduce__(self) -> tuple[Any, ...]:
        # The default rebuilds an exception from its message alone (self.args), which this
        # __init__ does not take: it must survive pickling (Prefect persists a task's error).
        return (type(self), (self.bad_rows, self.source, self.cause, self.rendered_as),
                self.__dict__)


def check_on_bad_rows(on_bad_rows: str) -> None:
    """Reject an unknown on_bad_rows value with the allowed ones."""
    if on_bad_rows not in ON_BAD_ROWS:
        raise ValueError(f"on_bad_rows must be one of {ON_BAD_ROWS}, got {on_bad_rows!r}")
