"""Rollouts DataFrame -> EvaluationResult: curves with CIs, diversity, transfer, flat metrics.

Input rows follow the "Rollout row" schema (docs/design/architecture.md): one row per sample with at
least `problem_id` and `correct`; `sample_index`, `outcome` (else `extracted`), `score`,
`text`, `entropy`, `format`, `options`, `model` are used when present, and so are two
optional extras: `class_id` (a solution-class partition, e.g. DARLING's) and `embedding`.

Rules for imperfect rows, so that adversarial rollouts evaluate instead of crashing:
a missing `correct` counts as incorrect; a missing `score` falls back to `correct`; a missing
outcome means "nothing extracted" (never wins a vote, adds no distinct outcome).

A sample with no `extracted` answer (rows without that column: no outcome) had nothing the
verifier could read: `eval/no_answer_rate` counts those apart from wrong answers.

Metric names are MLflow-safe (`/` and `_`, never `@`): `eval/pass_at_16`, `eval/maj_at_16`,
`eval/best_of_16`, `eval/pass_hat_16` (pass^16), `eval/g_pass_at_16`, `eval/mg_pass_at_16`,
`eval/distinct_outcomes`, `eval/vendi_outcomes`, `transfer/unsolved/distinct_outcomes`, ...
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from breadth.evaluation import diversity as div
from breadth.evaluation import grouped
from breadth.evaluation.claim_columns import claim_columns, reasoning_entropy_threshold
from breadth.evaluation.metrics import (
    DEFAULT_G_PASS_TAU,
    DEFAULT_MAJ_RESAMPLES,
    chance_corrected_pass_at_k,
    chance_pass_at_k,
    default_ks,
    g_pass_at_k,
    mg_pass_at_k,
    pass_at_k,
    pass_hat_k,
)
from breadth.evaluation.result import ChancePoint, CurvePoint, EvaluationResult
from breadth.evaluation.samples import (
    SamplesByProblem,
    UnevenSamplesWarning,
    as_text,
    num_options,
    uneven_samples,
    warn_if_uneven,
)
from breadth.evaluation.transfer import (
    DEFAULT_MIN_SPLIT,
    DEFAULT_SPLIT_K,
    DEFAULT_SPLIT_THRESHOLD,
    transfer_analysis,
)
from breadth.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    ConfidenceInterval,
    bootstrap_weights,
    column_intervals,
)

__all__ = [
    "DIVERSITY_METRICS",
    "ChancePoint",
    "CurvePoint",
    "EvaluationResult",
    "SplitBudgetError",
    "UnevenSamplesWarning",
    "evaluate_models",
    "evaluate_rollouts",
    "per_problem_table",
    "second_half",
]

log = logging.getLogger(__name__)

# Per-problem diversity columns, in report order. A metric whose inputs are absent (no
# `text`, no `entropy`, no `embedding` column) is NaN and left out of the outputs.
# distinct_outcomes = distinct_correct_outcomes + distinct_wrong_outcomes (an outcome is
# wrong when no sample of it was correct): the two parts of a change in distinct outcomes.
DIVERSITY_METRICS = (
    "distinct_outcomes",
    "distinct_correct_outcomes",
    "distinct_wrong_outcomes",
    "vendi_outcomes",
    "distinct_outcome_fraction",
    "outcome_entropy",
    "distinct_classes",
    "distinct_1",
    "distinct_2",
    "distinct_3",
    "distinct_4",
    "vendi_text",
    "distinct_k",
    "utility_k",
    "token_entropy",
    "forking_token_share",
    "embedding_diversity",
)
DEFAULT_NOVELTY_K = 10  # NoveltyBench reads the first 10 generations


class SplitBudgetError(ValueError):
    """The transfer split's budget `split_k` is more samples than the base model has on some
    problem. Typed, with the numbers, so a command can say how its user sets the key."""

    def __init__(self, split_k: int, fewest: int) -> None:
        self.split_k, self.fewest = split_k, fewest
        super().__init__(
            f"transfer split budget split_k={split_k} exceeds the base model's smallest sample "
            f"count {fewest}: set evaluation.transfer_split_k to {fewest} or less, or sample "
            f"the base model at least {split_k} times per problem"
        )


def second_half(samples: SamplesByProblem) -> pd.DataFrame:
    """The rows of the second half of each problem's samples (sample_index order): the
    transfer analysis measures them, its split reads the first half (`split_num_samples`).

    >>> rows = pd.DataFrame({"problem_id": ["a"] * 3 + ["b"] * 2, "sample_index": [2, 0, 1, 0, 1],
    ...                      "correct": [1, 0, 0, 1, 1]})
    >>> second_half(SamplesByProblem.from_rollouts(rows))[["problem_id", "sample_index"]].values.tolist()
    [['a', 1], ['a', 2], ['b', 1]]
    """
    return samples.rows[~samples.first_half]


def evaluate_rollouts(
    rollouts: pd.DataFrame,
    *,
    base: pd.DataFrame | None = None,
    ks: Sequence[int] | None = None,
    num_bootstrap: int = DEFAULT_RESAMPLES,
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
    maj_resamples: int = DEFAULT_MAJ_RESAMPLES,
    trace: bool = True,
    g_pass_tau: float = DEFAULT_G_PASS_TAU,
) -> EvaluationResult:
    """Evaluate one model's rollouts; with `base` rollouts, add the transfer analysis.

    `trace`: whether the completions hold a reasoning trace before their answer line (the
    run's `data.reasoning`). Without one the claims' reasoning columns are NaN (not measured):
    a completion that is only the answer (its cue is in the prompt) has no answer marker of
    its own, so it would otherwise be read as all reasoning.

    Beside pass@k, maj@k and best-of-k, the curves of pass^k (all k correct), G-Pass@k at
    `g_pass_tau` (at least ceil(tau k) of k correct) and mG-Pass@k (`breadth.evaluation.metrics`).

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
    # The claims' forking tokens: the reasoning's, at the base model's cut-off (the answer
    # line excluded), as for the whole text above.
    reasoning_threshold = (reasoning_entropy_threshold(base if base is not None else rollouts,
                                                       entropy_quantile) if trace else None)
    table_kw = {
        "trace": trace,
        "entropy_threshold": entropy_threshold,
        "reasoning_threshold": reasoning_threshold,
        "novelty_k": novelty_k,
        "patience": patience,
        "tokenize": tokenize,
    }
    samples = SamplesByProblem.from_rollouts(rollouts)
    table = per_problem_table(rollouts, samples=samples, **table_kw)
    num_samples = int(table["num_samples"].min())
    uneven = uneven_samples(table["num_samples"])
    warn_if_uneven(uneven, name)
    ks = [int(k) for k in (ks if ks is not None else default_ks(num_samples))]
    bad = [k for k in ks if not 1 <= k <= num_samples]
    if bad:
        raise ValueError(
            f"ks {bad} are outside [1, {num_samples}] (the smallest sample count of any problem)"
        )

    weights = bootstrap_weights(len(table), num_bootstrap, seed)
    n_arr, c_arr = table["num_samples"].to_numpy(), table["num_correct"].to_numpy()
    pass_matrix = np.stack([pass_at_k(n_arr, c_arr, k) for k in ks], axis=1)
    maj_matrix, best_matrix, maj_resampled = samples.maj_and_best(ks, maj_resamples=maj_resamples,
                                                                  seed=seed)
    present = [
        m for m in DIVERSITY_METRICS if not table[m].isna().all()
    ]  # a metric without its input column (text, entropy, ...) is left out
    matrices = {
        "pass": pass_matrix, "maj": maj_matrix, "best": best_matrix,
        "pass_hat": np.stack([pass_hat_k(n_arr, c_arr, k) for k in ks], axis=1),
        "g_pass": np.stack([g_pass_at_k(n_arr, c_arr, k, g_pass_tau) for k in ks], axis=1),
        "mg_pass": np.stack([mg_pass_at_k(n_arr, c_arr, k) for k in ks], axis=1),
    }
    # Every curve point and diversity metric in one resampling pass over the weights (each
    # column's interval is its own: adding a column changes no other's).
    columns = np.concatenate(
        [*matrices.values(), table[present].to_numpy(dtype=np.float64)], axis=1
    )
    intervals = column_intervals(columns, weights, confidence)
    curves = {name_: [] for name_ in matrices}
    for i, name_ in enumerate(curves):
        for j, k in enumerate(ks):
            ci = intervals[i * len(ks) + j]
            curves[name_].append(CurvePoint(k, ci.estimate, ci.low, ci.high))
    diversity = dict(zip(present, intervals[len(matrices) * len(ks) :]))

    transfer = None
    base_name = None
    if base is not None:
        base_name = _single_model_name(base)
        base_samples = SamplesByProblem.from_rollouts(base)
        base_table = per_problem_table(base, samples=base_samples, **table_kw)
        fewest = int(base_table["num_samples"].min()) if len(base_table) else split_k
        if split_k > fewest:
            raise SplitBudgetError(split_k, fewest)
        held_out = None
        if split_k <= int(base_table["split_num_samples"].min()):
            # Split on the base's first half, measure both models on their second halves.
            held_out = tuple(per_problem_table(second_half(s), **table_kw)
                             for s in (base_samples, samples))
        else:
            log.warning("transfer: the base model has fewer than 2 x split_k = %d samples on "
                        "some problem, so the split reads the samples it measures (biased "
                        "toward narrowing: regression to the mean); sample it at least %d times "
                        "per problem for a held-out split", 2 * split_k, 2 * split_k)
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
            held_out=held_out,
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
        pass_hat_k=curves["pass_hat"],
        g_pass_at_k=curves["g_pass"],
        mg_pass_at_k=curves["mg_pass"],
        diversity=diversity,
        chance=_chance_points(table, ks, pass_matrix, weights, confidence) if fmt == "mcq" else [],
        transfer=transfer,
        base_model=base_name,
        entropy_threshold=entropy_threshold,
        settings={
            "num_bootstrap": num_bootstrap,
            "confidence": confidence,
            "seed": seed,
            "novelty_k": novelty_k,
            "patience": patience,
            "entropy_quantile": entropy_quantile,
            # maj@k at these k is the mean of maj_resamples seeded draws per problem, not the
            # exact expectation (too costly there); empty when every k is exact.
            "maj_resampled_ks": maj_resampled,
            "maj_resamples": maj_resamples,
            "g_pass_tau": g_pass_tau,
        },
        per_problem=table,
        uneven_samples=uneven,
        transfer_min_split=min_split if transfer is not None else None,
        no_answer_rate=_ci(table["no_answer_rate"], weights, confidence),
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
    samples: SamplesByProblem | None = None,
    reasoning_threshold: float | None = None,
    trace: bool = True,
) -> pd.DataFrame:
    """One row per problem (index problem_id): num_samples, num_correct, pass_at_1, num_options,
    no_answer_rate (the share of samples with nothing extracted), every column of
    DIVERSITY_METRICS (NaN where the needed rollout column is absent) and the claims' columns
    (`breadth.evaluation.claim_columns`).

    >>> rows = pd.DataFrame({"problem_id": ["a", "a", "b"], "correct": [True, False, False],
    ...                      "outcome": ["1", "2", None]})
    >>> per_problem_table(rows)[["num_samples", "num_correct", "distinct_outcomes"]].to_dict("list")
    {'num_samples': [2, 1], 'num_correct': [1, 0], 'distinct_outcomes': [2, 0]}
    """
    s = samples if samples is not None else SamplesByProblem.from_rollouts(rollouts)
    df = s.rows
    counts = np.diff(s.bounds)
    num_problems = len(counts)
    # Columns are collected first and framed once: a DataFrame grown column by column costs
    # a block insert per column (~1 ms each at 10,000 problems).
    table: dict[str, np.ndarray] = {}
    table["num_samples"] = counts
    table["num_correct"] = np.add.reduceat(s.correct.astype(np.int64), s.bounds[:-1])
    table["pass_at_1"] = table["num_correct"] / counts
    table["num_options"] = num_options(df, s.bounds)
    table["no_answer_rate"] = np.add.reduceat(_no_answer(df, s.codes).astype(np.float64),
                                              s.bounds[:-1]) / counts

    distinct = np.zeros(num_problems, dtype=np.int64)
    fraction = np.zeros(num_problems)
    entropy = np.zeros(num_problems)
    for members, idx in s.by_size():
        d = div.outcome_diversity(s.codes[idx])
        distinct[members], fraction[members], entropy[members] = d.distinct, d.fraction, d.entropy
    table["distinct_outcomes"] = distinct
    extra = claim_columns(s, reasoning_threshold, trace=trace)
    table["distinct_correct_outcomes"] = extra.pop("distinct_correct_outcomes")
    table["distinct_wrong_outcomes"] = distinct - table["distinct_correct_outcomes"]
    # The exact-match kernel's Vendi score: exp(outcome entropy), 0 without an outcome
    # (`diversity.vendi_outcomes`).
    table["vendi_outcomes"] = np.where(distinct > 0, np.exp(entropy), 0.0)
    table["distinct_outcome_fraction"] = fraction
    table["outcome_entropy"] = entropy

    # Every metric below is computed for all problems at once from per-sample arrays.
    classes, group, position = s.class_ids(), s.group, s.position
    first_k = np.minimum(novelty_k, counts)
    # Counts stored as floats, like every other diversity column (NaN marks "not measured").
    table["distinct_classes"] = grouped.distinct_per_group(classes, group, num_problems) * 1.0
    nan = np.full(num_problems, np.nan)
    distinct_n = {}
    if "text" in df.columns:
        if isinstance(df["text"].dtype, pd.StringDtype):
            texts = df["text"].array  # Arrow-backed: reaches Arrow's split without a copy
        else:
            texts = df["text"].to_numpy(object)
            if pd.api.types.infer_dtype(texts, skipna=True) != "string":  # numbers, bytes, ...
                texts = [as_text(t) for t in texts]
        tokens = grouped.text_tokens(texts, tokenize)  # once, for distinct-n and Vendi
        distinct_n = grouped.distinct_n_by_group(texts, group, num_problems, tokens=tokens)
        vendi_text = grouped.vendi_text_by_group(texts, group, num_problems, tokens=tokens)
    else:
        vendi_text = nan
    for n in range(1, 5):
        table[f"distinct_{n}"] = distinct_n.get(n, nan)
    table["vendi_text"] = vendi_text
    table["distinct_k"] = grouped.distinct_k_by_group(classes, group, position, first_k) * 1.0
    table["utility_k"] = grouped.utility_k_by_group(
        classes, s.scores, group, position, first_k, patience
    )
    if "entropy" in df.columns and entropy_threshold is not None:
        token_entropy, forking = grouped.token_entropy_by_group(
            df["entropy"].to_numpy(object), group, num_problems, entropy_threshold
        )
    else:
        token_entropy = forking = nan
    table["token_entropy"] = token_entropy
    table["forking_token_share"] = forking
    table["embedding_diversity"] = (
        grouped.embedding_diversity_by_group(df["embedding"].to_numpy(object), s.bounds)
        if "embedding" in df.columns
        else nan
    )
    table.update(extra)
    return pd.DataFrame(table, index=pd.Index(s.problem_ids, name="problem_id"))


def _no_answer(rows: pd.DataFrame, codes: np.ndarray) -> np.ndarray:
    """Per sample: whether the verifier read nothing as its answer (`extracted` is None);
    rows without that column fall back to their outcome (none: nothing read)."""
    if "extracted" in rows.columns:
        return rows["extracted"].isna().to_numpy()
    return codes < 0


def _ci(values, weights, confidence) -> ConfidenceInterval:
    return column_intervals(np.asarray(values)[:, None], weights, confidence)[0]


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


def _entropy_threshold_of(rollouts: pd.DataFrame, quantile: float) -> float | None:
    if "entropy" not in rollouts.columns:
        return None
    flat, _ = grouped.flat_vectors(rollouts["entropy"].to_numpy(object))
    return div.entropy_threshold([flat], quantile) if flat.size else None


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
