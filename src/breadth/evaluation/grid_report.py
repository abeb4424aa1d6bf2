"""The grid summary for people: a terminal table, a markdown table and two plots.

matplotlib is imported inside `plot_grid` (Agg backend, no display).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from breadth.evaluation.grid import estimate_text, finite, mean_curve, summary_k

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["plot_grid", "render_table", "summary_markdown"]


def _columns(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, header) pairs shown in the table, in order; absent-everywhere ones left out."""
    k = summary_k(summary) or "k"
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
    return estimate_text(summary_row.get(column), summary_row.get(f"{column}_ci_low"),
                         summary_row.get(f"{column}_ci_high"))  # fmt: skip


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
            if not (finite(x) and finite(y)):
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
    if finite(low) and finite(high):
        return [[value - low], [high - value]]
    return None
