"""Orchestration overhead: the pipeline through Prefect + MLflow + S3 versus the same stage
functions called directly, measured side by side in one run (target ratio <= 1.05).

    .venv/bin/python benchmarks/bench_orchestration.py [--preset default] [--set key=value ...]
        [--pairs 3] [--first-seed N]

It brings the local stack up if needed (stack start-up is not counted: both sides assume a
running stack), forces every Prefect task to re-run (PREFECT_TASKS_REFRESH_CACHE) so nothing is
served from cache, and gives each orchestrated run a fresh work folder. The n-th run of each
side uses first seed + n, so both sides of a pair do the same work; the first seed is drawn
afresh for each invocation (printed; --first-seed repeats one), so no GRPO run finds a
checkpoint of its config in S3 to resume from, not even one an earlier invocation left. Both
sides do the same work, evolutionary search included.
Each side runs once untimed (imports, first-call costs), then they alternate direct,
orchestrated, ... for --pairs rounds; the ratio is the median of the per-pair ratios, printed
with min, max and the load average. Beside wall time it prints this process's CPU time and
each stack server's CPU seconds during each side's runs (where the extra time goes).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import random
import tempfile
import time
from pathlib import Path

from side_by_side import compare, process_tree_cpu

TARGET_RATIO = 1.05


# Seconds per stage of the last run of each side (stage name -> seconds), for the breakdown.
STAGES: dict[str, dict[str, float]] = {"direct": {}, "orchestrated": {}}


def timed(stage: str, fn, *args, **kwargs):
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    STAGES["direct"][stage] = STAGES["direct"].get(stage, 0.0) + time.perf_counter() - started
    return out


def run_direct(config) -> float:
    from breadth import stages

    STAGES["direct"].clear()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        timed("prepare", stages.prepare_stage, config, root / "data")
        timed("init-model", stages.init_model_stage, config, root / "base")
        sft = timed("sft", stages.sft_stage, config, root / "data", root / "base", root / "sft")
        rl = timed("rl", stages.rl_stage, config, root / "data", sft, root / "rl")
        rollouts = {
            name: timed("rollout", stages.rollout_stage, config, root / "data", policy, name,
                        root / f"{name}.parquet", progress=False)
            for name, policy in {"sft": sft, "rl": rl}.items()
        }
        # The flow also runs the search for every policy: so does this side.
        policies = {"sft": sft, "rl": rl}
        searches = (
            {name: timed("search", stages.search_stage, config, root / "data", policy)
             for name, policy in policies.items()}
            if config.evaluation.search_budget > 0 else {}
        )
        timed("evaluate", stages.evaluate_stage, config, rollouts, root / "report",
              base_model="sft", searches=searches)
        return time.perf_counter() - started  # before the clean-up, as on the other side


def run_orchestrated(config) -> float:
    from breadth_flows.in_process import in_process_run
    from breadth_flows.pipeline import pipeline

    # A fresh work folder: otherwise GRPO would resume from the last run's final checkpoint.
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["BREADTH_WORK_DIR"] = scratch
        started = time.perf_counter()
        with in_process_run():  # as `breadth run` runs it
            result = pipeline(config=config)
        seconds = time.perf_counter() - started
    STAGES["orchestrated"] = stage_seconds(result["mlflow_run_id"])
    return seconds


def stage_seconds(parent_run_id: str) -> dict[str, float]:
    """Seconds of each stage's MLflow child run (its whole task body: stage, uploads, logging);
    what the flow spends outside them is the Prefect engine and the parent run."""
    from mlflow import MlflowClient

    client = MlflowClient()
    parent = client.get_run(parent_run_id)
    children = client.search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_run_id}'"
    )
    out: dict[str, float] = {}
    for child in children:
        if "checkpoint.resumed_from" in child.data.tags:  # the orchestrated side skipped work
            raise SystemExit(f"run {child.info.run_id} resumed from checkpoint "
                             f"{child.data.tags['checkpoint.resumed_from']}: not the same work as "
                             "the direct side. Use seeds this stack has not run (--first-seed).")
        stage = child.data.tags.get("breadth.stage", child.info.run_name or "?")
        if stage.startswith(("rollout-", "search-", "evaluate-")):  # one run per model
            stage = stage.split("-")[0]
        seconds = (child.info.end_time - child.info.start_time) / 1000
        out[stage] = out.get(stage, 0.0) + seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--first-seed", type=int,
                        help="seed of the first run of each side (default: drawn at random)")
    args = parser.parse_args()

    from breadth.config import load_config
    from breadth.stack.local import LocalStack

    overrides = [*args.overrides, "tracking.experiment=bench-orchestration"]
    load_config(args.preset, overrides)  # a bad --set fails here, before the stack starts

    # The n-th call of each side runs first_seed + n: the same work within a pair, and a GRPO
    # run that cannot resume. The rl stage resumes from its content key's S3 checkpoints (a fresh
    # work folder does not stop that), so repeating a config, even in a later invocation of this
    # benchmark on the same stack and code, would let the orchestrated side skip training.
    first_seed = args.first_seed
    if first_seed is None:
        first_seed = random.SystemRandom().randrange(10**6)
    print(f"seeds {first_seed}..{first_seed + args.pairs} (each side; --first-seed {first_seed} "
          "repeats them, on a stack that has not run them)")

    def next_config(calls: itertools.count) -> object:
        return load_config(args.preset, [*overrides, f"seed={first_seed + next(calls)}"])

    stack = LocalStack()
    stack.up()
    os.environ.update(stack.settings.client_env())
    os.environ["PREFECT_TASKS_REFRESH_CACHE"] = "true"

    # The servers' CPU during each run: on a small machine it is taken from training, so it is
    # where the orchestrated side's extra wall time goes (this process's CPU is the "cpu" rows).
    meters = {f"{row['service']} server CPU": functools.partial(process_tree_cpu, row["pid"])
              for row in stack.status() if row["pid"] is not None}
    direct_calls, orchestrated_calls = itertools.count(), itertools.count()
    result = compare(("direct stage functions", lambda: run_direct(next_config(direct_calls))),
                     ("Prefect + MLflow + S3",
                      lambda: run_orchestrated(next_config(orchestrated_calls))),
                     pairs=args.pairs, self_timed=True, meters=meters)
    print(f"preset {args.preset} {' '.join(args.overrides)}")
    print(result.report("whole pipeline, seconds", clocks=("wall", "cpu")))
    ratio = result.median_ratio()
    print(f"orchestration overhead ratio (median pair): {ratio:.3f}  (target <= {TARGET_RATIO})")
    print("seconds per stage, last pair (orchestrated: its MLflow child runs, so the task's")
    print("uploads and logging; init-model and publish-report have none, and evaluate's runs")
    print("open after its metrics are computed, so they hold only its logging):")
    print(f"  {'stage':<12} {'direct':>8} {'orchestrated':>13}")
    for stage in sorted(set(STAGES["direct"]) | set(STAGES["orchestrated"])):
        direct, orchestrated = (STAGES[side].get(stage, float("nan")) for side in STAGES)
        print(f"  {stage:<12} {direct:>8.1f} {orchestrated:>13.1f}")


if __name__ == "__main__":
    main()
