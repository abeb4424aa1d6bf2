"""What a search method returns: attempts, per-problem results and the two methods side by side.

Kept apart from the search loops (`breadth.evaluation.search`) so readers of a report (the
stage, the grid, the claims) need only these plain records and their success curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from breadth.evaluation.metrics import pass_at_k

__all__ = ["Attempt", "SearchComparison", "SearchResult"]


@dataclass(frozen=True)
class Attempt:
    text: str
    score: float
    correct: bool


@dataclass(frozen=True)
class SearchResult:
    """Per-problem outcome of one search method under a per-problem sample budget."""

    method: str
    budget: int
    problem_ids: list[str]
    first_success: list[int | None]
    """Samples spent when the first correct sample appeared (1-based), None if never."""
    num_correct: list[int]
    samples_spent: list[int]
    best_score: list[float]
    exchangeable: bool = False
    """True for independent samples: the curve then uses the unbiased pass@s estimator."""

    def success_curve(self, points: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """[(samples s, share of problems solved within s samples)] at 1, 2, 4, ..., budget.

        Independent sampling reports mean pass@s (unbiased, order-free); evolutionary search
        reports the share whose first success came at or before sample s (order matters).
        """
        pts = list(points) if points is not None else _powers_of_two_upto(self.budget)
        if self.exchangeable:
            n = np.asarray(self.samples_spent)
            c = np.asarray(self.num_correct)
            return [(s, float(pass_at_k(n, c, s).mean())) for s in pts]
        first = np.array([np.inf if f is None else f for f in self.first_success])
        return [(s, float(np.mean(first <= s))) for s in pts]

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "budget": self.budget,
            "success_rate": float(np.mean([f is not None for f in self.first_success])),
            "curve": [list(p) for p in self.success_curve()],
            "problem_ids": list(self.problem_ids),
            "first_success": list(self.first_success),
            "samples_spent": list(self.samples_spent),
        }


@dataclass(frozen=True)
class SearchComparison:
    evolutionary: SearchResult
    independent: SearchResult

    def to_dict(self) -> dict:
        return {
            "evolutionary": self.evolutionary.to_dict(),
            "independent": self.independent.to_dict(),
        }

    def metrics(self) -> dict[str, float]:
        """Flat MLflow-safe names: search/evolutionary_success, search/independent_success."""
        return {
            f"search/{r.method}_success": r.success_curve([r.budget])[0][1]
            for r in (self.evolutionary, self.independent)
        }


def _powers_of_two_upto(budget: int) -> list[int]:
    pts = [1 << i for i in range(budget.bit_length()) if (1 << i) <= budget]
    return pts if pts[-1] == budget else [*pts, budget]
