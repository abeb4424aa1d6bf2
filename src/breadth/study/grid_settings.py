"""The settings of a grid's statistics, shared by the grid summary (`breadth.study.grid_statistics`,
`grid_bootstrap`) and the study's claims (`breadth.study.claims`): the transfer split, the
search claim's diversity arm, the bootstrap's resamples and seed, the family's confidence.

Here, below both, so that the grid summary (evaluation) does not import the study.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from breadth.evaluation.transfer import (
    DEFAULT_MIN_SPLIT,
    DEFAULT_SPLIT_K,
    DEFAULT_SPLIT_THRESHOLD,
)

__all__ = ["TRANSFER_SETTINGS", "ClaimSettings"]


@dataclass(frozen=True)
class ClaimSettings:
    split_k: int = DEFAULT_SPLIT_K
    """Base budget of the transfer split (`breadth.evaluation.transfer.solved_by_base`)."""
    split_threshold: float = DEFAULT_SPLIT_THRESHOLD
    min_split: int = DEFAULT_MIN_SPLIT
    """Pooled rule (#52 item 5, pre-registered before the fresh-seed nightly): a split row
    (diversity on unsolved, coverage) is read when its split, pooled over the seeds it reads,
    holds at least `min_split` problems per seed on average; else it is inconclusive. It asked
    this of every seed before, and one seed's 12 base-unsolved problems of 128 left the nightly's
    row n/a at 4, 11 and 15 seeds (its pooled mean was 36)."""
    min_seed_split: int = 5
    """A seed whose split holds fewer problems is left out of a split row (named in its detail):
    its mean of a handful of problems has 2x the spread of a 20-problem seed's or more. The
    split reads SFT's first half of samples, which the row does not measure, so leaving a seed
    out selects nothing on the effect."""
    diversity_arm: str = "correctness+batch"
    """The diversity-trained arm of the search claim."""
    num_resamples: int = 1000
    """Bootstrap resamples of the crossover's interval of k (the only bootstrap left)."""
    confidence: float = 0.95
    """Family-wise: Holm's step-down keeps the family's error at 1 - confidence."""
    seed: int = 0
    nightly_hours: float = 3.0
    nightly_workers: int = 2
    """The nightly's budget (issue #26: 3 h on 2 workers): an inconclusive row says whether the
    seeds it needs fit, as a nightly of its arms at its grid's stage work
    (`breadth.study.budget.nightly_budget`)."""

    @classmethod
    def of_evaluation(cls, evaluation: Mapping[str, Any]) -> ClaimSettings:
        """The settings whose transfer split is the cells' own: `evaluation.transfer_*` values
        by their name in the evaluation config (`EvaluationConfig.model_dump()`, or a run's
        logged params, which are strings); a name absent keeps its default.

        >>> s = ClaimSettings.of_evaluation({"transfer_split_k": "16", "transfer_min_split": 1})
        >>> s.split_k, s.split_threshold, s.min_split
        (16, 0.5, 1)
        """
        default = cls()
        values = {field: type(getattr(default, field))(evaluation[key])
                  for key, field in TRANSFER_SETTINGS.items() if evaluation.get(key) is not None}
        return replace(default, **values)


# The evaluation config's keys (`evaluation.<key>`) that the claims must share with the cells'
# own transfer analysis, and their ClaimSettings fields: the one place the two are matched.
TRANSFER_SETTINGS = {
    "transfer_split_k": "split_k",
    "transfer_split_threshold": "split_threshold",
    "transfer_min_split": "min_split",
}
