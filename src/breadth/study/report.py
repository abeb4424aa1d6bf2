"""The study's report: the claims table, its JSON, and pass@k per objective with CIs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from breadth.evaluation.metrics import largest_k_above_chance
from breadth.evaluation.transfer import options_of
from breadth.stats.bootstrap import (
    hierarchical_bootstrap_means,
    percentile_interval,
    widened_for_few_seeds,
)
from breadth.study.claims import (
    Claim,
    Study,
    claims_markdown,
    pass_metric,
)
from breadth.study.curves import TrainingCurves
from breadth.study.curves_report import (
    collapse_section,
    panel_figure,
    save_figure,
    write_training_curves,
)
from breadth.study.grid_settings import ClaimSettings

__all__ = ["pass_at_k_by_objective", "plot_pass_at_k_by_objective", "write_study_report"]


def pass_at_k_by_objective(frame: pd.DataFrame, settings: ClaimSettings) -> pd.DataFrame:
    """Mean pass@k (above chance for mcq) per format and arm, with a seeds x problems CI.

    Arms: `sft` (the shared warm start) and every objective's RL policy. Columns: format,
    arm, k, estimate, low, high.
    """
    rows = []
    for fmt in sorted(frame["format"].unique()):
        study = Study(frame, fmt, settings)
        arms = [("", "sft"), *[(objective, "rl") for objective in
                               sorted(study.frame.loc[study.frame["model"] == "rl", "objective"]
                                      .unique())]]
        n = int(study.frame["num_samples"].min())
        options = options_of(study.frame)
        top = n if options is None else largest_k_above_chance(options, n)  # chance < 0.99
        ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= top]
        for arm in arms:
            stacked = np.stack([study.aligned([arm], pass_metric(k))[0][..., 0] for k in ks],
                               axis=-1)  # (S, P, K)
            arm = arm[0] or "sft"
            boot = hierarchical_bootstrap_means(stacked, settings.num_resamples, settings.seed)
            low, high = percentile_interval(boot, settings.confidence)
            point = np.nanmean(stacked, axis=(0, 1))
            low, high = widened_for_few_seeds(point, low, high, stacked.shape[0],
                                              np.nanmin(stacked, axis=(0, 1)),
                                              np.nanmax(stacked, axis=(0, 1)))
            for j, k in enumerate(ks):
                rows.append({"format": fmt, "arm": arm, "k": k, "estimate": float(point[j]),
                             "low": float(low[j]), "high": float(high[j])})
    return pd.DataFrame(rows)


def plot_pass_at_k_by_objective(curves: pd.DataFrame, path: Path) -> Path:
    """One panel per format: pass@k of SFT and of each objective, 95% CI bands."""
    formats = sorted(curves["format"].unique())
    figure, axes = panel_figure(len(formats))
    for axis, fmt in zip(axes, formats):
        for arm, curve in curves[curves["format"] == fmt].groupby("arm", sort=False):
            style = {"color": "black", "linestyle": "--"} if arm == "sft" else {}
            axis.plot(curve["k"], curve["estimate"], marker="o", label=arm, **style)
            axis.fill_between(curve["k"], curve["low"], curve["high"], alpha=0.12,
                              color=style.get("color"))
        axis.set_xscale("log", base=2)
        above = " above chance, (p - chance) / (1 - chance)" if fmt == "mcq" else ""
        axis.set(title=f"{fmt}: pass@k{above}", xlabel="k", ylabel="pass@k (95% CI band: "
                 "seeds x problems)")
    return save_figure(figure, axes, path)


def write_study_report(
    frame: pd.DataFrame, claims: list[Claim], out_dir: Path, *, header: str = "",
    settings: ClaimSettings | None = None, training: TrainingCurves | None = None,
    plan: str = "",
) -> list[Path]:
    """claims.md (the table, with the nightly `plan` where given), claims.json,
    pass_at_k_by_objective.{png,csv} and, given the grid's `training` curves, its "Collapse
    over training steps" section with their figures and CSVs (`breadth.study.curves_report`)
    -> their paths."""
    settings = settings or ClaimSettings()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    curves = pass_at_k_by_objective(frame, settings)
    png = plot_pass_at_k_by_objective(curves, out / "pass_at_k_by_objective.png")
    csv = out / "pass_at_k_by_objective.csv"
    curves.to_csv(csv, index=False, float_format="%.4f")
    training_paths = write_training_curves(training, out) if training is not None else []
    section = ("\n" + collapse_section(training, training_paths, settings.confidence) + "\n"
               if training is not None else "")
    table = out / "claims.md"
    table.write_text(claims_markdown(claims, header, plan) + "\n![pass@k per objective]"
                     "(pass_at_k_by_objective.png)\n" + section)
    data = out / "claims.json"
    data.write_text(json.dumps([c.to_dict() for c in claims], indent=1))
    return [table, data, png, csv, *training_paths]
