"""Run `rl_stage` in its own process for test_grpo_resume_on_cpu.py, so the test can SIGKILL it.

Records what every training step's reward batch saw, one JSON line per step, flushed at once
so the lines survive a kill: {"step", "problem_ids" (one per prompt, in batch order), "texts"}.
`--hang-at-step N` stops the process right after recording step N's batch (mid-step, before
its optimiser update), so the test kills it at a known point however loaded the machine is.

    python tests/integration/grpo_resume_worker.py --preset ucb --set rl.max_steps=6 \
        --dataset DIR --policy DIR --out DIR --record steps.jsonl [--hang-at-step 4]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def recording_score(score: Callable[..., Any], record: Path,
                    hang_at_step: int | None = None) -> Callable[..., Any]:
    """BatchScorer.score that also records each step's first reward batch to `record` (the
    first call of a step records; every reward term calls it). The test installs it in its own
    process for the runs it need not kill; this worker, for the run it kills."""
    recorded: set[int] = set()

    def recording(self: Any, completions: Any, columns: Any) -> Any:
        batch = score(self, completions, columns)
        # global_step counts finished optimiser steps: this batch trains step global_step + 1.
        step = int(columns["trainer_state"].global_step) + 1
        if step not in recorded:
            recorded.add(step)
            prompts = [g.problem_id for g in batch.groups] if batch.groups else []
            line = {"step": step, "problem_ids": prompts, "texts": list(batch.texts)}
            with record.open("a") as handle:
                handle.write(json.dumps(line) + "\n")
            while step == hang_at_step:  # until the test kills this process
                time.sleep(1.0)
        return batch

    return recording


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--hang-at-step", type=int, default=None)
    args = parser.parse_args()

    from breadth.config import load_config
    from breadth.rewards.scoring import BatchScorer
    from breadth.stages import rl_stage

    BatchScorer.score = recording_score(BatchScorer.score, args.record,  # type: ignore[method-assign]
                                        args.hang_at_step)
    config = load_config(args.preset, args.overrides)
    rl_stage(config, args.dataset, args.policy, args.out)


if __name__ == "__main__":
    main()
