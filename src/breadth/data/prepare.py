"""Prepare a data set: load records, split, render in one format, write parquet + manifest.

Output (the directory is what the pipeline stores content-addressed by `content_hash`):

    out_dir/train.parquet   rendered rows (see formats.render), one per problem
    out_dir/eval.parquet
    out_dir/manifest.json   counts, content hash, source, format, seed, bad rows, file checksums,
                            distinct problems per split and the leakage shares (0 by construction)

The content hash is a sha256 over the canonical JSON of every row (train then eval), so the
same inputs give the same hash on every run and any change in rows, format or reasoning gives
another. The manifest holds no timestamps for the same reason. It is written last: a
directory with a manifest is complete.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from breadth.data.formats import DEFAULT_NUM_OPTIONS, RenderError, render
from breadth.data.generators import problem_key
from breadth.data.records import (
    FORMATS,
    RENDERINGS,
    BadRow,
    BadRowsError,
    Record,
    RowOrigin,
    check_on_bad_rows,
)
from breadth.data.sources import LoadResult, load_records, parse_source_spec
from breadth.data.splits import (
    SplitError,
    Splits,
    check_not_empty,
    empty_message,
    limit,
    split_source,
    split_with_eval_source,
)

MANIFEST_VERSION = 2
"""Bump when the row shape or rendering changes: it is hashed into `content_hash`."""
DEFAULT_EVAL_FRACTION = 0.1
SYNTHETIC_NUM_TRAIN = 4000
"""Training problems a synthetic source generates when no number is given."""
SYNTHETIC_NUM_EVAL = 64
"""Evaluation problems a synthetic source generates when no number is given."""
MAX_BAD_ROWS_IN_MANIFEST = 1000
ROW_COLUMNS = ("id", "source", "split", "question", "answer", "choices", "solution",
               "difficulty", "task", "meta", "problem_id", "format", "prompt", "target",
               "options", "letter")


@dataclass(frozen=True)
class Manifest:
    """What was prepared, from what, and how to recognise it again."""

    content_hash: str
    """sha256 over the canonical rows (train then eval) and MANIFEST_VERSION."""
    source: str
    """The source spec."""
    format: str
    """"mcq" or "free_form"."""
    schema: str
    """The schema used ("synthetic", "gsm8k", "aqua", "generic")."""
    seed: int
    difficulty: int | None
    """Synthetic difficulty (None: levels mixed, or a file source)."""
    reasoning: bool
    """Whether targets carry a reasoning trace."""
    counts: dict[str, int]
    """Rows written per split: {"train": n, "eval": m}."""
    eval_fraction: float
    """Share of a source without its own train/test split held out for eval (by record id hash)."""
    on_bad_rows: str
    bad_rows_count: int
    bad_rows: list[dict[str, Any]]
    """The skipped rows (the first MAX_BAD_ROWS_IN_MANIFEST), each as `BadRow.to_dict`: unit,
    line, field, reason, row_id, and source (the eval source's spec for its rows, else None)."""
    duplicates_dropped: int
    """Records dropped because an earlier one had the same id (same source, question, answer)."""
    files: dict[str, dict[str, Any]]
    """Per file: sha256, bytes and rows, to verify uploads and downloads."""
    available: dict[str, int] = dataclasses.field(default_factory=dict)
    """Records per split before the num_train / num_eval limits (after bad rows, duplicates
    and rows that cannot render are removed)."""
    limits: dict[str, int | None] = dataclasses.field(default_factory=dict)
    """The num_train / num_eval limits applied (None: every record kept)."""
    eval_source: str | None = None
    """The separate source of evaluation problems, if any."""
    split_origin: str = "hash"
    """How train and eval were chosen: "source splits", "hash", "eval source", "eval only",
    "synthetic"."""
    left_out: dict[str, int] = dataclasses.field(default_factory=dict)
    """Records the split rules did not use, by reason (e.g. a source's test split when a
    separate eval source is given)."""
    characters: dict[str, int] = dataclasses.field(default_factory=dict)
    """Characters of the written prompts and targets outside printable ASCII (newline aside),
    with their counts: what a model's tokenizer may not know. Prepare knows no model and keeps
    them as they are; a run says which its model reads as another spelling or not at all
    (docs/guide/data-fit.md)."""
    problems: dict[str, int] = dataclasses.field(default_factory=dict)
    """Distinct problems (keys, `breadth.data.generators.problem_key`) per split written: eval
    holds each key once; train may hold several wordings of one key."""
    leakage: dict[str, float] = dataclasses.field(default_factory=dict)
    """Share of the eval problems whose key is also a training problem's: "train" (the whole
    train split) and "grpo_pool" (the rows GRPO draws its prompts from: train.parquet, of which
    it takes the first rl.num_problems, so its share is at most this one). Both are 0: the
    splits keep a key on one side, and prepare refuses to write a data set where they are not."""
    rendering: str = "compact"
    """How problems are worded: "compact" (the character model's) or "natural" (in words, for
    an instruct model)."""
    version: int = MANIFEST_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        """Read a manifest.json (or the manifest of a prepared directory)."""
        path = Path(path)
        if path.is_dir():
            path = path / "manifest.json"
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def prepare_dataset(
    spec: str,
    *,
    fmt: str,
    out_dir: str | Path,
    seed: int = 0,
    num_train: int | None = None,
    num_eval: int | None = None,
    difficulty: int | None = 1,
    schema: str = "auto",
    on_bad_rows: str = "fail",
    reasoning: bool = False,
    eval_fraction: float = DEFAULT_EVAL_FRACTION,
    eval_source: str | None = None,
    eval_only: bool = False,
    columns: Mapping[str, str] | None = None,
    num_options: int = DEFAULT_NUM_OPTIONS,
    mixed_fill: bool = False,
    rendering: str = "compact",
) -> Manifest:
    """Write out_dir/{train,eval}.parquet and manifest.json; return the manifest.

    Synthetic sources generate num_train / num_eval problems (None: SYNTHETIC_NUM_TRAIN /
    SYNTHETIC_NUM_EVAL) from disjoint halves of the problem space. File and hub sources keep
    every row unless num_train / num_eval are given (then a seeded sample of each split); the
    split follows `splits.split_source` (own train/test splits, else an id hash with
    eval_fraction), or takes eval rows from `eval_source`, or, with `eval_only`, makes every
    row an evaluation problem. An empty result is an error, never a 0-row data set. Mixed
    synthetic difficulty (difficulty None) takes an equal share per level, and a level short
    of its share is an error unless `mixed_fill` lets the next level make up the difference.
    `rendering` words the prompts and targets ("compact" or "natural", `formats.render`).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     m = prepare_dataset("synthetic:arithmetic", fmt="mcq", out_dir=tmp, seed=0,
    ...                         num_train=8, num_eval=2, difficulty=2)
    >>> m.counts, len(m.content_hash)
    ({'train': 8, 'eval': 2}, 64)
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if rendering not in RENDERINGS:
        raise ValueError(f"rendering must be one of {RENDERINGS}, got {rendering!r}")
    check_on_bad_rows(on_bad_rows)
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be between 0 and 1, got {eval_fraction}")
    if eval_only and eval_source:
        raise ValueError("eval_only and eval_source exclude each other: eval_only makes the "
                         "source itself the evaluation set; give one of them")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} is a file: give a folder path (it is created "
                         "if missing)")
    source = parse_source_spec(spec)
    bad_rows: list[BadRow] = []
    options = _LoadOptions(spec, schema, on_bad_rows, columns, bad_rows)
    if source.kind == "synthetic":
        used_schema, duplicates = "synthetic", 0
        counts = {"train": 0 if eval_only else _or(num_train, SYNTHETIC_NUM_TRAIN),
                  "eval": None if eval_source else _or(num_eval, SYNTHETIC_NUM_EVAL)}
        generated = {name: load_records(spec, split=name, num=count, seed=seed,
                                        difficulty=difficulty, fill=mixed_fill).records
                     if count else []
                     for name, count in counts.items()}
        splits = Splits(generated["train"], generated["eval"], "synthetic")
        if eval_source:
            evaluation = options.load(eval_source)
            splits = split_with_eval_source(splits.train, (), evaluation.records,
                                            evaluation.named_splits)
    else:
        loaded = options.load(spec)
        used_schema = loaded.schema
        unique, duplicates, conflicts = _drop_duplicates(loaded.records)
        bad_rows += conflicts
        if conflicts and on_bad_rows == "fail":
            raise BadRowsError(conflicts, spec, CONFLICT_FIX)
        if eval_source:
            evaluation = options.load(eval_source)
            splits = split_with_eval_source(unique, loaded.named_splits, evaluation.records,
                                            evaluation.named_splits)
        elif not unique:
            raise SplitError(empty_message(spec, len(bad_rows)))
        else:
            splits = split_source(unique, loaded.named_splits, spec=spec,
                                  eval_fraction=eval_fraction, eval_only=eval_only)
        counts = {"train": None, "eval": None}

    rows, render_bad = _render_all({"train": splits.train, "eval": splits.eval}, fmt, reasoning,
                                   num_options, spec, rendering)
    bad_rows += render_bad
    if render_bad and on_bad_rows == "fail":
        raise BadRowsError(render_bad, spec, rendered_as=fmt)
    available = {name: len(rows[name]) for name in ("train", "eval")}
    check_not_empty(available, spec, eval_source, eval_only, len(bad_rows))
    # Generated splits have their size already; rows read from a file or hub are limited here.
    limits = {"train": num_train, "eval": num_eval}
    for name in ("train", "eval"):
        if counts[name] is None:
            rows[name] = limit(rows[name], limits[name], seed, name)
        else:
            limits[name] = counts[name]

    problems, leakage = leakage_shares(rows["train"], rows["eval"],
                                       {r.id: r for r in splits.train + splits.eval})
    out.mkdir(parents=True, exist_ok=True)
    files = {f"{name}.parquet": write_rows(rows[name], out / f"{name}.parquet")
             for name in ("train", "eval")}
    manifest = Manifest(
        content_hash=content_hash(rows["train"], rows["eval"]),
        source=spec, format=fmt, schema=used_schema, seed=seed,
        difficulty=difficulty if source.kind == "synthetic" else None,
        reasoning=reasoning,
        counts={name: len(rows[name]) for name in ("train", "eval")},
        eval_fraction=eval_fraction, on_bad_rows=on_bad_rows,
        bad_rows_count=len(bad_rows),
        bad_rows=[row.to_dict() for row in bad_rows[:MAX_BAD_ROWS_IN_MANIFEST]],
        duplicates_dropped=duplicates, files=files, available=available, limits=limits,
        eval_source=eval_source, split_origin=splits.origin, left_out=splits.left_out,
        characters=unusual_characters(rows["train"] + rows["eval"]),
        problems=problems, leakage=leakage, rendering=rendering,
    )
    (out / "manifest.json").write_text(manifest.to_json(), encoding="utf-8")
    return manifest


class LeakageError(RuntimeError):
    """Eval problems whose key is also in train: a task's `problem_key` or a split rule is
    wrong (a bug, never the user's data)."""


def leakage_shares(train_rows: list[dict[str, Any]], eval_rows: list[dict[str, Any]],
                   records: Mapping[str, Record]) -> tuple[dict[str, int], dict[str, float]]:
    """(distinct problems per split, share of eval problems whose key is in train and in GRPO's
    pool) for the rows written; `records` maps each row's id to its record. A share above 0
    raises `LeakageError` naming the problems: such a data set is never written.

    >>> def row(question):
    ...     return Record.create(source="synthetic:arithmetic", split="train", answer="0",
    ...                          question=question, task="arithmetic")
    >>> train, evaluation = [row("3+4"), row("4+3")], [row("5+6")]
    >>> leakage_shares([{"id": r.id} for r in train], [{"id": r.id} for r in evaluation],
    ...                {r.id: r for r in train + evaluation})
    ({'train': 1, 'eval': 1}, {'train': 0.0, 'grpo_pool': 0.0})
    """
    train_keys = {problem_key(records[row["id"]]) for row in train_rows}
    eval_keys = [problem_key(records[row["id"]]) for row in eval_rows]
    leaked = [key for key in eval_keys if key in train_keys]
    share = len(leaked) / len(eval_keys) if eval_keys else 0.0
    if leaked:
        raise LeakageError(
            f"{len(leaked)} of {len(eval_keys)} eval problems ({share:.1%}) are also training "
            f"problems (same key), e.g. {leaked[:3]}: a task's problem_key or a split rule "
            "keeps a key on both sides; this is a bug to report, not a setting to change")
    # GRPO draws from train.parquet (its first rl.num_problems rows): the largest pool is the
    # whole train split, and a smaller one shares no more.
    return ({"train": len(train_keys), "eval": len(set(eval_keys))},
            {"train": share, "grpo_pool": share})


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


@dataclass(frozen=True)
class _LoadOptions:
    """How file and hub sources are read; every source's bad rows collect in `bad_rows`."""

    spec: str
    """The main source: the eval source's bad rows name their own."""
    schema: str
    on_bad_rows: str
    columns: Mapping[str, str] | None
    bad_rows: list[BadRow]

    def load(self, spec: str) -> LoadResult:
        if parse_source_spec(spec).kind == "synthetic":
            raise ValueError(f"eval source {spec}: synthetic problems cannot be an eval "
                             "source; give a file or hub source, or leave the eval source empty")
        loaded = load_records(spec, schema=self.schema, on_bad_rows=self.on_bad_rows,
                              columns=self.columns)
        self.bad_rows.extend(_in_source(row, spec, self.spec) for row in loaded.bad_rows)
        return loaded


def _in_source(bad: BadRow, source: str, main: str) -> BadRow:
    """A bad row as a report or manifest about `main` lists it: a row of another source (the
    eval source) names that source, or its line would be looked for in the wrong file."""
    return bad if source == main else dataclasses.replace(bad, source=source)


def _drop_duplicates(records: list[Record]) -> tuple[list[Record], int, list[BadRow]]:
    """(unique records, exact repeats dropped, conflicts). A repeat (same id) is dropped and
    counted. A problem (same question and choices) given with different answers is a bad row
    in every one of its records: which label is right cannot be known, and keeping them would
    train and score the model against contradicting targets.

    Linear in the records: each problem's answers are counted once, and each conflict message
    is built once per (problem, answer) and names at most `_OTHERS_NAMED` other rows."""
    located = [(record.origin or RowOrigin(position, "record"), record)
               for position, record in enumerate(records, start=1)]
    problems: dict[tuple[str, tuple[str, ...]], list[tuple[RowOrigin, Record]]] = {}
    for origin, record in located:
        problems.setdefault((record.question, record.choices), []).append((origin, record))
    answers = {key: Counter(record.answer for _, record in group)
               for key, group in problems.items()}
    reasons: dict[tuple[tuple[str, tuple[str, ...]], str], str] = {}
    seen: set[str] = set()
    unique, conflicts, repeats = [], [], 0
    for origin, record in located:
        key = (record.question, record.choices)
        if len(answers[key]) > 1:
            reason = reasons.get((key, record.answer))
            if reason is None:
                reason = _conflict(record, problems[key], answers[key])
                reasons[(key, record.answer)] = reason
            conflicts.append(BadRow.at(origin, "answer", reason))
        elif record.id in seen:
            repeats += 1
        else:
            seen.add(record.id)
            unique.append(record)
    return unique, repeats, conflicts


CONFLICT_FIX = ("a question is given different answers in these rows: correct the wrong answer "
                "in the source, or delete its row (an exact repeat is dropped, not an error); "
                "or pass --on-bad-rows skip to drop every row of such a question")
_OTHERS_NAMED = 3
"""How many rows with another answer a conflict names before it says "and N more"."""


def _conflict(record: Record, same_question: list[tuple[RowOrigin, Record]],
              answers: Counter[str]) -> str:
    """Why a row is a conflict: its answer, and where the other answers to its question are
    (the first `_OTHERS_NAMED` such rows, then how many more)."""
    others = list(islice(((origin, other) for origin, other in same_question
                          if other.answer != record.answer), _OTHERS_NAMED))
    listed = "; ".join(f"{origin} answers {other.answer!r}" for origin, other in others)
    more = len(same_question) - answers[record.answer] - len(others)
    listed += f"; and {more} more" if more > 0 else ""
    return f"answers {record.answer!r} to {record.question[:60]!r}, but {listed}"


def _render_all(splits: dict[str, list[Record]], fmt: str, reasoning: bool, num_options: int,
                spec: str, rendering: str) -> tuple[dict[str, list[dict[str, Any]]], list[BadRow]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    bad: list[BadRow] = []
    for name, records in splits.items():
        rows[name] = []
        for index, record in enumerate(records, start=1):
            try:
                rows[name].append(render(record, fmt, reasoning=reasoning, num_options=num_options,
                                         rendering=rendering))
            except RenderError as error:
                # A generated record has no row in a file: its place in the split stands in.
                origin = record.origin or RowOrigin(index, f"{name} record")
                bad.append(_in_source(BadRow.at(origin, "answer", error.reason), record.source,
                                      spec))
    return rows, bad


def unusual_characters(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Characters of the rows' prompts and targets outside printable ASCII (newline aside),
    with their counts, most frequent first.

    >>> unusual_characters([{"prompt": "It\u2019s 5\u00b0", "target": "5\u00b0"}])
    {'\xb0': 2, '\u2019': 1}
    """
    counts = Counter(char for row in rows for part in ("prompt", "target")
                     for char in str(row[part]) if not (char.isascii() and char.isprintable())
                     and char != "\n")
    return dict(counts.most_common())


def content_hash(train_rows: list[dict[str, Any]], eval_rows: list[dict[str, Any]]) -> str:
    """sha256 over the canonical JSON of every row, train then eval.

    >>> content_hash([{"a": 1}], []) == content_hash([{"a": 1}], [])
    True
    >>> content_hash([{"a": 1}], []) == content_hash([], [{"a": 1}])
    False
    """
    digest = hashlib.sha256(f"breadth-dataset-v{MANIFEST_VERSION}\n".encode())
    for name, rows in (("train", train_rows), ("eval", eval_rows)):
        digest.update(f"[{name}]\n".encode())
        for row in rows:
            digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False,
                                     separators=(",", ":")).encode("utf-8"))
            digest.update(b"\n")
    return digest.hexdigest()


def row_schema() -> Any:
    """The pyarrow schema of a rendered row."""
    import pyarrow as pa

    text, texts = pa.string(), pa.list_(pa.string())
    types = {"choices": texts, "options": texts, "difficulty": pa.int64()}
    return pa.schema([(name, types.get(name, text)) for name in ROW_COLUMNS])


def write_rows(rows: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """Write rendered rows as parquet (column by column, no per-row appends); return the
    file's sha256, size and row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: [row[name] for row in rows] for name in ROW_COLUMNS},
                     schema=row_schema())
    pq.write_table(table, path)
    data = path.read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "rows": len(rows)}


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A rows file (`train.parquet`, `eval.parquet`, a rollouts file) as plain dicts."""
    import pandas as pd

    frame = pd.read_parquet(path)
    rows = frame.to_dict(orient="records")
    for row in rows:
        # parquet gives numpy arrays for list columns; the verifiers expect plain lists.
        for key, value in row.items():
            if hasattr(value, "tolist") and not isinstance(value, str):
                row[key] = value.tolist()
    return rows
