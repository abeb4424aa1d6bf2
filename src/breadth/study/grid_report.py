"""The grid summary (a grid's cells, or any runs compared) for people: a terminal table, a
markdown table and two plots.

matplotlib is imported inside `plot_grid` (Agg backend, no display).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from breadth.study.grid_statistics import (
    config_variants,
    estimate_text,
    finite,
    mean_curve,
    summary_k,
)

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["cell_name", "plot_grid", "render_table", "summary_markdown", "summary_title"]


def _groups(summary: pd.DataFrame) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(title, short name, [(column, header), ...]) per measure, absent-everywhere columns
    left out, measures left with no column dropped."""
    k = summary_k(summary) or "k"
    base = summary.attrs.get("base_model", "sft")
    model = summary.attrs.get("model", "rl")
    groups = [
        ("pass@1", "pass@1",
         [("base_pass_at_1", base), ("pass_at_1", model), ("pass_at_1_delta", "Δ")]),
        (f"pass@{k}", f"pass@{k}",
         [("base_pass_at_kmax", base), ("pass_at_kmax", model), ("pass_at_kmax_delta", "Δ")]),
        ("distinct outcomes per problem, on problems the base did not solve", "distinct, unsolved",
         [("base_distinct_unsolved", base), ("distinct_unsolved", model),
          ("distinct_unsolved_delta", "Δ")]),
        # Where a claim is about diversity (RL narrows on base-unsolved problems), its change
        # split: wrong answers dropped + narrowing among correct ones (they sum to its Δ).
        (("the change in distinct outcomes on problems the base did not solve, split: "
          "Δwrong (wrong answers dropped) + Δcorrect (narrowing among correct answers)"),
         "Δdistinct split, unsolved",
         [("distinct_wrong_unsolved_delta", "Δwrong"),
          ("distinct_correct_unsolved_delta", "Δcorrect")]),
        ("distinct outcomes per problem, on problems the base solved", "distinct, solved",
         [("distinct_solved", model)]),
        ("search success (evolutionary, within the budget)", "search success",
         [("search_success", model)]),
    ]
    # An inconclusive split keeps its column: "inconclusive (n=...)" is what the reader needs.
    present = lambda c: any(name in summary and summary[name].notna().any()
                            for name in (c, f"{c}_inconclusive"))
    kept = [(title, short, [(c, h) for c, h in columns if present(c)])
            for title, short, columns in groups]
    return [group for group in kept if group[2]]


def _columns(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, header) pairs of the terminal table, in order."""
    return [(c, f"{short}: {h}") for _, short, columns in _groups(summary) for c, h in columns]


def _cell(summary_row: Mapping[str, Any], column: str) -> str:
    why = summary_row.get(f"{column}_inconclusive")
    if isinstance(why, str) and why:
        return why
    return estimate_text(summary_row.get(column), summary_row.get(f"{column}_ci_low"),
                         summary_row.get(f"{column}_ci_high"))


def _caption(summary: pd.DataFrame) -> str:
    model = summary.attrs.get("model", "rl")
    base = summary.attrs.get("base_model", "sft")
    methods = sorted(set(summary["ci"])) if "ci" in summary else []
    caption = (
        f"{model} vs {base}: mean across seeds [95% CI: {'; '.join(methods) or 'none'}]; "
        f"Δ = {model} − {base}, paired per problem; distinct = distinct outcomes per problem; "
        "Δwrong + Δcorrect = Δ distinct (an outcome is correct when some sample of it was)."
    )
    if any(summary[c].notna().any() for c in summary if str(c).endswith("_inconclusive")):
        caption += (" inconclusive (n=N < M): the split held N problems (fewest in any seed), "
                    "fewer than evaluation.transfer_min_split = M.")
    return caption


def summary_title(summary: pd.DataFrame) -> str:
    """"breadth grid summary: <id>" for one grid's cells; for runs that are not one grid's
    (`breadth compare RUN_ID ...`), a title that does not call them a grid.

    >>> s = pd.DataFrame({"format": ["mcq"]})
    >>> s.attrs.update(runs=1, grid_id=None)
    >>> summary_title(s)
    'breadth comparison of 1 run'
    >>> s.attrs.update(runs=6, grid_id="study-20261123")
    >>> summary_title(s)
    'breadth grid summary: study-20261123'
    """
    grid = summary.attrs.get("grid_id")
    if grid:
        return f"breadth grid summary: {grid}"
    runs = summary.attrs.get("runs")
    if runs is None:  # a summary made by hand: how many runs it holds is unknown
        return "breadth comparison"
    return f"breadth comparison of {runs} run{'' if runs == 1 else 's'}"


def render_table(summary: pd.DataFrame) -> Table:
    """The grid summary as a rich Table (one row per cell) for the terminal."""
    from rich.table import Table

    table = Table(title=summary_title(summary), caption=_caption(summary), show_lines=False)
    columns = _columns(summary)
    # Runs of one cell with unlike configs are separate rows: the config column tells them apart.
    # One `key=value` a line, never cut: the values are what tells the rows apart.
    labels = ([summary["config"].astype(str).str.replace(", ", "\n")]
              if _has_variants(summary) else [])
    for header in ("format", "reward"):
        table.add_column(header, no_wrap=True)
    for label in labels:
        widest = max(len(line) for text in label for line in text.splitlines() or [""])
        table.add_column("config", min_width=widest, overflow="fold")
    table.add_column("seeds", no_wrap=True)
    for _, header in columns:
        table.add_column(header, justify="right")
    for index, row in summary.iterrows():
        table.add_row(
            str(row["format"]), str(row["reward"]), *(label[index] for label in labels),
            str(row["seeds"]), *(_cell(row, c) for c, _ in columns),
        )
    return table


def _has_variants(summary: pd.DataFrame) -> bool:
    return "config" in summary and bool(summary["config"].astype(bool).any())


def cell_name(row: Mapping[str, Any]) -> str:
    """`format / reward`, and the row's config where its cell has several.

    >>> cell_name({"format": "mcq", "reward": "darling", "config": "rl.max_steps=2"})
    'mcq / darling [rl.max_steps=2]'
    """
    variant = row.get("config")
    return f"{row['format']} / {row['reward']}" + (f" [{variant}]" if variant else "")


def summary_markdown(summary: pd.DataFrame) -> str:
    """The grid summary as markdown (MLflow and Prefect artifacts): one narrow table per
    measure, one row per cell, so no table is wider than a flow-run page.

    >>> s = pd.DataFrame({"format": ["mcq"], "reward": ["correctness"], "seeds": [1],
    ...     "pass_at_1": [0.5], "pass_at_1_ci_low": [0.4], "pass_at_1_ci_high": [0.6]})
    >>> print("\\n".join(summary_markdown(s).splitlines()[4:7]))
    ### pass@1
    <BLANKLINE>
    | cell | seeds | rl |
    """
    lines = [f"## {summary_title(summary)}", "", _caption(summary), ""]
    for index, (title, _, columns) in enumerate(_groups(summary)):
        seeds = ["seeds"] if index == 0 else []
        header = ["cell", *seeds, *(h for _, h in columns)]
        lines += [f"### {title}", "", _md_row(header), _md_row(["---"] * len(header))]
        for _, row in summary.iterrows():
            cell = [cell_name(row), *([str(row["seeds"])] if seeds else [])]
            lines.append(_md_row([*cell, *(_cell(row, c) for c, _ in columns)]))
        lines.append("")
    return "\n".join(lines)


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def plot_grid(
    runs: pd.DataFrame, summary: pd.DataFrame, out_dir: str | Path, model: str | None = None
) -> list[Path]:
    """pass_at_k_by_format.png (one panel per format, one line per objective: the mean over
    seeds of `curve_<model>`, the base model dashed), pass_at_1_cost_vs_pass_at_k_gain.png
    (one labelled point per cell, CI bars where finite) and, where the runs logged pass^k,
    pass_hat_k_by_format.png (the same panels of `pass_hat_curve_<model>`). Returns the
    paths."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    model = model or summary.attrs.get("model", "rl")
    base = summary.attrs.get("base_model", "sft")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [
        _plot_curves(plt, runs, model, base, out / "pass_at_k_by_format.png"),
        _plot_tradeoff(plt, summary, out / "pass_at_1_cost_vs_pass_at_k_gain.png"),
    ]
    # pass^k beside pass@k, as the runs' own reports draw it (runs from before it: no plot).
    hat = "pass_hat_curve_"
    if any(isinstance(c, dict) and c for name in (model, base) if f"{hat}{name}" in runs
           for c in runs[f"{hat}{name}"]):
        paths.append(_plot_curves(plt, runs, model, base, out / "pass_hat_k_by_format.png",
                                  prefix=hat, measure="pass^k"))
    return paths


def _plot_curves(plt, runs: pd.DataFrame, model: str, base: str, path: Path,
                 prefix: str = "curve_", measure: str = "pass@k") -> Path:
    formats = sorted(runs["format"].dropna().unique()) or ["-"]
    # One line per row of the summary: runs of unlike configs are not averaged together.
    runs = runs.assign(config_variant=config_variants(runs)[0])
    # Constrained layout and a tight save: titles and legends are inside the PNG, whatever
    # their length (tight_layout left a long title cut and a side legend squeezing the plot).
    fig, axes = plt.subplots(1, len(formats), figsize=(5.2 * len(formats), 4.0), squeeze=False,
                             layout="constrained")
    try:
        for ax, fmt in zip(axes[0], formats):
            cell_runs = runs[runs["format"] == fmt]
            groups = cell_runs.groupby(["reward", "config_variant"], sort=True)
            split = bool(cell_runs["config_variant"].astype(bool).any())
            if f"{prefix}{base}" in runs and not split:
                # SFT warm starts are shared across objectives of a format: one base line.
                curve = mean_curve(cell_runs[f"{prefix}{base}"])
                if curve:
                    ax.plot(list(curve), list(curve.values()), "k--", label=f"{base} (base)")
            for index, ((reward, variant), group) in enumerate(groups):
                name = cell_name({"format": fmt, "reward": reward, "config": variant})
                name = name.removeprefix(f"{fmt} / ").replace(", ", "\n")  # a key a line
                colour = {"color": f"C{index % 10}"} if split else {}
                curve = mean_curve(group[f"{prefix}{model}"]) if f"{prefix}{model}" in group else {}
                if curve:
                    ax.plot(list(curve), list(curve.values()), marker="o", ms=3, label=name,
                            **colour)
                # Unlike configs have unlike warm starts: each its own base line.
                curve = mean_curve(group[f"{prefix}{base}"]) if f"{prefix}{base}" in group else {}
                if split and curve:
                    ax.plot(list(curve), list(curve.values()), "--", **colour,
                            label=None if index else f"{base} (base): dashed, same colour")
            ax.set_xscale("log", base=2)
            ax.set_title(f"{fmt}: {model} {measure} (mean over seeds)")
            ax.set_xlabel("k (samples)")
            ax.set_ylabel(measure)
            ax.set_ylim(-0.02, 1.02)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                # Below the panel: never over the curves, and the panel keeps its width however
                # long the labels (a config label is a key a line).
                ax.legend(fontsize=7 if split else 8, ncol=1 if split else 2, frameon=False,
                          loc="upper center", bbox_to_anchor=(0.5, -0.16))
        fig.savefig(path, dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


# The smallest half-range of the cost-vs-gain axes: noise of ±0.01 must not fill the plot.
MIN_HALF_RANGE = 0.05


def _plot_tradeoff(plt, summary: pd.DataFrame, path: Path) -> Path:
    k = summary.attrs.get("k", "k")
    model = summary.attrs.get("model", "trained")
    base = summary.attrs.get("base_model", "base")
    fig, ax = plt.subplots(figsize=(8.8, 5.2), layout="constrained")
    try:
        # Colour = objective (the same order as the curves plot), marker = format.
        # Runs of one cell with unlike configs are separate rows: each its own colour.
        variants = summary["config"] if "config" in summary else pd.Series("", summary.index)
        kinds = dict(zip(summary.index, zip(summary["reward"].astype(str), variants.astype(str))))
        colours = {r: f"C{i % 10}" for i, r in enumerate(sorted(set(kinds.values())))}
        markers = dict(zip(sorted(summary["format"].astype(str).unique()), "osD^v"))
        points = tradeoff_points(summary)
        limit = axis_half_range(points)
        for point in points:
            row = summary.loc[point["index"]]
            label = cell_name(row).replace(", ", "\n") + ("" if point["has_ci"] else " (no CI)")
            # Cells at the same place are nudged apart (1.5% of the axis each) and named.
            ax.errorbar(
                point["x"] + 0.015 * limit * point["rank"], point["y"], xerr=point["xerr"],
                yerr=point["yerr"],
                fmt=markers.get(str(row["format"]), "o"), color=colours[kinds[point["index"]]],
                capsize=3, alpha=0.85, label=label,
            )
            if point["shared"] > 1:
                ax.annotate(str(row["reward"]), (point["x"], point["y"]), fontsize=7,
                            xytext=(6, 6 - 10 * point["rank"]), textcoords="offset points")
        ax.set_xlim(-limit, limit)
        ax.set_ylim(-limit, limit)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.set_xlabel(f"pass@1 change, {model} − {base} (left = cost)")
        ax.set_ylabel(f"pass@{k} change, {model} − {base} (up = gain)")
        with_ci = sum(p["has_ci"] for p in points)
        bars = ("95% CI bars" if with_ci == len(points) else
                f"95% CI bars on {with_ci} of {len(points)} cells" if with_ci else
                "no CI bars: no per-problem tables to resample")
        ax.set_title(f"pass@1 cost vs pass@{k} gain, one point per cell\n({bars})", fontsize=10)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, ncol=2, frameon=False, loc="upper center",
                      bbox_to_anchor=(0.5, -0.1))
        fig.savefig(path, dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def tradeoff_points(summary: pd.DataFrame) -> list[dict[str, Any]]:
    """One point per cell with finite deltas: x, y, error bars (None without a CI), and how
    many cells share its place (`shared`, `rank`), so identical cells can be told apart.

    >>> s = pd.DataFrame({"pass_at_1_delta": [0.1, 0.1], "pass_at_kmax_delta": [0.0, 0.0]})
    >>> [(p["shared"], p["rank"], p["has_ci"]) for p in tradeoff_points(s)]
    [(2, 0, False), (2, 1, False)]
    """
    points = []
    for index, row in summary.iterrows():
        x, y = row.get("pass_at_1_delta"), row.get("pass_at_kmax_delta")
        if finite(x) and finite(y):
            xerr, yerr = _err(row, "pass_at_1_delta"), _err(row, "pass_at_kmax_delta")
            points.append({"index": index, "x": float(x), "y": float(y), "xerr": xerr,
                           "yerr": yerr, "has_ci": xerr is not None and yerr is not None})
    places: dict[tuple[float, float], int] = {}
    for point in points:
        place = (round(point["x"], 3), round(point["y"], 3))
        point["rank"] = places.get(place, 0)
        places[place] = point["rank"] + 1
    for point in points:
        point["shared"] = places[(round(point["x"], 3), round(point["y"], 3))]
    return points


def axis_half_range(points: list[dict[str, Any]]) -> float:
    """A symmetric half-range that holds every point and CI bar, and at least MIN_HALF_RANGE.

    >>> axis_half_range([{"x": 0.01, "y": -0.02, "xerr": None, "yerr": [[0.3], [0.1]]}])
    0.368
    """
    extent = MIN_HALF_RANGE / 1.15
    for p in points:
        for value, err in ((p["x"], p["xerr"]), (p["y"], p["yerr"])):
            below, above = (err[0][0], err[1][0]) if err is not None else (0.0, 0.0)
            extent = max(extent, abs(value - below), abs(value + above))
    return round(extent * 1.15, 3)


def _err(row: Mapping[str, Any], column: str):
    low, high, value = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high"), row[column]
    if finite(low) and finite(high):
        return [[max(value - low, 0.0)], [max(high - value, 0.0)]]
    return None
