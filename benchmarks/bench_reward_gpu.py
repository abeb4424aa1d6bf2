"""GPU benchmark: GRPO steps through breadth's reward path vs a bare TRL GRPOTrainer (<= 1.03).

Run on a CUDA machine: .venv/bin/python benchmarks/bench_reward_gpu.py [--steps 300]
    [--pairs 3] [--spec correctness] [--set key=value ...]
Without a CUDA device it prints why and exits 0 (nothing to measure on CPU here; its CPU proxy,
the same two arms on a micro model, is benchmarks/bench_reward_path_cpu.py).

Both arms train the same model (the default preset's at the settings of
side_by_side.REWARD_BENCH_SETTINGS, or `--set model.name_or_path=DIR`: the
GPU machine has no network, so a hub model must already be on disk) on the same prepared data
with the same `trl.GRPOConfig` (breadth's `build_grpo_config`):
  A  bare TRL: GRPOTrainer with one plain reward function (completion ends with the answer), nothing else;
  B  breadth: `train_grpo` with `--spec` (reward adapters, reward-state and checkpoint
     callbacks, the verifiers).
Each run trains `--steps` steps; its figure is the median step time over the steps after the
first 10 (CUDA kernels, allocator and caches warm up there). Before the pairs, both arms run
`--warm-up-steps` (20; 0: none) steps untimed, so one-time imports (math_verify, sympy, TRL's lazy modules) are paid
outside. Pairs interleave A B A B; the ratio is B / A per pair.

Both arms start from the untrained model unless `--from-sft`: an untrained character model
writes `{`, `}` and `^`, which send about a quarter of its completions to the verifier's
symbolic check, so that start measures the verifier parsing noise (docs/results/gpu.note.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from side_by_side import REWARD_BENCH_SETTINGS, compare, load_line

TARGET_RATIO = 1.03
SKIPPED_STEPS = 10


def step_clock():
    """A TrainerCallback recording each optimizer step's wall time (CUDA synchronised)."""
    import torch
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self._start)

    return StepClock()


def median_step(clock) -> float:
    timed = clock.times[SKIPPED_STEPS:] or clock.times
    return statistics.median(timed)


def bare_trl(config, dataset_dir: Path, policy_dir: Path, out_dir: Path, steps: int,
             clock=None) -> float:
    """`steps` steps of a bare GRPOTrainer; its median step time by `clock` (a TrainerCallback
    with `times`, default `step_clock()`)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from breadth.models.tiny import load_policy
    from breadth.stages import read_rows
    from breadth.training.grpo import build_grpo_config

    rl = config.rl.model_copy(update={"max_steps": steps, "save_steps": steps + 1})
    rows = read_rows(dataset_dir / "train.parquet")
    model, tokenizer = load_policy(policy_dir)
    # The same GRPOConfig as arm B (the settings B's reward needs are on `rl`), less the
    # reward weights of B's several reward terms.
    args = build_grpo_config(rl, output_dir=out_dir, seed=config.seed, overrides={})

    def answer_suffix_match(completions, answer, **_):
        return [float(str(c).strip().endswith(str(a))) for c, a in zip(completions, answer)]

    clock = clock or step_clock()
    dataset = Dataset.from_list([{"prompt": r["prompt"], "answer": r["answer"]} for r in rows])
    trainer = GRPOTrainer(model=model, reward_funcs=[answer_suffix_match], args=args,
                          train_dataset=dataset, processing_class=tokenizer, callbacks=[clock])
    trainer.train()
    trainer.save_model(str(out_dir / "final"))  # breadth's arm saves its final model too
    return median_step(clock)


def breadth_path(config, dataset_dir: Path, policy_dir: Path, out_dir: Path, steps: int,
                 clock=None, log_metric=None) -> float:
    """`steps` steps of breadth's `rl_stage` (metrics to `log_metric`, as the pipeline's sink);
    its median step time by `clock` (default `step_clock()`)."""
    import trl

    from breadth.stages import rl_stage

    clock = clock or step_clock()
    original = trl.GRPOTrainer.__init__

    def with_clock(trainer, *args, **kwargs):  # add the clock without touching breadth's code
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), clock]
        original(trainer, *args, **kwargs)

    trl.GRPOTrainer.__init__ = with_clock  # type: ignore[method-assign]
    try:
        rl = config.rl.model_copy(update={"max_steps": steps, "save_steps": steps + 1})
        rl_stage(config.model_copy(update={"rl": rl}), dataset_dir, policy_dir, out_dir,
                 log_metric=log_metric)
    finally:
        trl.GRPOTrainer.__init__ = original  # type: ignore[method-assign]
    return median_step(clock)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--spec", default="correctness", help="breadth's reward spec (arm B)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--warm-up-steps", type=int, default=20, help="0: no warm-up")
    parser.add_argument("--from-sft", action="store_true",
                        help="start both arms from the preset's SFT model, as the pipeline does "
                             "(default: the untrained model, whose noise the verifier parses)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (scripts/results/gpu.py reads them)")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="run on CPU anyway (checks the script, measures nothing useful)")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available() and not args.cpu_smoke:
        print("skipped: no CUDA device (this benchmark measures the reward path on a GPU)")
        return
    if args.steps < 300:
        print(f"note: --steps {args.steps} is below the 300 the GPU figure is quoted at")

    from breadth.config import load_config
    from breadth.stages import init_model_stage, prepare_stage, sft_stage

    config = load_config("default", [*REWARD_BENCH_SETTINGS, *args.overrides,
                                       f"rl.reward.spec={args.spec}"])
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU (smoke run)"
    print(f"{device}; {load_line()}")
    with tempfile.TemporaryDirectory(prefix="bench-reward-gpu-") as scratch:
        root = Path(scratch)
        prepare_stage(config, root / "data")
        policy = init_model_stage(config, root / "base")
        if args.from_sft:  # untimed: both arms start from the preset's SFT model
            policy = sft_stage(config, root / "data", policy, root / "sft")
        runs = iter(range(10_000))
        finished: dict[str, list[float]] = {}

        def arm(fn, steps, name=None):
            def run() -> float:
                seconds = fn(config, root / "data", policy, root / f"run-{next(runs)}", steps)
                if name is not None and args.json is not None:
                    # Each finished run is kept at once: a run stopped at a deadline (the GPU
                    # evidence script's) still reports the pairs it finished.
                    finished.setdefault(name, []).append(seconds)
                    args.json.write_text(json.dumps(figures(device, args, finished)))
                return seconds
            return run

        # Untimed warm-up of both arms (imports, CUDA context, kernels), then the pairs.
        if args.warm_up_steps > 0:  # 0: none (a dry run, which times nothing that matters)
            arm(bare_trl, args.warm_up_steps)()
            arm(breadth_path, args.warm_up_steps)()
        bare, ours = "bare TRL GRPOTrainer", f"breadth reward path ({args.spec})"
        result = compare((bare, arm(bare_trl, args.steps, bare)),
                         (ours, arm(breadth_path, args.steps, ours)),
                         pairs=args.pairs, warm_up=False, self_timed=True)
    first = SKIPPED_STEPS + 1 if args.steps > SKIPPED_STEPS else 1
    print(result.report(f"median step time over steps {first}..{args.steps}"))
    verdict = "ok" if result.median_ratio() <= TARGET_RATIO else "OVER"
    print(f"median ratio {result.median_ratio():.3f} (target <= {TARGET_RATIO}): {verdict}")
    if args.json is not None:
        args.json.write_text(json.dumps({**figures(device, args, result.wall),
                                         "load_before": result.load_before,
                                         "load_after": result.load_after}, indent=2))


def figures(device: str, args: argparse.Namespace, step_seconds: dict[str, list[float]]) -> dict:
    """The figures of the pairs finished so far: each arm's median step time per run, in the
    order the arms ran (bare TRL first), and B / A per finished pair."""
    runs = list(step_seconds.values())
    ratios = [b / a for a, b in zip(*runs)] if len(runs) == 2 else []
    return {"device": device, "spec": args.spec, "steps": args.steps, "pairs": args.pairs,
            "pairs_done": len(ratios), "warm_up_steps": args.warm_up_steps,
            "from_sft": args.from_sft,
            "timed_steps_from": SKIPPED_STEPS + 1 if args.steps > SKIPPED_STEPS else 1,
            "median_step_seconds": step_seconds, "ratios": ratios,
            "median_ratio": statistics.median(ratios) if ratios else None,
            "target_ratio": TARGET_RATIO}


if __name__ == "__main__":
    sys.exit(main())
