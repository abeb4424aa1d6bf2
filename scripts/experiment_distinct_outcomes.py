"""Experiment: distinct outcomes per group over GRPO training, correctness vs +batch vs +ucb.

Run: .venv/bin/python scripts/experiment_distinct_outcomes.py [--set KEY=VALUE ...]
         [--specs correctness correctness+batch correctness+ucb] [--work-dir DIR] [--bins 3]

On the default task (the `default` preset: synthetic arithmetic, free form, the tiny model, SFT
warm start), one SFT policy is trained once; then one GRPO run per reward spec starts from it,
with the same seed and the same number of steps. Every run logs to MLflow (a SQLite store under
the work dir unless MLFLOW_TRACKING_URI is set), and the table is read back from MLflow:
`train/breadth/distinct_outcomes_per_group` (outcomes of the G completions of a prompt; an
unanswered completion counts as one "no answer" outcome), accuracy and the correctness reward,
averaged over equal bins of training steps.

`--set` overrides apply to every run. `--rl-problems N` trains GRPO on the first N training
problems only (SFT still sees them all), so that problems recur: the regime where the
historical UCB bonus can act. On the default task no problem is seen twice in 30 steps of 4
prompts, so its bonus is the same for every completion of a group and changes no advantage.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import time
from pathlib import Path

METRICS = {
    "distinct": "train/breadth/distinct_outcomes_per_group",
    "accuracy": "train/breadth/accuracy",
    "answered": "train/breadth/answered",
}


def subset_dataset(source: Path, target: Path, num: int) -> Path:
    """A dataset folder holding the first `num` training rows of `source` (eval rows kept)."""
    import pandas as pd

    target.mkdir(parents=True, exist_ok=True)
    pd.read_parquet(source / "train.parquet").head(num).to_parquet(target / "train.parquet")
    pd.read_parquet(source / "eval.parquet").to_parquet(target / "eval.parquet")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument(
        "--specs", nargs="+", default=["correctness", "correctness+batch", "correctness+ucb"]
    )
    parser.add_argument(
        "--work-dir", type=Path, default=Path(".breadth/experiments/distinct-outcomes")
    )
    parser.add_argument("--experiment", default="distinct-outcomes")
    parser.add_argument("--bins", type=int, default=3)
    parser.add_argument(
        "--rl-problems", type=int, default=None, help="GRPO on the first N problems only"
    )
    args = parser.parse_args()

    import transformers

    from breadth.config import load_config
    from breadth.stages import init_model_stage, prepare_stage, rl_stage, sft_stage
    from breadth.tracking.runs import MetricBuffer, start_child_run, start_run

    transformers.logging.set_verbosity_error()
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{work / 'mlflow.db'}")

    base_config = load_config("default", args.overrides)
    tag = base_config.content_hash()[:10]
    root = work / tag
    started = time.perf_counter()
    parent = start_run(
        args.experiment,
        f"distinct-outcomes-{tag}",
        tags={"config_hash": tag, "overrides": " ".join(args.overrides)},
    )
    parent.log_params(base_config.flat())
    prepare_stage(base_config, root / "data")
    init_model_stage(base_config, root / "base")
    sft_dir = root / "sft" / "final"
    if not sft_dir.exists():
        sft_stage(base_config, root / "data", root / "base", root / "sft")
    print(f"data + SFT ready in {time.perf_counter() - started:.0f} s", flush=True)
    rl_data = root / "data"
    if args.rl_problems:
        rl_data = subset_dataset(root / "data", root / f"data-first-{args.rl_problems}",
                                 args.rl_problems)
        parent.set_tags({"rl_problems": args.rl_problems})

    runs = {}
    for spec in args.specs:
        config = load_config("default", [*args.overrides, f"rl.reward.spec={spec}"])
        run = start_child_run(parent, spec, tags={"reward_spec": spec})
        run.log_params({k: v for k, v in config.flat().items() if k.startswith("rl.")})
        began = time.perf_counter()
        name = spec.replace("+", "_").replace(":", "_")
        out_dir = root / f"rl-{args.rl_problems or 'all'}" / name
        metrics = MetricBuffer(run)
        rl_stage(config, rl_data, sft_dir, out_dir, log_metric=metrics)
        metrics.flush()
        run.finish()
        runs[spec] = run
        print(
            f"{spec}: {config.rl.max_steps} steps in {time.perf_counter() - began:.0f} s",
            flush=True,
        )
    parent.finish()

    # Everything below is read back from MLflow, not from the training process.
    client = parent.client
    table = {}
    for spec, run in runs.items():
        series = {}
        for short, key in METRICS.items():
            history = sorted(client.get_metric_history(run.run_id, key), key=lambda m: m.step)
            series[short] = [(m.step, m.value) for m in history]
        table[spec] = series

    steps = base_config.rl.max_steps
    edges = [round(steps * i / args.bins) for i in range(args.bins + 1)]
    bins = list(itertools.pairwise(edges))
    print(
        f"\nG = {base_config.rl.num_generations} completions per prompt, "
        f"{base_config.rl.prompts_per_step} prompts per step, {steps} steps, "
        f"{args.rl_problems or base_config.data.num_train or 'all'} training problems; "
        f"MLflow {parent.tracking_uri} "
        f"experiment {args.experiment!r}, parent run {parent.run_id}"
    )
    for short in METRICS:
        labels = [f"steps {a + 1}-{b}" for a, b in bins]
        print(
            f"\n{short} (mean per group over steps)".ljust(40)
            + "".join(f"{label:>14}" for label in labels)
            + f"{'all':>10}"
        )
        for spec, series in table.items():
            values = series[short]
            cells = [
                statistics.mean([v for s, v in values if a < s <= b] or [float("nan")])
                for a, b in bins
            ]
            overall = statistics.mean(v for _, v in values)
            print(f"  {spec:<38}" + "".join(f"{c:>14.3f}" for c in cells) + f"{overall:>10.3f}")
    out = root / f"distinct_outcomes-{args.rl_problems or 'all'}.json"
    out.write_text(
        json.dumps(
            {
                "overrides": args.overrides,
                "rl_problems": args.rl_problems,
                "parent_run": parent.run_id,
                "tracking_uri": parent.tracking_uri,
                "series": table,
            },
            indent=1,
        )
    )
    print(f"\nper-step series: {out}; total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
