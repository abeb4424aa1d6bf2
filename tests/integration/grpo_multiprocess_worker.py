"""One GRPO training process for test_grpo_multiprocess_on_cpu.py that records what it scored.

Launched by `breadth.training.launch.run_grpo_processes` in place of
`breadth.training.grpo_worker` (whose `main` it then runs unchanged). Every reward term call
appends one JSON line to `<out>/scored.rank<R>.jsonl`, flushed at once: {"step", "term",
"texts", "columns" (the reward columns), "values" (the term's reward, or its advantage-placed
values), "ucb_state" (after the call; only for a term with state)}. Every generation batch's
advantages, TRL's and after breadth added its advantage-placed terms, go to
`<out>/advantages.rank<R>.jsonl` in step order: {"trl", "shaped"}.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

COLUMNS = ("problem_id", "answer", "format", "task", "options", "letter", "meta", "split")


def recording_call(call: Callable[..., Any], record: Path) -> Callable[..., Any]:
    """`RewardTermFunc.__call__` that also appends what the term scored to `record`."""
    from breadth.rewards.scoring import completion_text

    def recording(self: Any, prompts: Any, completions: Any, **kwargs: Any) -> Any:
        returned = call(self, prompts, completions, **kwargs)
        values = self.pending_advantage if self.placement == "advantage" else returned
        line = {
            # global_step counts finished optimiser steps: this batch trains the next one.
            "step": int(kwargs["trainer_state"].global_step) + 1,
            "term": self.__name__,
            "texts": [completion_text(c) for c in completions],
            "columns": {name: list(kwargs[name]) for name in COLUMNS},
            "values": [float(v) for v in values],
            "ucb_state": self.state_dict() if hasattr(self, "state_dict") else None,
        }
        with record.open("a") as handle:
            handle.write(json.dumps(line) + "\n")
        return returned

    return recording


def recording_advantages(add: Callable[..., Any], record: Path) -> Callable[..., Any]:
    """`breadth.training.grpo.add_advantage_terms` that also appends its input and output."""

    def recording(advantages: Any, terms: Any) -> Any:
        shaped, stats = add(advantages, terms)
        line = {"trl": advantages.tolist(), "shaped": shaped.tolist()}
        with record.open("a") as handle:
            handle.write(json.dumps(line) + "\n")
        return shaped, stats

    return recording


def main() -> None:
    from breadth.rewards.terms import RewardTermFunc
    from breadth.training import grpo
    from breadth.training.distributed import process_rank
    from breadth.training.grpo_worker import main as worker_main

    job = json.loads(Path(sys.argv[1]).read_text())
    out, rank = Path(job["out_dir"]), process_rank()
    RewardTermFunc.__call__ = recording_call(RewardTermFunc.__call__, out / f"scored.rank{rank}.jsonl")  # type: ignore[method-assign]
    grpo.add_advantage_terms = recording_advantages(grpo.add_advantage_terms,
                                                    out / f"advantages.rank{rank}.jsonl")
    worker_main(sys.argv[1:])


if __name__ == "__main__":
    main()
