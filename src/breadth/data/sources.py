"""Load records from one source spec: synthetic:TASK, jsonl:PATH, parquet:PATH, hf:NAME[:CONFIG].

`hf:` goes through `datasets.load_dataset`, which takes a hub name or a local path alike (a
local data file is loaded with the builder its extension names). Rows that cannot become
records are reported with their line (jsonl:, from 1) or row index (parquet: and hf:, from 0, as
pandas and datasets number them: a CSV header and blank lines not counted, so a JSON Lines file
read through hf: has rows, not lines; see `records.row_numbering`) and their own id column if
they have one, and, by default, stop the load with a `BadRowsError`; with on_bad_rows="skip"
they are dropped and returned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadth.data.generators import get_task, synthetic_task_names
from breadth.data.records import BadRow, BadRowsError, Record, RowOrigin, check_on_bad_rows
from breadth.data.schemas import SCHEMAS, RowError, detect_schema, record_from_row, row_id

SOURCE_KINDS = ("synthetic", "jsonl", "parquet", "hf")
HUB_EVAL_SPLITS = ("test", "validation", "valid", "dev", "eval")
"""Hub split names read as our "eval" split, in order of preference."""
_DATA_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
_SPEC_HELP = ("synthetic:TASK (TASK one of {tasks}), jsonl:PATH, parquet:PATH, "
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
        tasks = ", ".join(synthetic_task_names())
        raise ValueError(f"source spec {spec!r} is not one of: {_SPEC_HELP.format(tasks=tasks)}")
    if kind == "synthetic" and rest not in synthetic_task_names():
        raise ValueError(f"unknown synthetic task {rest!r}; known: "
                         f"{sorted(synthetic_task_names())}")
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
    named_splits: tuple[str, ...] = ()
    """Our split names ("train", "eval") that came from the source's own split names (a hub
    data set's or a folder's train/test); () for single files and synthetic sources."""


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
        records = get_task(source.name).generate(split=split or "train", **kwargs)
        return LoadResult(records)
    if synthetic_kwargs:
        raise ValueError(f"{spec}: options {sorted(synthetic_kwargs)} apply to synthetic "
                         "sources only")
    named: list[str] = []
    rows = _read_rows(source, split, named)
    records, bad_rows, used_schema, fields = _to_records(rows, spec, schema, columns)
    if bad_rows and on_bad_rows == "fail":
        raise BadRowsError(bad_rows, spec, _one_cause(records, bad_rows, used_schema, fields))
    return LoadResult(records, bad_rows, used_schema, tuple(named))


def _one_cause(records: list[Record], bad_rows: list[BadRow], schema: str, fields: set[str]) -> str:
    """When every row lacks the same field, say so once, with the fields the rows do have:
    one error per row, and the hint to skip them all, would hide the one cause."""
    missing = {row.field for row in bad_rows if row.reason == "missing"}
    if records or len(missing) != 1 or any(row.reason != "missing" for row in bad_rows):
        return ""
    return (f"no row has the field {missing.pop()!r} that the {schema!r} schema reads; the rows "
            f"have {sorted(fields)}: rename the columns, or pick the schema that matches them "
            "(data.schema_name / --schema)")


class SourceError(ValueError):
    """A source that cannot be read at all (missing, unreachable); the message says the fix.
    `permanent` is False for a hub that failed on the network: a retry may get through."""

    permanent = True


# One raw row: (our split, position, unit of the position, the row or why it is unreadable).
RawRow = tuple[str, int, str, Any]


def _read_rows(source: SourceSpec, split: str | None, named: list[str]) -> Iterator[RawRow]:
    if source.kind == "jsonl":
        return _read_jsonl(Path(source.name), split or "train")
    if source.kind == "parquet":
        return _read_parquet(Path(source.name), split or "train")
    return _read_hub(source, split, named)


def _read_jsonl(path: Path, split: str) -> Iterator[RawRow]:
    if not path.is_file():
        raise SourceError(f"jsonl source {path} is not a file{_missing_hint(path)}")
    number = 0
    try:
        with path.open(encoding="utf-8-sig") as lines:  # a BOM (Windows editors) is not data
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    yield split, number, "line", json.loads(line)
                except json.JSONDecodeError as error:
                    yield split, number, "line", RowError("<json>", f"invalid JSON: {error.msg}")
    except UnicodeDecodeError:
        raise SourceError(f"jsonl source {path} is not UTF-8 text (line {number + 1}): is it "
                          "a binary file? Parquet files take parquet:PATH") from None


def _missing_hint(path: Path) -> str:
    if path.is_dir():
        return " but a folder: read a folder of split files with hf:PATH"
    return " (it does not exist): check the path, relative to the current directory"


def _read_parquet(path: Path, split: str) -> Iterator[RawRow]:
    import pyarrow.parquet as pq

    if not path.is_file():
        raise SourceError(f"parquet source {path} is not a file{_missing_hint(path)}")
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise SourceError(f"parquet source {path} cannot be read as parquet: {error}") from None
    for index, row in enumerate(table.to_pylist()):
        yield split, index, "row", row


def _read_hub(source: SourceSpec, split: str | None, named: list[str]) -> Iterator[RawRow]:
    path = Path(source.name)
    if path.is_file():
        builder = _DATA_FILE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise SourceError(f"hf:{path}: unknown data file type {path.suffix!r}; use one of "
                              f"{sorted(_DATA_FILE_BUILDERS)}")
        loaded = _load_hub(builder, None, data_files=str(path))
    else:
        loaded = _load_hub(source.name, source.config)
    chosen = _hub_splits(list(loaded.keys()), split)
    if not path.is_file():  # a single data file has no split names of its own
        named.extend(ours for _, ours in chosen)
    for hub_split, ours in chosen:
        # A single file's "train" split is the builder's name, not the user's: it is rows.
        unit = "row" if path.is_file() else f"{hub_split} row"
        for index, row in enumerate(loaded[hub_split]):
            yield ours, index, unit, row


def _load_hub(name: str, config: str | None, **kwargs: Any) -> Any:
    import datasets  # heavy: only when a hub source is used

    # Local files load in a blink; their progress bars would only bury the summary.
    quiet = bool(kwargs.get("data_files") or Path(name).exists())
    bars_were_on = datasets.is_progress_bar_enabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        return datasets.load_dataset(name, config, **kwargs)
    except Exception as error:  # noqa: BLE001 - datasets raises many kinds; one message for all
        reason = " ".join(str(error).split())[:300] or type(error).__name__
        failure = SourceError(
            f"hf:{name}{':' + config if config else ''} could not be loaded "
            f"({type(error).__name__}: {reason}). If the hub is unreachable (offline, or "
            "HF_DATASETS_OFFLINE=1 without a cached copy), download it once with network "
            "access, or point the source at a local copy: jsonl:PATH, parquet:PATH or "
            "hf:/path/to/folder."
        )
        # Network errors (requests' and the hub's are OSErrors) may pass; "not found" will not.
        failure.permanent = not isinstance(error, OSError) or isinstance(error, FileNotFoundError)
        raise failure from None
    finally:
        if quiet and bars_were_on:
            datasets.enable_progress_bars()


def _hub_splits(available: list[str], wanted: str | None) -> list[tuple[str, str]]:
    """Which hub splits to read, and our name for each."""
    evals = [name for name in HUB_EVAL_SPLITS if name in available][:1]
    if wanted == "eval":
        if not evals:
            raise SourceError(f"no eval split among {available}; expected one of "
                              f"{HUB_EVAL_SPLITS}")
        return [(evals[0], "eval")]
    if wanted == "train" and "train" not in available and evals:
        # Reading the test split as training data would leak it.
        raise SourceError(f"no train split among {available}, only {evals[0]!r}")
    if wanted == "train" or not evals:
        trains = ["train"] if "train" in available else available[:1]
        return [(name, "train") for name in trains]
    both = [("train", "train")] if "train" in available else []
    return [*both, (evals[0], "eval")]


def _to_records(rows: Iterator[RawRow], spec: str, schema: str,
                columns: Mapping[str, str] | None
                ) -> tuple[list[Record], list[BadRow], str, set[str]]:
    """(records, bad rows, the schema used, the first row's fields)."""
    records: list[Record] = []
    bad_rows: list[BadRow] = []
    used = schema
    fields: set[str] = set()
    for our_split, position, unit, row in rows:
        origin = RowOrigin(position, unit, row_id(row))
        if isinstance(row, RowError):
            bad_rows.append(BadRow.at(origin, row.field, row.reason))
            continue
        if not fields and isinstance(row, Mapping):
            fields = set(row)
        if used == "auto" and isinstance(row, Mapping):
            used = "generic" if columns else detect_schema(row)
        try:
            records.append(record_from_row(row, schema=used if used != "auto" else "generic",
                                           source=spec, split=our_split, columns=columns,
                                           origin=origin))
        except RowError as error:
            bad_rows.append(BadRow.at(origin, error.field, error.reason))
    return records, bad_rows, used, fields
