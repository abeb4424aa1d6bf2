"""Load records from one source spec: synthetic:TASK, jsonl:PATH, parquet:PATH, hf:NAME[:CONFIG].

`hf:` goes through `datasets.load_dataset`, which takes a hub name or a local path alike (a
local data file is loaded with the builder its extension names). Rows that cannot become
records are reported with their line (jsonl) or row index (parquet, hub) and, by default, stop
the load with a `BadRowsError`; with on_bad_rows="skip" they are dropped and returned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadth.data.records import BadRow, BadRowsError, Record, check_on_bad_rows
from breadth.data.schemas import SCHEMAS, RowError, detect_schema, record_from_row
from breadth.data.synthetic import generate_arithmetic, generate_countdown

SOURCE_KINDS = ("synthetic", "jsonl", "parquet", "hf")
SYNTHETIC_TASKS = {"arithmetic": generate_arithmetic, "countdown": generate_countdown}
HUB_EVAL_SPLITS = ("test", "validation", "valid", "dev", "eval")
"""Hub split names read as our "eval" split, in order of preference."""
_DATA_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
_SPEC_HELP = ("synthetic:arithmetic, synthetic:countdown, jsonl:PATH, parquet:PATH, "
              "hf:NAME[:CONFIG] (NAME may be a local path)")


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source spec.

    >>> parse_source_spec("hf:openai/gsm8k:main")
    SourceSpec(kind='hf', name='openai/gsm8k', config='main')
    """

    kind: str
    name: str
    config: str | None = None


def parse_source_spec(spec: str) -> SourceSpec:
    """Split "KIND:NAME[:CONFIG]" and check it; the error lists the accepted forms.

    >>> parse_source_spec("synthetic:countdown")
    SourceSpec(kind='synthetic', name='countdown', config=None)
    >>> parse_source_spec("jsonl:/data/train.jsonl").name
    '/data/train.jsonl'
    """
    kind, _, rest = spec.partition(":")
    if kind not in SOURCE_KINDS or not rest:
        raise ValueError(f"source spec {spec!r} is not one of: {_SPEC_HELP}")
    if kind == "synthetic" and rest not in SYNTHETIC_TASKS:
        raise ValueError(f"unknown synthetic task {rest!r}; known: {sorted(SYNTHETIC_TASKS)}")
    if kind == "hf":
        name, sep, config = rest.rpartition(":")
        # "hf:/data/dir" has no config; a config is a plain name after the last colon.
        if sep and name and config and "/" not in config and not Path(rest).exists():
            return SourceSpec(kind, name, config)
    return SourceSpec(kind, rest)


@dataclass(frozen=True)
class LoadResult:
    """Records from a source, and the rows that could not become records."""

    records: list[Record]
    bad_rows: list[BadRow] = field(default_factory=list)
    schema: str = "synthetic"
    """The schema used (after "auto" detection), or "synthetic"."""


def load_records(
    spec: str,
    *,
    schema: str = "auto",
    split: str | None = None,
    on_bad_rows: str = "fail",
    columns: Mapping[str, str] | None = None,
    **synthetic_kwargs: Any,
) -> LoadResult:
    """Records from `spec`. Synthetic sources take num, seed and difficulty as keywords.

    `split` labels the records of a file source (default "train"; hub sources keep their
    own splits, "test"/"validation" read as "eval"); synthetic sources generate that split.

    >>> result = load_records("synthetic:arithmetic", split="eval", num=2, seed=0, difficulty=2)
    >>> [r.split for r in result.records], result.bad_rows
    (['eval', 'eval'], [])
    """
    check_on_bad_rows(on_bad_rows)
    if schema not in SCHEMAS:
        raise ValueError(f"schema must be one of {SCHEMAS}, got {schema!r}")
    source = parse_source_spec(spec)
    if source.kind == "synthetic":
        kwargs = {"seed": 0, "difficulty": 1, **synthetic_kwargs}
        if "num" not in kwargs:
            raise ValueError(f"{spec}: pass num=... (how many problems to generate)")
        records = SYNTHETIC_TASKS[source.name](split=split or "train", **kwargs)
        return LoadResult(records)
    if synthetic_kwargs:
        raise ValueError(f"{spec}: options {sorted(synthetic_kwargs)} apply to synthetic "
                         "sources only")
    rows = _read_rows(source, split)
    records, bad_rows, used_schema = _to_records(rows, spec, schema, columns)
    if bad_rows and on_bad_rows == "fail":
        raise BadRowsError(bad_rows, spec)
    return LoadResult(records, bad_rows, used_schema)


# One raw row: (our split, position, unit of the position, the row or why it is unreadable).
RawRow = tuple[str, int, str, Any]


def _read_rows(source: SourceSpec, split: str | None) -> Iterator[RawRow]:
    if source.kind == "jsonl":
        return _read_jsonl(Path(source.name), split or "train")
    if source.kind == "parquet":
        return _read_parquet(Path(source.name), split or "train")
    return _read_hub(source, split)


def _read_jsonl(path: Path, split: str) -> Iterator[RawRow]:
    if not path.is_file():
        raise FileNotFoundError(f"jsonl source {path} does not exist")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield split, number, "line", json.loads(line)
            except json.JSONDecodeError as error:
                yield split, number, "line", RowError("<json>", f"invalid JSON: {error.msg}")


def _read_parquet(path: Path, split: str) -> Iterator[RawRow]:
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FileNotFoundError(f"parquet source {path} does not exist")
    for index, row in enumerate(pq.read_table(path).to_pylist()):
        yield split, index, "row", row


def _read_hub(source: SourceSpec, split: str | None) -> Iterator[RawRow]:
    import datasets  # heavy: only when a hub source is used

    path = Path(source.name)
    if path.is_file():
        builder = _DATA_FILE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise ValueError(f"hf:{path}: unknown data file type {path.suffix!r}; use one of "
                             f"{sorted(_DATA_FILE_BUILDERS)}")
        loaded = datasets.load_dataset(builder, data_files=str(path))
    else:
        loaded = datasets.load_dataset(source.name, source.config)
    for hub_split, ours in _hub_splits(list(loaded.keys()), split):
        for index, row in enumerate(loaded[hub_split]):
            yield ours, index, f"{hub_split} row", row


def _hub_splits(available: list[str], wanted: str | None) -> list[tuple[str, str]]:
    """Which hub splits to read, and our name for each."""
    evals = [name for name in HUB_EVAL_SPLITS if name in available][:1]
    if wanted == "eval":
        if not evals:
            raise ValueError(f"no eval split among {available}; expected one of {HUB_EVAL_SPLITS}")
        return [(evals[0], "eval")]
    if wanted == "train" or not evals:
        trains = ["train"] if "train" in available else available[:1]
        return [(name, "train") for name in trains]
    both = [("train", "train")] if "train" in available else []
    return [*both, (evals[0], "eval")]


def _to_records(rows: Iterator[RawRow], spec: str, schema: str,
                columns: Mapping[str, str] | None) -> tuple[list[Record], list[BadRow], str]:
    records: list[Record] = []
    bad_rows: list[BadRow] = []
    used = schema
    for our_split, position, unit, row in rows:
        if isinstance(row, RowError):
            bad_rows.append(BadRow(position, row.field, row.reason, unit))
            continue
        if used == "auto" and isinstance(row, Mapping):
            used = "generic" if columns else detect_schema(row)
        try:
            records.append(record_from_row(row, schema=used if used != "auto" else "generic",
                                           source=spec, split=our_split, columns=columns))
        except RowError as error:
            bad_rows.append(BadRow(position, error.field, error.reason, unit))
    return records, bad_rows, used
