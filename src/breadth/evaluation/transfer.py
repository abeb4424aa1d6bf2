"""Transfer analysis: does RL's narrowing spread from problems the base solves to the rest?

Eval problems are split at a fixed base budget: *solved* when the base model's pass@split_k
reaches a threshold (default: pass@4 >= 0.5), else *unsolved*. "At least one of its n samples
right" would not do: at large n a model that samples two-digit answers hits most of them by
chance, and "unsolved" empties. A split with fewer than `min_split` problems is reported as
inconclusive, not as a number. Every per-problem metric is then averaged on each split,
for the base and the trained model, with paired bootstrap intervals (the same problem
resamples for both models). The crossover is the smallest k at which the base model's pass@k
catches up with the trained model's: reaches it after the trained model was ahead, or passes
it. Curves that are equal (within float noise) up to k cross nowhere up to k: two models both at
pass@k = 0 at every k have no crossover.

Inputs are per-problem tables (pandas DataFrames indexed by problem_id) such as
`breadth.evaluation.summary.per_problem_table` builds: `num_samples`, `num_correct` and one
column per metric.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from breadth.evaluation.metrics import chance_corrected_pass_at_k, default_ks, pass_at_k
from breadth.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    ConfidenceInterval,
    bootstrap_ci,
    bootstrap_means,
    bootstrap_weights,
    percentile_interval,
)

if TYPE_CHECKING:  # annotations only: reading a cached result must not load pandas
    import pandas as pd

__all__ = [
    "SPLITS",
    "Crossover",
    "SplitMetrics",
    "TransferResult",
    "crossover_k",
    "first_crossing",
    "leader",
    "options_of",
    "solved_by_base",
    "transfer_analysis",
]

log = logging.getLogger(__name__)

SPLITS = ("solved", "unsolved")
DEFAULT_SPLIT_K = 4
DEFAULT_SPLIT_THRESHOLD = 0.5
DEFAULT_MIN_SPLIT = 20
_TIE_TOLERANCE = 1e-12  # base "catches up" when base - trained >= -1e-12 (float noise)


@dataclass(frozen=True)
class SplitMetrics:
    """Mean of every metric on one split of the problems, for base and trained."""

    split: str
    """"solved" (base pass@split_k >= threshold) or "unsolved"."""
    num_problems: int
    base: dict[str, ConfidenceInterval]
    trained: dict[str, ConfidenceInterval]
    conclusive: bool = True
    """False when the split holds fewer than `min_split` problems: report "inconclusive"."""

    def to_dict(self) -> dict:
        return {
            "split": self.split,
            "num_problems": self.num_problems,
            "conclusive": self.conclusive,
            "base": {k: v.to_dict() for k, v in self.base.items()},
            "trained": {k: v.to_dict() for k, v in self.trained.items()},
        }


@dataclass(frozen=True)
class Crossover:
    """Smallest k where base pass@k catches up with trained pass@k (see `crossover_k`), with a
    bootstrap interval over problems."""

    k: int | None
    """On the full sample; None when the base model never catches up within the ks tried:
    the trained model stays ahead, or the two are tied at every k (both 0, say)."""
    low: int | None
    """Lower percentile of the bootstrap distribution of the crossover k."""
    high: int | None
    """Upper percentile; None means "beyond the largest k tried" in that share of resamples."""
    share_with_crossover: float
    """Fraction of bootstrap resamples in which a crossover happens within the ks tried."""
    ks: list[int]
    difference: list[ConfidenceInterval] = field(default_factory=list)
    """Mean base pass@k - trained pass@k at each k, with paired bootstrap intervals."""

    def to_dict(self) -> dict:
        return {
            "k": self.k,
            "low": self.low,
            "high": self.high,
            "share_with_crossover": self.share_with_crossover,
            "ks": list(self.ks),
            "difference": [d.to_dict() for d in self.difference],
        }


@dataclass(frozen=True)
class TransferResult:
    """Per-split metrics for base vs trained, plus the pass@k crossover."""

    num_problems: int
    """Problems present in both base and trained rollouts (the ones analysed)."""
    splits: dict[str, SplitMetrics]
    crossover: Crossover | None
    held_out: bool = False
    """True when the split read the base's first half of samples and each split was measured
    on the other half of each model's samples; False when split and measure share samples."""

    def to_dict(self) -> dict:
        return {
            "num_problems": self.num_problems,
            "held_out": self.held_out,
            "splits": {name: s.to_dict() for name, s in self.splits.items()},
            "crossover": None if self.crossover is None else self.crossover.to_dict(),
        }


def solved_by_base(
    num_samples, num_correct, split_k: int = DEFAULT_SPLIT_K,
    threshold: float = DEFAULT_SPLIT_THRESHOLD, num_options=None,
) -> np.ndarray:
    """Base-solved at a fixed budget: the base model's pass@split_k >= threshold.

    With `num_options` (multiple choice), pass@split_k is taken above chance,
    `(p - chance) / (1 - chance)`: otherwise guessing among 4 options "solves" a problem at
    pass@4 = 0.68.

    n = 8, pass@4 of c = 1 is 1 - C(7,4)/C(8,4) = 0.5: solved at threshold 0.5.

    >>> solved_by_base([8, 8, 8], [0, 1, 4], split_k=4, threshold=0.5).tolist()
    [False, True, True]
    >>> solved_by_base([8, 8], [2, 8], split_k=4, threshold=0.5, num_options=[4, 4]).tolist()
    [False, True]
    """
    n = np.asarray(num_samples)
    if n.size and split_k > int(n.min()):
        raise ValueError(
            f"transfer split budget split_k={split_k} exceeds the base model's smallest sample "
            f"count {int(n.min())}: lower evaluation.transfer_split_k or raise "
            "rollout.num_samples"
        )
    value = pass_at_k(n, num_correct, split_k)
    if num_options is not None:
        value = chance_corrected_pass_at_k(value, num_options, split_k)
    return np.nan_to_num(value, nan=0.0) >= threshold


def crossover_k(
    base_num_samples,
    base_num_correct,
    trained_num_samples,
    trained_num_correct,
    ks: list[int] | None = None,
    *,
    num_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Crossover:
    """Smallest k at which mean base pass@k catches up with mean trained pass@k over the same
    problems: base >= trained there, and either base > trained there or the trained model was
    ahead at a smaller k. A tie is not a crossing by itself: where the curves are equal at
    every k (both 0 on a tiny run, say) there is none, and where they are equal up to some k
    and then the base pulls ahead, the crossover is that k.

    Arrays are aligned per problem. The interval comes from a paired bootstrap over problems:
    the crossover is recomputed on each resample and its percentiles reported (a resample
    without a crossover counts as "beyond the largest k", so `high` may be None).

    >>> c = crossover_k([4, 4], [1, 1], [4, 4], [3, 0], ks=[1, 2, 4], num_resamples=50)
    >>> c.k
    2
    """
    nb, cb = np.asarray(base_num_samples), np.asarray(base_num_correct)
    nt, ct = np.asarray(trained_num_samples), np.asarray(trained_num_correct)
    if not (nb.shape == cb.shape == nt.shape == ct.shape) or nb.ndim != 1 or nb.size == 0:
        raise ValueError(
            "crossover_k needs four aligned 1-D per-problem arrays of equal length >= 1"
        )
    if ks is None:
        ks = default_ks(int(min(nb.min(), nt.min())))
    ks = [int(k) for k in ks]
    base = np.stack([pass_at_k(nb, cb, k) for k in ks], axis=1)  # (P, K)
    trained = np.stack([pass_at_k(nt, ct, k) for k in ks], axis=1)
    diff = base - trained
    weights = bootstrap_weights(diff.shape[0], num_resamples, seed)
    boot_diff = bootstrap_means(diff, weights)  # (B, K)
    low_d, high_d = percentile_interval(boot_diff, confidence)
    point = diff.mean(axis=0)
    first = first_crossing(point[None, :])[0]
    boot_first = first_crossing(boot_diff)
    alpha = (1.0 - confidence) / 2.0
    lo_i, hi_i = (
        int(np.quantile(boot_first, q, method="inverted_cdf")) for q in (alpha, 1 - alpha)
    )

    def k_or_none(i: int) -> int | None:
        return ks[i] if i < len(ks) else None

    return Crossover(
        k=k_or_none(first),
        low=k_or_none(lo_i),
        high=k_or_none(hi_i),
        share_with_crossover=float(np.mean(boot_first < len(ks))),
        ks=ks,
        difference=[
            ConfidenceInterval(float(point[j]), float(low_d[j]), float(high_d[j]))
            for j in range(len(ks))
        ],
    )


def leader(diff: np.ndarray) -> np.ndarray:
    """Sign of base - trained with ties (within _TIE_TOLERANCE, float noise) as 0: +1 where
    the base is ahead, -1 where the trained model is, 0 where they are level."""
    return np.where(diff > _TIE_TOLERANCE, 1, np.where(diff < -_TIE_TOLERANCE, -1, 0))


def first_crossing(diff: np.ndarray) -> np.ndarray:
    """Per row of base - trained (2-D, columns ascending k), the first column where the base
    catches up: level or ahead (see `leader`) and either ahead or the trained model ahead in an
    earlier column; K (one past the end) when none. A tie before the trained model was ever
    ahead is not a crossing, so equal curves (both 0 at every k on a tiny run) report no
    crossover at the first k. The study's crossover claim reads its curves with this rule too.
    """
    lead = leader(diff)
    behind = lead < 0
    ahead = lead > 0
    was_behind = np.logical_or.accumulate(behind, axis=1)
    caught_up = ahead | (~behind & was_behind)
    return np.where(caught_up.any(axis=1), caught_up.argmax(axis=1), diff.shape[1])


def transfer_analysis(
    base: pd.DataFrame,
    trained: pd.DataFrame,
    metrics: list[str] | None = None,
    *,
    ks: list[int] | None = None,
    num_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    split_k: int = DEFAULT_SPLIT_K,
    split_threshold: float = DEFAULT_SPLIT_THRESHOLD,
    min_split: int = DEFAULT_MIN_SPLIT,
    held_out: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> TransferResult:
    """Every metric on base-solved and base-unsolved problems, base vs trained, plus crossover.

    `base` and `trained` are per-problem tables indexed by problem_id with `num_samples`,
    `num_correct` and metric columns; `metrics` defaults to every numeric column they share.
    Only problems in both tables are analysed (a warning says how many were dropped). A
    metric that is NaN on every problem of a split is left out of that split.

    With `held_out` (base, trained tables of the other half of each model's samples), the
    split reads `base`'s first half (its `split_num_samples` / `split_num_correct` columns)
    and each split's metrics are measured on `held_out`: a split and a measurement on the
    same samples select problems whose draw went badly and then read that draw's extra wrong
    answers, a bias toward "RL narrows" even where RL is the base (regression to the mean).
    Without it, both use the same samples (for callers that have no halves). The crossover
    reads the whole tables either way: it splits nothing.

    >>> import pandas as pd
    >>> b = pd.DataFrame({"num_samples": [4, 4], "num_correct": [3, 0], "distinct_outcomes": [3, 4]},
    ...                  index=["p1", "p2"])
    >>> t = pd.DataFrame({"num_samples": [4, 4], "num_correct": [4, 0], "distinct_outcomes": [1, 2]},
    ...                  index=["p1", "p2"])
    >>> r = transfer_analysis(b, t, ["distinct_outcomes"], num_resamples=20, split_k=1)
    >>> r.splits["unsolved"].trained["distinct_outcomes"].estimate, r.splits["unsolved"].conclusive
    (2.0, False)
    """
    for name, table in (("base", base), ("trained", trained)):
        missing = {"num_samples", "num_correct"} - set(table.columns)
        if missing:
            raise ValueError(f"{name} per-problem table lacks columns {sorted(missing)}")
    shared = base.index.intersection(trained.index)
    if len(shared) == 0:
        raise ValueError(
            "base and trained rollouts share no problem_id: evaluate both models on the same eval set"
        )
    dropped = len(base.index.union(trained.index)) - len(shared)
    if dropped:
        log.warning(
            "transfer analysis: %d problems are in only one of base/trained; left out", dropped
        )
    b, t = base.loc[shared], trained.loc[shared]
    if metrics is None:
        from pandas.api.types import is_numeric_dtype

        numeric = [c for c in b.columns if c in t.columns and is_numeric_dtype(b[c])]
        metrics = [c for c in numeric if c not in ("num_samples", "num_correct")]
    split_counts = ("num_samples", "num_correct")
    measured_b, measured_t = b, t
    if held_out is not None:
        split_counts = ("split_num_samples", "split_num_correct")
        if missing := [c for c in split_counts if c not in b.columns]:
            raise ValueError(f"base per-problem table lacks {missing}: a held-out transfer "
                             "split reads the first half of its samples there")
        measured_b, measured_t = (table.reindex(shared) for table in held_out)
    solved = solved_by_base(b[split_counts[0]].to_numpy(), b[split_counts[1]].to_numpy(),
                            split_k, split_threshold, options_of(b))
    splits = {}
    for offset, (name, mask) in enumerate((("solved", solved), ("unsolved", ~solved))):
        split = _split_metrics(name, measured_b[mask], measured_t[mask], metrics, num_resamples,
                               confidence, seed + offset)
        splits[name] = replace(split, conclusive=split.num_problems >= min_split)
    crossover = crossover_k(
        b["num_samples"].to_numpy(),
        b["num_correct"].to_numpy(),
        t["num_samples"].to_numpy(),
        t["num_correct"].to_numpy(),
        ks,
        num_resamples=num_resamples,
        confidence=confidence,
        seed=seed,
    )
    return TransferResult(num_problems=len(shared), splits=splits, crossover=crossover,
                          held_out=held_out is not None)


def options_of(table: pd.DataFrame):
    """Per-problem option counts of a multiple-choice table, else None."""
    if "num_options" not in table or not table["num_options"].notna().all():
        return None
    options = table["num_options"].to_numpy(dtype=np.float64)
    return options if (options >= 2).all() else None


def _split_metrics(name, b, t, metrics, num_resamples, confidence, seed) -> SplitMetrics:
    if len(b) == 0:
        return SplitMetrics(name, 0, {}, {})
    # Paired: the same resampled problems for base and trained.
    weights = bootstrap_weights(len(b), num_resamples, seed)
    out: dict[str, dict[str, ConfidenceInterval]] = {"base": {}, "trained": {}}
    for model, table in (("base", b), ("trained", t)):
        for metric in metrics:
            if metric not in table.columns:
                continue
            values = table[metric].to_numpy(dtype=np.float64)
            if np.all(np.isnan(values)):
                continue
            out[model][metric] = bootstrap_ci(values, confidence=confidence, weights=weights)
    return SplitMetrics(name, len(b), out["base"], out["trained"])
