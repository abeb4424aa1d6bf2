"""The per-problem loop that `per_problem_table` replaced, kept as the reference it must match.

It calls the one-problem functions of `breadth.evaluation.diversity` on each problem's rows,
as evaluation did before it was vectorised; the vectorised table must agree to 1e-9.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from breadth.evaluation import diversity as div
from breadth.evaluation.metrics import run_starts
from breadth.evaluation.samples import SamplesByProblem
from breadth.evaluation.summary import DIVERSITY_METRICS

# The metrics the loop computed; the outcome metrics were already vectorised.
OUTCOME_METRICS = ("distinct_outcomes", "distinct_correct_outcomes", "distinct_wrong_outcomes",
                   "vendi_outcomes", "distinct_outcome_fraction", "outcome_entropy")
LOOP_METRICS = tuple(m for m in DIVERSITY_METRICS if m not in OUTCOME_METRICS)


def per_problem_loop(
    rollouts: pd.DataFrame,
    *,
    entropy_threshold: float | None,
    novelty_k: int = 10,
    patience: float = div.DEFAULT_PATIENCE,
    tokenize=str.split,
) -> pd.DataFrame:
    s = SamplesByProblem.from_rollouts(rollouts)
    df = s.rows
    classes, scores = s.class_ids(), s.scores
    cols: dict[str, list[float]] = {m: [] for m in LOOP_METRICS}
    has_text = "text" in df.columns
    has_entropy = "entropy" in df.columns and entropy_threshold is not None
    has_embedding = "embedding" in df.columns
    for lo, hi in zip(s.bounds[:-1], s.bounds[1:]):
        cls = classes[lo:hi]
        cols["distinct_classes"].append(float(len(np.unique(cls))))
        texts = [_as_text(t) for t in df["text"].iloc[lo:hi]] if has_text else None
        for n in range(1, 5):
            cols[f"distinct_{n}"].append(
                div.distinct_n(texts, n, tokenize=tokenize) if has_text else math.nan
            )
        cols["vendi_text"].append(div.vendi_text(texts, tokenize=tokenize) if has_text
                                  else math.nan)
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
    return pd.DataFrame(cols, index=pd.Index(s.problem_ids, name="problem_id"))


def plurality_accuracy_sorted_runs(keys: np.ndarray) -> np.ndarray:
    """The plurality vote as first written (segment reductions over sorted runs)."""
    num_rows, m = keys.shape
    flat = np.sort(keys, axis=1).ravel()
    codes = flat >> 1
    starts = run_starts(codes, m)
    lengths = np.diff(np.append(starts, codes.size))
    run_rows = starts // m
    run_correct = np.add.reduceat(flat & 1, starts) / lengths
    lengths = np.where(codes[starts] < 0, 0, lengths)
    first_run = np.searchsorted(run_rows, np.arange(num_rows))
    top = np.maximum.reduceat(lengths, first_run)
    winner = (lengths == top[run_rows]) & (lengths > 0)
    num = np.bincount(run_rows, weights=winner * run_correct, minlength=num_rows)
    den = np.bincount(run_rows, weights=winner, minlength=num_rows)
    return np.divide(num, den, out=np.zeros(num_rows), where=den > 0)


def _embedding_diversity(embeddings: pd.Series) -> float:
    vectors = [e for e in embeddings if isinstance(e, (list, tuple, np.ndarray)) and len(e)]
    if len(vectors) != len(embeddings):
        return math.nan
    return div.embedding_diversity(np.stack([np.asarray(v, dtype=np.float64) for v in vectors]))


def _as_text(value) -> str:
    # One deliberate change from the loop as it was: a NaN text (pandas' missing value) is
    # empty, where it used to count as the word "nan".
    if isinstance(value, str):
        return value
    missing = value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
    return "" if missing else str(value)
