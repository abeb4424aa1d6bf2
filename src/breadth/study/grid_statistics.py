"""Statistics of a grid of pipeline runs: per cell (format x reward), means across seeds with
95% CIs, the base model's reference values and paired deltas.

Seeds are pooled only when everything else in their config is equal: runs of one cell whose
logged configs differ (fetch_runs' `config` column) are separate rows, labelled with the keys
that differ.

Pure pandas over the frame `breadth.tracking.fetch.fetch_runs` returns and, for the intervals,
the per-problem study frame (`breadth.study.frame.load_study_frame`); the collapse alarm
(`breadth.study.alarm`) and the grid report (`breadth.study.grid_report`) read its
output.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from breadth.evaluation.result import ci_names
from breadth.study.grid_bootstrap import (
    SPLIT_COLUMNS,
    cell_statistics,
    split_by_cell,
)
from breadth.study.grid_settings import TRANSFER_SETTINGS, ClaimSettings

__all__ = [
    "SUMMARY_METRICS",
    "claim_settings_of_runs",
    "config_variants",
    "estimate_text",
    "finite",
    "grid_summary",
    "mean_curve",
    "models_in",
    "summary_k",
]

# Summary columns of the trained model: (column, label, metric name under `<model>/`).
# `{k}` is the largest k every run measured. Each column also gets `_ci_low` / `_ci_high`.
# maj@k, best-of-k and the crossover k stay on the runs (the crossover also in the claims):
# there is no per-problem table to resample them from.
SUMMARY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("pass_at_1", "pass@1", "eval/pass_at_1"),
    ("pass_at_kmax", "pass@{k}", "eval/pass_at_{k}"),
    ("distinct_solved", "distinct, base-solved", "transfer/solved/distinct_outcomes"),
    ("distinct_unsolved", "distinct, base-unsolved", "transfer/unsolved/distinct_outcomes"),
    ("search_success", "search success", "search/evolutionary_success"),
    ("distinct_wrong_unsolved", "distinct wrong, base-unsolved",
     "transfer/unsolved/distinct_wrong_outcomes"),
    ("distinct_correct_unsolved", "distinct correct, base-unsolved",
     "transfer/unsolved/distinct_correct_outcomes"),
)
# Reference values of the base (SFT) model. The unsolved-split diversity of the base is read
# from the trained model's transfer section (`.../base/...`): the base is evaluated without one.
_BASE_METRICS: tuple[tuple[str, str, str, bool], ...] = (
    # (column, label, metric name, read under the trained model's prefix?)
    ("base_pass_at_1", "{base} pass@1", "eval/pass_at_1", False),
    ("base_pass_at_kmax", "{base} pass@{k}", "eval/pass_at_{k}", False),
    ("base_distinct_unsolved", "{base} distinct, base-unsolved",
     "transfer/unsolved/base/distinct_outcomes", True),
    ("base_distinct_wrong_unsolved", "{base} distinct wrong, base-unsolved",
     "transfer/unsolved/base/distinct_wrong_outcomes", True),
    ("base_distinct_correct_unsolved", "{base} distinct correct, base-unsolved",
     "transfer/unsolved/base/distinct_correct_outcomes", True),
)
# Paired per run (same seed, same SFT warm start), then averaged: trained minus base.
_DELTAS: tuple[tuple[str, str, str, str], ...] = (
    ("pass_at_1_delta", "Δpass@1", "pass_at_1", "base_pass_at_1"),
    ("pass_at_kmax_delta", "Δpass@{k}", "pass_at_kmax", "base_pass_at_kmax"),
    ("distinct_unsolved_delta", "Δdistinct, base-unsolved", "distinct_unsolved",
     "base_distinct_unsolved"),
    # Its two parts (they sum to it): wrong answers dropped, narrowing among correct ones.
    ("distinct_wrong_unsolved_delta", "Δdistinct wrong, base-unsolved", "distinct_wrong_unsolved",
     "base_distinct_wrong_unsolved"),
    ("distinct_correct_unsolved_delta", "Δdistinct correct, base-unsolved",
     "distinct_correct_unsolved", "base_distinct_correct_unsolved"),
)
BOOTSTRAP_CI = "bootstrap over seeds × problems"
RUN_CI = "the run's bootstrap over problems"
NO_CI = "none (no per-problem tables)"


def grid_summary(
    runs: pd.DataFrame, per_problem: pd.DataFrame | None = None, model: str = "rl", *,
    base_model: str = "sft", settings: ClaimSettings | None = None,
) -> pd.DataFrame:
    """One row per cell (format x reward, and `config` where the cell's runs differ in more than
    the seed, see `config_variants`): each SUMMARY_METRICS column as the mean across the
    cell's runs (seeds) with a 95% CI, the base model's reference values, the paired deltas
    (trained minus base), `seeds`, `k` (the largest k every run measured) and `ci` (how the
    intervals were made).

    CI: with the cells' per-problem tables (`per_problem`, the study frame), a percentile
    bootstrap over seeds × problems (`breadth.study.grid_bootstrap`): it covers seed and
    problem-sampling noise together and stays inside the values' range, a proportion's inside
    [0, 1], for one seed as for several. Without them, a one-run cell shows that run's own
    bootstrap-over-problems interval where it was logged; any other interval is NaN (never a
    t-interval: with two seeds it is ±12.7 sd and leaves [0, 1]). Absent metrics (e.g. no
    search stage) are NaN. Attributes: model, base_model, k, `split_cells` ({"format /
    reward": [config keys that differ]} for cells shown as several rows),
    `keys_beyond_the_rows` (config keys that differ between rows beyond their format and
    reward: `keys_beyond_the_rows`), `runs` (how many) and `grid_id` (the grid every run is
    a cell of, else None).

    A transfer split (distinct outcomes on base-solved / base-unsolved problems) with fewer
    problems than `settings.min_split` in any seed (counted in the per-problem tables, else
    as the runs logged it) is inconclusive, as the run's own report and the claims say: its
    columns are NaN and `<column>_inconclusive` says why (None where it is conclusive).

    A `model` the runs hold no metrics of is a ValueError naming those they hold.

    >>> runs = pd.DataFrame({"format": ["mcq", "mcq"], "reward": ["correctness"] * 2,
    ...     "seed": [0, 1], "rl/eval/pass_at_1": [0.4, 0.6], "rl/eval/pass_at_8": [0.7, 0.9],
    ...     "sft/eval/pass_at_1": [0.3, 0.3], "sft/eval/pass_at_8": [0.9, 0.9]})
    >>> row = grid_summary(runs).iloc[0]
    >>> int(row["k"]), [round(float(row[c]), 3) for c in ("pass_at_1", "pass_at_kmax_delta")]
    (8, [0.5, -0.1])
    >>> row["ci"], row["config"]
    ('none (no per-problem tables)', '')
    """
    missing = [c for c in ("format", "reward") if c not in runs.columns]
    if missing:
        raise ValueError(
            f"runs lack the column(s) {missing}: pass the frame fetch_runs(...) returns "
            "(parent runs tagged format and reward)"
        )
    if runs.empty:
        raise ValueError("no runs to summarise: fetch_runs returned an empty frame")
    models = models_in(runs)
    if model not in models:
        held = (f"the models they hold: {', '.join(models)}; pass one of them (e.g. "
                f"`breadth compare --model {models[0]}`)" if models
                else "they hold none: did their evaluate stage run?")
        raise ValueError(f"the runs hold no metrics of model {model!r} (`{model}/...`): {held}")
    settings = settings or ClaimSettings()
    k = _largest_common_k(runs, model)
    per_run = _per_run_values(runs, model, base_model, k)
    tables = {}
    if per_problem is not None and (model, base_model) == ("rl", "sft"):
        tables = split_by_cell(per_problem)
    variants, split = config_variants(runs)
    rows = []
    groups = runs.assign(config=variants).groupby(["format", "reward", "config"], sort=True,
                                                  dropna=False)
    positions = groups.indices  # {cell: its runs' row positions}
    for (fmt, reward, variant), group in groups:
        row = {"format": fmt, "reward": reward, "config": variant, "seeds": len(group), "k": k}
        at = positions[(fmt, reward, variant)]
        for name, (values, lows, highs) in per_run.items():
            row.update(_from_runs(name, values[at], lows[at], highs[at]))
        # Only this row's own runs' rows where the study frame names runs: a cell's tables
        # pool its configs, and another cell's SFT start may come from another config.
        cell = _tables_of(per_problem, group, fmt, reward) if tables else None
        if cell is None and not variant:  # a frame without run ids (one grid, checked fair)
            cell = tables.get((fmt, reward))
        boot, cell_sizes = cell_statistics(*cell, k, settings) if cell is not None else ({}, {})
        for name, (estimate, low, high) in boot.items():
            if finite(estimate):
                row.update({name: estimate, f"{name}_ci_low": low, f"{name}_ci_high": high})
        row["ci"] = BOOTSTRAP_CI if boot else RUN_CI if len(group) == 1 else NO_CI
        # A transfer split below min_split shows no number: the run's own report calls it
        # inconclusive, and a mean of 10 problems beside conclusive columns reads as a finding.
        # Tables that share no problem with their base give no sizes: the logged ones then.
        sizes = cell_sizes or _logged_split_sizes(group, model)
        row.update(_inconclusive_splits(sizes, settings.min_split))
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs.update({"model": model, "base_model": base_model, "k": k, "split_cells": split,
                      "keys_beyond_the_rows": keys_beyond_the_rows(runs), "runs": len(runs),
                      "grid_id": _one_grid(runs)})
    return out


def _one_grid(runs: pd.DataFrame) -> str | None:
    """The grid every run is a cell of, else None (lone runs, or cells of several grids)."""
    if "grid_id" not in runs.columns or not runs["grid_id"].notna().all():
        return None
    grids = runs["grid_id"].unique()
    return str(grids[0]) if len(grids) == 1 else None


def _logged_split_sizes(group: pd.DataFrame, model: str) -> dict[str, int]:
    """The fewest problems of each transfer split in any of the group's runs, as they logged
    them (`<model>/transfer/<split>/num_problems`); a split no run logged is left out."""
    sizes = {}
    for split in SPLIT_COLUMNS:
        name = f"{model}/transfer/{split}/num_problems"
        logged = pd.to_numeric(group[name], errors="coerce").dropna() if name in group else []
        if len(logged):
            sizes[split] = int(min(logged))
    return sizes


def _inconclusive_splits(sizes: Mapping[str, int], min_split: int) -> dict:
    """Per split column, `<column>_inconclusive`: why it shows no number (its value and CI
    then NaN), or None where the split is large enough or its size unknown.

    >>> row = _inconclusive_splits({"solved": 10, "unsolved": 30}, 20)
    >>> row["distinct_solved"], row["distinct_solved_inconclusive"]
    (nan, 'inconclusive (n=10 < 20)')
    >>> "distinct_unsolved" in row, row["distinct_unsolved_inconclusive"]
    (False, None)
    """
    out: dict = {}
    for split, columns in SPLIT_COLUMNS.items():
        size = sizes.get(split)
        small = size is not None and size < min_split
        for name in columns:
            out[f"{name}_inconclusive"] = f"inconclusive (n={size} < {min_split})" if small else None
            if small:
                out.update({name: math.nan, f"{name}_ci_low": math.nan,
                            f"{name}_ci_high": math.nan})
    return out


def models_in(runs: pd.DataFrame) -> list[str]:
    """The models the runs hold metrics of (`<model>/<name>` with a value, or a curve).

    >>> models_in(pd.DataFrame({"rl/eval/pass_at_1": [0.5], "sft/eval/pass_at_1": [None],
    ...                         "curve_sft": [{1: 0.2}]}))
    ['rl', 'sft']
    """
    models = {c.split("/", 1)[0] for c in runs.columns
              if "/" in c and pd.to_numeric(runs[c], errors="coerce").notna().any()}
    models |= {c.removeprefix("curve_") for c in runs.columns
               if c.startswith("curve_") and any(isinstance(v, dict) and v for v in runs[c])}
    return sorted(models)


def config_variants(runs: pd.DataFrame) -> tuple[pd.Series, dict[str, list[str]]]:
    """Per run, a label that tells apart the runs of one (format, reward) cell whose configs
    differ in more than the seed ("" where the cell's runs share one config), and {"format /
    reward": the differing keys} for each cell with more than one config.

    A run's config is its `config` column (fetch_runs: the logged params less the seed). A run
    that logged none is its own config unless it is a grid cell: a grid's cells are checked,
    when it is made, to differ only in their objective, format and seed. A frame without the
    column (hand-made) is taken as one config per cell.

    >>> runs = pd.DataFrame({"format": ["mcq"] * 3, "reward": ["c"] * 3, "run_id": list("abc"),
    ...     "config": [{"rl.max_steps": "2"}, {"rl.max_steps": "8"}, {"rl.max_steps": "8"}]})
    >>> labels, split = config_variants(runs)
    >>> list(labels), split
    (['rl.max_steps=2', 'rl.max_steps=8', 'rl.max_steps=8'], {'mcq / c': ['rl.max_steps']})
    """
    labels = pd.Series("", index=runs.index, dtype=object)
    if "config" not in runs.columns:
        return labels, {}
    identity = pd.Series([_identity(row) for _, row in runs.iterrows()], index=runs.index)
    split: dict[str, list[str]] = {}
    for (fmt, reward), group in runs.groupby(["format", "reward"], sort=True, dropna=False):
        ids = identity[group.index]
        if ids.nunique() == 1:
            continue
        configs = [c for c in group["config"] if isinstance(c, dict) and c]
        keys = sorted(k for k in set().union(*configs)
                      if len({str(c.get(k, "<absent>")) for c in configs}) > 1)
        split[f"{fmt} / {reward}"] = keys
        for index, row in group.iterrows():
            labels[index] = _label(row, keys, ids[index])
    return labels, split


# The keys that make a row's format and reward: differences in them are what a row compares
# (rl.scale_rewards: set by the rewards whose formula needs it, darling and passk).
_ROW_FACTORS = ("data.format", "rl.reward.", "rl.scale_rewards")


def keys_beyond_the_rows(runs: pd.DataFrame) -> list[str]:
    """Config keys whose values differ between runs of different (format, reward) rows, other
    than the format and the reward's own keys: with them, a difference between two rows is
    not the reward's (or format's) alone. [] for one grid's cells, checked when the grid was
    made (an objective's variant, e.g. the entropy knobs, sets keys of its own).

    >>> runs = pd.DataFrame({"format": ["mcq", "mcq"], "reward": ["c", "d"], "config": [
    ...     {"rl.reward.spec": "c", "rl.max_steps": "100"},
    ...     {"rl.reward.spec": "d", "rl.max_steps": "300"}]})
    >>> keys_beyond_the_rows(runs)
    ['rl.max_steps']
    """
    if "config" not in runs.columns or runs["format"].isna().all():
        return []
    grids = runs["grid_id"].dropna().unique() if "grid_id" in runs.columns else []
    if len(grids) == 1 and runs["grid_id"].notna().all():
        return []
    configs = [c for c in runs["config"] if isinstance(c, dict) and c]
    within = {k for keys in config_variants(runs)[1].values() for k in keys}  # said per cell
    return sorted(
        key for key in set().union(*configs)
        if not key.startswith(_ROW_FACTORS) and key not in within
        and len({str(c.get(key, "<absent>")) for c in configs}) > 1
    )


def claim_settings_of_runs(runs: pd.DataFrame) -> ClaimSettings:
    """The claim settings with the transfer split the runs were evaluated with (their logged
    `evaluation.transfer_*` params), so the summary's intervals and the claims split problems
    as the runs' own transfer analysis did. Runs that logged no config (and a frame without
    a `config` column) say nothing; a run that did not log a key (older runs) counts as its
    default.

    A ValueError, naming the key and the runs, when the runs logged different values: their
    problems split in different places, and no one setting reads them all.

    >>> runs = pd.DataFrame({"run_id": ["a", "b"], "config": [
    ...     {"evaluation.transfer_split_k": "16"}, {"evaluation.transfer_split_k": "16"}]})
    >>> claim_settings_of_runs(runs).split_k
    16
    """
    configs = {}
    if "config" in runs.columns:
        ids = runs["run_id"] if "run_id" in runs.columns else pd.Series(runs.index, runs.index)
        configs = {str(i): c for i, c in zip(ids, runs["config"]) if isinstance(c, dict) and c}
    values, disagree = {}, []
    defaults = ClaimSettings()
    for key, field_name in TRANSFER_SETTINGS.items():
        name = f"evaluation.{key}"
        # A run from before the key was logged ran at the default: counting "not logged" as
        # a value of its own refused every compare of old runs beside new ones.
        default = str(getattr(defaults, field_name))
        by_value: dict[str, list[str]] = {}
        for run_id, config in configs.items():
            by_value.setdefault(str(config.get(name, default)), []).append(run_id)
        if len(by_value) > 1:
            disagree.append(f"{name}: " + "; ".join(f"{v} (runs {', '.join(of)})"
                                                      for v, of in sorted(by_value.items())))
        elif by_value:
            values[key] = next(iter(by_value))
    if disagree:
        raise ValueError(
            "the runs were evaluated with different transfer splits, so no one split reads "
            f"them all: {' | '.join(disagree)}. Compare runs evaluated with the same "
            "evaluation.transfer_* settings."
        )
    return ClaimSettings.of_evaluation(values)


def _identity(row: pd.Series) -> str:
    config = row.get("config")
    if isinstance(config, dict) and config:
        return json.dumps(sorted(config.items()), default=str)
    grid = row.get("grid_id")
    if isinstance(grid, str) and grid:
        return f"grid {grid}"
    return f"run {row.get('run_id', row.name)}"


def _label(row: pd.Series, keys: list[str], identity: str) -> str:
    config = row.get("config")
    if not (isinstance(config, dict) and config):
        return f"config not logged ({identity})"
    if not keys:  # the cell's other runs logged no config: nothing to name a key against
        return f"config {hashlib.sha256(identity.encode()).hexdigest()[:8]}"
    return ", ".join(f"{k}={config.get(k, '<absent>')}" for k in keys)


def _tables_of(per_problem: pd.DataFrame | None, group: pd.DataFrame, fmt: str, reward: str):
    """The per-problem tables (trained rows, SFT rows) of the group's own runs, when the study
    frame names its runs; else None."""
    if per_problem is None or "run_id" not in per_problem or "run_id" not in group:
        return None
    return split_by_cell(per_problem[per_problem["run_id"].isin(group["run_id"])]).get(
        (fmt, reward))


def _largest_common_k(runs: pd.DataFrame, model: str) -> int | None:
    pattern = re.compile(rf"^{re.escape(model)}/eval/pass_at_(\d+)$")
    ks = sorted(int(m.group(1)) for c in runs.columns if (m := pattern.match(c)))
    if not ks:
        return None
    # Each run's largest measured k; the smallest of those is measured by every run, so every
    # cell's pass@k is read at the same k.
    measured = np.column_stack([
        pd.to_numeric(runs[f"{model}/eval/pass_at_{k}"], errors="coerce").notna() for k in ks
    ])
    has_any = measured.any(axis=1)
    if not has_any.any():
        return None
    run_max = np.asarray(ks)[len(ks) - 1 - np.argmax(measured[:, ::-1], axis=1)]
    return int(run_max[has_any].min())


def finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _per_run_values(runs, model, base_model, k) -> dict[str, tuple[np.ndarray, ...]]:
    """{column: (value, logged CI low, logged CI high) per run, in the runs' row order}: numpy
    arrays, which a cell indexes by its rows' positions (label lookups on Series were a
    quarter of a many-cell summary's time)."""
    nan = np.full(len(runs), np.nan)

    def column(name: str) -> np.ndarray:
        if "{k}" in name and k is None:
            return nan
        key = name.format(k=k)
        if key not in runs.columns:
            return nan
        return pd.to_numeric(runs[key], errors="coerce").to_numpy(np.float64, na_value=np.nan)

    out: dict[str, tuple[np.ndarray, ...]] = {}
    sources = [(c, model, m) for c, _, m in SUMMARY_METRICS]
    sources += [(c, model if under else base_model, m) for c, _, m, under in _BASE_METRICS]
    for name, prefix, metric in sources:
        out[name] = (column(f"{prefix}/{metric}"),
                     *(column(f"{prefix}/{bound}") for bound in ci_names(metric)))
    for name, _, trained, base in _DELTAS:
        out[name] = (out[trained][0] - out[base][0], nan, nan)
    return out


def _from_runs(name: str, values: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> dict:
    """Mean of the values present (not NaN); the one run's own interval when only one has a
    value."""
    present = ~np.isnan(values)
    mean = float(values[present].mean()) if present.any() else math.nan
    low = high = math.nan
    if present.sum() == 1:
        low, high = float(lows[present][0]), float(highs[present][0])
    return {name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high}


def mean_curve(curves: Iterable[Mapping[int, float] | None]) -> dict[int, float]:
    """Mean over runs at the ks every run measured.

    >>> mean_curve([{1: 0.2, 2: 0.4, 4: 0.5}, {1: 0.4, 2: 0.6}])
    {1: 0.30000000000000004, 2: 0.5}
    """
    present = [dict(c) for c in curves if isinstance(c, Mapping) and c]
    if not present:
        return {}
    ks = sorted(set.intersection(*(set(c) for c in present)))
    return {k: float(np.mean([c[k] for c in present])) for k in ks}


def summary_k(summary: pd.DataFrame) -> int | None:
    """The largest k every run of the summary measured (None when none was).

    >>> summary_k(pd.DataFrame({"k": [8]})), summary_k(pd.DataFrame({"k": [float("nan")]}))
    (8, None)
    """
    k = summary.attrs.get("k")
    if k is None and "k" in summary.columns and len(summary):
        k = summary["k"].iloc[0]
    return None if k is None or (isinstance(k, float) and math.isnan(k)) else int(k)


def estimate_text(value: object, low: object = None, high: object = None) -> str:
    """`0.500 [0.400, 0.600]`; one decimal from 10 up; `-` for a missing value.

    >>> estimate_text(0.5, 0.4, 0.6), estimate_text(12.34), estimate_text(float("nan"))
    ('0.500 [0.400, 0.600]', '12.3', '-')
    """
    if not finite(value):
        return "-"
    digits = 3 if abs(float(value)) < 10 else 1  # type: ignore[arg-type]
    text = f"{float(value):.{digits}f}"  # type: ignore[arg-type]
    if finite(low) and finite(high):
        text += f" [{float(low):.{digits}f}, {float(high):.{digits}f}]"  # type: ignore[arg-type]
    return text
