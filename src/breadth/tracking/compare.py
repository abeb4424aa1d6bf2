"""Compare pipeline runs read back from MLflow: a grid table (cells x metrics, CIs across
seeds), pass@k curves per format, and pass@1 cost against pass@k gain.

Reads what the pipeline logs (README "MLflow layout"): one parent run per pipeline run with
the tags `format`, `reward`, `seed` (and `grid.id` in a grid), the evaluate metrics copied onto
it as `<model>/<name>` (`rl/eval/pass_at_16`, `sft/eval/pass_at_1`, ...), and one evaluate child
per model (`evaluate-sft`, `evaluate-rl`) holding the curve `eval/pass_at_k` with step=k.
Only `fetch_runs` talks to MLflow (through `MlflowClient` and explicit run ids); the rest is
pure pandas. matplotlib is imported inside `plot_grid` (Agg backend).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "SUMMARY_METRICS",
    "CompareError",
    "fetch_runs",
    "grid_summary",
    "mean_curve",
    "plot_grid",
    "render_table",
    "summary_markdown",
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
_IDENTITY_COLUMNS = ("run_id", "experiment_id", "run_name", "status", "grid_id", "grid_cell",
                     "format", "reward", "seed", "preset", "config_hash")  # fmt: skip
_CURVE = "eval/pass_at_k"


class CompareError(LookupError):
    """A run id or grid id that MLflow does not know; the message names it and the fix."""


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


# --------------------------------------------------------------------------- MLflow reading


def fetch_runs(
    tracking_uri: str, run_ids: list[str] | None = None, grid_id: str | None = None
) -> pd.DataFrame:
    """One row per pipeline parent run: identity columns, every parent metric, and per model
    the `eval/pass_at_k` curve of its evaluate child as a {k: value} dict (`curve_sft`, ...).

    Give `run_ids` (parent runs, any experiment) or `grid_id` (every FINISHED parent run
    tagged `grid.id`; a cell run twice with the same seed keeps its newest run). Metrics an
    evaluate child has but the parent lacks are filled in as `<model>/<name>`. When the
    evaluate stage was served from cache, its child runs belong to an earlier pipeline run;
    they are found through the parent's `stage_run.evaluate` tag.
    """
    from mlflow import MlflowClient

    if (run_ids is None) == (grid_id is None):
        raise ValueError("give either run_ids or grid_id (e.g. `breadth compare --grid GRID_ID`)")
    client = MlflowClient(tracking_uri)
    experiment_ids = [e.experiment_id for e in _all_pages(client.search_experiments)]
    if run_ids is not None:
        parents = _parents_by_id(client, experiment_ids, list(run_ids), tracking_uri)
    else:
        parents = _parents_of_grid(client, experiment_ids, str(grid_id), tracking_uri)
    rows = [_row_of(client, run, experiment_ids) for run in parents]
    frame = pd.DataFrame(rows)
    curve_columns = sorted(c for c in frame.columns if c.startswith("curve_"))
    metric_columns = sorted(set(frame.columns) - {*_IDENTITY_COLUMNS, *curve_columns})
    frame = frame[[*_IDENTITY_COLUMNS, *metric_columns, *curve_columns]]
    for column in curve_columns:  # a run without that evaluate child: an empty curve
        frame[column] = [c if isinstance(c, dict) else {} for c in frame[column]]
    if grid_id is not None:
        frame = frame.sort_values(["format", "reward", "seed"], kind="stable")
    return frame.reset_index(drop=True)


def _all_pages(search, *args, **kwargs) -> list:
    out, token = [], None
    while True:
        page = search(*args, page_token=token, **kwargs)
        out.extend(page)
        token = page.token
        if not token:
            return out


def _quoted(value: str, what: str) -> str:
    # MLflow filter strings have no escape for quotes; refuse rather than mis-parse.
    if "'" in value or "\\" in value:
        raise ValueError(f"{what} {value!r} contains a quote or backslash; MLflow cannot search it")
    return f"'{value}'"


def _search(client, experiment_ids: list[str], filter_string: str) -> list:
    return _all_pages(client.search_runs, experiment_ids, filter_string=filter_string)


def _parents_by_id(client, experiment_ids, run_ids: list[str], uri: str) -> list:
    if not run_ids:
        raise ValueError("no run ids given: pass parent run ids, e.g. `breadth compare RUN_ID...`")
    ids = ", ".join(_quoted(r, "run id") for r in run_ids)
    found = {
        r.info.run_id: r for r in _search(client, experiment_ids, f"attributes.run_id IN ({ids})")
    }
    missing = [r for r in run_ids if r not in found]
    if missing:
        raise CompareError(
            f"run id(s) {', '.join(missing)} not found in MLflow at {uri} (deleted runs are "
            "not searched). Check MLFLOW_TRACKING_URI / --tracking-uri and copy the parent run "
            "id from the MLflow UI (the run named pipeline-<preset>)."
        )
    children = [r for r in run_ids if "mlflow.parentRunId" in found[r].data.tags]
    if children:
        hints = ", ".join(f"{r} -> {found[r].data.tags['mlflow.parentRunId']}" for r in children)
        raise CompareError(
            f"run id(s) {', '.join(children)} are stage (child) runs, not pipeline runs; pass "
            f"their parent run ids instead ({hints})."
        )
    return [found[r] for r in dict.fromkeys(run_ids)]


def _parents_of_grid(client, experiment_ids, grid_id: str, uri: str) -> list:
    runs = _search(client, experiment_ids, f"tags.`grid.id` = {_quoted(grid_id, 'grid id')}")
    # The grid's summary run carries the grid id too, but no format/reward: not a cell.
    cells = [
        r for r in runs
        if "mlflow.parentRunId" not in r.data.tags and {"format", "reward"} <= set(r.data.tags)
    ]  # fmt: skip
    finished = [r for r in cells if r.info.status == "FINISHED"]
    if not finished:
        state = (
            f"{len(cells)} cell run(s) tagged with it, none FINISHED"
            if cells
            else "no run is tagged with it"
        )
        raise CompareError(
            f"grid id {grid_id!r} matches nothing to compare in MLflow at {uri}: {state}. Check "
            "the id (the `grid.id` tag of the grid's runs; the grid flow prints it) and "
            "MLFLOW_TRACKING_URI, or wait for the grid to finish."
        )
    newest: dict[tuple, Any] = {}
    for run in sorted(finished, key=lambda r: r.info.start_time or 0):
        tags = run.data.tags
        newest[(tags["format"], _objective(tags), tags.get("seed"))] = run
    return list(newest.values())


def _objective(tags: Mapping[str, str]) -> str:
    # A grid may tag a label that tells apart cells with the same reward spec (the
    # entropy-knob variant trains under `correctness` too).
    return tags.get("grid.objective") or tags["reward"]


def _row_of(client, run, experiment_ids: list[str]) -> dict[str, Any]:
    tags = run.data.tags
    row: dict[str, Any] = {
        "run_id": run.info.run_id,
        "experiment_id": run.info.experiment_id,
        "run_name": tags.get("mlflow.runName", run.info.run_name),
        "status": run.info.status,
        "grid_id": tags.get("grid.id"),
        "grid_cell": tags.get("grid.cell"),
        "format": tags.get("format"),
        "reward": _objective(tags) if "reward" in tags else None,
        "seed": _seed(tags.get("seed")),
        "preset": tags.get("preset"),
        "config_hash": tags.get("config.hash"),
        **run.data.metrics,
    }
    for model, child in _evaluate_children(client, run, experiment_ids).items():
        for name, value in child.data.metrics.items():
            if name != _CURVE:
                row.setdefault(f"{model}/{name}", value)
        row[f"curve_{model}"] = _curve_of(client, child.info.run_id)
    return row


def _seed(value: str | None) -> int | float:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _evaluate_children(client, parent, experiment_ids: list[str]) -> dict[str, Any]:
    """{model: evaluate child run}: this parent's own, else the cached run's siblings (the
    run that filled the cache may sit in another experiment: cache keys ignore it)."""
    experiment = [parent.info.experiment_id]
    pid = _quoted(parent.info.run_id, "run id")
    runs = _search(
        client, experiment,
        f"tags.`mlflow.parentRunId` = {pid} AND attributes.run_name LIKE 'evaluate-%'",
    )  # fmt: skip
    cached = parent.data.tags.get("stage_run.evaluate")
    if not runs and cached:
        source = _search(client, experiment_ids, f"attributes.run_id = {_quoted(cached, 'run id')}")
        if source:
            tags = source[0].data.tags
            earlier = _quoted(tags.get("mlflow.parentRunId", ""), "run id")
            key = _quoted(tags.get("breadth.stage_key", ""), "stage key")
            runs = _search(
                client, [source[0].info.experiment_id],
                f"tags.`mlflow.parentRunId` = {earlier} AND tags.`breadth.stage_key` = {key}",
            )  # fmt: skip
    out = {}
    for child in sorted(runs, key=lambda r: r.info.start_time or 0):
        name = child.data.tags.get("model.role") or child.info.run_name.removeprefix("evaluate-")
        out[name] = child
    return out


def _curve_of(client, run_id: str) -> dict[int, float]:
    points = sorted(client.get_metric_history(run_id, _CURVE), key=lambda m: m.timestamp)
    return {int(m.step): float(m.value) for m in sorted(points, key=lambda m: m.step)}


# --------------------------------------------------------------------------- the grid table


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


def _finite(value) -> bool:
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


# --------------------------------------------------------------------------- rendering


def _columns(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, header) pairs shown in the table, in order; absent-everywhere ones left out."""
    k = summary.attrs.get("k")
    k = k if k is not None else (summary["k"].iloc[0] if "k" in summary and len(summary) else "k")
    base = summary.attrs.get("base_model", "sft")
    shown = [
        ("base_pass_at_1", f"{base} pass@1"),
        ("pass_at_1", "pass@1"),
        ("pass_at_1_delta", "Δpass@1"),
        ("base_pass_at_kmax", f"{base} pass@{k}"),
        ("pass_at_kmax", f"pass@{k}"),
        ("pass_at_kmax_delta", f"Δpass@{k}"),
        ("maj_at_kmax", f"maj@{k}"),
        ("best_of_kmax", f"best-of-{k}"),
        ("distinct_solved", "distinct, solved"),
        ("base_distinct_unsolved", f"{base} distinct, unsolved"),
        ("distinct_unsolved", "distinct, unsolved"),
        ("crossover_k", "crossover k"),
        ("search_success", "search success"),
    ]
    return [(c, h) for c, h in shown if c in summary and summary[c].notna().any()]


def _cell(summary_row: Mapping[str, Any], column: str) -> str:
    value = summary_row.get(column, math.nan)
    if not _finite(value):
        return "-"
    low, high = summary_row.get(f"{column}_ci_low"), summary_row.get(f"{column}_ci_high")
    text = f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if _finite(low) and _finite(high):
        text += f" [{low:.3f}, {high:.3f}]" if abs(value) < 10 else f" [{low:.1f}, {high:.1f}]"
    return text


def _caption(summary: pd.DataFrame) -> str:
    model = summary.attrs.get("model", "rl")
    base = summary.attrs.get("base_model", "sft")
    return (
        f"{model} vs {base}: mean across seeds [95% CI: t across seeds, or the run's bootstrap "
        f"over problems for one seed]; Δ = {model} − {base} paired per seed; distinct = distinct "
        "outcomes per problem on base-solved / base-unsolved problems."
    )


def render_table(summary: pd.DataFrame) -> Table:
    """The grid summary as a rich Table (one row per cell) for the terminal."""
    from rich.table import Table

    table = Table(title="breadth grid summary", caption=_caption(summary), show_lines=False)
    columns = _columns(summary)
    for header in ("format", "reward", "seeds"):
        table.add_column(header, no_wrap=True)
    for _, header in columns:
        table.add_column(header, justify="right")
    for _, row in summary.iterrows():
        table.add_row(
            str(row["format"]), str(row["reward"]), str(row["seeds"]),
            *(_cell(row, c) for c, _ in columns),
        )  # fmt: skip
    return table


def summary_markdown(summary: pd.DataFrame) -> str:
    """The grid summary as a markdown table (for MLflow artifacts and Prefect artifacts).

    >>> s = pd.DataFrame({"format": ["mcq"], "reward": ["correctness"], "seeds": [1],
    ...     "pass_at_1": [0.5], "pass_at_1_ci_low": [0.4], "pass_at_1_ci_high": [0.6]})
    >>> print(summary_markdown(s).splitlines()[2])
    | format | reward | seeds | pass@1 |
    """
    columns = _columns(summary)
    header = ["format", "reward", "seeds", *(h for _, h in columns)]
    lines = ["## breadth grid summary", "", _md_row(header), _md_row(["---"] * len(header))]
    for _, row in summary.iterrows():
        cells = [str(row["format"]), str(row["reward"]), str(row["seeds"])]
        lines.append(_md_row([*cells, *(_cell(row, c) for c, _ in columns)]))
    lines += ["", _caption(summary), ""]
    return "\n".join(lines)


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


# --------------------------------------------------------------------------- plots


def plot_grid(
    runs: pd.DataFrame, summary: pd.DataFrame, out_dir: str | Path, model: str | None = None
) -> list[Path]:
    """pass_at_k_by_format.png (one panel per format, one line per objective: the mean over
    seeds of `curve_<model>`, the base model dashed) and pass_at_1_cost_vs_pass_at_k_gain.png
    (one labelled point per cell, CI bars where finite). Returns the two paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    model = model or summary.attrs.get("model", "rl")
    base = summary.attrs.get("base_model", "sft")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        _plot_curves(plt, runs, model, base, out / "pass_at_k_by_format.png"),
        _plot_tradeoff(plt, summary, out / "pass_at_1_cost_vs_pass_at_k_gain.png"),
    ]


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


def _plot_curves(plt, runs: pd.DataFrame, model: str, base: str, path: Path) -> Path:
    formats = sorted(runs["format"].dropna().unique()) or ["-"]
    fig, axes = plt.subplots(1, len(formats), figsize=(5.2 * len(formats), 4.0), squeeze=False)
    try:
        for ax, fmt in zip(axes[0], formats):
            cell_runs = runs[runs["format"] == fmt]
            if f"curve_{base}" in runs:
                # SFT warm starts are shared across objectives of a format: one base line.
                curve = mean_curve(cell_runs[f"curve_{base}"])
                if curve:
                    ax.plot(list(curve), list(curve.values()), "k--", label=f"{base} (base)")
            for reward, group in cell_runs.groupby("reward", sort=True):
                curve = mean_curve(group[f"curve_{model}"]) if f"curve_{model}" in group else {}
                if curve:
                    ax.plot(list(curve), list(curve.values()), marker="o", ms=3, label=str(reward))
            ax.set_xscale("log", base=2)
            ax.set_title(f"{fmt}: {model} pass@k (mean over seeds)")
            ax.set_xlabel("k (samples)")
            ax.set_ylabel("pass@k")
            ax.set_ylim(-0.02, 1.02)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path


def _plot_tradeoff(plt, summary: pd.DataFrame, path: Path) -> Path:
    k = summary.attrs.get("k", "k")
    model = summary.attrs.get("model", "trained")
    base = summary.attrs.get("base_model", "base")
    fig, ax = plt.subplots(figsize=(8.4, 4.8))
    try:
        # Colour = objective (the same order as the curves plot), marker = format.
        rewards = sorted(summary["reward"].astype(str).unique())
        colours = {r: f"C{i % 10}" for i, r in enumerate(rewards)}
        markers = dict(zip(sorted(summary["format"].astype(str).unique()), "osD^v"))
        for _, row in summary.iterrows():
            x, y = row.get("pass_at_1_delta"), row.get("pass_at_kmax_delta")
            if not (_finite(x) and _finite(y)):
                continue
            ax.errorbar(
                x, y, xerr=_err(row, "pass_at_1_delta"), yerr=_err(row, "pass_at_kmax_delta"),
                fmt=markers.get(str(row["format"]), "o"), color=colours[str(row["reward"])],
                capsize=2, alpha=0.85, label=f"{row['format']} / {row['reward']}",
            )  # fmt: skip
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.set_xlabel(f"pass@1 change, {model} − {base} (left = cost)")
        ax.set_ylabel(f"pass@{k} change, {model} − {base} (up = gain)")
        ax.set_title("pass@1 cost vs pass@k gain, one point per cell (95% CI bars)")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path


def _err(row: Mapping[str, Any], column: str):
    low, high, value = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high"), row[column]
    if _finite(low) and _finite(high):
        return [[value - low], [high - value]]
    return None
