"""The claims report's "Collapse over training steps": the training curves per objective (one
figure per metric, a panel per format), the format claim's correctness curves side by side,
the collapse rates, and their numbers as CSV. Computed by `breadth.study.curves`."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from breadth.study.curves import DISTINCT_OUTCOMES, TRAINING_METRICS, TrainingCurves
from breadth.study.grid_design import CORRECTNESS

__all__ = ["collapse_section", "panel_figure", "save_figure", "write_training_curves"]

# The format claim compares the formats on one objective (the nightly runs it on correctness
# only, issue #26 part 6).
FORMATS = ("mcq", "free_form")


def _slug(metric: str) -> str:
    return metric.rsplit("/", 1)[-1]


def panel_figure(count: int):
    """A figure of `count` panels side by side (matplotlib without a display) -> (figure, axes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, count, figsize=(6 * count, 4.5), squeeze=False)
    return figure, axes[0]


def save_figure(figure, axes, path: Path) -> Path:
    """Grid lines and a legend on every panel; the figure written to `path` and closed."""
    import matplotlib.pyplot as plt

    for axis in axes:
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _figure(panels: list[tuple[str, pd.DataFrame]], line: str, path: Path) -> Path:
    """One panel per (title, rows of metric, step, mean, low, high, `line`): a line per value
    of `line`, its t interval over seeds as a band."""
    figure, axes = panel_figure(len(panels))
    for axis, (title, rows) in zip(axes, panels):
        for name, curve in rows.groupby(line, sort=True):
            axis.plot(curve["step"], curve["mean"], marker=".", label=str(name))
            axis.fill_between(curve["step"], curve["low"], curve["high"], alpha=0.15)
        metric = rows["metric"].iloc[0]
        label = TRAINING_METRICS.get(metric, metric)
        axis.set(title=title, xlabel="GRPO step", ylabel=f"{label} (mean over seeds, t band)")
    return save_figure(figure, axes, path)


def write_training_curves(training: TrainingCurves, out: Path) -> list[Path]:
    """training_<metric>.png (a panel per format, a line per objective), format_curves_
    correctness.png (when both formats ran correctness), training_curves.csv and
    collapse_rates.csv in `out` -> their paths; none when nothing was logged."""
    if training.empty:
        return []
    curves = training.curves
    paths = []
    for metric, rows in curves.groupby("metric", sort=False):
        panels = [(f"{fmt}: {TRAINING_METRICS.get(metric, metric)} over GRPO steps", part)
                  for fmt, part in rows.groupby("format", sort=True)]
        paths.append(_figure(panels, "objective", out / f"training_{_slug(metric)}.png"))
    side = curves[(curves["objective"] == CORRECTNESS) & curves["format"].isin(FORMATS)]
    if set(side["format"]) == set(FORMATS):
        panels = [(f"{CORRECTNESS}: {TRAINING_METRICS.get(metric, metric)}, mcq vs free_form",
                   rows) for metric, rows in side.groupby("metric", sort=False)]
        paths.append(_figure(panels, "format", out / f"format_curves_{CORRECTNESS}.png"))
    paths.append(out / "training_curves.csv")
    curves.to_csv(paths[-1], index=False, float_format="%.6g")
    per_seed = pd.DataFrame(
        [{"format": fmt, "objective": objective,
          "per_seed": "; ".join(f"seed {s}: {v:.6g}" for s, v in zip(r["seed"], r["rate"]))}
         for (fmt, objective), r in training.rates.rename(columns={"collapse_rate": "rate"})
         .groupby(["format", "objective"])],
        columns=["format", "objective", "per_seed"],
    )
    paths.append(out / "collapse_rates.csv")
    training.rate_means.merge(per_seed, on=["format", "objective"], how="outer").to_csv(
        paths[-1], index=False, float_format="%.6g")
    return paths


def _value(estimate: float, low: float, high: float) -> tuple[str, str]:
    interval = ("no interval (one seed)" if math.isnan(low)
                else f"[{low:+.3g}, {high:+.3g}]")
    return f"{estimate:+.3g}", interval


def collapse_section(training: TrainingCurves, paths: list[Path], confidence: float = 0.95) -> str:
    """The claims.md section: what is measured, each objective's collapse rate with its
    interval, the format claim's correctness curves side by side, the figures and every note."""
    level = f"{confidence:.0%}"
    lines = ["## Collapse over training steps", ""]
    if training.empty:
        lines += [(f"No training histories: no RL run of this grid logged {_names()} (runs from "
                  "before these metrics were logged, or RL stages that logged nothing). The "
                  "collapse rate needs a grid re-run with them."), ""]
        return "\n".join(lines + _notes(training))
    lines += [
        (f"What the RL stage runs logged at each logging step: {_names()}. A curve is the mean "
        f"over seeds at each step every seed logged, its band the {level} t interval over "
        "seeds (none with one seed). The *collapse rate* is the slope of the least-squares line "
        f"of distinct outcomes per group against step, per cell, then its mean over seeds with "
        f"the {level} t interval: negative when a prompt's group of completions narrows to "
        "fewer answers as training goes on. Numbers: `training_curves.csv`, "
        "`collapse_rates.csv`."), "",
        f"| format | objective | collapse rate (per step) | {level} CI | seeds | steps |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    steps = training.alignment[training.alignment["metric"] == DISTINCT_OUTCOMES]
    for row in training.rate_means.itertuples():
        estimate, interval = _value(row.estimate, row.low, row.high)
        common = steps[(steps["format"] == row.format) & (steps["objective"] == row.objective)]
        lines.append(f"| {row.format} | {row.objective} | {estimate} | {interval} | {row.seeds} "
                     f"| {int(common['common_steps'].iloc[0])} |")
    lines += ["", *_format_side_by_side(training, level), ""]
    lines += [f"![{path.stem}]({path.name})" for path in paths if path.suffix == ".png"]
    return "\n".join(lines + ["", *_notes(training)])


def _names() -> str:
    return " and ".join(f"{label} (`{metric}`)" for metric, label in TRAINING_METRICS.items())


def _format_side_by_side(training: TrainingCurves, level: str) -> list[str]:
    """The format claim over training steps: correctness under mcq and under free_form."""
    lines = [f"### Format, over training steps: {CORRECTNESS} under mcq and free_form", ""]
    ran = set(training.curves.loc[training.curves["objective"] == CORRECTNESS, "format"])
    if not set(FORMATS) <= ran:
        return lines + [(f"Not shown: it needs {CORRECTNESS} curves in both formats; this grid "
                        f"has them in {', '.join(sorted(ran)) or 'none'}.")]
    lines += [f"| {CORRECTNESS} | {' | '.join(FORMATS)} |", "| --- | --- | --- |"]
    rates = training.rate_means.set_index(["format", "objective"])
    cells = []
    for fmt in FORMATS:
        if (fmt, CORRECTNESS) in rates.index:
            row = rates.loc[(fmt, CORRECTNESS)]
            cells.append(" ".join(_value(row["estimate"], row["low"], row["high"])))
        else:
            cells.append("not fitted")
    lines.append(f"| collapse rate (per step), {level} CI | {' | '.join(cells)} |")
    for metric, label in TRAINING_METRICS.items():
        ends = []
        for fmt in FORMATS:
            curve = training.curves[(training.curves["metric"] == metric)
                                    & (training.curves["format"] == fmt)
                                    & (training.curves["objective"] == CORRECTNESS)]
            if not len(curve):
                ends.append("not logged")
                continue
            first, last = curve["mean"].iloc[0], curve["mean"].iloc[-1]
            # The relative fall puts the formats on one scale whatever their levels.
            fall = f"; {last / first - 1:+.0%}" if first else ""
            ends.append(f"{first:.3g} → {last:.3g} (steps {curve['step'].iloc[0]} → "
                        f"{curve['step'].iloc[-1]}{fall})")
        lines.append(f"| {label}, first → last common step (relative change) | "
                     f"{' | '.join(ends)} |")
    lines += ["", ("An mcq group's distinct outcomes are capped by its options (plus no "
                   "answer): its levels start lower than free_form's, so compare the relative "
                   "changes, not the levels.")]
    return lines


def _notes(training: TrainingCurves) -> list[str]:
    if not training.notes:
        return ["Every seed logged every step of every curve: nothing dropped."]
    return ["Notes:", "", *[f"- {note}" for note in training.notes]]
