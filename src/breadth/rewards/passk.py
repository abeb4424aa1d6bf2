"""Pass@k advantages: train for the chance that at least one of k samples is correct.

Chen et al. 2025, "Pass@k Training for Adaptively Balancing Exploration and Exploitation"
(RUCAIBox/Passk_Training), analytical form. With n completions, c correct and target k:

    R   = 1 - C(n-c, k) / C(n, k)                 (the group's pass@k)
    sd  = sqrt(R * (1 - R))
    A+  = (1 - R) / sd                            for correct completions
    A-  = (1 - R - C(n-c-1, k-1) / C(n-1, k-1)) / sd   for incorrect ones
    A   = 0 for every completion when sd == 0 (all correct, none correct, or R == 1)

The group mean of A is 0, so with TRL's `scale_rewards="none"` the advantage equals A.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, sqrt

import numpy as np


def passk_advantages(correct: Sequence[bool] | np.ndarray, k: int) -> np.ndarray:
    """Pass@k advantage of each completion of one group.

    Raises ValueError when k < 1 or k > n (pass@k of n samples is undefined for k > n; raise
    num_generations or lower k).

    >>> passk_advantages([1, 1, 1, 0, 0, 0, 0, 0], k=4).round(5).tolist()
    [0.27735, 0.27735, 0.27735, -0.16641, -0.16641, -0.16641, -0.16641, -0.16641]
    >>> passk_advantages([True, True], k=1).tolist()  # all correct: no signal
    [0.0, 0.0]
    """
    flags = np.asarray(correct)
    if flags.ndim != 1:
        raise ValueError(f"correct must be one flag per completion (1-D), got shape {flags.shape}")
    if flags.size and not np.isin(flags, (0, 1)).all():
        raise ValueError(f"correct must hold booleans or 0/1, got {flags.tolist()}")
    flags = flags.astype(bool)
    n = int(flags.size)
    if k < 1 or k > n:
        raise ValueError(
            f"passk_advantages needs 1 <= k <= n, got k={k} with n={n} completions in the "
            "group: lower passk k or raise num_generations (and num_generations_eval)"
        )
    c = int(flags.sum())
    group_passk = 1.0 - comb(n - c, k) / comb(n, k)
    sd = sqrt(group_passk * (1.0 - group_passk))
    if sd == 0.0:
        return np.zeros(n)
    positive = (1.0 - group_passk) / sd
    # comb() is 0 when the lower index exceeds the upper one, which is the right limit here.
    negative = (1.0 - group_passk - comb(n - c - 1, k - 1) / comb(n - 1, k - 1)) / sd
    return np.where(flags, positive, negative)


def group_passk(correct: Sequence[bool] | np.ndarray, k: int) -> float:
    """R = 1 - C(n-c, k) / C(n, k), the group's own pass@k (a diagnostic).

    >>> round(group_passk([1, 1, 1, 0, 0, 0, 0, 0], 4), 5)
    0.92857
    """
    flags = np.asarray(correct).astype(bool)
    n, c = int(flags.size), int(flags.sum())
    if k < 1 or k > n:
        raise ValueError(f"group_passk needs 1 <= k <= n, got k={k} with n={n}")
    return 1.0 - comb(n - c, k) / comb(n, k)
