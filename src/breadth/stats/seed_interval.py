"""The claims' interval: a t interval over per-seed paired means, and Holm's step-down.

Training seeds are the independent units of a grid: each seed prepares its own eval problems,
trains its own SFT start and policies. A paired effect is averaged over the problems of each
seed first; the S per-seed means are then independent and, with 100+ problems per seed,
close to normal. A t interval with S - 1 degrees of freedom over them counts the problem
noise once (inside each seed's mean) and has the t tails that few seeds need. The two-level
bootstrap it replaces for verdicts counted problem noise twice and could not supply those
tails (`scripts/results/calibration.py`, `docs/results/calibration.md`). The same page scores
it under heavy-tailed, skewed and transition seed effects beside two intervals that do not
assume normal seed means (a sign-flip randomisation interval, a bootstrap-t,
`breadth.stats.calibration`): where it leaves 5% ± 1.5% (a lognormal skew, a large transition
in one seed of 15) they leave it as far, so it stays the claims' interval.

Student's t distribution is scipy's (`scipy.stats.t`); this module adds the claims' use of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SeedInterval", "holm_adjusted", "seed_means", "seed_t_interval", "t_cdf",
           "t_interval", "t_quantile"]


def _student_t():
    """scipy's Student's t. Imported on use: scipy.stats costs about 1.5 CPU s to import, paid
    by every importer of the claims code that computes no interval (and by each test worker's
    collection)."""
    from scipy import stats

    return stats.t


def t_cdf(x: float, df: float) -> float:
    """P(T <= x) for Student's t with `df` degrees of freedom (`scipy.stats.t.cdf`).

    >>> round(t_cdf(4.302653, 2), 6), t_cdf(0.0, 5)
    (0.975, 0.5)
    """
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    return float(_student_t().cdf(x, df))


def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t (`scipy.stats.t.ppf`).

    >>> round(t_quantile(0.975, 2), 4), round(t_quantile(0.975, 1000), 3)
    (4.3027, 1.962)
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    return float(_student_t().ppf(q, df))


@dataclass(frozen=True)
class SeedInterval:
    """A mean of per-seed means with its t interval and two-sided p-value against 0."""

    estimate: float
    low: float
    high: float
    p_value: float
    """Two-sided, of the one-sample t test of the per-seed means against 0; NaN below 2 seeds."""
    num_seeds: int
    standard_error: float

    def at(self, confidence: float) -> tuple[float, float]:
        """(low, high) of the same t interval at another confidence (Holm's, Bonferroni's)."""
        return t_interval(self.estimate, self.standard_error, self.num_seeds, confidence)


def t_interval(estimate: float | None, standard_error: float | None, num_seeds: int | None,
               confidence: float) -> tuple[float, float]:
    """(low, high): estimate ± the t quantile (num_seeds - 1 df) times its standard error.

    The one t interval of the claims: `SeedInterval.at` and a claims-table row's
    `interval_at` (Holm's and the equivalence levels) both read it. NaN bounds where there is
    no estimate or fewer than two seeds (no run-to-run spread to scale).

    >>> [round(v, 4) for v in t_interval(0.4, 0.1155, 3, 0.95)]
    [-0.097, 0.897]
    >>> t_interval(0.4, None, 3, 0.95), t_interval(0.4, 0.1, 1, 0.95)
    ((nan, nan), (nan, nan))
    """
    if estimate is None or standard_error is None or not num_seeds or num_seeds < 2:
        return math.nan, math.nan
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, num_seeds - 1) * standard_error
    return estimate - half, estimate + half


def seed_means(values) -> np.ndarray:
    """Per-seed mean of a (seeds x problems) matrix, NaN skipped; seeds without a value dropped.

    >>> seed_means([[1.0, 3.0], [np.nan, 4.0], [np.nan, np.nan]]).tolist()
    [2.0, 4.0]
    """
    matrix = np.atleast_2d(np.asarray(values, dtype=np.float64))
    counts = (~np.isnan(matrix)).sum(axis=1)
    sums = np.nansum(matrix, axis=1)
    return sums[counts > 0] / counts[counts > 0]


def seed_t_interval(values, confidence: float = 0.95) -> SeedInterval:
    """The mean over seeds of per-seed mean paired effects, with a t interval (S - 1 df).

    Each seed weighs the same, whatever its number of problems: the seeds are the
    independent replicates. With one seed there is no interval (NaN bounds and p-value): a
    single training run says nothing about run-to-run noise.

    >>> ci = seed_t_interval([[0.1, 0.3], [0.3, 0.5], [0.5, 0.7]])
    >>> round(ci.estimate, 3), round(ci.low, 4), round(ci.high, 4), round(ci.p_value, 4)
    (0.4, -0.0968, 0.8968, 0.0742)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    means = seed_means(values)
    if means.size == 0:
        raise ValueError("a seed t interval needs at least one seed with a value")
    estimate = float(means.mean())
    if means.size < 2:
        return SeedInterval(estimate, math.nan, math.nan, math.nan, 1, math.nan)
    df = means.size - 1
    se = float(means.std(ddof=1) / math.sqrt(means.size))
    if se == 0.0:  # every seed agrees exactly: no spread to scale
        p = 1.0 if estimate == 0.0 else 0.0
    else:
        p = 2.0 * float(_student_t().sf(abs(estimate) / se, df))  # sf: exact in the far tail
    interval = SeedInterval(estimate, math.nan, math.nan, float(p), int(means.size), se)
    low, high = interval.at(confidence)
    return SeedInterval(estimate, low, high, float(p), int(means.size), se)


def holm_adjusted(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values: p~(j) = max over i <= j of min(1, (m - i + 1) p(i))
    in ascending order of p; NaN entries are not in the family (and stay NaN).

    A hypothesis is rejected at family-wise level alpha when its adjusted p-value <= alpha.

    >>> holm_adjusted([0.01, 0.04, 0.03, np.nan]).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    index = np.flatnonzero(~np.isnan(p))
    order = index[np.argsort(p[index], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out
