"""Choose the claims' interval by simulation: false positives and coverage of each method.

Simulates the nightly study's structure (`breadth.stats.calibration`: S seeds, P problems
nested in seeds, per-problem pass rates from n samples, a seed-level shift) under no effect and
under a planted effect, and scores each interval method; writes a markdown report headed by
this command, its seed, reps and wall time.

    PYTHONPATH=src .venv/bin/python scripts/results/calibration.py --reps 2000 \
        --out docs/results/calibration.md

By default per-problem pass rates are Beta(0.3, 2.96) (the old arithmetic task) and the seed
sd a fixed bracket. `--from-pilot DIR` (a `scripts/results/pilot.py` work folder, read only)
takes both from a real run: pass rates resampled from its per-problem SFT rates, and a bracket
of 0, 0.5, 1 and 2 times its run-to-run sd of Δ pass@1 (`calibration.pilot_variances`).
`--from-grid ID` takes them from a grid's free-form correctness cells instead (its study frame,
read from the stack's MLflow: `calibration.grid_variances`), so the nightly's own cells give
the structure.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from breadth.stats.calibration import (
    PilotVariances,
    Scenario,
    calibration_grid,
    grid_variances,
    read_pilot,
)
from breadth.stats.seed_interval import t_quantile

TARGET = (0.035, 0.065)  # 5% +- 1.5%
MIN_COVERAGE = 0.93
PILOT_BRACKET = (0.0, 0.5, 1.0, 2.0)
"""Multiples of the pilot's seed sd: an sd from a few seeds is itself uncertain (from 4 seeds
its 95% interval spans about 0.6x to 3.7x the estimate)."""


def structure(scenario: Scenario, pilot: PilotVariances | None, source: str) -> list[str]:
    """The page's lines on what the simulation draws, and from what."""
    if pilot is None:
        return [(f"- structure: {scenario.num_problems} problems per seed, n = "
                 f"{scenario.num_samples} samples per model, per-problem pass rate ~ "
                 f"Beta({scenario.beta_a}, {scenario.beta_b}) (mean 0.092, the old arithmetic "
                 "task's)")]
    rates = np.asarray(pilot.pass_rates)
    return [
        (f"- structure from {source} ({len(pilot.seed_deltas)} seeds): "
         f"{scenario.num_problems} problems per seed, n = {scenario.num_samples} samples per "
         f"model, per-problem pass rate resampled from its {rates.size} per-problem SFT pass "
         f"rates (mean {rates.mean():.3f}, sd {rates.std():.3f}; {np.mean(rates == 0):.1%} at 0, "
         f"{np.mean(rates == 1):.1%} at 1)"),
        (f"- seed level from the same: per-seed Δ pass@1 (RL - SFT) "
         f"{', '.join(f'{d:+.4f}' for d in pilot.seed_deltas)}, sd {pilot.delta_sd:.4f}; "
         f"problem noise of a seed's mean (its standard error, rms over seeds) "
         f"{pilot.within_seed_se:.4f}; run-to-run sd sqrt({pilot.delta_sd:.4f}² - "
         f"{pilot.within_seed_se:.4f}²) = **{pilot.seed_sd:.4f}**; the table's seed sds are "
         f"{', '.join(f'{f:g}' for f in PILOT_BRACKET)} x that"),
    ]


def markdown(rows: list[dict], args: argparse.Namespace, wall: float, scenario: Scenario,
             pilot: PilotVariances | None = None) -> str:
    lines = [
        "# Calibration of the claims' interval",
        "",
        "```",
        "PYTHONPATH=src .venv/bin/python "
        + shlex.join(["scripts/results/calibration.py", *sys.argv[1:]]),
        "```",
        "",
        (f"- seed: {args.seed}; reps per scenario: {args.reps} (null and planted each); "
         f"bootstrap resamples: {args.resamples}"),
        (f"- machine: {platform.node()} ({platform.processor() or platform.machine()}); "
         f"wall time: {wall / 60:.1f} min"),
        *structure(scenario, pilot, source_of(args)),
        f"- planted effect {args.effect:+g}; nominal 95% intervals",
        "- Monte-Carlo error: ± one standard error of each share",
        "",
        ("| seeds | seed sd | method | false positives | coverage | power at planted effect "
         "| mean half-width | within 5% ± 1.5% and coverage >= 93% |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fp, cov = r["false_positives"], r["coverage"]
        ok = TARGET[0] <= fp.value <= TARGET[1] and cov.value >= MIN_COVERAGE
        lines.append(f"| {r['seeds']} | {r['seed_sd']:.4g} | {r['method']} | {fp} | {cov} | "
                     f"{r['power']} | {r['half_width']:.4f} | {'yes' if ok else 'no'} |")
    lines += ["", "t quantiles the kept method multiplies its standard error by (two-sided):", "",
              "| seeds | 95% | Bonferroni 95% over 20 rows |", "|---|---|---|"]
    for s in args.seeds:
        lines.append(f"| {s} | {t_quantile(0.975, s - 1):.2f} | "
                     f"{t_quantile(1 - 0.025 / 20, s - 1):.2f} |")
    return "\n".join(lines) + "\n"


def source_of(args: argparse.Namespace) -> str:
    """Where the structure came from, as the report names it."""
    if args.from_grid:
        return f"grid `{args.from_grid}`'s free_form correctness cells"
    return f"the pilot at `{args.from_pilot}`"


def variances_of_grid(grid_id: str) -> PilotVariances:
    """`grid_variances` of a grid's study frame, read from the stack's MLflow."""
    from breadth.stack.local import StackSettings
    from breadth.study.frame import load_study_frame

    return grid_variances(load_study_frame(StackSettings().mlflow_url, grid_id))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 5, 8])
    parser.add_argument("--seed-sd", type=float, nargs="+", default=None,
                        help="seed-level sds (default 0 0.02 0.04 0.08, or with --from-pilot "
                             "0, 0.5, 1, 2 x the pilot's)")
    parser.add_argument("--from-pilot", type=Path, default=None,
                        help="a scripts/results/pilot.py work folder (<hash>-s<seed>/ with "
                             "sft.parquet, rl.parquet): take the problem-level pass rates and "
                             "the seed sd from it")
    parser.add_argument("--from-grid", default=None,
                        help="a grid id (the stack's MLflow): take the problem-level pass rates "
                             "and the seed sd from its free_form correctness cells")
    parser.add_argument("--effect", type=float, default=0.02,
                        help="planted effect for coverage and power (δ of Δ pass@1)")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    scenario, pilot, seed_sds = Scenario(1, 0.0), None, args.seed_sd or [0.0, 0.02, 0.04, 0.08]
    if args.from_pilot is not None and args.from_grid:
        parser.error("--from-pilot and --from-grid exclude each other")
    if args.from_pilot is not None or args.from_grid:
        pilot = variances_of_grid(args.from_grid) if args.from_grid else read_pilot(args.from_pilot)
        scenario = Scenario(1, 0.0, num_problems=pilot.num_problems,
                            num_samples=pilot.num_samples, pass_rates=pilot.pass_rates)
        seed_sds = args.seed_sd or [round(f * pilot.seed_sd, 4) for f in PILOT_BRACKET]
    rows = calibration_grid(args.seeds, seed_sds, args.effect, args.reps, args.seed,
                            args.resamples, template=scenario)
    text = markdown(rows, args, time.perf_counter() - started, scenario, pilot)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
