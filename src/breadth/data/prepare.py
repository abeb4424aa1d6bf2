"""Prepare a data set: load records, split, render in one format, write parquet + manifest.

Output (the directory is what the pipeline stores content-addressed by `content_hash`):

    out_dir/train.parquet   rendered rows (see formats.render), one per problem
    out_dir/eval.parquet
    out_dir/manifest.json   counts, content hash, source, format, seed, bad rows, file checksums

The content hash is a sha256 over the canonical JSON of every row (train then eval), so the
same inputs give the same hash on every run and any change in rows, format or reasoning gives
another. The manifest holds no timestamps for the same reason. It is written last: a
directory with a manifest is complete.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from breadth.data.formats import FORMATS, RenderError, render
from breadth.data.records import BadRow, BadRowsError, Record, check_on_bad_rows
from breadth.data.sources import load_records, parse_source_spec

MANIFEST_VERSION = 1
"""Bump when the row shape or rendering changes: it is hashed into `content_hash`."""
DEFAULT_EVAL_FRACTION = 0.1
DEFAULT_SYNTHETIC_TRAIN = 1000
DEFAULT_SYNTHETIC_EVAL = 200
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
    """Share of a single-split file source held out for eval (by record id hash)."""
    on_bad_rows: str
    bad_rows_count: int
    bad_rows: list[dict[str, Any]]
    """The skipped rows (the first MAX_BAD_ROWS_IN_MANIFEST), each unit, line, field, reason."""
    duplicates_dropped: int
    """Records dropped because an earlier one had the same id (same source, question, answer)."""
    files: dict[str, dict[str, Any]]
    """Per file: sha256, bytes and rows, to verify uploads and downloads."""
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
    columns: Mapping[str, str] | None = None,
) -> Manifest:
    """Write out_dir/{train,eval}.parquet and manifest.json; return the manifest.

    Synthetic sources generate num_train / num_eval problems (defaults 1000 / 200) from
    disjoint halves of the problem space. File and hub sources keep their own train/test
    splits when they have both; otherwise eval_fraction of the records (chosen by a hash of
    the record id, so stable under reordering) is held out. num_train / num_eval then cap
    each split with a seeded sample (None: everything).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     m = prepare_dataset("synthetic:arithmetic", fmt="mcq", out_dir=tmp, seed=0,
    ...                         num_train=8, num_eval=2, difficulty=2)
    >>> m.counts, len(m.content_hash)
    ({'train': 8, 'eval': 2}, 64)
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    check_on_bad_rows(on_bad_rows)
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be between 0 and 1, got {eval_fraction}")
    source = parse_source_spec(spec)
    bad_rows: list[BadRow] = []
    duplicates = 0
    if source.kind == "synthetic":
        used_schema = "synthetic"
        splits = {
            name: load_records(spec, split=name, num=count, seed=seed,
                               difficulty=difficulty).records
            for name, count in (("train", _or(num_train, DEFAULT_SYNTHETIC_TRAIN)),
                                ("eval", _or(num_eval, DEFAULT_SYNTHETIC_EVAL)))
        }
    else:
        loaded = load_records(spec, schema=schema, on_bad_rows=on_bad_rows, columns=columns)
        used_schema, bad_rows = loaded.schema, list(loaded.bad_rows)
        unique, duplicates = _drop_duplicates(loaded.records)
        splits = _split(unique, eval_fraction)
        splits = {"train": _sample(splits["train"], num_train, seed, "train"),
                  "eval": _sample(splits["eval"], num_eval, seed, "eval")}

    rows, render_bad = _render_all(splits, fmt, reasoning)
    bad_rows += render_bad
    if render_bad and on_bad_rows == "fail":
        raise BadRowsError(render_bad, f"{spec} (rendered as {fmt})")

    out = Path(out_dir)
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
        duplicates_dropped=duplicates, files=files,
    )
    (out / "manifest.json").write_text(manifest.to_json(), encoding="utf-8")
    return manifest


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _drop_duplicates(records: list[Record]) -> tuple[list[Record], int]:
    seen: set[str] = set()
    unique = []
    for record in records:
        if record.id not in seen:
            seen.add(record.id)
            unique.append(record)
    return unique, len(records) - len(unique)


def _split(records: list[Record], eval_fraction: float) -> dict[str, list[Record]]:
    if any(r.split == "eval" for r in records) and any(r.split == "train" for r in records):
        return {name: [r for r in records if r.split == name] for name in ("train", "eval")}
    splits: dict[str, list[Record]] = {"train": [], "eval": []}
    for record in records:
        name = "eval" if _hash_unit(record.id) < eval_fraction else "train"
        splits[name].append(record if record.split == name else
                            dataclasses.replace(record, split=name))
    return splits


def _hash_unit(record_id: str) -> float:
    digest = hashlib.sha256(f"split:{record_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _sample(records: list[Record], count: int | None, seed: int, name: str) -> list[Record]:
    if count is None or count >= len(records):
        return records
    if count < 0:
        raise ValueError(f"num_{name} must be >= 0, got {count}")
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}|{name}".encode()).digest()[:8],
                                       "big"))
    keep = sorted(rng.sample(range(len(records)), count))  # source order is kept
    return [records[i] for i in keep]


def _render_all(splits: dict[str, list[Record]], fmt: str, reasoning: bool
                ) -> tuple[dict[str, list[dict[str, Any]]], list[BadRow]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    bad: list[BadRow] = []
    for name, records in splits.items():
        rows[name] = []
        for index, record in enumerate(records, start=1):
            try:
                rows[name].append(render(record, fmt, reasoning=reasoning))
            except RenderError as error:
                bad.append(BadRow(index, "answer", str(error), unit=f"{name} record"))
    return rows, bad


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
