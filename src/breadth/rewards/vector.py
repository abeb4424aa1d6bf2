"""Set-level vector reward: credit a completion for being the best under some trade-off.

Inspired by Vector Policy Optimization (Bahlous-Boldi et al. 2026), which treats rewards as
vectors and trains for the quality of the best response in a set under randomly drawn
trade-offs. The paper's exact estimator was not available to us. This is **breadth's own
formulation, not a reproduction of VPO**:

    w_m ~ Dirichlet(alpha * 1_D),  m = 1..M
    s_im = w_m . r_i
    reward_i = (1/M) * sum_m [i attains max_j s_jm] / (number of completions attaining it)
    reward  -= mean(reward)          (mean-centred; the raw credits sum to 1 per draw)

A completion that is best under some trade-off is rewarded even when it is not best on
average; completions with identical vectors share the credit.
"""

from __future__ import annotations

import numpy as np

# Scores within this relative distance of the maximum count as ties (float noise in w . r).
_TIE_RTOL = 1e-9


def set_level_vector_reward(
    reward_vectors: np.ndarray,
    num_draws: int = 64,
    alpha: float = 1.0,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Mean-centred share of Dirichlet trade-offs under which each completion is the best.

    `reward_vectors` is G x D (one row per completion, one column per reward component).
    Pass a seeded `rng` (`np.random.default_rng(seed)`) for reproducible draws.

    >>> vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.4, 0.4]])
    >>> set_level_vector_reward(vectors, 1000, 1.0, np.random.default_rng(0)).round(1).tolist()
    [0.2, 0.2, -0.3]
    """
    vectors = np.asarray(reward_vectors, dtype=float)
    if vectors.ndim != 2 or vectors.shape[0] == 0 or vectors.shape[1] == 0:
        raise ValueError(
            f"reward_vectors must be G x D with G, D >= 1 (one row per completion), got shape "
            f"{vectors.shape}"
        )
    if not np.isfinite(vectors).all():
        raise ValueError("reward_vectors must be finite; replace missing components first")
    if num_draws < 1:
        raise ValueError(f"num_draws must be >= 1, got {num_draws}")
    if alpha <= 0:
        raise ValueError(f"alpha (Dirichlet concentration) must be > 0, got {alpha}")
    rng = np.random.default_rng(0) if rng is None else rng
    weights = rng.dirichlet(np.full(vectors.shape[1], float(alpha)), size=num_draws)  # M x D
    scores = vectors @ weights.T  # G x M
    best = scores.max(axis=0, keepdims=True)
    winners = scores >= best - _TIE_RTOL * np.maximum(np.abs(best), 1.0)
    credit = winners / winners.sum(axis=0, keepdims=True)
    share = credit.mean(axis=1)
    return share - share.mean()
