"""Rollouts DataFrame -> EvaluationResult: curves with CIs, diversity, transfer, flat metrics.

Input rows follow the "Rollout row" schema (docs/design/architecture.md): one row per sample with at
least `problem_id` and `correct`; `sample_index`, `outcome` (else `extracted`), `score`,
`text`, `entropy`, `format`, `options`, `model` are used when present, and so are two
optional extras: `class_id` (a solution-class partition, e.g. DARLING's) and `embedding`.

Rules for imperfect rows, so that adversarial rollouts evaluate instead of crashing:
a missing `correct` counts as incorrect; a missing `score` falls back to `correct`; a missing
outcome means "nothing extracted" (never wins a vote, adds no distinct outcome).

Metric names are MLflow-safe (`/` and `_`, never `@`): `eval/pass_at_16`, `eval/maj_at_16`,
`eval/best_of_16`, `eval/distinct_outcomes`, `transfer/unsolved/distinct_outcomes`, ...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from breadth.evaluation import diversity as div
from breadth.evaluation.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    ConfidenceInterval,
    bootstrap_means,
    bootstrap_weights,
    percentile_interval,
)
from breadth.evaluation.metrics import (
    best_of_k_curve,
    chance_corrected_pass_at_k,
    chance_pass_at_k,
    default_ks,
    maj_at_k,
    outcome_codes,
    pass_at_k,
)
from breadth.evaluation.result import ChancePoint, CurvePoint, EvaluationResult
from breadth.evaluation.transfer import (
    DEFAULT_MIN_SPLIT,
    DEFAULT_SPLIT_K,
    DEFAULT_SPLIT_THRESHOLD,
    transfer_analysis,
)

__all__ = [
    "DIVERSITY_METRICS",
    "ChancePoint",
    "CurvePoint",
    "EvaluationResult",
    "evaluate_models",
    "evaluate_rollouts",
    "per_problem_table",
]

# Per-problem diversity columns, in report order. A metric whose inputs are absent (no
# `text`, no `entropy`, no `embedding` column) is NaN and left out of the outputs.
DIVERSITY_METRICS = (
    "distinct_outcomes",
    "distinct_outcome_fraction",
    "outcome_entropy",
    "distinct_classes",
    "distinct_1",
    "distinct_2",
    "distinct_3",
    "distinct_4",
    "distinct_k",
    "utility_k",
    "token_entropy",
    "forking_token_share",
    "embedding_diversity",
)
DEFAULT_MAJ_RESAMPLES = 32  # matches EvaluationConfig.maj_resamples
DEFAULT_NOVELTY_K = 10  # NoveltyBench reads the first 10 generations


def evaluate_rollouts(
    rollouts: pd.DataFrame,
    *,
    base: pd.DataFrame | None = None,
    ks: Sequence[int] | None = None,
    num_bootstrap: int = DEFAULT_RESAMPLES,
    maj_resamples: int = DEFAULT_MAJ_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    entropy_threshold: float | None = None,
    entropy_quantile: float = 0.8,
    novelty_k: int = DEFAULT_NOVELTY_K,
    patience: float = div.DEFAULT_PATIENCE,
    tokenize: Callable[[str], Sequence] = str.split,
    model: str | None = None,
    split_k: int = DEFAULT_SPLIT_K,
    split_threshold: float = DEFAULT_SPLIT_THRESHOLD,
    min_split: int = DEFAULT_MIN_SPLIT,
) -> EvaluationResult:
    """Evaluate one model's rollouts; with `base` rollouts, add the transfer analysis.

    ks default to 1, 2, 4, ..., n (n = the smallest sample count of any problem). The
    forking-token threshold defaults to the `entropy_quantile` of the base model's token
    entropies (the model's own when no base is given). Seeded throughout.

    >>> rows = pd.DataFrame({"problem_id": ["a"] * 4 + ["b"] * 4,
    ...                      "correct": [1, 0, 0, 0, 0, 0, 0, 0],
    ...                      "outcome": ["4", "5", "5", "6", "1", "1", "1", "1"]})
    >>> r = evaluate_rollouts(rows, num_bootstrap=20)
    >>> r.metrics()["eval/pass_at_1"], r.metrics()["eval/pass_at_4"], r.metrics()["eval/distinct_outcomes"]
    (0.125, 0.5, 2.0)
    """
    name = model or _single_model_name(rollouts)
    if base is not None and entropy_threshold is None:
        entropy_threshold = _entropy_threshold_of(base, entropy_quantile)
    elif entropy_threshold is None:
        entropy_threshold = _entropy_threshold_of(rollouts, entropy_quantile)
    table_kw = {
        "entropy_threshold": entropy_threshold,
        "novelty_k": novelty_k,
        "patience": patience,
        "tokenize": tokenize,
    }
    samples = _SamplesByProblem.from_rollouts(rollouts)
    table = per_problem_table(rollouts, samples=samples, **table_kw)
    num_samples = int(table["num_samples"].min())
    ks = [int(k) for k in (ks if ks is not None else default_ks(num_samples))]
    bad = [k for k in ks if not 1 <= k <= num_samples]
    if bad:
        raise ValueError(
            f"ks {bad} are outside [1, {num_samples}] (the smallest sample count of any problem)"
        )

    weights = bootstrap_weights(len(table), num_bootstrap, seed)
    n_arr, c_arr = table["num_samples"].to_numpy(), table["num_correct"].to_numpy()
    pass_matrix = np.stack([pass_at_k(n_arr, c_arr, k) for k in ks], axis=1)
    maj_matrix, best_matrix = samples.maj_and_best(ks, maj_resamples, seed)
    curves = {
        name_: _curve(ks, matrix, weights, confidence)
        for name_, matrix in (("pass", pass_matrix), ("maj", maj_matrix), ("best", best_matrix))
    }
    diversity = {}
    for metric in DIVERSITY_METRICS:
        values = table[metric].to_numpy(dtype=np.float64)
        if not np.all(np.isnan(values)):
            diversity[metric] = _ci(values, weights, confidence)

    transfer = None
    base_name = None
    if base is not None:
        base_name = _single_model_name(base)
        base_table = per_problem_table(base, **table_kw)
        transfer = transfer_analysis(
            base_table,
            table,
            ["pass_at_1", *DIVERSITY_METRICS],
            num_resamples=num_bootstrap,
            confidence=confidence,
            seed=seed,
            split_k=split_k,
            split_threshold=split_threshold,
            min_split=min_split,
        )
    fmt = _single_format(rollouts)
    return EvaluationResult(
        model=name,
        num_problems=len(table),
        num_samples=num_samples,
        format=fmt,
        ks=ks,
        pass_at_k=curves["pass"],
        maj_at_k=curves["maj"],
        best_of_k=curves["best"],
        diversity=diversity,
        chance=_chance_points(table, ks, pass_matrix, weights, confidence) if fmt == "mcq" else [],
        transfer=transfer,
        base_model=base_name,
        entropy_threshold=entropy_threshold,
        settings={
            "num_bootstrap": num_bootstrap,
            "maj_resamples": maj_resamples,
            "confidence": confidence,
            "seed": seed,
            "novelty_k": novelty_k,
            "patience": patience,
            "entropy_quantile": entropy_quantile,
        },
        per_problem=table,
    )


def evaluate_models(
    rollouts: pd.DataFrame, *, base_model: str | None = None, **kwargs
) -> dict[str, EvaluationResult]:
    """Evaluate every model in a rollouts frame (column `model`); each vs `base_model` if named.

    The base model itself is evaluated without a transfer section (its per-split values
    appear as `base` in the other models' transfer sections).

    >>> rows = pd.DataFrame({"problem_id": ["a", "a", "a", "a"], "model": ["b", "b", "t", "t"],
    ...                      "correct": [True, False, True, True], "outcome": ["1", "2", "1", "1"]})
    >>> sorted(evaluate_models(rows, base_model="b", num_bootstrap=10, split_k=1))
    ['b', 't']
    """
    if "model" not in rollouts.columns:
        raise ValueError(
            "rollouts have no `model` column; use evaluate_rollouts(...) for one model"
        )
    groups = {str(m): g for m, g in rollouts.groupby("model", sort=False)}
    if base_model is not None and base_model not in groups:
        raise ValueError(
            f"base_model {base_model!r} not among the models in the rollouts: {sorted(groups)}"
        )
    base = groups.get(base_model) if base_model is not None else None
    return {
        name: evaluate_rollouts(g, base=None if name == base_model else base, model=name, **kwargs)
        for name, g in groups.items()
    }


def per_problem_table(
    rollouts: pd.DataFrame,
    *,
    entropy_threshold: float | None = None,
    novelty_k: int = DEFAULT_NOVELTY_K,
    patience: float = div.DEFAULT_PATIENCE,
    tokenize: Callable[[str], Sequence] = str.split,
    samples: _SamplesByProblem | None = None,
) -> pd.DataFrame:
    """One row per problem (index problem_id): num_samples, num_correct, pass_at_1, num_options
    and every column of DIVERSITY_METRICS (NaN where the needed rollout column is absent).

    >>> rows = pd.DataFrame({"problem_id": ["a", "a", "b"], "correct": [True, False, False],
    ...                      "outcome": ["1", "2", None]})
    >>> per_problem_table(rows)[["num_samples", "num_correct", "distinct_outcomes"]].to_dict("list")
    {'num_samples': [2, 1], 'num_correct': [1, 0], 'distinct_outcomes': [2, 0]}
    """
    s = samples if samples is not None else _SamplesByProblem.from_rollouts(rollouts)
    df = s.rows
    counts = np.diff(s.bounds)
    table = pd.DataFrame(index=pd.Index(s.problem_ids, name="problem_id"))
    table["num_samples"] = counts
    table["num_correct"] = np.add.reduceat(s.correct.astype(np.int64), s.bounds[:-1])
    table["pass_at_1"] = table["num_correct"] / table["num_samples"]
    table["num_options"] = _num_options(df, s.bounds)

    distinct = np.zeros(len(counts), dtype=np.int64)
    fraction = np.zeros(len(counts))
    entropy = np.zeros(len(counts))
    for members, idx in s.by_size():
        d = div.outcome_diversity(s.codes[idx])
        distinct[members], fraction[members], entropy[members] = d.distinct, d.fraction, d.entropy
    table["distinct_outcomes"] = distinct
    table["distinct_outcome_fraction"] = fraction
    table["outcome_entropy"] = entropy

    # The per-problem loops below run over problems (not samples) and call plain functions.
    classes = s.class_ids()
    scores = s.scores
    cols: dict[str, list[float]] = {m: [] for m in DIVERSITY_METRICS[3:]}
    has_text = "text" in df.columns
    has_entropy = "entropy" in df.columns and entropy_threshold is not None
    has_embedding = "embedding" in df.columns
    for p, (lo, hi) in enumerate(zip(s.bounds[:-1], s.bounds[1:])):
        cls = classes[lo:hi]
        cols["distinct_classes"].append(float(len(np.unique(cls))))
        texts = [_as_text(t) for t in df["text"].iloc[lo:hi]] if has_text else None
        for n in range(1, 5):
            cols[f"distinct_{n}"].append(
                div.distinct_n(texts, n, tokenize=tokenize) if has_text else math.nan
            )
        k = min(novelty_k, hi - lo)
        cols["distinct_k"].append(float(div.distinct_k(cls, k)))
        cols["utility_k"].append(div.utility_k(cls, scores[lo:hi], k, patience))
        ents = list(df["entropy"].iloc[lo:hi]) if has_entropy else []
        cols["token_entropy"].append(div.mean_token_entropy(ents) if has_entropy else math.nan)
        cols["forking_token_share"].append(
            div.forking_token_share(ents, entropy_threshold) if has_entropy else math.nan
        )
        cols["embedding_diversity"].append(
            _embedding_diversity(df["embedding"].iloc[lo:hi]) if has_embedding else math.nan
        )
    for metric, values in cols.items():
        table[metric] = np.asarray(values, dtype=np.float64)
    return table


@dataclass
class _SamplesByProblem:
    """Rollout rows sorted by (problem, sample_index), with per-sample arrays and problem bounds."""

    rows: pd.DataFrame
    problem_ids: list
    bounds: np.ndarray  # rows of problem p are bounds[p]:bounds[p+1]
    correct: np.ndarray
    codes: np.ndarray  # outcome codes, -1 = nothing extracted
    scores: np.ndarray

    @classmethod
    def from_rollouts(cls, rollouts: pd.DataFrame) -> _SamplesByProblem:
        if not isinstance(rollouts, pd.DataFrame):
            raise TypeError(f"rollouts must be a pandas DataFrame, got {type(rollouts).__name__}")
        missing = {"problem_id", "correct"} - set(rollouts.columns)
        if missing:
            raise ValueError(
                f"rollouts lack required columns {sorted(missing)}; expected the Rollout row schema "
                "(problem_id, sample_index, outcome, correct, score, ...)"
            )
        if rollouts.empty:
            raise ValueError("rollouts are empty: nothing to evaluate")
        df = rollouts.reset_index(drop=True)
        # Problems in sorted id order, so results do not depend on the order of the rows.
        try:
            pcode, uniques = pd.factorize(df["problem_id"], sort=True)
        except TypeError:  # mixed id types: order by their text
            pcode, uniques = pd.factorize(df["problem_id"].astype(str), sort=True)
        if (pcode < 0).any():
            raise ValueError(f"row {int(np.flatnonzero(pcode < 0)[0])} has no problem_id")
        sample_index = (
            df["sample_index"].to_numpy() if "sample_index" in df.columns else np.arange(len(df))
        )
        order = np.lexsort((sample_index, pcode))
        df = df.iloc[order].reset_index(drop=True)
        pcode, sample_index = pcode[order], np.asarray(sample_index)[order]
        if "sample_index" in df.columns:
            dup = (pcode[1:] == pcode[:-1]) & (sample_index[1:] == sample_index[:-1])
            if dup.any():
                i = int(np.flatnonzero(dup)[0]) + 1
                raise ValueError(
                    f"duplicate rollout: problem_id={df['problem_id'].iloc[i]!r} "
                    f"sample_index={sample_index[i]} appears twice; de-duplicate the rollouts"
                )
        bounds = np.searchsorted(pcode, np.arange(len(uniques) + 1))
        correct = _correct_flags(df["correct"])
        outcome_col = (
            "outcome"
            if "outcome" in df.columns
            else "extracted"
            if "extracted" in df.columns
            else None
        )
        codes = (
            outcome_codes(df[outcome_col].to_numpy(dtype=object))
            if outcome_col
            else np.full(len(df), -1, dtype=np.int64)
        )
        scores = correct.astype(np.float64)
        if "score" in df.columns:
            raw = pd.to_numeric(df["score"], errors="coerce").to_numpy(dtype=np.float64)
            scores = np.where(np.isfinite(raw), raw, scores)
        return cls(df, list(uniques), bounds, correct, codes, scores)

    def by_size(self):
        """[(problem positions, (Pn, n) row-index matrix)] for each distinct sample count n."""
        counts = np.diff(self.bounds)
        out = []
        for n in np.unique(counts):
            members = np.flatnonzero(counts == n)
            out.append((members, self.bounds[members][:, None] + np.arange(n)[None, :]))
        return out

    def maj_and_best(self, ks: list[int], maj_resamples: int, seed: int):
        num_problems = len(self.bounds) - 1
        maj = np.zeros((num_problems, len(ks)))
        best = np.zeros((num_problems, len(ks)))
        for members, idx in self.by_size():
            best_curve = best_of_k_curve(self.scores[idx], ks)
            for j, k in enumerate(ks):
                maj[members, j] = maj_at_k(
                    self.codes[idx], self.correct[idx], k, maj_resamples, seed
                )
                best[members, j] = best_curve[k]
        return maj, best

    def class_ids(self) -> np.ndarray:
        """Solution classes: the `class_id` column if given, else the outcome partition in which
        every sample without an outcome shares one "no answer" class."""
        if "class_id" in self.rows.columns:
            ids = pd.to_numeric(self.rows["class_id"], errors="coerce").to_numpy()
            if np.isnan(ids.astype(np.float64)).any():
                i = int(np.flatnonzero(np.isnan(ids.astype(np.float64)))[0])
                raise ValueError(f"class_id is missing or not an integer in sorted rollout row {i}")
            return ids.astype(np.int64)
        return self.codes


def _correct_flags(col: pd.Series) -> np.ndarray:
    """`correct` as bool; missing counts as incorrect; anything but a bool/0/1 is an error."""
    if col.dtype == bool:
        return col.to_numpy()
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_extension_array_dtype(
        col.dtype
    ):
        values = col.to_numpy(dtype=np.float64)
        ok = np.isnan(values) | (values == 0) | (values == 1)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"`correct` in rollout row {i} is {values[i]!r}; expected True/False (or 0/1)"
            )
        return values == 1
    values = col.to_numpy(dtype=object)
    out = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            continue
        if isinstance(v, (bool, np.bool_)) or (
            isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1)
        ):
            out[i] = bool(v)
        else:
            raise ValueError(f"`correct` in rollout row {i} is {v!r}; expected True/False (or 0/1)")
    return out


def _curve(ks, matrix, weights, confidence) -> list[CurvePoint]:
    boot = bootstrap_means(matrix, weights)
    low, high = percentile_interval(boot, confidence)
    est = np.nanmean(matrix, axis=0)
    return [CurvePoint(k, float(est[j]), float(low[j]), float(high[j])) for j, k in enumerate(ks)]


def _ci(values, weights, confidence) -> ConfidenceInterval:
    low, high = percentile_interval(bootstrap_means(values, weights), confidence)
    return ConfidenceInterval(float(np.nanmean(values)), float(low), float(high))


def _chance_points(table, ks, pass_matrix, weights, confidence) -> list[ChancePoint]:
    m = table["num_options"].to_numpy(dtype=np.float64)
    if np.any(np.isnan(m)) or np.any(m < 2):
        return []  # options unknown or degenerate: chance is undefined
    points = []
    for j, k in enumerate(ks):
        corrected = chance_corrected_pass_at_k(pass_matrix[:, j], m, k)
        points.append(
            ChancePoint(
                k, float(chance_pass_at_k(m, k).mean()), _ci(corrected, weights, confidence)
            )
        )
    return points


def _num_options(df: pd.DataFrame, bounds: np.ndarray) -> np.ndarray:
    if "options" not in df.columns:
        return np.full(len(bounds) - 1, np.nan)
    first = df["options"].iloc[bounds[:-1]]
    return np.array(
        [len(o) if isinstance(o, (list, tuple, np.ndarray)) else np.nan for o in first], dtype=float
    )


def _entropy_threshold_of(rollouts: pd.DataFrame, quantile: float) -> float | None:
    if "entropy" not in rollouts.columns:
        return None
    ents = [e for e in rollouts["entropy"] if isinstance(e, (list, tuple, np.ndarray)) and len(e)]
    return div.entropy_threshold(ents, quantile) if ents else None


def _embedding_diversity(embeddings: pd.Series) -> float:
    vectors = [e for e in embeddings if isinstance(e, (list, tuple, np.ndarray)) and len(e)]
    if len(vectors) != len(embeddings):
        return math.nan  # some samples lack an embedding: the mean would be biased
    return div.embedding_diversity(np.stack([np.asarray(v, dtype=np.float64) for v in vectors]))


def _as_text(value) -> str:
    return (
        value if isinstance(value, str) else "" if value is None or value is pd.NA else str(value)
    )


def _single_model_name(rollouts: pd.DataFrame) -> str:
    if "model" not in rollouts.columns:
        return "model"
    names = pd.unique(rollouts["model"].dropna())
    if len(names) > 1:
        raise ValueError(
            f"rollouts hold {len(names)} models ({', '.join(map(str, names[:5]))}); "
            "use evaluate_models(rollouts, base_model=...) or filter to one model"
        )
    return str(names[0]) if len(names) else "model"


def _single_format(rollouts: pd.DataFrame) -> str | None:
    if "format" not in rollouts.columns:
        return None
    formats = pd.unique(rollouts["format"].dropna())
    return str(formats[0]) if len(formats) == 1 else ("mixed" if len(formats) else None)
