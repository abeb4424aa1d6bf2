"""How many seeds a claim's interval needs to be narrower than its smallest effect of interest.

The claims' interval is a t interval over per-seed paired means (`seed_interval`): its
half-width is t(1 - α/2, S - 1) · sd / √S, where sd is the spread of the per-seed means (it
holds the problem noise of one seed's mean and the run-to-run noise). A pilot of a few seeds
estimates sd; the nightly needs the smallest S whose half-width is small enough for the
claim's δ:

- half-width < δ / 2 guarantees a verdict: an interval that holds 0 is then narrower than δ and
  lies within ±δ ("no effect"); one that does not is an effect or its opposite. This is what
  "no row inconclusive for lack of power" needs (`decisive_half_width`).
- half-width < δ only makes "no effect" reachable (for a true effect near 0 it often is not).

With Holm over a family of m claims, the first claim to be tested is held to α / m: sizing at
that level is the conservative choice (`family_size`).
"""

from __future__ import annotations

import math

from breadth.stats.seed_interval import t_quantile

__all__ = ["decisive_half_width", "half_width", "seeds_needed"]


def half_width(seed_sd: float, num_seeds: int, confidence: float = 0.95,
               family_size: int = 1) -> float:
    """Half-width of the t interval over `num_seeds` per-seed means with spread `seed_sd`, at
    `confidence` Bonferroni-split over `family_size` claims (Holm's strictest step).

    >>> round(half_width(0.02, 3), 4)  # t(0.975, 2) = 4.303
    0.0497
    >>> half_width(0.02, 1)
    nan
    """
    if num_seeds < 2:
        return math.nan
    if family_size < 1:
        raise ValueError(f"family_size must be at least 1, got {family_size}")
    alpha = (1.0 - confidence) / family_size
    return t_quantile(1.0 - alpha / 2.0, num_seeds - 1) * seed_sd / math.sqrt(num_seeds)


def decisive_half_width(delta: float) -> float:
    """The half-width below which every interval gets a verdict for smallest effect `delta`.

    >>> decisive_half_width(0.02)
    0.01
    """
    return delta / 2.0


def seeds_needed(seed_sd: float, target: float, confidence: float = 0.95, family_size: int = 1,
                 max_seeds: int = 200) -> int | None:
    """Smallest S >= 2 whose half-width is below `target`; None if none up to `max_seeds`.

    >>> seeds_needed(0.02, 0.05), seeds_needed(0.02, 0.05, family_size=10)
    (3, 6)
    >>> seeds_needed(1.0, 0.01) is None
    True
    """
    if target <= 0:
        raise ValueError(f"target half-width must be positive, got {target}")
    if not math.isfinite(seed_sd) or seed_sd < 0:
        raise ValueError(f"seed_sd must be a finite number >= 0, got {seed_sd}")
    for seeds in range(2, max_seeds + 1):
        if half_width(seed_sd, seeds, confidence, family_size) < target:
            return seeds
    return None
