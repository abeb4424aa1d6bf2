"""Which records train and which evaluate: a source's own splits, a separate eval source, an
eval-only source, or a stable hash of the record id; then optional seeded limits.

Nothing here drops a record silently: every rule that leaves records out says how many, and
`prepare_dataset` writes those counts into the manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from dataclasses import dataclass, field
from typing import TypeVar

from breadth.data.extraction import normalize_option
from breadth.data.records import Record

T = TypeVar("T")


class SplitError(ValueError):
    """A source whose rows cannot be split as asked (the message names the source and the fix)."""


@dataclass
class Splits:
    """Train and eval records, and what the split rules left out (for the manifest)."""

    train: list[Record] = field(default_factory=list)
    eval: list[Record] = field(default_factory=list)
    origin: str = "hash"
    """How the split was made: "source splits", "hash", "eval source", "eval only", "synthetic"."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Records not used, by reason (e.g. {"source eval split (eval_source given)": 1319})."""

    def counts(self) -> dict[str, int]:
        return {"train": len(self.train), "eval": len(self.eval)}


def split_source(records: list[Record], named: tuple[str, ...], *, spec: str,
                 eval_fraction: float, eval_only: bool) -> Splits:
    """Split one source's records (no separate eval source).

    - eval_only: every record evaluates (of a source with its own eval split, only that split);
    - a source with its own train and eval splits keeps them;
    - a source with only an eval split (a folder holding test.jsonl) is a test set: refused
      unless eval_only, so it cannot leak into training;
    - otherwise `eval_fraction` of the records, chosen by a hash of the record id (stable under
      reordering), evaluate; each split gets at least one record when there are two or more.
    """
    own_train = [r for r in records if r.split == "train"]
    own_eval = [r for r in records if r.split == "eval"]
    if eval_only:
        if "eval" in named:
            left = {"source train split (eval only)": len(own_train)} if own_train else {}
            return Splits([], own_eval, "eval only", left)
        return Splits([], [_as(r, "eval") for r in records], "eval only")
    if "eval" in named:
        if not own_train:
            raise SplitError(
                f"source {spec} holds only an evaluation split ({len(own_eval)} rows) and no "
                "train split. Re-splitting it would train on the test set: evaluate on it with "
                "--eval-only (data.eval_only=true), or give training problems in --source and "
                "this one as --eval-source (data.eval_source)."
            )
        return Splits(own_train, own_eval, "source splits")
    return _hash_split(records, eval_fraction)


def split_with_eval_source(train_records: list[Record], train_named: tuple[str, ...],
                           eval_records: list[Record], eval_named: tuple[str, ...]) -> Splits:
    """Train from one source, eval from another. A source's own other split is left out
    (counted), and training problems whose question also appears in the eval source are
    dropped from training (counted) so the test set cannot leak in."""
    left: dict[str, int] = {}
    train = [r for r in train_records if r.split == "train"] if "eval" in train_named else [
        _as(r, "train") for r in train_records]
    if len(train) < len(train_records):
        left["source eval split (eval_source given)"] = len(train_records) - len(train)
    evaluate = [r for r in eval_records if r.split == "eval"] if "eval" in eval_named else [
        _as(r, "eval") for r in eval_records]
    if len(evaluate) < len(eval_records):
        left["eval source train split"] = len(eval_records) - len(evaluate)
    questions = {normalize_option(r.question) for r in evaluate}
    kept = [r for r in train if normalize_option(r.question) not in questions]
    if len(kept) < len(train):
        left["train questions also in the eval source"] = len(train) - len(kept)
    return Splits(kept, evaluate, "eval source", left)


def _as(record: Record, split: str) -> Record:
    return record if record.split == split else dataclasses.replace(record, split=split)


def _hash_split(records: list[Record], eval_fraction: float) -> Splits:
    ranked = sorted(records, key=lambda r: _hash_unit(r.id))
    cut = sum(1 for r in ranked if _hash_unit(r.id) < eval_fraction)
    if len(ranked) >= 2:
        cut = min(max(cut, 1), len(ranked) - 1)
    chosen = {r.id for r in ranked[:cut]}
    # Source order is kept within each split.
    return Splits([_as(r, "train") for r in records if r.id not in chosen],
                  [_as(r, "eval") for r in records if r.id in chosen], "hash")


def _hash_unit(record_id: str) -> float:
    digest = hashlib.sha256(f"split:{record_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def empty_message(spec: str, bad_rows: int) -> str:
    """Why a source gave no records at all, and what to check."""
    skipped = f" ({bad_rows} bad rows were skipped)" if bad_rows else ""
    return (f"source {spec} has no usable rows{skipped}: the file or split is empty or blank. "
            "Check the path, or the schema (--schema / data.schema_name).")


def check_not_empty(available: dict[str, int], spec: str, eval_source: str | None,
                    eval_only: bool, bad_rows: int) -> None:
    """Refuse a data set that would leave evaluation (or, unless eval-only, training) empty."""
    if available["eval"] == 0:
        where = f"eval source {eval_source}" if eval_source else f"source {spec}"
        raise SplitError(
            f"no evaluation problems: {where} left 0 rows for the eval split"
            + (f" ({bad_rows} bad rows skipped)" if bad_rows else "")
            + ". Give more rows, raise data.eval_fraction, or name an eval source "
            "(--eval-source / data.eval_source)."
        )
    if available["train"] == 0 and not eval_only:
        raise SplitError(
            f"no training problems: source {spec} left 0 rows for the train split"
            + (f" ({bad_rows} bad rows skipped)" if bad_rows else "")
            + ". Give training rows, or evaluate only (--eval-only / data.eval_only=true)."
        )


def limit(records: list[T], count: int | None, seed: int, name: str) -> list[T]:
    """A seeded sample of `count` records in source order (None or more than there are: all).

    >>> from breadth.data.records import Record
    >>> rows = [Record.create(source="s", split="train", question=str(n), answer="1")
    ...         for n in range(5)]
    >>> [r.question for r in limit(rows, 3, 0, "train")] == [r.question for r in
    ...                                                      limit(rows, 3, 0, "train")]
    True
    """
    if count is None or count >= len(records):
        return records
    if count < 0:
        raise ValueError(f"num_{name} must be >= 0, got {count}")
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}|{name}".encode()).digest()[:8],
                                       "big"))
    keep = sorted(rng.sample(range(len(records)), count))
    return [records[i] for i in keep]
