"""Collapse over training steps: GRPO's logged histories of distinct outcomes per group and
token entropy, per objective and format, as a mean over seeds with a t interval, and each
cell's collapse rate (the least-squares slope of distinct outcomes per group against step).

The histories are what each cell's RL stage run logged (`breadth.study.frame.
load_training_histories` reads them back): {(objective, format, seed): {metric: [(step,
value), ...]}}. Seeds are the independent replicates, as in the claims (`breadth.evaluation.
seed_interval`): a step's interval is the t interval over the seeds' values at that step, and
a collapse rate's the t interval over the seeds' slopes. One seed gives a mean, no interval.

Seeds are compared at the steps every seed logged: a step one seed lacks (a different
`logging_steps`, a run cut short) is dropped for all of them, and the output counts what was
dropped (`TrainingCurves.alignment`, `TrainingCurves.notes`), never silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from breadth.stats.seed_interval import seed_t_interval

__all__ = ["DISTINCT_OUTCOMES", "ENTROPY", "TRAINING_METRICS", "CellKey", "Histories",
           "TrainingCurves", "least_squares_slope", "training_curves"]

# The names as the RL stage run logs them: the reward scorer's per-step diagnostic
# (`breadth.rewards.scoring.batch_diagnostics`) and TRL's mean token entropy, both under the
# `train/` prefix of `breadth.training.trainer_setup.MetricsCallback`.
DISTINCT_OUTCOMES = "train/breadth/distinct_outcomes_per_group"
ENTROPY = "train/entropy"
TRAINING_METRICS = {DISTINCT_OUTCOMES: "distinct outcomes per group", ENTROPY: "token entropy"}

CellKey = tuple[str, str, int]
"""(objective, format, seed)."""
Histories = Mapping[CellKey, Mapping[str, Sequence[tuple[int, float]]]]
"""{(objective, format, seed): {metric: [(step, value), ...]}}; a metric a cell did not log is
absent (or an empty list)."""


@dataclass(frozen=True)
class TrainingCurves:
    """The curves, collapse rates and what alignment dropped, per objective and format."""

    curves: pd.DataFrame
    """metric, format, objective, step, mean, low, high, seeds: the mean over seeds at each
    step every seed logged, with its t interval (NaN bounds with one seed)."""
    rates: pd.DataFrame
    """format, objective, seed, collapse_rate, steps: each cell's least-squares slope of
    distinct outcomes per group against step, over the steps its seeds share."""
    rate_means: pd.DataFrame
    """format, objective, estimate, low, high, seeds: the mean collapse rate over seeds with
    its t interval (NaN bounds with one seed)."""
    alignment: pd.DataFrame
    """metric, format, objective, seeds, common_steps, dropped_points: per curve, the steps
    every seed logged and the logged points left out because some seed lacks their step."""
    notes: list[str] = field(default_factory=list)
    """Metrics a cell did not log, points dropped to align seeds, rates that could not be
    fitted: every departure from "all seeds, all steps", in words."""

    @property
    def empty(self) -> bool:
        """True when no cell logged any of the metrics (e.g. a grid from before they were)."""
        return self.curves.empty


def least_squares_slope(steps: Sequence[float], values: Sequence[float]) -> float:
    """The slope of the least-squares line of `values` against `steps`; NaN below two
    distinct steps.

    >>> least_squares_slope([0, 10, 20], [4.0, 3.0, 2.0])
    -0.1
    >>> least_squares_slope([5], [3.0])
    nan
    """
    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0:
        return float("nan")
    dx = x - x.mean()
    return float(np.dot(dx, y - y.mean()) / np.dot(dx, dx))


def training_curves(histories: Histories, metrics: Sequence[str] = tuple(TRAINING_METRICS),
                    confidence: float = 0.95) -> TrainingCurves:
    """Per metric, format, objective and step: the mean over seeds and its t interval; per
    cell and per (format, objective): the collapse rate of `DISTINCT_OUTCOMES`.

    A step a history gives twice keeps its last value (a resumed run replays its history).
    """
    curve_rows, rate_rows, mean_rows, align_rows, notes = [], [], [], [], []
    arms = sorted({(fmt, objective) for objective, fmt, _ in histories})
    for metric in metrics:
        for fmt, objective in arms:
            label = f"{objective}/{fmt}, {metric}"
            per_seed: dict[int, dict[int, float]] = {}
            unlogged = []
            for (obj, form, seed), logged in sorted(histories.items()):
                if (obj, form) != (objective, fmt):
                    continue
                points = {int(step): float(value) for step, value in logged.get(metric, ())}
                if points:
                    per_seed[int(seed)] = points
                else:
                    unlogged.append(str(seed))
            if unlogged:
                notes.append(f"{label}: not logged by seed {', '.join(unlogged)} (a run from "
                             "before the metric was logged, or an RL stage that logged "
                             "nothing); left out of this curve")
            if not per_seed:
                continue
            common = sorted(set.intersection(*(set(p) for p in per_seed.values())))
            dropped = {seed: len(p) - len(common) for seed, p in per_seed.items()}
            align_rows.append({"metric": metric, "format": fmt, "objective": objective,
                               "seeds": len(per_seed), "common_steps": len(common),
                               "dropped_points": sum(dropped.values())})
            if any(dropped.values()):
                each = ", ".join(f"seed {s}: {n}" for s, n in dropped.items() if n)
                notes.append(f"{label}: {sum(dropped.values())} logged points dropped at steps "
                             f"not every seed logged ({each}); {len(common)} common steps kept")
            if not common:
                continue
            values = np.array([[per_seed[s][step] for step in common] for s in sorted(per_seed)])
            for j, step in enumerate(common):
                interval = seed_t_interval(values[:, j : j + 1], confidence)
                curve_rows.append({"metric": metric, "format": fmt, "objective": objective,
                                   "step": step, "mean": interval.estimate, "low": interval.low,
                                   "high": interval.high, "seeds": interval.num_seeds})
            if metric == DISTINCT_OUTCOMES:
                rates = _collapse_rates(fmt, objective, sorted(per_seed), common, values,
                                        confidence, notes)
                rate_rows += rates[0]
                mean_rows += rates[1]
    return TrainingCurves(
        curves=pd.DataFrame(curve_rows, columns=["metric", "format", "objective", "step", "mean",
                                                 "low", "high", "seeds"]),
        rates=pd.DataFrame(rate_rows, columns=["format", "objective", "seed", "collapse_rate",
                                               "steps"]),
        rate_means=pd.DataFrame(mean_rows, columns=["format", "objective", "estimate", "low",
                                                    "high", "seeds"]),
        alignment=pd.DataFrame(align_rows, columns=["metric", "format", "objective", "seeds",
                                                    "common_steps", "dropped_points"]),
        notes=notes,
    )


def _collapse_rates(fmt: str, objective: str, seeds: list[int], steps: list[int],
                    values: np.ndarray, confidence: float,
                    notes: list[str]) -> tuple[list[dict], list[dict]]:
    """Each seed's slope over the common steps, and their mean with its t interval."""
    slopes = [least_squares_slope(steps, row) for row in values]
    cells = [{"format": fmt, "objective": objective, "seed": seed, "collapse_rate": slope,
              "steps": len(steps)} for seed, slope in zip(seeds, slopes)]
    fitted = [s for s in slopes if np.isfinite(s)]
    if not fitted:
        notes.append(f"{objective}/{fmt}: no collapse rate, {len(steps)} common step(s) "
                     "(a line needs two)")
        return cells, []
    if len(fitted) < len(slopes):  # a NaN logged value: that seed has no line
        unfitted = ", ".join(str(seed) for seed, s in zip(seeds, slopes) if not np.isfinite(s))
        notes.append(f"{objective}/{fmt}: no collapse rate for seed {unfitted} (a value logged "
                     "as NaN); its mean is over the other seeds")
    interval = seed_t_interval(np.array(fitted)[:, None], confidence)
    return cells, [{"format": fmt, "objective": objective, "estimate": interval.estimate,
                    "low": interval.low, "high": interval.high,
                    "seeds": interval.num_seeds}]
