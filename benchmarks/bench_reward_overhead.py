"""Benchmark: GRPO step time under each diversity reward vs correctness only (target <= 1.05).

Run: .venv/bin/python benchmarks/bench_reward_overhead.py [--repeats R] [--steps K] [--json PATH]

The tiny default model (ModelConfig defaults), warm-started by a short SFT, trains K GRPO steps
per reward spec at side_by_side.REWARD_BENCH_SETTINGS (G = 8, 8 prompts per step, 8 new tokens).
Specs are interleaved: each of R rounds runs every spec once, in a rotated order, so load from
other processes hits all specs alike. The first step of each run is dropped as warm-up, and
each pooled figure is a median over the remaining R * (K - 1) steps; the per-round ratios
(below) give min/median/max over the R rounds.

Torch runs on one thread and each training step (generation + rewards + loss + backward,
i.e. TRL's `training_step`) is timed in CPU time of that thread: on a shared machine, wall time
also counts the time other processes hold the cores, which swamps a few-percent difference.
Wall time (TRL's `step_time`) is printed beside it.

- step ratio: median step time of a spec over that of correctness only, with a 95% bootstrap
  interval (resampling the steps of both): when the interval is wider than the overhead, the
  machine is too noisy to see it in step times, and the reward ratio is the figure to read.
  A spec is "ok" when its reward ratio is within the target and its step-ratio interval does
  not lie wholly above it.
- reward ratio (derived): (correctness step + this spec's extra time inside the reward
  functions) over the correctness step. It is derived, not measured as a ratio: no run
  times a step that differs from correctness only in the reward. The reward time inside
  each step is measured directly, though, so this is the overhead the reward itself adds,
  free of the generation-time noise in the step ratio.
- per round: each ratio above also taken within each round (the spec's median over that
  round's steps over correctness's median in the same round), printed as min/median/max
  over the R rounds: how much the ratio moves from one round to the next.

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

from side_by_side import REWARD_BENCH_SETTINGS, load_line

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


class StepClock:
    """CPU-time buckets: one per training step, and the reward time inside each step."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self.rewards: list[float] = []
        self._reward_in_step = 0.0

    def install(self) -> None:
        from trl import GRPOTrainer

        from breadth.rewards.terms import RewardTermFunc

        clock, training_step, reward_call = self, GRPOTrainer.training_step, RewardTermFunc.__call__

        def timed_training_step(trainer, *args, **kwargs):
            clock._reward_in_step = 0.0
            start = time.thread_time()
            try:
                return training_step(trainer, *args, **kwargs)
            finally:
                clock.steps.append(time.thread_time() - start)
                clock.rewards.append(clock._reward_in_step)

        def timed_reward_call(func, *args, **kwargs):
            start = time.thread_time()
            try:
                return reward_call(func, *args, **kwargs)
            finally:
                clock._reward_in_step += time.thread_time() - start

        GRPOTrainer.training_step = timed_training_step  # type: ignore[method-assign]
        RewardTermFunc.__call__ = timed_reward_call  # type: ignore[method-assign]

    def reset(self) -> None:
        self.steps.clear()
        self.rewards.clear()


def ratio_interval(
    values: list[float], baseline: list[float], seed: int = 0
) -> tuple[float, float]:
    """95% bootstrap interval of median(values) / median(baseline)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a, b = np.asarray(values), np.asarray(baseline)
    draws = 2000
    ratios = np.median(rng.choice(a, (draws, a.size)), axis=1) / np.median(
        rng.choice(b, (draws, b.size)), axis=1
    )
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


def per_round_ratios(spec: dict[str, list[list[float]]], base: dict[str, list[list[float]]]
                     ) -> dict[str, list[float]]:
    """Per round: the spec's median step (cpu, wall) over correctness's in the same round, and
    the derived reward ratio from that round's medians."""
    med = statistics.median
    out: dict[str, list[float]] = {"cpu": [], "wall": [], "reward_derived": []}
    for r in range(len(base["cpu"])):
        base_cpu = med(base["cpu"][r])
        out["cpu"].append(med(spec["cpu"][r]) / base_cpu)
        out["wall"].append(med(spec["wall"][r]) / med(base["wall"][r]))
        extra = med(spec["reward"][r]) - med(base["reward"][r])
        out["reward_derived"].append((base_cpu + extra) / base_cpu)
    return out


def spread(values: list[float]) -> tuple[float, float, float]:
    return min(values), statistics.median(values), max(values)


def prepare_policy(root: Path, overrides: list[str]) -> tuple[Path, Path]:
    """(dataset dir, SFT policy dir) through the pipeline's own stages."""
    from breadth.config import load_config
    from breadth.stages import init_model_stage, prepare_stage, sft_stage

    config = load_config("default", overrides)
    prepare_stage(config, root / "data")
    init_model_stage(config, root / "base")
    return root / "data", sft_stage(config, root / "data", root / "base", root / "sft")


def run_spec(spec: str, steps: int, overrides: list[str], dataset: Path, policy: Path,
             out_dir: Path, clock: StepClock) -> dict[str, list[float]]:
    """K GRPO steps under `spec`: CPU and wall seconds per step and reward seconds per step,
    the first step dropped."""
    from breadth.config import load_config
    from breadth.stages import rl_stage

    config = load_config("default", [*overrides, f"rl.reward.spec={spec}", f"rl.max_steps={steps}",
                                     f"rl.save_steps={steps + 1}"])
    wall: list[float] = []

    def sink(name: str, value: float, step: int) -> None:
        if name == "train/step_time":
            wall.append(value)

    clock.reset()
    rl_stage(config, dataset, policy, out_dir, log_metric=sink)
    return {"cpu": clock.steps[1:], "wall": wall[1:], "reward": clock.rewards[1:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds over all specs")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps per run (first dropped)")
    parser.add_argument("--learning-rate", type=float, default=1e-12)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (CPU time is per thread)"
    )
    parser.add_argument("--specs", nargs="*", default=SPECS)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    specs = [BASELINE] + [spec for spec in args.specs if spec != BASELINE]

    import logging

    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)

    torch.set_num_threads(args.threads)
    overrides = [*REWARD_BENCH_SETTINGS, "data.num_train=128", "data.num_eval=4", "sft.epochs=6",
                 "sft.batch_size=32", f"rl.learning_rate={args.learning_rate}"]
    clock = StepClock()
    clock.install()
    print(f"before: {load_line()}")
    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    # Per spec and kind, each round's steps apart: the per-round ratios are taken from these.
    by_round: dict[str, dict[str, list[list[float]]]] = defaultdict(lambda: defaultdict(list))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-reward-") as tmp:
        root = Path(tmp)
        dataset, policy = prepare_policy(root, overrides)
        # One untimed run first: lazy imports and first-call costs must not land on a spec.
        run_spec(BASELINE, 2, overrides, dataset, policy, root / "rl" / "warm-up", clock)
        for round_index in range(args.repeats):
            shift = round_index % len(specs)
            for spec in specs[shift:] + specs[:shift]:
                out_dir = root / "rl" / f"{round_index}-{spec.replace(':', '_').replace('+', '_')}"
                measured = run_spec(spec, args.steps, overrides, dataset, policy, out_dir, clock)
                for kind, values in measured.items():
                    times[spec][kind] += values
                    by_round[spec][kind].append(values)
            print(f"round {round_index + 1}/{args.repeats} done", flush=True)

    median = {spec: {kind: statistics.median(v) for kind, v in kinds.items()}
              for spec, kinds in times.items()}
    base = median[BASELINE]
    rows = []
    for spec in specs:
        m = median[spec]
        rows.append({
            "spec": spec,
            "steps_timed": len(times[spec]["cpu"]),
            "median_step_cpu_ms": 1000 * m["cpu"],
            "step_ratio_cpu": m["cpu"] / base["cpu"],
            "step_ratio_cpu_ci95": ratio_interval(times[spec]["cpu"], times[BASELINE]["cpu"]),
            "median_step_wall_ms": 1000 * m["wall"],
            "step_ratio_wall": m["wall"] / base["wall"],
            "median_reward_cpu_ms": 1000 * m["reward"],
            "reward_ratio_derived": (base["cpu"] + m["reward"] - base["reward"]) / base["cpu"],
            "per_round": per_round_ratios(by_round[spec], by_round[BASELINE]),
        })
    print(f"pooled: medians over all {args.repeats} x {args.steps - 1} timed steps of each spec; "
          "ratios over correctness's")
    header = (f"{'spec':<22} {'steps':>5} {'cpu ms':>7} {'cpu ratio [95% CI]':>20} {'wall ms':>8} "
              f"{'wall ratio':>10} {'reward ms':>9} {'derived reward ratio':>20}  "
              f"target <= {TARGET_RATIO}")
    print(header)
    for row in rows:
        low, high = row["step_ratio_cpu_ci95"]
        verdict = ("ok" if row["reward_ratio_derived"] <= TARGET_RATIO and low <= TARGET_RATIO
                   else "OVER")
        print(f"{row['spec']:<22} {row['steps_timed']:>5} {row['median_step_cpu_ms']:>7.1f} "
              f"{row['step_ratio_cpu']:>6.3f} [{low:.2f}, {high:.2f}] {row['median_step_wall_ms']:>8.1f} "
              f"{row['step_ratio_wall']:>10.3f} {row['median_reward_cpu_ms']:>9.2f} "
              f"{row['reward_ratio_derived']:>20.4f}  {verdict}")
    print("(ok/OVER: the derived reward ratio within the target and the measured cpu step "
          "ratio's 95% CI not wholly above it)")
    print(f"per round: each round's ratio (spec median / correctness median, the same round), "
          f"min / median / max over {args.repeats} rounds")
    print(f"{'spec':<22} {'cpu step ratio':>24} {'wall step ratio':>24} "
          f"{'derived reward ratio':>24}")
    for row in rows:
        cells = [" / ".join(f"{v:.3f}" for v in spread(row["per_round"][kind]))
                 for kind in ("cpu", "wall", "reward_derived")]
        print(f"{row['spec']:<22} " + " ".join(f"{cell:>24}" for cell in cells))
    print(
        f"total {time.perf_counter() - started:.0f} s; {args.repeats} rounds x {args.steps} steps"
    )
    print(f"after: {load_line()}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "repeats": args.repeats,
                                         "steps": args.steps, "raw": times}, indent=2))


if __name__ == "__main__":
    main()
