"""One cell of the study task at a model size: the SFT half, or one objective's RL half.

    PYTHONPATH=src:benchmarks python3 scripts/results/gpu_scale_cell.py sft --size study \\
        --seed 0 --work W --json sft.json
    ... rl --size study --seed 0 --objective darling --work W --json rl.json

Stages are `demo.py`'s (the library's stage functions, cached under `--work` by the config
keys they depend on), so the objectives of one (size, seed) share one SFT start: run `sft`
first, then each objective's `rl` (they may run at once). `scripts/results/gpu.py` runs them
on one GPU, several processes at a time, and compares the objectives from their rollouts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from demo import Clock, run_seed, run_sft_half, stage_paths

from breadth.config import PipelineConfig, load_config
from breadth.rollout.backend_choice import parameter_count

PRESET = "reasoning"  # the chain task: a reasoning trace, any order of work valid
SIZES = {
    "study": [],  # the study's own model (the reasoning preset's)
    "27M": ["model.hidden_size=512", "model.num_layers=8", "model.num_heads=8",
            "model.intermediate_size=1536"],
}
# darling sets rl.scale_rewards=none itself; its control is correctness at the same step size
# (the grid's correctness@unscaled): the arms differ in the objective only.
OBJECTIVES = {
    "correctness@unscaled": ["rl.reward.spec=correctness", "rl.scale_rewards=none"],
    "darling": ["rl.reward.spec=darling"],
}
# A dry run checks the path on a CPU: a few steps, and every size shrunk to the smallest model
# (each size's own config is still built and validated: `cell_config(..., dry_run=False)`).
DRY_RUN = ["sft.epochs=1", "rl.max_steps=2", "data.num_eval=8", "rollout.num_samples=4",
           "data.num_train=60", "rl.num_problems=16", "model.hidden_size=64", "model.num_layers=1",
           "model.num_heads=2", "model.intermediate_size=64"]


def cell_config(size: str, seed: int, objective: str, dry_run: bool) -> PipelineConfig:
    full = load_config(PRESET, [*SIZES[size], *OBJECTIVES[objective], f"seed={seed}"])
    return load_config(PRESET, [*SIZES[size], *OBJECTIVES[objective], f"seed={seed}",
                                *DRY_RUN]) if dry_run else full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("half", choices=["sft", "rl"])
    parser.add_argument("--size", choices=list(SIZES), required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--objective", choices=list(OBJECTIVES), default="correctness@unscaled")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--dry-run", action="store_true", help="a few steps: checks the path")
    args = parser.parse_args()
    config = cell_config(args.size, args.seed, args.objective, args.dry_run)
    paths = stage_paths(config, args.work)
    result: dict[str, Any]
    if args.half == "sft":
        clock = Clock()
        run_sft_half(config, args.work, clock)
        result = {"stages": clock.stages,
                  "parameters": parameter_count(paths["sft"] / "final")}
    else:
        result = run_seed(config, args.work, search=False)
    result.update(size=args.size, seed=args.seed, objective=args.objective,
                  rollouts={name: str(paths[f"{name}_rollouts"]) for name in ("sft", "rl")})
    args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
