"""Choose the claims' interval by simulation: false positives and coverage of each method.

Simulates the nightly study's structure (`breadth.evaluation.calibration`: S seeds, P problems
nested in seeds, per-problem pass rates from n samples, a seed-level shift) under no effect and
under a planted effect, and scores each interval method; writes a markdown report headed by
this command, its seed, reps and wall time.

    PYTHONPATH=src .venv/bin/python scripts/calibrate_intervals.py --reps 2000 \
        --out docs/results/calibration.md
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time
from pathlib import Path

from breadth.evaluation.calibration import Scenario, calibration_grid
from breadth.evaluation.seed_interval import t_quantile

TARGET = (0.035, 0.065)  # 5% +- 1.5%
MIN_COVERAGE = 0.93


def markdown(rows: list[dict], args: argparse.Namespace, wall: float) -> str:
    scenario = Scenario(1, 0.0)
    lines = [
        "# Calibration of the claims' interval",
        "",
        "```",
        "PYTHONPATH=src .venv/bin/python " + shlex.join(["scripts/calibrate_intervals.py", *sys.argv[1:]]),
        "```",
        "",
        (f"- seed: {args.seed}; reps per scenario: {args.reps} (null and planted each); "
         f"bootstrap resamples: {args.resamples}"),
        (f"- machine: {platform.node()} ({platform.processor() or platform.machine()}); "
         f"wall time: {wall / 60:.1f} min"),
        (f"- structure: {scenario.num_problems} problems per seed, n = {scenario.num_samples} "
         f"samples per model, per-problem pass rate ~ Beta({scenario.beta_a}, {scenario.beta_b}) "
         f"(mean 0.092); planted effect {args.effect:+g}; nominal 95% intervals"),
        "- Monte-Carlo error: ± one standard error of each share",
        "",
        ("| seeds | seed sd | method | false positives | coverage | power at planted effect "
         "| mean half-width | within 5% ± 1.5% and coverage >= 93% |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fp, cov = r["false_positives"], r["coverage"]
        ok = TARGET[0] <= fp.value <= TARGET[1] and cov.value >= MIN_COVERAGE
        lines.append(f"| {r['seeds']} | {r['seed_sd']:g} | {r['method']} | {fp} | {cov} | "
                     f"{r['power']} | {r['half_width']:.4f} | {'yes' if ok else 'no'} |")  # fmt: skip
    lines += ["", "t quantiles the kept method multiplies its standard error by (two-sided):", "",
              "| seeds | 95% | Bonferroni 95% over 20 rows |", "|---|---|---|"]  # fmt: skip
    for s in args.seeds:
        lines.append(f"| {s} | {t_quantile(0.975, s - 1):.2f} | "
                     f"{t_quantile(1 - 0.025 / 20, s - 1):.2f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 5, 8])
    parser.add_argument("--seed-sd", type=float, nargs="+", default=[0.0, 0.02, 0.04, 0.08])
    parser.add_argument("--effect", type=float, default=0.02,
                        help="planted effect for coverage and power (δ of Δ pass@1)")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = calibration_grid(args.seeds, args.seed_sd, args.effect, args.reps, args.seed,
                            args.resamples)  # fmt: skip
    text = markdown(rows, args, time.perf_counter() - started)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
