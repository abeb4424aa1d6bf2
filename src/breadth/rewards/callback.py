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

from breadth.rewards.state import (
    Stateful,
    load_reward_state,
    reward_state_digest,
    save_reward_state,
)
from breadth.rewards.terms import GatherObjects, single_process_gather

__all__ = ["RewardStateCallback", "load_reward_state"]


class RewardStateCallback(TrainerCallback):
    """Write each stateful reward's state_dict into `output_dir/checkpoint-<step>/` on save.

    transformers calls `on_save` right after `_save_checkpoint` has written the checkpoint
    folder, on every process. The counts are global (identical on every process), so process 0
    alone writes them; first all processes compare a digest of their state through
    `gather_objects`, and a disagreement stops training instead of checkpointing one
    process's view. Register it before any callback that uploads the checkpoint folder.

    >>> from breadth.rewards.ucb import OutcomeUCB
    >>> RewardStateCallback([OutcomeUCB(coef=0.5)]).stateful[0].coef
    0.5
    """

    def __init__(
        self, stateful: Sequence[Stateful], gather_objects: GatherObjects = single_process_gather
    ) -> None:
        self.stateful = list(stateful)
        self.gather_objects = gather_objects

    def checkpoint_dir(self, args: Any, state: Any) -> Path:
        return Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if not self.stateful:
            return control
        digests = self.gather_objects(reward_state_digest(self.stateful))
        if len(set(digests)) > 1:
            raise RuntimeError(
                f"the reward state (UCB counts) differs between the {len(digests)} training "
                f"processes at step {state.global_step}; each must add every process's outcomes "
                "(build the rewards with build_trl_rewards(gather_objects=...)). Not saving a "
                "checkpoint that only one process's counts would describe."
            )
        if int(getattr(args, "process_index", 0)) == 0:
            save_reward_state(self.stateful, self.checkpoint_dir(args, state))
        return control
