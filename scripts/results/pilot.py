"""Power pilot for the claims on a task: how many seeds does each claim's interval need?

    OMP_NUM_THREADS=1 .venv/bin/python scripts/results/pilot.py --preset reasoning --seeds 3 \\
        --workers 2 [--set sft.epochs=32] [--out docs/results/pilot.md]

For every seed (in `--workers` processes, one torch thread each) it runs the library's stages
directly: prepare, init, SFT, rollouts of SFT; GRPO with the correctness reward and rollouts of
RL. It then measures, per problem and paired by problem, RL - SFT on each claim's own measure
(`per_problem_table`: pass@1, pass@n, distinct outcomes, distinct outcomes on the problems SFT
did not solve in an independent half of its samples, the share of reasoning tokens above SFT's
80th-percentile reasoning entropy, the relative fall of distinct reasoning paths), and puts a
t interval over the per-seed means on each (`seed_interval`, the claims' own interval). From
the spread of the per-seed means it sizes the nightly (`evaluation.sizing`): the seeds each
measure needs for an interval of half-width below δ / 2 (a verdict guaranteed) and below δ,
unadjusted and at Holm's strictest level for the claims family. It writes that, the stage
times and the projected nightly wall time as markdown, with its command, commit, machine and
load. A sd from 3 seeds is itself uncertain (its 95% upper bound is ~4.4x the estimate), so
the sizes are a pilot's, and the page says so.

Stage functions (`breadth.stages`) only: no stack, no tracking. Results are kept under
`--work` and reused by a re-run (a seed's SFT and RL are skipped when their rollouts exist).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from power import run_stages  # the SFT and RL halves, timed: power.py's, in one folder

from breadth.config import load_config
from breadth.evaluation.claim_columns import reasoning_entropy_threshold
from breadth.evaluation.metrics import pass_at_k
from breadth.evaluation.summary import per_problem_table
from breadth.stats.seed_interval import seed_t_interval
from breadth.stats.sizing import decisive_half_width, half_width, seeds_needed
from breadth.study.claim_registry import DELTAS
from breadth.study.grid_design import NIGHTLY_SEEDS

# (label, claim whose δ applies, the claim, the claim's spread over this measure's): the
# format claim is a difference of two formats' falls, each measured as here, so its per-seed
# spread is ~sqrt(2) times one format's.
MEASURES = [
    ("Δ pass@1", "pass@1", "sharpening", 1.0),
    ("Δ pass@n", "pass@n", "sharpening / crossover", 1.0),
    ("Δ distinct outcomes", "distinct", "diversity (historical row; batch on pairs)", 1.0),
    ("Δ distinct outcomes, SFT-unsolved (held-out half)", "distinct", "diversity on unsolved",
     1.0),
    ("Δ forking share of reasoning tokens", "forking", "forking share", 1.0),
    ("relative fall of distinct reasoning paths (1 - RL/SFT)", "format",
     "format (mcq - free_form: sized at sqrt(2) x this sd)", math.sqrt(2.0)),
]
# The SFT level a δ rule reads (`claim_registry.Smallest.of`), per measure whose δ is one.
SFT_LEVELS = {
    "Δ pass@n": "SFT pass@n",
    "Δ distinct outcomes": "SFT distinct outcomes",
    "Δ distinct outcomes, SFT-unsolved (held-out half)":
        "SFT held-out distinct outcomes, SFT-unsolved",
}


def run_seed(preset: str, overrides: list[str], seed: int, work: Path,
             reuse_only: bool = False) -> dict[str, Any]:
    """One seed's SFT and correctness-RL rollouts (reused when present) and stage times."""
    import torch

    torch.set_num_threads(1)
    config = load_config(preset, [*overrides, f"seed={seed}", "rl.reward.spec=correctness"])
    root = work / f"{config.content_hash()[:10]}-s{seed}"
    if reuse_only and not (root / "rl.parquet").exists():
        raise SystemExit(f"--reuse-only: seed {seed} has no rollouts at {root} (the config "
                         "differs from the run that computed them: check the preset and --set)")
    rl_metrics: list[tuple[str, float, int]] = []
    times = run_stages(config, root, root,
                       log_metric=lambda name, value, step: rl_metrics.append((name, value, step)))
    if "rollout_rl" in times:
        (root / "rl_metrics.json").write_text(json.dumps(rl_metrics))
    if times:
        (root / f"times-{int(time.time())}.json").write_text(json.dumps(times))
    return {"seed": seed, "root": str(root), "times": times, "trace": config.data.reasoning}


def seed_values(root: Path, trace: bool) -> dict[str, float]:
    """Per-seed mean of each measure (RL - SFT, paired by problem); without a `trace` (the
    preset's data.reasoning) the reasoning measures are NaN, not read off the answer."""
    sft_rows, rl_rows = pd.read_parquet(root / "sft.parquet"), pd.read_parquet(root / "rl.parquet")
    threshold = reasoning_entropy_threshold(sft_rows) if trace else None
    sft = per_problem_table(sft_rows, reasoning_threshold=threshold, trace=trace)
    rl = per_problem_table(rl_rows, reasoning_threshold=threshold, trace=trace).loc[sft.index]
    n = int(sft["num_samples"].min())

    def pass_n(t: pd.DataFrame) -> np.ndarray:
        return pass_at_k(t["num_samples"].to_numpy(), t["num_correct"].to_numpy(), n)

    unsolved = (sft["split_num_correct"] == 0).to_numpy()
    fall = 1.0 - rl["distinct_reasoning"].mean() / sft["distinct_reasoning"].mean()
    return {
        "Δ pass@1": float((rl["pass_at_1"] - sft["pass_at_1"]).mean()),
        "Δ pass@n": float(np.mean(pass_n(rl) - pass_n(sft))),
        "Δ distinct outcomes": float((rl["distinct_outcomes"] - sft["distinct_outcomes"]).mean()),
        "Δ distinct outcomes, SFT-unsolved (held-out half)": float(
            (rl["heldout_distinct_outcomes"] - sft["heldout_distinct_outcomes"])[unsolved].mean()
        ) if unsolved.any() else math.nan,
        "Δ forking share of reasoning tokens": float(
            (rl["reasoning_forking_share"] - sft["reasoning_forking_share"]).mean()),
        "relative fall of distinct reasoning paths (1 - RL/SFT)": float(fall),
        # context, not sized
        "SFT pass@1": float(sft["pass_at_1"].mean()),
        "RL pass@1": float(rl["pass_at_1"].mean()),
        "SFT distinct outcomes": float(sft["distinct_outcomes"].mean()),
        "SFT pass@n": float(np.mean(pass_n(sft))),
        "SFT held-out distinct outcomes, SFT-unsolved": float(
            sft["heldout_distinct_outcomes"][unsolved].mean()) if unsolved.any() else math.nan,
        "SFT-unsolved problems": float(unsolved.mean()),
        "problems": float(len(sft)),
        "n": float(n),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="reasoning")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--family-size", type=int, default=11,
                        help="claims in the Holm family (rows of one format's table)")
    parser.add_argument("--nightly-seeds", type=int, default=len(NIGHTLY_SEEDS),
                        help="the nightly's seeds, whose half-widths the table shows")
    parser.add_argument("--cells", type=int, default=5,
                        help="RL cells per seed in the projected nightly (objectives x formats)")
    parser.add_argument("--formats", type=int, default=2,
                        help="SFT starts per seed in the projected nightly (one per format)")
    parser.add_argument("--work", type=Path, default=Path(".breadth/pilot"))
    parser.add_argument("--seed-set", action="append", default=[],
                        help="SEED:key=value, an override of one seed only (e.g. a seed "
                        "computed before a preset changed); the page's command shows it")
    parser.add_argument("--reuse-only", action="store_true",
                        help="only re-write the page from rollouts already under --work")
    parser.add_argument("--out", type=Path, default=Path("docs/results/pilot.md"))
    args = parser.parse_args()
    if args.seeds < 2:
        parser.error("--seeds must be at least 2: one seed has no spread to size from")
    per_seed: dict[int, list[str]] = {}
    for text in args.seed_set:
        seed, sep, override = text.partition(":")
        if not sep or not seed.strip().isdigit() or "=" not in override:
            parser.error(f"--seed-set {text!r}: give SEED:key=value")
        per_seed.setdefault(int(seed), []).append(override.strip())
    started, load_before = time.monotonic(), os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        jobs = [pool.submit(run_seed, args.preset, [*args.overrides, *per_seed.get(seed, [])],
                            seed, args.work, args.reuse_only)
                for seed in range(args.seeds)]
        runs = [job.result() for job in jobs]
    values = [seed_values(Path(run["root"]), run["trace"]) for run in runs]
    times = [_stage_times(Path(run["root"])) for run in runs]
    for run, value in zip(runs, values):
        print(json.dumps({"seed": run["seed"], **value}), flush=True)
    text = report(args, values, times, time.monotonic() - started, commit, load_before,
                  os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps({"seeds": values, "times": times},
                                                        indent=1))
    print(text)


def _stage_times(root: Path) -> dict[str, float]:
    """Every stage's time for this seed, from the runs that computed it (a re-run reuses)."""
    merged: dict[str, float] = {}
    for path in sorted(root.glob("times-*.json")):
        merged.update(json.loads(path.read_text()))
    return merged


def _fmt(value: float) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:+.4f}"


def report(args: argparse.Namespace, values: list[dict[str, float]],
           times: list[dict[str, float]], wall: float, commit: str,
           load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    command = shlex.join(["OMP_NUM_THREADS=1", ".venv/bin/python", "scripts/results/pilot.py",
                          *sys.argv[1:]])
    seeds = len(values)
    context = {key: np.mean([v[key] for v in values]) for key in
               ("SFT pass@1", "RL pass@1", "SFT distinct outcomes", "SFT-unsolved problems")}
    lines = [
        "# Power pilot for the claims",
        "",
        ("Written by `scripts/results/pilot.py` (do not edit by hand): SFT and correctness-RL per "
        "seed on the preset's task, RL - SFT paired by problem on each claim's measure, a t "
        "interval over the per-seed means (the claims' interval, docs/results/calibration.md), "
        "and the seeds the nightly needs from the spread of those means."),
        "",
        f"- command: `{command}`",
        (f"- commit: {commit}; machine: {platform.machine()}, `nproc` = {os.cpu_count()}, load "
        f"average {load_before[0]:.1f} before / {load_after[0]:.1f} after; wall time "
        f"{wall / 60:.1f} min"),
        ("- --reuse-only: every stage was computed by an earlier invocation (`--work`); the "
         "stage times below are theirs, not this invocation's wall time" if args.reuse_only
         else "- stages found under `--work` are reused; the others were computed here"),
        (f"- seeds: {seeds}; eval problems per seed: {int(values[0]['problems'])}; n = "
        f"{int(values[0]['n'])} samples per problem"),
        "- context (mean over seeds): " + "; ".join(f"{k} {v:.3f}" for k, v in context.items()),
        "",
        "## Each measure, RL (correctness) - SFT",
        "",
        (f"Seeds needed: the smallest S with a t half-width below the target at the pilot's "
        f"sd; Holm = at alpha / {args.family_size} (the strictest step for a family of "
        f"{args.family_size} claims). δ / 2 guarantees a verdict (an interval holding 0 lies "
        f"within ±δ); δ only makes *no effect* reachable. The sd of {seeds} seeds is uncertain: "
        "treat the sizes as lower bounds when the sd is small. The last column: the Holm "
        f"half-width at the nightly's {args.nightly_seeds} seeds, and what it decides."),
        "",
        ("| measure | claim | δ | per-seed values | mean [95% t CI] | seed sd | seeds for δ/2 "
        f"(Holm) | seeds for δ (Holm) | at {args.nightly_seeds} seeds (Holm) |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, delta_key, claim, spread in MEASURES:
        levels = [v[SFT_LEVELS[label]] for v in values if label in SFT_LEVELS
                  and math.isfinite(v.get(SFT_LEVELS[label], math.nan))]
        level = float(np.mean(levels)) if levels else None
        delta = DELTAS[delta_key].of(level)
        per_seed = np.array([v[label] for v in values], dtype=float)
        if delta is None:
            lines.append(f"| {label} | {claim} | {DELTAS[delta_key].text(level)} | "
                         f"{', '.join(_fmt(x) for x in per_seed)} | no δ to size for | - | - | "
                         "- | - |")
            continue
        finite = per_seed[np.isfinite(per_seed)]
        if finite.size < 2:
            lines.append(f"| {label} | {claim} | {delta:g} | "
                         f"{', '.join(_fmt(x) for x in per_seed)} | fewer than 2 seeds with a "
                         "value | - | - | - | - |")
            continue
        interval = seed_t_interval(finite[:, None])
        sd = float(finite.std(ddof=1))
        claim_sd = sd * spread
        sizes = []
        for target in (decisive_half_width(delta), delta):
            plain = seeds_needed(claim_sd, target)
            holm = seeds_needed(claim_sd, target, family_size=args.family_size)
            sizes.append(f"{plain or '>200'} ({holm or '>200'})")
        lines.append(
            f"| {label} | {claim} | {delta:g} | {', '.join(_fmt(x) for x in per_seed)} | "
            f"{interval.estimate:+.4f} [{interval.low:+.4f}, {interval.high:+.4f}] | {sd:.4f} | "
            f"{sizes[0]} | {sizes[1]} | "
            f"{_at_nightly(claim_sd, delta, args.nightly_seeds, args.family_size)} |")
    lines += ["", "## Stage times (seconds, one torch thread per process)", "",
              "| seed | " + " | ".join(_STAGES) + " |", "|---" * (len(_STAGES) + 1) + "|"]
    for seed, t in enumerate(times):
        lines.append(f"| {seed} | " + " | ".join(f"{t[s]:.0f}" if s in t else "reused"
                                                 for s in _STAGES) + " |")
    lines += ["", _projection(times, args.cells, args.formats, args.workers)]
    return "\n".join(lines) + "\n"


def _at_nightly(sd: float, delta: float, seeds: int, family: int) -> str:
    """The Holm half-width at the nightly's seeds, and whether it guarantees a verdict."""
    width = half_width(sd, seeds, family_size=family)
    if width < decisive_half_width(delta):
        return f"±{width:.3g}: a verdict either way"
    if width < delta:
        return f"±{width:.3g}: an effect or *no effect* reachable, not guaranteed"
    return f"±{width:.3g}: wider than δ; decided only by an effect beyond it"


_STAGES = ("prepare", "init", "sft", "rollout_sft", "rl", "rollout_rl")


def _projection(times: list[dict[str, float]], cells: int, formats: int, workers: int) -> str:
    """The nightly's wall time per seed, from the measured stages (stage seconds / workers)."""
    def mean(stage: str) -> float:
        got = [t[stage] for t in times if stage in t]
        return float(np.mean(got)) if got else math.nan

    start = sum(mean(s) for s in ("prepare", "init", "sft", "rollout_sft"))
    cell = mean("rl") + mean("rollout_rl")
    per_seed = (formats * start + cells * cell) / workers
    fits = math.floor(3 * 3600 / per_seed) if per_seed > 0 else 0
    return (f"Projected nightly cost per seed: {formats} SFT starts (one per format) and {cells} "
            f"RL cells on {workers} workers: ({formats} x {start:.0f} s + {cells} x {cell:.0f} s)"
            f" / {workers} = {per_seed / 60:.1f} min, so 3 h holds {fits} seeds, at the stage "
            f"times above ({workers} seeds at a time on {os.cpu_count()} cores; other jobs on the "
            "machine at the time slow a stage). It prices every format's SFT and RL at the "
            "piloted format's and leaves out search and evaluation, which the nightly runs: a "
            "format with longer renderings (mcq's options and weighed trace) costs more, so "
            "time one night's cells (the grid logs each) before trusting the seeds it holds.")


if __name__ == "__main__":
    main()
