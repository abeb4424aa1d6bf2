"""Benchmark: GRPO step time under each diversity reward vs correctness only (target <= 1.05).

Run: .venv/bin/python benchmarks/bench_reward_overhead.py [--repeats R] [--steps K] [--json PATH]

The tiny default model (ModelConfig defaults), warm-started by a short SFT, trains K GRPO steps
per reward spec with the default preset's RL settings (G = 8, 4 prompts per step, 8 new tokens).
Specs are interleaved: each of R rounds runs every spec once, in a rotated order, so load from
other processes on a shared machine hits all specs alike. Two figures per spec:

- step ratio: median of TRL's `step_time` (generation + rewards + loss + backward; the first
  step of each run is dropped as warm-up) over the correctness-only median. Noisy on a shared
  machine: differences of a few percent either way are within run-to-run spread.
- reward ratio: (correctness median step + this spec's extra reward time per step) over the
  correctness median step, from the time spent inside the reward functions (timed directly,
  so it is immune to generation-time noise). This is the overhead the reward itself adds.

The learning rate is ~0 by default (`--learning-rate`), so every spec samples the same
completions from the same weights and the workload differs only in the reward: otherwise a
spec that shortens completions would look faster for reasons unrelated to its cost.
The embedding judge of DARLING is not implemented (it needs a model); `darling:judge=text`
(word n-gram overlap) is the free-text judge measured instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

SPECS = [
    "correctness",
    "correctness+ucb",
    "correctness+batch",
    "correctness+ucb+batch",
    "darling",
    "darling:judge=text",
    "passk",
    "vector",
]
BASELINE = "correctness"
TARGET_RATIO = 1.05


def instrument_reward_time(totals: list[float]) -> None:
    """Add the wall time of every reward call to `totals[-1]` (the current step's bucket)."""
    from breadth.rewards.trl_adapter import RewardTermFunc

    call = RewardTermFunc.__call__

    def timed_call(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return call(self, *args, **kwargs)
        finally:
            totals[-1] += time.perf_counter() - start

    RewardTermFunc.__call__ = timed_call  # type: ignore[method-assign]


def prepare_policy(root: Path, overrides: list[str]) -> tuple[Path, Path]:
    """(dataset dir, SFT policy dir) through the pipeline's own stages."""
    from breadth.config import load_config
    from breadth.stages import init_model_stage, prepare_stage, sft_stage

    config = load_config("default", overrides)
    prepare_stage(config, root / "data")
    init_model_stage(config, root / "base")
    return root / "data", sft_stage(config, root / "data", root / "base", root / "sft")


def run_spec(spec: str, steps: int, overrides: list[str], dataset: Path, policy: Path,
             out_dir: Path, reward_totals: list[float]) -> tuple[list[float], list[float]]:  # fmt: skip
    """K GRPO steps under `spec`: (step times, reward seconds per step), first step dropped."""
    from breadth.config import load_config
    from breadth.stages import rl_stage

    config = load_config("default", [*overrides, f"rl.reward.spec={spec}", f"rl.max_steps={steps}",
                                     f"rl.save_steps={steps + 1}"])  # fmt: skip
    step_times: list[float] = []
    reward_totals.clear()
    reward_totals.append(0.0)

    def sink(name: str, value: float, step: int) -> None:
        if name == "train/step_time":
            step_times.append(value)
            reward_totals.append(0.0)  # the next step's reward calls go to a new bucket

    rl_stage(config, dataset, policy, out_dir, log_metric=sink)
    rewards = reward_totals[: len(step_times)]
    return step_times[1:], rewards[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds over all specs")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps per run (first dropped)")
    parser.add_argument("--learning-rate", type=float, default=1e-12)
    parser.add_argument("--specs", nargs="*", default=SPECS)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    specs = [BASELINE] + [spec for spec in args.specs if spec != BASELINE]

    import logging

    import transformers

    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)

    overrides = ["data.num_train=128", "data.num_eval=4", "sft.epochs=6", "sft.batch_size=32",
                 f"rl.learning_rate={args.learning_rate}"]  # fmt: skip
    reward_totals: list[float] = [0.0]
    instrument_reward_time(reward_totals)
    step_times: dict[str, list[float]] = defaultdict(list)
    reward_times: dict[str, list[float]] = defaultdict(list)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-reward-") as tmp:
        root = Path(tmp)
        dataset, policy = prepare_policy(root, overrides)
        for round_index in range(args.repeats):
            shift = round_index % len(specs)
            for spec in specs[shift:] + specs[:shift]:
                out_dir = root / "rl" / f"{round_index}-{spec.replace(':', '_').replace('+', '_')}"
                steps, rewards = run_spec(spec, args.steps, overrides, dataset, policy, out_dir,
                                          reward_totals)  # fmt: skip
                step_times[spec] += steps
                reward_times[spec] += rewards
            print(f"round {round_index + 1}/{args.repeats} done", flush=True)

    base_step = statistics.median(step_times[BASELINE])
    base_reward = statistics.median(reward_times[BASELINE])
    rows = []
    for spec in specs:
        step = statistics.median(step_times[spec])
        reward = statistics.median(reward_times[spec])
        rows.append({
            "spec": spec,
            "steps_timed": len(step_times[spec]),
            "median_step_ms": 1000 * step,
            "step_ratio": step / base_step,
            "median_reward_ms": 1000 * reward,
            "reward_ratio": (base_step + reward - base_reward) / base_step,
        })  # fmt: skip
    header = (f"{'spec':<24} {'steps':>5} {'step ms':>8} {'step ratio':>10} "
              f"{'reward ms':>9} {'reward ratio':>12}  target <= {TARGET_RATIO}")  # fmt: skip
    print(header)
    for row in rows:
        verdict = "ok" if row["reward_ratio"] <= TARGET_RATIO else "OVER"
        print(f"{row['spec']:<24} {row['steps_timed']:>5} {row['median_step_ms']:>8.1f} "
              f"{row['step_ratio']:>10.3f} {row['median_reward_ms']:>9.2f} "
              f"{row['reward_ratio']:>12.4f}  {verdict}")  # fmt: skip
    print(
        f"total {time.perf_counter() - started:.0f} s; {args.repeats} rounds x {args.steps} steps"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "repeats": args.repeats,
                                         "steps": args.steps}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
