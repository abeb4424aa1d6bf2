"""A transformers TrainerCallback that saves the stateful rewards with each checkpoint.

Kept apart from the pure reward modules: importing it imports transformers (and torch).
Restore on resume with `breadth.rewards.state.load_reward_state` before `trainer.train`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from breadth.rewards.state import Stateful, load_reward_state, save_reward_state

__all__ = ["RewardStateCallback", "load_reward_state"]


class RewardStateCallback(TrainerCallback):
    """Write each stateful reward's state_dict into `output_dir/checkpoint-<step>/` on save.

    transformers calls `on_save` right after `_save_checkpoint` has written the checkpoint
    folder, on every process; each process writes its own file (see `reward_state_filename`).
    Register it before any callback that uploads the checkpoint folder, so the upload sees it.

    >>> from breadth.rewards.ucb import OutcomeUCB
    >>> RewardStateCallback([OutcomeUCB(coef=0.5)]).stateful[0].coef
    0.5
    """

    def __init__(self, stateful: Sequence[Stateful]) -> None:
        self.stateful = list(stateful)

    def checkpoint_dir(self, args: Any, state: Any) -> Path:
        return Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.stateful:
            save_reward_state(
                self.stateful,
                self.checkpoint_dir(args, state),
                process_index=int(getattr(args, "process_index", 0)),
            )
        return control
