"""Orchestration overhead: the pipeline through Prefect + MLflow + S3 versus the same stage
functions called directly, measured side by side in one run (target ratio <= 1.10).

    .venv/bin/python benchmarks/bench_orchestration.py [--preset default] [--set key=value ...]

It brings the local stack up if needed (stack start-up is not counted: both sides assume a
running stack), forces every Prefect task to re-run (PREFECT_TASKS_REFRESH_CACHE) so nothing is
served from cache, gives each orchestrated run a fresh work folder (no checkpoint to resume
from), and alternates direct and orchestrated runs `--repeats` times (medians compared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def run_direct(config) -> float:
    from breadth import stages

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        stages.prepare_stage(config, root / "data")
        stages.init_model_stage(config, root / "base")
        sft = stages.sft_stage(config, root / "data", root / "base", root / "sft")
        rl = stages.rl_stage(config, root / "data", sft, root / "rl")
        rollouts = {
            name: stages.rollout_stage(config, root / "data", policy, name,
                                       root / f"{name}.parquet", progress=False)
            for name, policy in {"sft": sft, "rl": rl}.items()
        }  # fmt: skip
        stages.evaluate_stage(config, rollouts, root / "report", base_model="sft")
    return time.perf_counter() - started


def run_orchestrated(config) -> float:
    from flows.pipeline import pipeline

    # A fresh work folder: otherwise GRPO would resume from the last run's final checkpoint.
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["BREADTH_WORK_DIR"] = scratch
        started = time.perf_counter()
        pipeline(config=config)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from breadth.config import load_config
    from breadth.stack import LocalStack

    config = load_config(args.preset, [*args.overrides, "tracking.experiment=bench-orchestration"])
    stack = LocalStack()
    stack.up()
    os.environ.update(stack.settings.client_env())
    os.environ["PREFECT_TASKS_REFRESH_CACHE"] = "true"

    direct, orchestrated = [], []
    for repeat in range(args.repeats):
        direct.append(run_direct(config))
        orchestrated.append(run_orchestrated(config))
        print(f"repeat {repeat}: direct {direct[-1]:.1f}s, orchestrated {orchestrated[-1]:.1f}s")
    ratio = statistics.median(orchestrated) / statistics.median(direct)
    print(f"\npreset {args.preset} {' '.join(args.overrides)}")
    print(f"direct stage functions (median): {statistics.median(direct):.1f}s")
    print(f"Prefect + MLflow + S3 (median):  {statistics.median(orchestrated):.1f}s")
    print(f"orchestration overhead ratio:    {ratio:.3f}  (target <= 1.10)")


if __name__ == "__main__":
    main()
