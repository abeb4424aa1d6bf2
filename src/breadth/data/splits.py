"""Which records train and which evaluate: a source's own splits, a separate eval source, an
eval-only source, or a stable hash of each problem's key; then optional seeded limits.

A problem is its key (`breadth.data.generators.problem_key`: for a file or hub source, the
question's normalised text), and every rule keeps a key on one side: a hashed split moves whole
keys, and where the eval problems are given (a source's own test split, an eval source), the
training records that ask one of them are left out. An eval set holds each key once (a later
record of an eval key is left out), so no problem is counted twice.

Nothing here drops a record silently: every rule that leaves records out says how many, and
`prepare_dataset` writes those counts into the manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from dataclasses import dataclass, field
from typing import TypeVar

from breadth.data.generators import problem_key
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
    - a source with its own train and eval splits keeps them, less the training records
      that ask an eval problem (same key);
    - a source with only an eval split (a folder holding test.jsonl) is a test set: refused
      unless eval_only, so it cannot leak into training;
    - otherwise the problems (keys) of `eval_fraction` of the records, chosen by a hash of the
      key (stable under reordering), evaluate; each split gets at least one problem when there
      are two or more.
    """
    own_train = [r for r in records if r.split == "train"]
    own_eval = [r for r in records if r.split == "eval"]
    if eval_only:
        if "eval" in named:
            left = {"source train split (eval only)": len(own_train)} if own_train else {}
            return _distinct_eval(Splits([], own_eval, "eval only", left))
        return _distinct_eval(Splits([], [_as(r, "eval") for r in records], "eval only"))
    if "eval" in named:
        if not own_train:
            raise SplitError(
                f"source {spec} holds only an evaluation split ({len(own_eval)} rows) and no "
                "train split. Re-splitting it would train on the test set: evaluate on it with "
                "--eval-only (data.eval_only=true), or give training problems in --source and "
                "this one as --eval-source (data.eval_source)."
            )
        return _distinct_eval(_without_eval_keys(own_train, own_eval, "source splits", {},
                                                 "train problems also in the eval split"))
    return _distinct_eval(_hash_split(records, eval_fraction))


def split_with_eval_source(train_records: list[Record], train_named: tuple[str, ...],
                           eval_records: list[Record], eval_named: tuple[str, ...]) -> Splits:
    """Train from one source, eval from another. A source's own other split is left out
    (counted), and training problems whose key (for a file, the normalised question) is an
    eval source's problem are dropped from training (counted) so the test set cannot leak in."""
    left: dict[str, int] = {}
    train = [r for r in train_records if r.split == "train"] if "eval" in train_named else [
        _as(r, "train") for r in train_records]
    if len(train) < len(train_records):
        left["source eval split (eval_source given)"] = len(train_records) - len(train)
    evaluate = [r for r in eval_records if r.split == "eval"] if "eval" in eval_named else [
        _as(r, "eval") for r in eval_records]
    if len(evaluate) < len(eval_records):
        left["eval source train split"] = len(eval_records) - len(evaluate)
    return _distinct_eval(_without_eval_keys(train, evaluate, "eval source", left,
                                             "train questions also in the eval source"))


def _without_eval_keys(train: list[Record], evaluate: list[Record], origin: str,
                       left: dict[str, int], reason: str) -> Splits:
    """The split with every training record that asks an eval problem (same key) left out,
    counted under `reason`."""
    keys = {problem_key(r) for r in evaluate}
    kept = [r for r in train if problem_key(r) not in keys]
    if len(kept) < len(train):
        left = {**left, reason: len(train) - len(kept)}
    return Splits(kept, evaluate, origin, left)


def _distinct_eval(splits: Splits) -> Splits:
    """`splits` with each eval problem (key) once: a later eval record of a key already
    evaluated is left out (counted), so no problem counts twice in a per-problem metric."""
    seen: set[str] = set()
    kept = []
    for record in splits.eval:
        key = problem_key(record)
        if key not in seen:
            seen.add(key)
            kept.append(record)
    if len(kept) == len(splits.eval):
        return splits
    left = {**splits.left_out, "eval repeats of a problem (same key)": len(splits.eval) - len(kept)}
    return dataclasses.replace(splits, eval=kept, left_out=left)


def _as(record: Record, split: str) -> Record:
    return record if record.split == split else dataclasses.replace(record, split=split)


def _hash_split(records: list[Record], eval_fraction: float) -> Splits:
    """Whole problems (keys) to eval by a hash of the key: those below `eval_fraction`, at
    least one and not all when there are two or more."""
    keys = sorted({problem_key(r) for r in records}, key=_hash_unit)
    cut = sum(1 for key in keys if _hash_unit(key) < eval_fraction)
    if len(keys) >= 2:
        cut = min(max(cut, 1), len(keys) - 1)
    chosen = set(keys[:cut])
    # Source order is kept within each split.
    return Splits([_as(r, "train") for r in records if problem_key(r) not in chosen],
                  [_as(r, "eval") for r in records if problem_key(r) in chosen], "hash")


def _hash_unit(key: str) -> float:
    digest = hashlib.sha256(f"split:{key}".encode()).digest()
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
