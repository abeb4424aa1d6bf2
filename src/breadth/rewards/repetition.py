"""Batch exploration: penalise completions whose outcome repeats within their group.

Song, Kempe, Munos 2025, "Outcome-based Exploration for LLM Reasoning":
`penalty_i = c * (1/G) * sum_{j != i} 1[outcome_j == outcome_i]`, shaped reward `r_i - penalty_i`.

`None` outcomes (no answer could be extracted) form one "no answer" bucket: two unanswered
completions repeat each other. Counting each `None` as its own outcome would exempt
unanswerable text from the penalty and pay the policy for producing it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np


def batch_repetition_penalty(outcomes: Sequence[Hashable | None], coef: float = 0.5) -> np.ndarray:
    """Per-completion repetition penalty (>= 0) for one group; subtract it from the reward.

    >>> batch_repetition_penalty(["4", "4", "5", None], coef=0.5).tolist()
    [0.125, 0.125, 0.0, 0.0]
    >>> batch_repetition_penalty([None, None], coef=1.0).tolist()  # None is one bucket
    [0.5, 0.5]
    """
    if coef < 0:
        raise ValueError(f"coef must be >= 0 (it scales a penalty), got {coef}")
    group_size = len(outcomes)
    if group_size == 0:
        return np.zeros(0)
    counts = Counter(outcomes)
    others_equal = np.array([counts[outcome] - 1 for outcome in outcomes], dtype=float)
    return coef * others_equal / group_size
