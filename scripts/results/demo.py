"""Does the default preset's one run show sharpening? RL vs its SFT start, per seed, paired.

    PYTHONPATH=src:. .venv/bin/python scripts/results/demo.py --seeds 0 1 2 \\
        --markdown demo_effect.md

For each seed it runs the library's stages directly, as `breadth run` does without the stack
(prepare, init, SFT, GRPO under the preset's reward, rollouts of SFT and RL; `--search` adds
the two search stages the pipeline also runs, for their time), then:

- the report's per-model headline: pass@1, pass@n and distinct outcomes with their 95%
  bootstrap intervals over problems (`evaluate_models`, what report.md prints);
- the paired difference RL - SFT over problems of the same three, as report.md's "Against the
  base, paired by problem" section and `breadth run` print it (`paired_against_base`), and
  whether its interval excludes 0;
- SFT's per-problem pass rates (share of problems with p = 0, 0 < p < 1, p = 1), GRPO's
  `frac_reward_zero_std` (first 5 steps and all) and reward (first and last 10 steps);
- each stage's wall time, CPU time (user + sys of this process, all its threads) and the
  load average before and after: on a shared machine the wall time is inflated, and the CPU
  time says what a quiet machine would take (with 2 cores, about CPU time / threads used).

Stages are cached under `--work` by the config keys they depend on, so candidates that share
data, model and SFT share their SFT.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from breadth import stages
from breadth.config import PipelineConfig, load_config
from breadth.evaluation.paired import PAIRED_MEASURES, paired_against_base
from breadth.evaluation.summary import evaluate_models, per_problem_table
from breadth.stats.bootstrap import DEFAULT_RESAMPLES

METRICS = ("pass_at_1", "pass_at_n", "distinct_outcomes")


class Clock:
    """Wall and CPU seconds and the load average around each stage."""

    def __init__(self) -> None:
        self.stages: dict[str, dict[str, float]] = {}

    def run(self, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        load_before = os.getloadavg()[0]
        cpu_before = _cpu_seconds()
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        self.stages[name] = {
            "wall_s": round(time.perf_counter() - start, 1),
            "cpu_s": round(_cpu_seconds() - cpu_before, 1),
            "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2),
        }
        print(f"  {name}: {self.stages[name]}", flush=True)
        return result


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stage_paths(config: PipelineConfig, work: Path) -> dict[str, Path]:
    """Where each stage of one seed caches its output under `work`, keyed by the config
    sections it depends on."""
    seed = config.seed
    # Training depends on the training split only, which each split's own seeded draw keeps
    # the same whatever data.num_eval is: more evaluation problems reuse the trained models.
    train = config.model_copy(update={"data": config.data.model_copy(update={"num_eval": None})})
    sft = work / f"sft-{train.content_hash('data', 'model', 'sft')[:10]}-s{seed}"
    rl = work / f"rl-{train.content_hash('data', 'model', 'sft', 'rl')[:10]}-s{seed}"
    # Rollouts depend on the evaluation problems (data) and the sampling (rollout).
    sampled = f"rollouts-{config.content_hash('data', 'rollout')[:10]}.parquet"
    return {"data": work / f"data-{config.content_hash('data')[:10]}-s{seed}", "sft": sft,
            "rl": rl, "sft_rollouts": sft / sampled, "rl_rollouts": rl / sampled}


def run_sft_half(config: PipelineConfig, work: Path, clock: Clock) -> dict[str, Path]:
    """Prepare, init, SFT and the SFT rollouts of one seed (cached) -> `stage_paths`. Runs
    apart from the RL half so that several objectives can share one SFT start."""
    paths = stage_paths(config, work)
    data, sft = paths["data"], paths["sft"]
    if not (data / "eval.parquet").exists():
        clock.run("prepare", stages.prepare_stage, config, data)
    if not (sft / "final").exists():
        clock.run("init", stages.init_model_stage, config, sft / "base")
        clock.run("sft", stages.sft_stage, config, data, sft / "base", sft)
    if not paths["sft_rollouts"].exists():
        clock.run("rollout_sft", stages.rollout_stage, config, data, sft / "final", "sft",
                  paths["sft_rollouts"], progress=False)
    return paths


def run_seed(config: PipelineConfig, work: Path, search: bool) -> dict[str, Any]:
    """Every stage of one seed (cached by the keys it depends on) -> its measurements."""
    clock = Clock()
    paths = run_sft_half(config, work, clock)
    data, sft, rl = paths["data"], paths["sft"], paths["rl"]
    if not (rl / "final").exists():
        clock.run("rl", stages.rl_stage, config, data, sft / "final", rl)
    if not paths["rl_rollouts"].exists():
        clock.run("rollout_rl", stages.rollout_stage, config, data, rl / "final", "rl",
                  paths["rl_rollouts"], progress=False)
    if search and config.evaluation.search_budget > 0:
        for name, policy in (("sft", sft / "final"), ("rl", rl / "final")):
            clock.run(f"search_{name}", stages.search_stage, config, data, policy)
    frames = {"sft": pd.read_parquet(paths["sft_rollouts"]),
              "rl": pd.read_parquet(paths["rl_rollouts"])}
    return {"seed": config.seed, "stages": clock.stages, **compare(frames, config),
            "sft_steps": _train_figures(sft / "train_log.jsonl", "loss"),
            "grpo": _grpo_figures(rl / "train_log.jsonl")}


def compare(frames: dict[str, pd.DataFrame], config: PipelineConfig) -> dict[str, Any]:
    """The report's per-model intervals and its paired RL - SFT differences (the library's
    `paired_against_base`, what report.md and `breadth run` print)."""
    both = pd.concat([f.assign(model=name) for name, f in frames.items()], ignore_index=True)
    results = evaluate_models(both, base_model="sft", num_bootstrap=config.evaluation.bootstrap_samples,
                              seed=config.seed, split_k=config.evaluation.transfer_split_k)
    per_model = {}
    for name, result in results.items():
        per_model[name] = {
            "pass_at_1": _ci(result.pass_at_k[0]), "pass_at_n": _ci(result.pass_at_k[-1]),
            "distinct_outcomes": _ci(result.diversity["distinct_outcomes"]),
        }
    key_of = {label: key for key, label, _ in PAIRED_MEASURES}
    _, differences = paired_against_base(results)["rl"]
    paired = {key_of[d.measure]: {"estimate": round(d.difference.estimate, 4),
                                  "low": round(d.difference.low, 4),
                                  "high": round(d.difference.high, 4),
                                  "excludes_0": d.direction != "no clear difference"}
              for d in differences}
    sft = per_problem_table(frames["sft"])
    p = sft["num_correct"] / sft["num_samples"]
    return {
        "num_problems": differences[0].num_problems, "num_samples": int(sft["num_samples"].min()),
        "per_model": per_model, "paired_delta": paired,
        "sft_p": {"zero": round(float((p == 0).mean()), 3),
                  "between": round(float(((p > 0) & (p < 1)).mean()), 3),
                  "one": round(float((p == 1).mean()), 3),
                  "quartiles": [round(float(q), 3) for q in p.quantile([0.25, 0.5, 0.75])]},
    }


def _ci(point: Any) -> list[float]:
    return [round(float(point.estimate), 4), round(float(point.low), 4), round(float(point.high), 4)]


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _train_figures(path: Path, key: str) -> dict[str, Any]:
    rows = [r for r in _log(path) if key in r]
    if not rows:
        return {}
    return {"steps": rows[-1]["step"], f"first_{key}": rows[0][key], f"last_{key}": rows[-1][key]}


def _grpo_figures(path: Path) -> dict[str, Any]:
    rows = [r for r in _log(path) if "reward" in r]
    if not rows:
        return {}
    zero = [r["frac_reward_zero_std"] for r in rows]
    reward = [r["reward"] for r in rows]
    end = next((r for r in _log(path) if "train_runtime" in r), {})
    return {"steps": len(rows), "frac_reward_zero_std_first5": round(float(np.mean(zero[:5])), 3),
            "frac_reward_zero_std_all": round(float(np.mean(zero)), 3),
            "reward_first10": round(float(np.mean(reward[:10])), 3),
            "reward_last10": round(float(np.mean(reward[-10:])), 3),
            "s_per_step": round(end.get("train_runtime", float("nan")) / len(rows), 3)}


def markdown(rows: list[dict[str, Any]], args: argparse.Namespace, seconds: float) -> str:
    """The seeds as tables, headed by how they were made."""
    lines = ["```", shlex.join(["python", *sys.argv]), "```", "",
             (f"- machine: {platform.node()} ({os.cpu_count()} CPU cores), "
             f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"),
             f"- preset: {args.preset}, overrides: {args.set or 'none'}",
             f"- wall time of this script: {seconds / 60:.1f} min", "",
             "Per model, as report.md prints them (95% bootstrap CI over problems):", "",
             "| seed | model | pass@1 | pass@n | distinct outcomes |", "|---|---|---|---|---|"]
    for row in rows:
        for name in ("sft", "rl"):
            m = row["per_model"][name]
            lines.append(f"| {row['seed']} | {name} | " + " | ".join(
                f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]" for v in (m[k] for k in METRICS)) + " |")
    lines += ["", ("Paired RL - SFT over the same problems (95% bootstrap CI, "
              f"{DEFAULT_RESAMPLES} resamples of problems, as report.md):"), "",
              "| seed | problems x n | Δ pass@1 | Δ pass@n | Δ distinct outcomes | sharpened |",
              "|---|---|---|---|---|---|"]
    for row in rows:
        d = row["paired_delta"]
        sharpened = (d["pass_at_1"]["low"] > 0
                     and (d["distinct_outcomes"]["high"] < 0 or d["pass_at_n"]["high"] < 0))
        lines.append(f"| {row['seed']} | {row['num_problems']} x {row['num_samples']} | " + " | ".join(
            f"{d[m]['estimate']:+.3f} [{d[m]['low']:+.3f}, {d[m]['high']:+.3f}]"
            for m in METRICS) + f" | {'yes' if sharpened else 'no'} |")
    lines += ["", "SFT start and GRPO:", "",
              ("| seed | SFT p=0 / 0<p<1 / p=1 | GRPO frac_reward_zero_std (first 5 / all) | "
              "reward (first 10 / last 10) | GRPO s/step |"), "|---|---|---|---|---|"]
    for row in rows:
        s, g = row["sft_p"], row["grpo"]
        if not g:
            continue
        lines.append(f"| {row['seed']} | {s['zero']:.2f} / {s['between']:.2f} / {s['one']:.2f} | "
                     f"{g['frac_reward_zero_std_first5']:.2f} / {g['frac_reward_zero_std_all']:.2f}"
                     f" | {g['reward_first10']:.2f} / {g['reward_last10']:.2f} | "
                     f"{g['s_per_step']:.3f} |")
    lines += ["", "Stage times (wall and CPU seconds; load average, 1 min, before -> after):", "",
              "| seed | stage | wall s | CPU s | load |", "|---|---|---|---|---|"]
    for row in rows:
        if row["stages"]:
            total = sum(t["cpu_s"] for t in row["stages"].values())
            lines.append(f"| {row['seed']} | all stages run here | | {total:.1f} | |")
        for name, t in row["stages"].items():
            lines.append(f"| {row['seed']} | {name} | {t['wall_s']} | {t['cpu_s']} | "
                         f"{t['load_before']} -> {t['load_after']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--set", action="append", default=[], help="key=value override")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--work", type=Path, default=Path(".breadth/demo_effect"))
    parser.add_argument("--search", action="store_true", help="also time the search stages")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the tables here")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    for seed in args.seeds:
        config = load_config(args.preset, [*args.set, f"seed={seed}"])
        print(f"seed {seed}", flush=True)
        row = run_seed(config, args.work, args.search)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(rows, args, time.perf_counter() - started))


if __name__ == "__main__":
    main()
