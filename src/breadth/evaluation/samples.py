"""Rollout rows as per-sample arrays sorted by (problem, sample_index), with problem bounds.

The one place that reads and validates the rollouts frame for evaluation: required columns,
duplicate samples, `correct` flags, outcome codes and scores. Metrics take its arrays.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from breadth.evaluation.metrics import best_of_k_curve, maj_at_k_estimates, outcome_codes
from breadth.evaluation.result import UnevenSamples

__all__ = [
    "SamplesByProblem",
    "UnevenSamplesWarning",
    "as_text",
    "num_options",
    "uneven_samples",
    "warn_if_uneven",
]


@dataclass
class SamplesByProblem:
    """Rollout rows sorted by (problem, sample_index), with per-sample arrays and problem bounds."""

    rows: pd.DataFrame
    problem_ids: list
    bounds: np.ndarray  # rows of problem p are bounds[p]:bounds[p+1]
    correct: np.ndarray
    codes: np.ndarray  # outcome codes, -1 = nothing extracted
    scores: np.ndarray

    @classmethod
    def from_rollouts(cls, rollouts: pd.DataFrame) -> SamplesByProblem:
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

    @property
    def group(self) -> np.ndarray:
        """Problem position of every sample (non-decreasing)."""
        return np.repeat(np.arange(len(self.bounds) - 1), np.diff(self.bounds))

    @property
    def position(self) -> np.ndarray:
        """Index of every sample within its problem, in sample_index order."""
        return np.arange(self.bounds[-1]) - np.repeat(self.bounds[:-1], np.diff(self.bounds))

    @property
    def first_half(self) -> np.ndarray:
        """Whether each sample is in the first half of its problem's samples (sample_index
        order; the first floor(n / 2)): the transfer split reads it, the other half is measured."""
        counts = np.diff(self.bounds)
        return self.position < (counts // 2)[self.group]

    def by_size(self):
        """[(problem positions, (Pn, n) row-index matrix)] for each distinct sample count n."""
        counts = np.diff(self.bounds)
        out = []
        for n in np.unique(counts):
            members = np.flatnonzero(counts == n)
            out.append((members, self.bounds[members][:, None] + np.arange(n)[None, :]))
        return out

    def maj_and_best(self, ks: list[int], *, maj_resamples: int, seed: int):
        """((P, K) maj@k, (P, K) best-of-k, the ks where some problem's maj@k was resampled).

        best-of-k is exact; maj@k is exact unless its cost passes `MAJ_EXACT_WORK_LIMIT`
        (`maj_at_k_estimates`: large n and k), where it is the mean of `maj_resamples` seeded
        draws per problem."""
        num_problems = len(self.bounds) - 1
        maj = np.zeros((num_problems, len(ks)))
        best = np.zeros((num_problems, len(ks)))
        resampled: set[int] = set()
        for members, idx in self.by_size():
            best_curve = best_of_k_curve(self.scores[idx], ks)
            maj_curve, drawn = maj_at_k_estimates(self.codes[idx], self.correct[idx], ks,
                                                  num_resamples=maj_resamples, seed=seed)
            resampled.update(drawn)
            for j, k in enumerate(ks):
                maj[members, j] = maj_curve[k]
                best[members, j] = best_curve[k]
        return maj, best, sorted(resampled)

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


def num_options(df: pd.DataFrame, bounds: np.ndarray) -> np.ndarray:
    """Options per problem (its first row's `options` list), NaN where unknown."""
    if "options" not in df.columns:
        return np.full(len(bounds) - 1, np.nan)
    first = df["options"].iloc[bounds[:-1]]
    return np.array(
        [len(o) if isinstance(o, (list, tuple, np.ndarray)) else np.nan for o in first], dtype=float
    )


def as_text(value) -> str:
    """A sample's text as a string; a missing text (None, NA, or pandas' NaN) is empty."""
    if isinstance(value, str):
        return value
    missing = value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
    return "" if missing else str(value)


class UnevenSamplesWarning(UserWarning):
    """Problems have different sample counts, so every curve stops at the smallest."""


def uneven_samples(counts: pd.Series) -> UnevenSamples | None:
    """The problems below the largest sample count (`counts`: problem_id -> samples), or None
    when every problem has the same count."""
    most = int(counts.max())
    short = counts[counts < most].sort_values(kind="stable")
    if short.empty:
        return None
    return UnevenSamples(len(counts), most, tuple((pid, int(n)) for pid, n in short.items()))


def warn_if_uneven(uneven: UnevenSamples | None, model: str) -> None:
    if uneven is None:
        return
    warnings.warn(
        f"model {model!r}: {uneven.describe(shown=10)}. Re-run their rollouts, or drop them, "
        "to get the full curve.",
        UnevenSamplesWarning,
        stacklevel=3,
    )
