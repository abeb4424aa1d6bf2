"""Batch scoring shared by the TRL reward terms: one verification per reward call.

A `BatchScorer` turns a TRL reward call's completions and dataset columns into a `ScoredBatch`
(texts, verdicts, outcomes, groups) and caches it, so that every term of one setup reads the
same verified batch. Split out of `breadth.rewards.trl_adapter`, which re-exports these names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from breadth.rewards.groups import IncompleteGroupError, RowGroup, group_rows

VerifyFn = Callable[[str, Mapping[str, Any]], Any]

# Keys TRL adds to the dataset columns; everything else of batch length is a column.
TRL_EXTRA_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
REQUIRED_COLUMNS = ("problem_id", "answer", "format", "task")


def completion_text(completion: Any) -> str:
    """The text of one completion, plain or conversational.

    >>> completion_text("42"), completion_text([{"role": "assistant", "content": "42"}])
    ('42', '42')
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content_text(completion.get("content"))
    if isinstance(completion, Sequence):
        return "".join(
            _content_text(message.get("content"))
            for message in completion
            if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant"
        )
    raise TypeError(
        f"a completion must be a string or a list of chat messages, got {type(completion).__name__}"
    )


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # Content blocks: [{"type": "text", "text": ...}, ...]
    return "".join(block.get("text", "") for block in content if isinstance(block, Mapping))


@dataclass
class ScoredBatch:
    """One reward call's batch, verified once and shared by every term."""

    texts: list[str]
    problem_ids: list[Any]
    splits: list[str] | None
    correct: np.ndarray
    """bool per completion."""
    scores: np.ndarray
    outcomes: list[str | None]
    """Canonical outcome per completion; None = nothing extracted (one "no answer" bucket)."""
    answered: np.ndarray
    """bool: an answer could be extracted."""
    groups: list[RowGroup] | None
    group_error: IncompleteGroupError | None = None

    def require_groups(self, term: str) -> list[RowGroup]:
        if self.group_error is not None:
            raise IncompleteGroupError(f"reward {term!r}: {self.group_error}")
        assert self.groups is not None
        return self.groups

    def train_only(self, group: RowGroup, term: str) -> bool:
        if self.splits is None:
            raise ValueError(
                f"reward {term!r} keeps state and must tell training from evaluation batches, "
                "but the batch has no `split` column; render rows with breadth.data.formats "
                "(they carry split = 'train' | 'eval') and keep GRPOConfig.remove_unused_columns"
                "=False"
            )
        return all(split == "train" for split in self.splits[group.rows])


class BatchScorer:
    """Verifies a batch once and caches it for the other terms of the same reward call."""

    def __init__(
        self,
        verify_fn: VerifyFn,
        num_generations: int | None = None,
        num_generations_eval: int | None = None,
    ) -> None:
        self.verify_fn = verify_fn
        self.num_generations = num_generations
        self.num_generations_eval = num_generations_eval or num_generations
        self._cache_key: tuple[Any, ...] | None = None
        self._cache: ScoredBatch | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache_key": None, "_cache": None}

    def _group_size(self, splits: list[str] | None) -> int | None:
        kinds = set(splits or ())
        if kinds == {"train"}:
            return self.num_generations
        if kinds == {"eval"}:
            return self.num_generations_eval
        return None

    def score(self, completions: Sequence[Any], columns: Mapping[str, Any]) -> ScoredBatch:
        size = len(completions)
        table = {
            key: value
            for key, value in columns.items()
            if key not in TRL_EXTRA_KWARGS
            and isinstance(value, (list, tuple))
            and len(value) == size
        }
        missing = [name for name in REQUIRED_COLUMNS if name not in table]
        if missing:
            raise ValueError(
                f"reward batch lacks the column(s) {missing} (has {sorted(table)}); train on "
                "rows rendered by breadth.data.formats and keep GRPOConfig.remove_unused_columns"
                "=False so TRL passes them to the reward functions"
            )
        texts = [completion_text(c) for c in completions]
        problem_ids = list(table["problem_id"])
        splits = list(table["split"]) if "split" in table else None
        key = (tuple(texts), tuple(problem_ids), tuple(splits or ()))
        if key == self._cache_key and self._cache is not None:
            return self._cache
        rows = [{name: column[i] for name, column in table.items()} for i in range(size)]
        verdicts = [self.verify_fn(text, row) for text, row in zip(texts, rows)]
        outcomes = [v.outcome for v in verdicts]
        try:
            groups, error = group_rows(problem_ids, self._group_size(splits)), None
        except IncompleteGroupError as exc:
            groups, error = None, exc
        batch = ScoredBatch(
            texts=texts,
            problem_ids=problem_ids,
            splits=splits,
            correct=np.array([bool(v.correct) for v in verdicts], dtype=bool),
            scores=np.array([float(v.score) for v in verdicts], dtype=float),
            outcomes=outcomes,
            answered=np.array([o is not None for o in outcomes], dtype=bool),
            groups=groups,
            group_error=error,
        )
        self._cache_key, self._cache = key, batch
        return batch


def batch_diagnostics(batch: ScoredBatch) -> dict[str, float]:
    """Accuracy, answer rate and distinct outcomes per group (None counts as one outcome)."""
    stats = {
        "breadth/accuracy": float(batch.correct.mean()) if batch.texts else 0.0,
        "breadth/answered": float(batch.answered.mean()) if batch.texts else 0.0,
    }
    if batch.groups:
        distinct = [len(set(batch.outcomes[g.rows])) for g in batch.groups]
        stats["breadth/distinct_outcomes_per_group"] = float(np.mean(distinct))
        stats["breadth/distinct_outcome_fraction"] = float(
            np.mean([d / g.size for d, g in zip(distinct, batch.groups)])
        )
    return stats
