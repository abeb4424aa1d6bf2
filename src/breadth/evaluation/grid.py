"""Statistics of a grid of pipeline runs: per cell (format x reward), means across seeds with
95% CIs, the base model's reference values and paired deltas.

Pure pandas over the frame `breadth.tracking.fetch.fetch_runs` returns; the collapse alarm
(`breadth.evaluation.alarm`) and the grid report (`breadth.evaluation.grid_report`) read its
output.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

__all__ = [
    "SUMMARY_METRICS",
    "estimate_text",
    "finite",
    "grid_summary",
    "mean_curve",
    "summary_k",
    "t_quantile_975",
]

# Summary columns of the trained model: (column, label, metric name under `<model>/`).
# `{k}` is the largest k every run measured. Each column also gets `_ci_low` / `_ci_high`.
SUMMARY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("pass_at_1", "pass@1", "eval/pass_at_1"),
    ("pass_at_kmax", "pass@{k}", "eval/pass_at_{k}"),
    ("maj_at_kmax", "maj@{k}", "eval/maj_at_{k}"),
    ("best_of_kmax", "best-of-{k}", "eval/best_of_{k}"),
    ("distinct_solved", "distinct, base-solved", "transfer/solved/distinct_outcomes"),
    ("distinct_unsolved", "distinct, base-unsolved", "transfer/unsolved/distinct_outcomes"),
    ("crossover_k", "crossover k", "transfer/crossover_k"),
    ("search_success", "search success", "search/evolutionary_success"),
)
# Reference values of the base (SFT) model. The unsolved-split diversity of the base is read
# from the trained model's transfer section (`.../base/...`): the base is evaluated without one.
_BASE_METRICS: tuple[tuple[str, str, str, bool], ...] = (
    # (column, label, metric name, read under the trained model's prefix?)
    ("base_pass_at_1", "{base} pass@1", "eval/pass_at_1", False),
    ("base_pass_at_kmax", "{base} pass@{k}", "eval/pass_at_{k}", False),
    ("base_distinct_unsolved", "{base} distinct, base-unsolved",
     "transfer/unsolved/base/distinct_outcomes", True),
)  # fmt: skip
# Paired per run (same seed, same SFT warm start), then averaged: trained minus base.
_DELTAS: tuple[tuple[str, str, str, str], ...] = (
    ("pass_at_1_delta", "Δpass@1", "pass_at_1", "base_pass_at_1"),
    ("pass_at_kmax_delta", "Δpass@{k}", "pass_at_kmax", "base_pass_at_kmax"),
    ("distinct_unsolved_delta", "Δdistinct, base-unsolved", "distinct_unsolved",
     "base_distinct_unsolved"),
)  # fmt: skip

# Two-sided 95% Student t quantiles, df = 1..30 (numpy has no t distribution; scipy is not
# a dependency of the library).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """Two-sided 95% Student t quantile (table to df=30, Cornish-Fisher beyond).

    >>> t_quantile_975(1), t_quantile_975(4), round(t_quantile_975(60), 3)
    (12.706, 2.776, 2.0)
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df)


def grid_summary(runs: pd.DataFrame, model: str = "rl", *, base_model: str = "sft") -> pd.DataFrame:
    """One row per cell (format x reward): each SUMMARY_METRICS column as the mean across the
    cell's runs (seeds) with a 95% CI, the base model's reference values, the paired deltas
    (trained minus base, per run), `seeds` and `k` (the largest k every run measured).

    CI: with n >= 2 runs, mean ± t(n-1) · sd / sqrt(n) across seeds, so it covers seed and
    problem-sampling noise together (each seed draws its own problems); with one run, that
    run's own bootstrap-over-problems interval (`<name>_ci_low/_ci_high`) where it was logged,
    else NaN. Absent metrics (e.g. no search stage) are NaN. Attributes: model, base_model, k.

    >>> runs = pd.DataFrame({"format": ["mcq", "mcq"], "reward": ["correctness"] * 2,
    ...     "seed": [0, 1], "rl/eval/pass_at_1": [0.4, 0.6], "rl/eval/pass_at_8": [0.7, 0.9],
    ...     "sft/eval/pass_at_1": [0.3, 0.3], "sft/eval/pass_at_8": [0.9, 0.9]})
    >>> row = grid_summary(runs).iloc[0]
    >>> int(row["k"]), [round(float(row[c]), 3) for c in ("pass_at_1", "pass_at_kmax_delta")]
    (8, [0.5, -0.1])
    >>> round(float(row["pass_at_1_ci_high"] - row["pass_at_1"]), 3)  # 12.706 * 0.1414 / sqrt(2)
    1.271
    """
    missing = [c for c in ("format", "reward") if c not in runs.columns]
    if missing:
        raise ValueError(
            f"runs lack the column(s) {missing}: pass the frame fetch_runs(...) returns "
            "(parent runs tagged format and reward)"
        )
    if runs.empty:
        raise ValueError("no runs to summarise: fetch_runs returned an empty frame")
    k = _largest_common_k(runs, model)
    per_run = _per_run_values(runs, model, base_model, k)
    keys = runs[["format", "reward"]]
    out = keys.groupby(["format", "reward"], sort=True, dropna=False).size().rename("seeds")
    out = out.reset_index()
    out["k"] = k
    columns = {}
    for name, (values, lows, highs) in per_run.items():
        columns.update(_across_seeds(name, keys, values, lows, highs))
    out = pd.concat([out, pd.DataFrame(columns, index=out.index)], axis=1)
    out["ci"] = [f"t over {n} seeds" if n > 1 else "bootstrap over problems" for n in out["seeds"]]
    out.attrs.update({"model": model, "base_model": base_model, "k": k})
    return out


def _largest_common_k(runs: pd.DataFrame, model: str) -> int | None:
    pattern = re.compile(rf"^{re.escape(model)}/eval/pass_at_(\d+)$")
    ks = sorted(int(m.group(1)) for c in runs.columns if (m := pattern.match(c)))
    if not ks:
        return None
    # Each run's largest measured k; the smallest of those is measured by every run, so every
    # cell's pass@k is read at the same k.
    measured = np.column_stack([
        pd.to_numeric(runs[f"{model}/eval/pass_at_{k}"], errors="coerce").notna() for k in ks
    ])  # fmt: skip
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


def _per_run_values(runs, model, base_model, k) -> dict[str, tuple[pd.Series, ...]]:
    nan = pd.Series(np.nan, index=runs.index)

    def column(name: str) -> pd.Series:
        if "{k}" in name and k is None:
            return nan
        key = name.format(k=k)
        return pd.to_numeric(runs[key], errors="coerce") if key in runs.columns else nan

    out: dict[str, tuple[pd.Series, ...]] = {}
    sources = [(c, f"{model}/{m}") for c, _, m in SUMMARY_METRICS]
    sources += [(c, f"{model if under else base_model}/{m}") for c, _, m, under in _BASE_METRICS]
    for name, metric in sources:
        out[name] = (column(metric), column(metric + "_ci_low"), column(metric + "_ci_high"))
    for name, _, trained, base in _DELTAS:
        out[name] = (out[trained][0] - out[base][0], nan, nan)
    return out


def _across_seeds(name, keys, values, lows, highs) -> dict[str, np.ndarray]:
    """Per cell (in sorted format, reward order): mean of the finite values, and the t-interval
    (two or more values) or the one run's own interval (one value)."""
    frame = keys.assign(v=values.to_numpy(np.float64), lo=lows.to_numpy(np.float64),
                        hi=highs.to_numpy(np.float64))  # fmt: skip
    cells = frame.groupby(["format", "reward"], sort=True, dropna=False)
    n = cells["v"].count().to_numpy()
    mean = cells["v"].mean().to_numpy()
    sd = cells["v"].std(ddof=1).to_numpy()
    # `first` skips NaN values: with one finite value, its row's bounds (NaN rows dropped first).
    single = frame[frame["v"].notna()].groupby(["format", "reward"], sort=True, dropna=False)
    single = single[["lo", "hi"]].first().reindex(cells["v"].count().index)
    t = np.array([t_quantile_975(int(c) - 1) if c > 1 else np.nan for c in n])
    half = t * sd / np.sqrt(np.maximum(n, 1))
    low = np.where(n > 1, mean - half, np.where(n == 1, single["lo"].to_numpy(), np.nan))
    high = np.where(n > 1, mean + half, np.where(n == 1, single["hi"].to_numpy(), np.nan))
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
