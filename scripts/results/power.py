"""Power analysis for the study preset: is the sharpening effect told apart from noise?

    .venv/bin/python scripts/results/power.py --seeds 3 \\
        --candidate small=rl.learning_rate=1e-4 --candidate fast=rl.learning_rate=1e-3 ...

Each candidate is a list of `key=value` overrides (joined by ';' after its name) on top of
`--preset` (default: `study`). For every candidate and seed it runs the library's stages
directly (prepare, init, SFT, GRPO with the correctness reward, rollouts of SFT and RL), then
estimates RL - SFT on pass@1 and pass@n with a two-level bootstrap over seeds x problems, and
calls the candidate *powered* when each effect's size exceeds twice its CI half-width. It
prints the wall time of every stage, so a grid's cost can be projected from measured cells.
SFT results are shared between candidates that do not change the data, model or SFT keys.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from breadth import stages
from breadth.config import PipelineConfig, load_config
from breadth.evaluation.metrics import pass_at_k
from breadth.stats.bootstrap import hierarchical_bootstrap_ci


def per_problem(path: Path) -> pd.DataFrame:
    frame = pd.read_parquet(path)
    table = frame.groupby("problem_id")["correct"].agg(["count", "sum"])
    return table.rename(columns={"count": "n", "sum": "c"})


def run_stages(config: PipelineConfig, shared: Path, cell: Path,
               **rl_kwargs: Any) -> dict[str, float]:
    """The SFT half into `shared` (prepare into data/, init into base/, SFT into sft/, its
    rollouts into sft.parquet) unless sft.parquet is there, then the RL half into `cell` (GRPO
    into rl/, its rollouts into rl.parquet) unless rl.parquet is there -> the wall seconds of
    each stage that ran. `rl_kwargs` go to `stages.rl_stage` (the pilot's `log_metric`); one
    folder for both halves is the pilot's layout."""
    times: dict[str, float] = {}

    def timed(name, fn, *args, **kw):
        start = time.perf_counter()
        result = fn(*args, **kw)
        times[name] = round(time.perf_counter() - start, 1)
        return result

    if not (shared / "sft.parquet").exists():
        timed("prepare", stages.prepare_stage, config, shared / "data")
        timed("init", stages.init_model_stage, config, shared / "base")
        timed("sft", stages.sft_stage, config, shared / "data", shared / "base", shared / "sft")
        timed("rollout_sft", stages.rollout_stage, config, shared / "data",
              shared / "sft" / "final", "sft", shared / "sft.parquet", progress=False)
    if not (cell / "rl.parquet").exists():
        timed("rl", stages.rl_stage, config, shared / "data", shared / "sft" / "final", cell / "rl",
              **rl_kwargs)
        timed("rollout_rl", stages.rollout_stage, config, shared / "data",
              cell / "rl" / "final", "rl", cell / "rl.parquet", progress=False)
    return times


def run_seed(preset: str, overrides: list[str], seed: int, work: Path) -> dict:
    config = load_config(preset, [*overrides, f"seed={seed}", "rl.reward.spec=correctness"])
    shared = work / f"sft-{config.content_hash('data', 'model', 'sft')[:10]}-s{seed}"
    cell = work / f"rl-{config.content_hash()[:10]}"
    times = run_stages(config, shared, cell)
    return {"seed": seed, "times": times, "sft": per_problem(shared / "sft.parquet"),
            "rl": per_problem(cell / "rl.parquet")}


def effect(runs: list[dict], k_of) -> tuple[float, float, float, float]:
    rows = []
    for run in runs:
        sft, rl = run["sft"], run["rl"].loc[run["sft"].index]
        k = k_of(int(sft["n"].min()))
        rows.append(pass_at_k(rl["n"], rl["c"], k) - pass_at_k(sft["n"], sft["c"], k))
    ci = hierarchical_bootstrap_ci(np.stack(rows), num_resamples=1000, seed=0)
    return ci.estimate, ci.low, ci.high, (ci.high - ci.low) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="study")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--candidate", action="append", required=True,
                        help="NAME=key=value;key=value (overrides of the preset)")
    parser.add_argument("--work", type=Path, default=Path(".breadth/power"))
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="also write a table with the command, machine, seeds and wall time")
    args = parser.parse_args()
    results = []
    started = time.perf_counter()
    for text in args.candidate:
        name, _, rest = text.partition("=")
        overrides = [item for item in rest.split(";") if item]
        runs = [run_seed(args.preset, overrides, seed, args.work) for seed in range(args.seeds)]
        p1 = effect(runs, lambda n: 1)
        pn = effect(runs, lambda n: n)
        powered = all(abs(e[0]) > 2 * e[3] for e in (p1, pn))
        sft_p1 = float(np.mean([pass_at_k(r["sft"]["n"], r["sft"]["c"], 1).mean() for r in runs]))
        row = {"candidate": name, "overrides": overrides, "seeds": args.seeds,
               "problems": len(runs[0]["sft"]), "sft_pass_at_1": round(sft_p1, 4),
               "delta_pass_at_1": [round(v, 4) for v in p1[:3]],
               "delta_pass_at_n": [round(v, 4) for v in pn[:3]],
               "powered": powered, "times": [r["times"] for r in runs]}
        results.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(results, time.perf_counter() - started))


def markdown(results: list[dict], seconds: float) -> str:
    """The results as a table, headed by how they were made."""
    import os
    import platform
    import shlex
    import sys

    lines = ["```", shlex.join(["python", *sys.argv]), "```", "",
             (f"- machine: {platform.node()} ({os.cpu_count()} CPU cores), "
              f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"),
             f"- seeds: {results[0]['seeds'] if results else 0}",
             f"- wall time: {seconds / 60:.1f} min", "",
             "| candidate | SFT pass@1 | Δ pass@1 [95% CI] | Δ pass@n [95% CI] | powered |",
             "|---|---|---|---|---|"]
    for row in results:
        p1, pn = row["delta_pass_at_1"], row["delta_pass_at_n"]
        lines.append(f"| {row['candidate']} | {row['sft_pass_at_1']} | {p1[0]:+.4f} "
                     f"[{p1[1]:+.4f}, {p1[2]:+.4f}] | {pn[0]:+.4f} [{pn[1]:+.4f}, {pn[2]:+.4f}] "
                     f"| {row['powered']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
