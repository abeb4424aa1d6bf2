"""One GRPO training process, started by `breadth.training.launch` (one per rank).

    python -m torch.distributed.run --nproc-per-node=2 -m breadth.training.grpo_worker JOB.json

Reads the job file written by `breadth.training.launch.write_job` (and the pickled config it
names), loads the policy and rows, and trains with `breadth.training.grpo.train_grpo`. Process 0 reports metrics and finished
checkpoints to the events file; the launching process forwards them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from breadth.models.tiny import load_policy
from breadth.training.distributed import leave_process_group, process_rank
from breadth.training.grpo import grpo_rows, train_grpo
from breadth.training.launch import EventWriter, read_job_config


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit(f"usage: python -m {__spec__.name if __spec__ else __name__} JOB.json")
    job = json.loads(Path(args[0]).read_text())
    # The launching process's validated config, reward plan included: not validated again.
    config = read_job_config(job)
    events = EventWriter(Path(job["events"])) if process_rank() == 0 else None
    model, tokenizer = load_policy(job["policy_dir"])
    train_grpo(
        model, tokenizer, grpo_rows(config.rl, Path(job["dataset_dir"])), config.rl,
        output_dir=Path(job["out_dir"]), seed=config.seed,
        log_metric=events.metric if events else None,
        on_checkpoint=events.checkpoint if events else None,
        resume_from=Path(job["resume_from"]) if job["resume_from"] else None,
        chat=config.model,
    )
    # Only after a finished run: a failed rank exits at once with its error, and the launcher
    # stops the others (leaving the group could wait on a peer stuck in a collective).
    leave_process_group()


if __name__ == "__main__":
    main()
