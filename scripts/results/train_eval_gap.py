"""Do the grid's models answer the problems GRPO trained on better than the eval problems?

The study's RL trains on a pool of `rl.num_problems` training problems, which SFT also trained
on for `sft.epochs` passes, and its claims are measured on eval problems neither saw. For each
seed of a grid's cached cells (read only, found by their cache keys), this samples the SFT
model and each objective's RL model on the first problems of GRPO's pool, and reads the same
models' eval rollouts from the cells' cache (the first samples of each problem, as many as the
train side has). It writes, per side, pass@1 and distinct correct outcomes of each model, and
each claim's comparison on both sides: the mean over seeds of per-seed paired means with a 95%
t interval (unadjusted: a diagnostic beside the claims table, not in its Holm family).

A gain on the train side that the eval side lacks says RL fitted its training problems rather
than learning what transfers, at this scale; the claims' verdicts are then about transfer.

Run from the checkout whose code computed the cache keys (they hash the code version), e.g.

    cd /work/multi-src && BREADTH_HOME=/work/nightly-home \\
      PYTHONPATH=src:/work/nightly-home/pkgs-multi OMP_NUM_THREADS=1 \\
      /work/main/.venv/bin/python /work/main/scripts/results/train_eval_gap.py --seeds 0 1 2 \\
        --out /work/main/docs/results/grids/multi-grid-3862d9ef/train_eval_gap.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from breadth.evaluation.diversity import distinct_correct_outcomes
from breadth.stats.seed_interval import seed_t_interval
from breadth.study.claims import CORRECT_ANSWER_ROWS, UNSCALED_OBJECTIVES
from breadth.study.grid_design import (
    BATCH,
    CORRECTNESS,
    DARLING,
    PASSK,
    UNSCALED_CONTROL,
    VECTOR,
    GridConfig,
)

# The multi grid's objectives (prefect.yaml's `multi` deployment), and the comparisons its
# claims make, each arm against the control the claims table gives it: (arm, control) on
# distinct correct outcomes; each RL model against SFT on pass@1.
OBJECTIVES = (CORRECTNESS, UNSCALED_CONTROL, BATCH, DARLING, PASSK, VECTOR)
DIVERSITY_COMPARISONS = tuple(
    (objective, UNSCALED_CONTROL if objective in UNSCALED_OBJECTIVES else CORRECTNESS)
    for _, objective in CORRECT_ANSWER_ROWS)
SIDES = ("train", "eval")
ENV_SHOWN = ("BREADTH_HOME", "PYTHONPATH", "OMP_NUM_THREADS")  # what the command ran with


def per_problem(rows: list[dict], problem_ids: list[str]) -> dict[str, np.ndarray]:
    """Per problem, in `problem_ids` order: share correct, distinct correct outcomes."""
    by_problem: dict[str, list[dict]] = {pid: [] for pid in problem_ids}
    for row in rows:
        by_problem[row["problem_id"]].append(row)
    if empty := [pid for pid, got in by_problem.items() if not got]:
        raise ValueError(f"no samples for problems {empty[:5]} ({len(empty)} in all)")
    return {
        "pass_at_1": np.array([np.mean([r["correct"] for r in got])
                               for got in by_problem.values()]),
        "distinct_correct": np.array([
            int(distinct_correct_outcomes([r["outcome"] for r in got],
                                          [bool(r["correct"]) for r in got]))
            for got in by_problem.values()], dtype=float),
    }


def first_samples(rows: list[dict], samples: int) -> list[dict]:
    """Each problem's samples with sample_index below `samples` (a cached rollout's first n)."""
    kept = [row for row in rows if int(row["sample_index"]) < samples]
    counts: dict[str, int] = {}
    for row in kept:
        counts[row["problem_id"]] = counts.get(row["problem_id"], 0) + 1
    if short := {pid: n for pid, n in counts.items() if n != samples}:
        raise ValueError(f"the cached rollout has fewer than {samples} samples for {short}")
    return kept


def measure_seed(work: Path, cells: dict[str, object], problems: int,
                 samples: int) -> tuple[dict, dict]:
    """One seed: each side's {difficulty level: problems}, and {model: {side: per-problem
    arrays}} for "sft" and each objective's RL."""
    # Imported on use: torch and TRL load in seconds, and the helpers above need neither.
    import pandas as pd
    from breadth_tasks.stage_keys import stage_keys

    from breadth.data.prepare import read_rows
    from breadth.rollout.backend_choice import resolve_backend
    from breadth.rollout.backends import rollout_backend
    from breadth.training.grpo import grpo_rows

    keys = {objective: stage_keys(config) for objective, config in cells.items()}
    first = next(iter(cells.values()))
    shared = next(iter(keys.values()))  # data and SFT: the same in every cell of a seed
    data = work / shared["prepare"]
    train = grpo_rows(first.rl, data)[:problems]
    rollout = first.rollout.model_copy(update={"num_samples": samples})
    models = {"sft": (shared["sft"], shared["rollout-sft"])}
    models |= {objective: (k["rl"], k["rollout-rl"]) for objective, k in keys.items()}
    eval_rows = read_rows(data / "eval.parquet")[:problems]
    # The sides' difficulty mixes: a gap between them must not be a gap in difficulty.
    levels = {side: dict(sorted(Counter(int(r["difficulty"]) for r in rows).items()))
              for side, rows in (("train", train), ("eval", eval_rows))}
    measured = {}
    eval_ids = [row["problem_id"] for row in eval_rows]
    for model, (policy_key, rollout_key) in models.items():
        started = time.monotonic()
        policy = work / policy_key / "final"
        fresh = rollout_backend(resolve_backend(rollout, policy)).rollout(
            policy, train, rollout, model_name=model, seed=first.seed, progress=False)
        cached = pd.read_parquet(work / rollout_key / f"{'sft' if model == 'sft' else 'rl'}.parquet",
                                 columns=["problem_id", "sample_index", "outcome", "correct"])
        cached = cached[cached.problem_id.isin(eval_ids)].to_dict("records")
        measured[model] = {"train": per_problem(fresh, [row["problem_id"] for row in train]),
                           "eval": per_problem(first_samples(cached, samples), eval_ids)}
        print(f"seed {first.seed} {model}: " + ", ".join(
            f"{side} pass@1 {v['pass_at_1'].mean():.3f} distinct correct "
            f"{v['distinct_correct'].mean():.2f}" for side, v in measured[model].items())
            + f" ({time.monotonic() - started:.0f} s)", flush=True)
    return levels, measured


def comparisons(seeds: dict[int, dict]) -> list[dict]:
    """Each claim's comparison on each side: seed t interval of per-seed paired means."""
    rows = []
    pairs = ([(objective, "sft", "pass_at_1") for objective in OBJECTIVES]
             + [(arm, control, "distinct_correct") for arm, control in DIVERSITY_COMPARISONS])
    for arm, control, metric in pairs:
        row = {"arm": arm, "control": control, "metric": metric}
        for side in SIDES:
            deltas = [m[arm][side][metric] - m[control][side][metric] for m in seeds.values()]
            ci = seed_t_interval(deltas)
            row[side] = {"estimate": ci.estimate, "low": ci.low, "high": ci.high,
                         "per_seed": [float(d.mean()) for d in deltas]}
        rows.append(row)
    return rows


def markdown(seeds: dict[int, dict], levels: dict[int, dict], rows: list[dict],
             args: argparse.Namespace, wall: float) -> str:
    command = " ".join([f"cd {os.getcwd()} &&",
                        *(f"{k}={os.environ[k]}" for k in ENV_SHOWN if k in os.environ),
                        shlex.join(["python", sys.argv[0], *sys.argv[1:]])])
    lines = [
        "# The problems GRPO trained on against the eval problems", "", "```", command, "```", "",
        (f"- grid cells: preset `{args.preset}`, free_form, seeds {sorted(seeds)}; stage "
         f"folders under `{args.work}`, read only, by cache key"),
        (f"- {args.problems} problems per side, {args.samples} samples per problem and model. "
         "train: the first problems of GRPO's pool (`rl.num_problems`), which SFT also trained "
         "on, sampled here; eval: the eval set's first problems, the first samples of each "
         "cell's cached rollout"),
        (f"- machine: {platform.node()} ({os.cpu_count()} CPU cores); wall time "
         f"{wall / 60:.1f} min"),
        ("- problems per difficulty level, train / eval: " + "; ".join(
            f"seed {seed} {sides['train']} / {sides['eval']}" for seed, sides in levels.items())),
        ("- each cell: mean over seeds of per-seed means over problems; a comparison: the mean "
         "over seeds of per-seed paired means, with a 95% t interval over seeds (unadjusted)"),
        "", "## Each model on each side", "",
        "| model | pass@1 train | pass@1 eval | distinct correct train | distinct correct eval |",
        "|---|---|---|---|---|",
    ]
    for model in ("sft", *OBJECTIVES):
        mean = {(side, metric): np.mean([m[model][side][metric].mean() for m in seeds.values()])
                for side in SIDES for metric in ("pass_at_1", "distinct_correct")}
        lines.append(f"| {model} | {mean['train', 'pass_at_1']:.3f} | "
                     f"{mean['eval', 'pass_at_1']:.3f} | {mean['train', 'distinct_correct']:.2f} "
                     f"| {mean['eval', 'distinct_correct']:.2f} |")
    lines += ["", "## Each comparison on each side", "",
              "| comparison | measure | train [95% CI] | eval [95% CI] | per seed, train / eval |",
              "|---|---|---|---|---|"]
    for row in rows:
        name = (f"RL − SFT ({row['arm']})" if row["control"] == "sft"
                else f"{row['arm']} − {row['control']}")
        cells = [f"{row[s]['estimate']:+.3f} [{row[s]['low']:+.3f}, {row[s]['high']:+.3f}]"
                 for s in SIDES]
        per_seed = "; ".join(f"{t:+.3f} / {e:+.3f}" for t, e in zip(row["train"]["per_seed"],
                                                                  row["eval"]["per_seed"]))
        metric = "Δ pass@1" if row["metric"] == "pass_at_1" else "Δ distinct correct outcomes"
        lines.append(f"| {name} | {metric} | {cells[0]} | {cells[1]} | {per_seed} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="multi")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--problems", type=int, default=128)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--work", type=Path,
                        default=Path(os.environ.get("BREADTH_HOME", ".breadth")) / "work")
    parser.add_argument("--out", type=Path, required=True, help="markdown page; JSON beside it")
    args = parser.parse_args()
    grid = GridConfig(preset=args.preset, formats=["free_form"], rewards=list(OBJECTIVES),
                      seeds=args.seeds, format_rewards={})
    by_seed: dict[int, dict[str, object]] = {}
    for _, objective, seed, config in grid.cells():
        by_seed.setdefault(seed, {})[objective] = config
    started = time.monotonic()
    measured = {seed: measure_seed(args.work, cells, args.problems, args.samples)
                for seed, cells in by_seed.items()}
    levels = {seed: sides for seed, (sides, _) in measured.items()}
    seeds = {seed: models for seed, (_, models) in measured.items()}
    rows = comparisons(seeds)
    args.out.write_text(markdown(seeds, levels, rows, args, time.monotonic() - started))
    per_seed = {seed: {model: {side: {k: v.tolist() for k, v in arrays.items()}
                               for side, arrays in sides.items()}
                       for model, sides in models.items()} for seed, models in seeds.items()}
    args.out.with_suffix(".json").write_text(
        json.dumps({"comparisons": rows, "levels": levels, "per_problem": per_seed}) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
