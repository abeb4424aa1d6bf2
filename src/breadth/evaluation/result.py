"""EvaluationResult and its parts (CurvePoint, ChancePoint): flat metrics, curves, JSON.

Built by `breadth.evaluation.summary.evaluate_rollouts`, which re-exports these names. Metric
names are MLflow-safe (`/` and `_`, never `@`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from breadth.evaluation.transfer import SPLITS, TransferResult
from breadth.stats.bootstrap import ConfidenceInterval

if TYPE_CHECKING:  # annotations only: reading a cached result must not load pandas
    import pandas as pd

__all__ = [
    "ChancePoint",
    "CurvePoint",
    "EvaluationResult",
    "UnevenSamples",
    "ci_names",
    "headline_metrics",
]

def ci_names(name: str) -> tuple[str, str]:
    """The metric names of `name`'s interval bounds: beside their group, not next to the
    metric. MLflow's chart view makes a section of each metric path's folder, so the bounds
    fill sections of their own (`eval_ci/low`), sorted after the estimates' (`eval`), instead
    of tripling every chart section; a parent run's `rl/` prefix keeps them under the model.

    >>> ci_names("eval/pass_at_1")
    ('eval_ci/low/pass_at_1', 'eval_ci/high/pass_at_1')
    """
    group, _, rest = name.partition("/")
    return f"{group}_ci/low/{rest}", f"{group}_ci/high/{rest}"


# What a pipeline's parent run shows (the runs table and `breadth compare` read these); the
# evaluate child runs keep every metric and curve. `{k}` is the largest k measured.
_HEADLINE = (
    "eval/num_problems", "eval/pass_at_1", "eval/pass_at_{k}", "eval/maj_at_{k}",
    "eval/best_of_{k}", "eval/pass_hat_{k}", "eval/distinct_outcomes", "eval/vendi_outcomes",
    "eval/no_answer_rate", "transfer/solved/distinct_outcomes",
    "transfer/unsolved/distinct_outcomes", "transfer/unsolved/base/distinct_outcomes",
    "transfer/crossover_k", "search/evolutionary_success", "search/independent_success",
)


def headline_metrics(metrics: dict[str, float]) -> dict[str, float]:
    """The few metrics (and their interval bounds) a parent run carries, out of a child's.

    >>> m = {"eval/pass_at_1": 0.5, "eval/pass_at_4": 0.9, "eval/pass_at_2": 0.7,
    ...      "eval_ci/low/pass_at_1": 0.4, "eval/distinct_1": 0.3}
    >>> sorted(headline_metrics(m))
    ['eval/pass_at_1', 'eval/pass_at_4', 'eval_ci/low/pass_at_1']
    """
    ks = [int(n.rsplit("_", 1)[1]) for n in metrics
          if n.startswith("eval/pass_at_") and n.rsplit("_", 1)[1].isdigit()]
    k = max(ks, default=None)
    wanted = {name.format(k=k) for name in _HEADLINE if k is not None or "{k}" not in name}
    wanted |= {bound for name in wanted for bound in ci_names(name)}
    return {name: value for name, value in metrics.items() if name in wanted}


@dataclass(frozen=True)
class CurvePoint:
    """One point of a metric-vs-k curve: mean over problems with its bootstrap interval."""

    k: int
    estimate: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"k": self.k, "estimate": self.estimate, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class ChancePoint:
    """Multiple-choice only: guessing's pass@k and the chance-corrected pass@k at one k."""

    k: int
    chance: float
    """Mean over problems of 1 - (1 - 1/m)^k, m = that problem's number of options."""
    corrected: ConfidenceInterval
    """Mean over problems of (pass@k - chance) / (1 - chance)."""

    def to_dict(self) -> dict:
        return {"k": self.k, "chance": self.chance, "corrected": self.corrected.to_dict()}


@dataclass(frozen=True)
class UnevenSamples:
    """Problems with fewer samples than the most any problem has: usually a broken rollout.

    No sample is dropped (each problem's estimates use all of its own samples), but every
    pass@k, maj@k and best-of-k curve stops at the smallest count, and a short problem's
    diversity counts fewer samples.

    >>> UnevenSamples(num_problems=64, most=16, short=(("p5", 4),)).describe()
    "1 of 64 problems have fewer than 16 samples ('p5' (n=4)), so the pass@k, maj@k and best-of-k curves stop at k = 4 for every problem"
    """

    num_problems: int
    most: int
    """The largest sample count of any problem."""
    short: tuple[tuple[Any, int], ...]
    """(problem_id, sample count) of every problem below `most`, fewest samples first."""

    @property
    def fewest(self) -> int:
        """The smallest sample count of any problem: the largest k every curve can reach."""
        return self.short[0][1]

    def problems_by_count(self) -> dict[int, int]:
        """{samples: problems} over every problem, fewest samples first.

        >>> UnevenSamples(9, 16, (("p5", 4), ("p7", 4), ("p2", 8))).problems_by_count()
        {4: 2, 8: 1, 16: 6}
        """
        counts = [n for _, n in self.short] + [self.most] * (self.num_problems - len(self.short))
        return {n: counts.count(n) for n in sorted(set(counts))}

    def describe(self, shown: int = 5) -> str:
        """One sentence naming the first `shown` short problems, for warnings and reports."""
        named = ", ".join(f"{pid!r} (n={n})" for pid, n in self.short[:shown])
        more = f" and {len(self.short) - shown} more" if len(self.short) > shown else ""
        return (
            f"{len(self.short)} of {self.num_problems} problems have fewer than {self.most} "
            f"samples ({named}{more}), so the pass@k, maj@k and best-of-k curves stop at "
            f"k = {self.fewest} for every problem"
        )


@dataclass(frozen=True)
class EvaluationResult:
    """Everything `evaluate_rollouts` measured for one model; `to_dict()` is JSON-safe."""

    model: str
    num_problems: int
    num_samples: int
    """Smallest number of samples of any problem (the largest k measured)."""
    format: str | None
    ks: list[int]
    pass_at_k: list[CurvePoint]
    maj_at_k: list[CurvePoint]
    best_of_k: list[CurvePoint]
    """Expected best `score` over k samples."""
    diversity: dict[str, ConfidenceInterval]
    chance: list[ChancePoint] = field(default_factory=list)
    pass_hat_k: list[CurvePoint] = field(default_factory=list)
    """pass^k: the chance that all k samples are correct."""
    g_pass_at_k: list[CurvePoint] = field(default_factory=list)
    """G-Pass@k at settings["g_pass_tau"]: at least ceil(tau k) of k samples correct."""
    mg_pass_at_k: list[CurvePoint] = field(default_factory=list)
    """mG-Pass@k: G-Pass@k averaged over tau in (0.5, 1]."""
    transfer: TransferResult | None = None
    base_model: str | None = None
    entropy_threshold: float | None = None
    """Token-entropy cut-off for forking tokens (the base model's quantile when a base is given)."""
    settings: dict[str, Any] = field(default_factory=dict)
    per_problem: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    """One row per problem (index problem_id): counts and every per-problem metric."""
    uneven_samples: UnevenSamples | None = None
    """Set when problems have different sample counts (`num_samples` is then the fewest)."""
    transfer_min_split: int | None = None
    """With a transfer section: the fewest problems a split needs to be conclusive
    (evaluation.transfer_min_split), so a report can say why a split is inconclusive."""
    no_answer_rate: ConfidenceInterval | None = None
    """Share of samples from which no answer could be extracted (mean over problems of each
    problem's share): apart from the wrong answers, which 1 - pass@1 counts with them."""

    def metrics(self) -> dict[str, float]:
        """Flat MLflow-safe metric dict: eval/pass_at_1, eval/maj_at_16, transfer/unsolved/...,
        with interval bounds named by `ci_names` (`eval_ci/low/pass_at_1`)."""
        out: dict[str, float] = {
            "eval/num_problems": float(self.num_problems),
            "eval/num_samples": float(self.num_samples),
        }
        for name, curve in self._curves():
            for p in curve:
                out[f"eval/{name}_{p.k}"] = p.estimate
                out.update(zip(ci_names(f"eval/{name}_{p.k}"), (p.low, p.high)))
        for c in self.chance:
            out[f"eval/chance_pass_at_{c.k}"] = c.chance
            out[f"eval/chance_corrected_pass_at_{c.k}"] = c.corrected.estimate
        named = {**self.diversity, "no_answer_rate": self.no_answer_rate}
        for metric, ci in named.items():
            if ci is not None:
                out[f"eval/{metric}"] = ci.estimate
                out.update(zip(ci_names(f"eval/{metric}"), (ci.low, ci.high)))
        if self.transfer is not None:
            out.update(_transfer_metrics(self.transfer))
        return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(v)}

    def sample_counts(self) -> dict[str, Any]:
        """How many problems had how many samples: `fewest` (`num_samples`, where every curve
        stops) and `most` samples of any problem, `problems_below_most` (problems short of
        samples, usually broken rollouts) and `problems_by_count` ({samples: problems}).

        In metrics.json, not only report.md's warning: a reader of the numbers alone could not
        tell a curve cut short by a few broken rollouts from one run at that n by design.
        """
        u = self.uneven_samples
        if u is None:
            return {"fewest": self.num_samples, "most": self.num_samples, "problems_below_most": 0,
                    "problems_by_count": {self.num_samples: self.num_problems}}
        return {"fewest": u.fewest, "most": u.most, "problems_below_most": len(u.short),
                "problems_by_count": u.problems_by_count()}

    def curves(self) -> dict[str, list[tuple[int, float]]]:
        """Curves to log as one metric each with step=k: {"eval/pass_at_k": [(k, value), ...]}
        (and eval/maj_at_k, best_of_k, pass_hat_k, g_pass_at_k, mg_pass_at_k), their bounds as
        `eval_ci/low/pass_at_k` and `eval_ci/high/pass_at_k`."""
        out = {}
        for prefix, curve in self._curves():
            name = f"eval/{prefix}_k"
            low, high = ci_names(name)
            out[name] = [(p.k, p.estimate) for p in curve]
            out[low] = [(p.k, p.low) for p in curve]
            out[high] = [(p.k, p.high) for p in curve]
        return out

    def _curves(self) -> tuple[tuple[str, list[CurvePoint]], ...]:
        """(metric name prefix, curve): `eval/<prefix>_<k>` per point, `eval/<prefix>_k` whole."""
        return (("pass_at", self.pass_at_k), ("maj_at", self.maj_at_k),
                ("best_of", self.best_of_k), ("pass_hat", self.pass_hat_k),
                ("g_pass_at", self.g_pass_at_k), ("mg_pass_at", self.mg_pass_at_k))

    def to_dict(self, include_per_problem: bool = False) -> dict:
        """JSON-serialisable view (NaN becomes None); per-problem rows only when asked."""
        d = {
            "model": self.model,
            "base_model": self.base_model,
            "num_problems": self.num_problems,
            "num_samples": self.num_samples,
            "format": self.format,
            "ks": list(self.ks),
            "pass_at_k": [p.to_dict() for p in self.pass_at_k],
            "maj_at_k": [p.to_dict() for p in self.maj_at_k],
            "best_of_k": [p.to_dict() for p in self.best_of_k],
            "pass_hat_k": [p.to_dict() for p in self.pass_hat_k],
            "g_pass_at_k": [p.to_dict() for p in self.g_pass_at_k],
            "mg_pass_at_k": [p.to_dict() for p in self.mg_pass_at_k],
            "chance": [c.to_dict() for c in self.chance],
            "diversity": {k: v.to_dict() for k, v in self.diversity.items()},
            "no_answer_rate": None if self.no_answer_rate is None else self.no_answer_rate.to_dict(),
            "transfer": None if self.transfer is None else self.transfer.to_dict(),
            "entropy_threshold": self.entropy_threshold,
            "settings": dict(self.settings),
            "metrics": self.metrics(),
            "sample_counts": self.sample_counts(),
        }
        if include_per_problem and self.per_problem is not None:
            d["per_problem"] = self.per_problem.reset_index().to_dict(orient="records")
        return _json_safe(d)


def _transfer_metrics(t: TransferResult) -> dict[str, float]:
    out: dict[str, float] = {"transfer/num_problems": float(t.num_problems)}
    for split in SPLITS:
        s = t.splits.get(split)
        if s is None:
            continue
        out[f"transfer/{split}/num_problems"] = float(s.num_problems)
        if not s.conclusive:  # too few problems: a number here would be read as a finding
            continue
        for metric, ci in s.trained.items():
            out[f"transfer/{split}/{metric}"] = ci.estimate
        for metric, ci in s.base.items():
            out[f"transfer/{split}/base/{metric}"] = ci.estimate
    c = t.crossover
    if c is not None:
        out["transfer/has_crossover"] = float(c.k is not None)
        out["transfer/crossover_share"] = c.share_with_crossover
        low, high = ci_names("transfer/crossover_k")
        for key, value in (("transfer/crossover_k", c.k), (low, c.low), (high, c.high)):
            if value is not None:
                out[key] = float(value)
    return out


def _json_safe(obj):
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return None if not math.isfinite(float(obj)) else float(obj)
    if isinstance(obj, np.ndarray):
        return _json_safe(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj
