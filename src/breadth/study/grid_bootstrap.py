"""Intervals of a grid cell's summary: a two-level bootstrap over seeds × problems.

A t-interval across two seeds multiplies the spread by t(1) = 12.7 and leaves [0, 1]; a
percentile interval of resampled means of per-problem values stays inside their range (a
proportion's inside [0, 1], a count's at or above 0) and counts problem-sampling noise for one
seed as well as seed noise for several. The resampling itself is the claims' too:
`breadth.stats.bootstrap.hierarchical_bootstrap_means`.

Input is the study frame (`breadth.study.frame.load_study_frame`): one row per (format,
objective, seed, model, problem_id) with `num_samples`, `num_correct`, `distinct_outcomes`
and, where available, `distinct_correct_outcomes`, `num_options` and `search_evolutionary`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from breadth.evaluation.metrics import pass_at_k
from breadth.evaluation.transfer import solved_by_base
from breadth.stats.bootstrap import (
    hierarchical_bootstrap_means,
    percentile_interval,
    widened_for_few_seeds,
)
from breadth.study.grid_settings import ClaimSettings

__all__ = ["BOOTSTRAPPED", "DIVERSITY_SPLIT_COLUMNS", "SPLIT_COLUMNS", "cell_intervals",
           "cell_statistics", "split_by_cell"]

# distinct_unsolved split in two (docs/design/algorithms.md, "The split of a change in
# distinct outcomes"): distinct wrong outcomes (no sample of the outcome correct) and distinct
# correct outcomes, per model and paired; the two deltas sum to distinct_unsolved_delta.
DIVERSITY_SPLIT_COLUMNS = (
    "distinct_wrong_unsolved", "base_distinct_wrong_unsolved", "distinct_wrong_unsolved_delta",
    "distinct_correct_unsolved", "base_distinct_correct_unsolved",
    "distinct_correct_unsolved_delta",
)
# Summary columns this module gives intervals for (the grid summary's names).
BOOTSTRAPPED = (
    "pass_at_1", "base_pass_at_1", "pass_at_1_delta",
    "pass_at_kmax", "base_pass_at_kmax", "pass_at_kmax_delta",
    "distinct_solved", "distinct_unsolved", "base_distinct_unsolved", "distinct_unsolved_delta",
    "search_success",
    *DIVERSITY_SPLIT_COLUMNS,
)
# The summary columns read on one transfer split: with fewer problems than the settings'
# `min_split` (in any seed) they are inconclusive, as the run's own report and the claims say.
SPLIT_COLUMNS = {
    "solved": ("distinct_solved",),
    "unsolved": ("distinct_unsolved", "base_distinct_unsolved", "distinct_unsolved_delta",
                 *DIVERSITY_SPLIT_COLUMNS),
}
Interval = tuple[float, float, float]
_KEYS = ["seed", "problem_id"]


def split_by_cell(frame: pd.DataFrame) -> dict[tuple[str, str], tuple[pd.DataFrame, pd.DataFrame]]:
    """{(format, objective): (trained rows, SFT rows of that format)}, split once for a grid.

    The SFT start of a format and seed is shared by its objectives: its rows are read from
    any cell (one row per seed and problem).
    """
    sft = {fmt: rows.drop_duplicates(_KEYS)
           for fmt, rows in frame[frame["model"] == "sft"].groupby("format")}
    return {(fmt, objective): (rows, sft.get(fmt, rows.iloc[:0]))
            for (fmt, objective), rows in frame[frame["model"] == "rl"].groupby(
                ["format", "objective"])}


def cell_intervals(
    trained: pd.DataFrame, base: pd.DataFrame, k: int | None, settings: ClaimSettings | None = None
) -> dict[str, Interval]:
    """{summary column: (estimate, low, high)} for one cell from its trained and SFT rows,
    paired per problem (the problems both evaluated, per seed); {} without a shared problem.

    Estimates are means over every seed's problems (with equal problem counts per seed: the
    mean of the runs' values). Deltas are per-problem differences, resampled with their pair.
    Distinct outcomes are split by whether the SFT start solved the problem (pass@split_k of
    `settings`, above chance for multiple choice); a split however small gets its numbers
    here: whether it is large enough to be read is `cell_statistics`' split sizes against `min_split`.
    """
    return _intervals(_pairs(trained, base), k, settings or ClaimSettings())


def cell_statistics(
    trained: pd.DataFrame, base: pd.DataFrame, k: int | None, settings: ClaimSettings | None = None
) -> tuple[dict[str, Interval], dict[str, int]]:
    """`cell_intervals` of one cell, and its transfer splits' sizes: {"solved": n, "unsolved":
    n}, the fewest problems of each split in any seed (as the claims count a split against
    `min_split`; {} without a shared problem). Its rows are paired once for both: the pairing
    (a merge and a sort) is most of a cell's time in a grid summary of many cells.

    >>> rows = lambda model, correct: pd.DataFrame({"seed": 0, "problem_id": ["a", "b", "c"],
    ...     "model": model, "num_samples": 4, "num_correct": correct, "distinct_outcomes": 1.0})
    >>> cell_statistics(rows("rl", [4, 4, 4]), rows("sft", [4, 0, 0]), k=None)[1]
    {'solved': 1, 'unsolved': 2}
    """
    s = settings or ClaimSettings()
    pairs = _pairs(trained, base)
    return _intervals(pairs, k, s), _split_sizes(pairs, s)


def _intervals(pairs: pd.DataFrame, k: int | None, s: ClaimSettings) -> dict[str, Interval]:
    if pairs.empty:
        return {}
    seeds = pairs["seed"].to_numpy()
    row = np.searchsorted(np.unique(seeds), seeds)
    # The pairs are sorted by seed: a pair's slot is its place after its seed's first pair.
    slot = np.arange(len(seeds)) - np.searchsorted(seeds, seeds, side="left")
    shape = (int(row.max()) + 1, int(slot.max()) + 1)

    def grid(values) -> np.ndarray:  # (seeds, problems), NaN-padded
        out = np.full(shape, np.nan)
        out[row, slot] = np.asarray(values, dtype=np.float64)
        return out

    n, c = pairs["num_samples"].to_numpy(), pairs["num_correct"].to_numpy()
    n0, c0 = pairs["num_samples_base"].to_numpy(), pairs["num_correct_base"].to_numpy()
    solved = _solved(pairs, s)
    distinct, distinct0 = (pairs[f"distinct_outcomes{x}"].to_numpy(np.float64) for x in ("", "_base"))
    nan = np.full(len(pairs), np.nan)
    search = (pairs["search_evolutionary"].to_numpy(np.float64)
              if "search_evolutionary" in pairs else nan)
    p1, p1_base = _pass(n, c, 1), _pass(n0, c0, 1)
    pk, pk_base = (_pass(n, c, k), _pass(n0, c0, k)) if k is not None else (nan, nan)
    unsolved = np.where(~solved, distinct, np.nan)
    unsolved0 = np.where(~solved, distinct0, np.nan)
    # distinct = wrong + correct: the unsolved split's change, split (NaN without the column).
    correct, correct0 = (pairs[f"distinct_correct_outcomes{x}"].to_numpy(np.float64)
                         if f"distinct_correct_outcomes{x}" in pairs else nan for x in ("", "_base"))
    split = []
    for trained, base in ((distinct - correct, distinct0 - correct0), (correct, correct0)):
        trained, base = np.where(~solved, trained, np.nan), np.where(~solved, base, np.nan)
        split += [trained, base, trained - base]
    columns = [p1, p1_base, p1 - p1_base, pk, pk_base, pk - pk_base,
               np.where(solved, distinct, np.nan), unsolved, unsolved0, unsolved - unsolved0,
               search, *split]
    stacked = np.stack([grid(v) for v in columns], axis=-1)  # (seeds, problems, columns)
    with warnings.catch_warnings():  # a column with no value (no search stage) stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = hierarchical_bootstrap_means(stacked, s.num_resamples, s.seed)
        low, high = percentile_interval(means, s.confidence)
        estimate = np.nanmean(stacked, axis=(0, 1))
        floor, ceiling = np.nanmin(stacked, axis=(0, 1)), np.nanmax(stacked, axis=(0, 1))
    low, high = widened_for_few_seeds(estimate, low, high, shape[0], floor, ceiling)
    return {name: (float(e), float(lo), float(hi))
            for name, e, lo, hi in zip(BOOTSTRAPPED, estimate, low, high)}


def _split_sizes(pairs: pd.DataFrame, s: ClaimSettings) -> dict[str, int]:
    """{"solved": n, "unsolved": n}: the fewest problems of each transfer split in any seed of
    the cell; {} without a shared problem."""
    if pairs.empty:
        return {}
    _, seed_of = np.unique(pairs["seed"].to_numpy(), return_inverse=True)
    solved, problems = np.bincount(seed_of, weights=_solved(pairs, s)), np.bincount(seed_of)
    return {"solved": int(solved.min()), "unsolved": int((problems - solved).min())}


def _pairs(trained: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Trained rows beside their SFT rows (`_base` columns), per seed and problem."""
    wanted = [*_KEYS, "num_samples", "num_correct", "distinct_outcomes",
              "distinct_correct_outcomes", "num_options", "search_evolutionary"]
    trained, base = (rows[[c for c in wanted if c in rows]] for rows in (trained, base))
    return trained.merge(base.drop(columns="search_evolutionary", errors="ignore"), on=_KEYS,
                         suffixes=("", "_base")).sort_values(_KEYS)


def _solved(pairs: pd.DataFrame, s: ClaimSettings) -> np.ndarray:
    """Per pair, whether the SFT start solved the problem (the transfer split's rule)."""
    options = pairs.get("num_options_base")
    if options is not None and not (options.notna().all() and (options >= 2).all()):
        options = None
    return solved_by_base(pairs["num_samples_base"].to_numpy(), pairs["num_correct_base"].to_numpy(),
                          s.split_k, s.split_threshold,
                          None if options is None else options.to_numpy(np.float64))


def _pass(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per-problem pass@k as logged in MLflow (not above chance); NaN where n < k."""
    out = np.full(len(n), np.nan)
    ok = n >= k
    out[ok] = pass_at_k(n[ok], c[ok], k)
    return out

