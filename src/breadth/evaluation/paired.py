"""Each trained model against its base, paired by problem: did training move pass@1, pass@n and
distinct outcomes beyond their intervals, and which part of the distinct outcomes moved (wrong
answers dropped, or correct answers narrowed)?

Two models' per-model intervals can overlap while their paired difference is clear: the
problems' spread in difficulty is shared by both models and cancels in the difference. So the
report states, beside each model's own values, the mean over shared problems of (trained − base)
with a percentile bootstrap over problems (the same resampled problems for both models).
pass@n and distinct outcomes grow with n, so they are compared only where both models have the
same number of samples on every shared problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from breadth.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    ConfidenceInterval,
    bootstrap_weights,
    column_intervals,
)

if TYPE_CHECKING:
    import pandas as pd

    from breadth.evaluation.result import EvaluationResult

__all__ = ["DIVERSITY_SPLIT", "PAIRED_MEASURES", "PairedDifference", "paired_against_base",
           "paired_differences"]

# (key, label, needs equal n): the measures the paired comparison reports.
PAIRED_MEASURES = (
    ("pass_at_1", "pass@1", False),
    ("pass_at_n", "pass@n", True),
    ("distinct_outcomes", "distinct outcomes", True),
    ("distinct_wrong_outcomes", "distinct wrong outcomes", True),
    ("distinct_correct_outcomes", "distinct correct outcomes", True),
)
# The change in distinct outcomes and its two parts, which sum to it problem by problem (an
# outcome is correct when some sample of it was): Δ distinct wrong outcomes (wrong answers
# dropped when negative) + Δ distinct correct outcomes (narrowing among correct answers when
# negative). docs/design/algorithms.md, "The split of a change in distinct outcomes".
DIVERSITY_SPLIT = ("distinct outcomes", "distinct wrong outcomes", "distinct correct outcomes")


@dataclass(frozen=True)
class PairedDifference:
    """Mean over shared problems of trained − base, with its bootstrap interval."""

    measure: str
    num_problems: int
    difference: ConfidenceInterval

    @property
    def direction(self) -> str:
        """"up" or "down" where the interval excludes 0, else "no clear difference"."""
        if self.difference.low > 0:
            return "up"
        return "down" if self.difference.high < 0 else "no clear difference"

    def to_dict(self) -> dict:
        return {"measure": self.measure, "num_problems": self.num_problems,
                "direction": self.direction, **self.difference.to_dict()}


def paired_differences(
    trained: pd.DataFrame,
    base: pd.DataFrame,
    *,
    num_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> list[PairedDifference]:
    """trained − base on the problems both per-problem tables hold (`num_samples`,
    `num_correct`, `distinct_outcomes` and, where both have them, `distinct_wrong_outcomes`
    and `distinct_correct_outcomes`); pass@n and the counts only at equal n.

    >>> import pandas as pd
    >>> base = pd.DataFrame({"num_samples": [4, 4], "num_correct": [1, 0],
    ...                      "distinct_outcomes": [3, 4]}, index=["a", "b"])
    >>> rl = pd.DataFrame({"num_samples": [4, 4], "num_correct": [3, 0],
    ...                    "distinct_outcomes": [2, 1]}, index=["a", "b"])
    >>> [(d.measure, d.difference.estimate) for d in paired_differences(rl, base, num_resamples=20)]
    [('pass@1', 0.25), ('pass@n', 0.0), ('distinct outcomes', -2.0)]
    """
    shared = trained.index.intersection(base.index)
    if len(shared) == 0:
        return []
    t, b = trained.loc[shared], base.loc[shared]
    same_n = bool((t["num_samples"].to_numpy() == b["num_samples"].to_numpy()).all())
    columns, labels = [], []
    for key, label, needs_equal_n in PAIRED_MEASURES:
        if needs_equal_n and not same_n:
            continue
        values = [_measure(table, key) for table in (t, b)]
        if any(v is None for v in values):
            continue
        columns.append(values[0] - values[1])
        labels.append(label)
    if not columns:
        return []
    weights = bootstrap_weights(len(shared), num_resamples, seed)
    intervals = column_intervals(np.stack(columns, axis=1), weights, confidence)
    return [PairedDifference(label, len(shared), interval)
            for label, interval in zip(labels, intervals, strict=True)]


def paired_against_base(
    results: Mapping[str, EvaluationResult], **kwargs
) -> dict[str, tuple[str, list[PairedDifference]]]:
    """{model: (its base's name, differences)} for every model evaluated against a base that is
    among `results`, both with per-problem tables."""
    out = {}
    for name, result in results.items():
        base = results.get(result.base_model) if result.base_model else None
        if base is None or result.per_problem is None or base.per_problem is None:
            continue
        if differences := paired_differences(result.per_problem, base.per_problem, **kwargs):
            out[name] = (result.base_model, differences)
    return out


def _measure(table: pd.DataFrame, key: str) -> np.ndarray | None:
    if key == "pass_at_n":
        return (table["num_correct"].to_numpy(dtype=np.float64) > 0).astype(np.float64)
    if key == "pass_at_1":
        return table["num_correct"].to_numpy(dtype=np.float64) / table["num_samples"].to_numpy()
    if key not in table:
        return None
    values = table[key].to_numpy(dtype=np.float64)
    return None if np.isnan(values).any() else values
