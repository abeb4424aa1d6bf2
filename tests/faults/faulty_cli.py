"""`breadth ARGS` with a fault hook inside GRPO, for the fault suite (tests/faults/).

The hook wraps the reward scorer, which every training step calls once its completions are
sampled, so a test can act at a known step however loaded the machine is:

- BREADTH_FAULT_PAUSE_AT_STEP=N and BREADTH_FAULT_SIGNALS=DIR: at step N, write DIR/paused
  and wait until DIR/resume exists (never created: the process hangs there, to be killed);
- BREADTH_FAULT_RAISE_AT_STEP=N: raise RuntimeError at step N (a stage failing mid-way).

    python tests/faults/faulty_cli.py run --set rl.max_steps=8 ...
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def _install_hook() -> None:
    from breadth.rewards.trl_adapter import BatchScorer

    pause_at = int(os.environ.get("BREADTH_FAULT_PAUSE_AT_STEP", "0"))
    raise_at = int(os.environ.get("BREADTH_FAULT_RAISE_AT_STEP", "0"))
    signals = Path(os.environ.get("BREADTH_FAULT_SIGNALS", "."))
    score = BatchScorer.score

    def score_with_fault(self: BatchScorer, completions: Any, columns: Any) -> Any:
        # global_step counts finished optimiser steps: this batch trains step global_step + 1.
        step = int(columns["trainer_state"].global_step) + 1
        if step == raise_at:
            raise RuntimeError(f"fault injected inside training at step {step}")
        if step == pause_at and not (signals / "resume").exists():
            (signals / "paused").write_text(str(step))
            while not (signals / "resume").exists():
                time.sleep(0.1)
        return score(self, completions, columns)

    BatchScorer.score = score_with_fault  # type: ignore[method-assign]


if __name__ == "__main__":
    _install_hook()
    from breadth.cli import app

    app()
