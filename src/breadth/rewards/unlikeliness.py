"""Unlikeliness reward: keep full reward for the least likely correct solutions.

He, Fried, Welleck 2025. `l_i` is the mean token log-prob of completion i under the sampling
policy; `rank_i` its rank ascending (0 = least likely); `r~_i = r_i * (1 - beta * rank_i / G)`.
Tied log-probs share the average of their ranks, so the order of equal samples in the batch
does not decide who is penalised.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def likelihood_ranks(mean_logprobs: Sequence[float] | np.ndarray) -> np.ndarray:
    """Rank of each value ascending from 0; ties get the average of their ranks.

    >>> likelihood_ranks([-1.0, -3.0, -1.0]).tolist()
    [1.5, 0.0, 1.5]
    """
    values = np.asarray(mean_logprobs, dtype=float)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(values.size, dtype=float)
    for value in np.unique(values):
        tied = values == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def unlikeliness_reward(
    rewards: Sequence[float] | np.ndarray,
    mean_logprobs: Sequence[float] | np.ndarray,
    beta: float = 0.25,
) -> np.ndarray:
    """Shaped reward r_i * (1 - beta * rank_i / G) for one group.

    >>> unlikeliness_reward([1.0, 1.0, 0.0, 1.0], [-0.5, -2.0, -1.0, -0.1], beta=0.25).tolist()
    [0.875, 1.0, 0.0, 0.8125]
    """
    r = np.asarray(rewards, dtype=float)
    logprobs = np.asarray(mean_logprobs, dtype=float)
    if r.shape != logprobs.shape or r.ndim != 1:
        raise ValueError(
            f"rewards and mean_logprobs must be 1-D of equal length, got {r.shape} and "
            f"{logprobs.shape}"
        )
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    if not np.isfinite(logprobs).all():
        raise ValueError("mean_logprobs must be finite (one mean token log-prob per completion)")
    if r.size == 0:
        return r
    return r * (1.0 - beta * likelihood_ranks(logprobs) / r.size)
