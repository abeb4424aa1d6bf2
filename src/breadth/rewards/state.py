"""Save and restore the state of stateful rewards (the UCB counts) beside a trainer checkpoint.

One JSON file in the checkpoint folder, `breadth_reward_state.json`, mapping each stateful
object's name (its `__name__`, e.g. "ucb") to its `state_dict()`. With several training
processes the counts are global (every process adds every process's outcomes), so process 0
writes the one file and every process restores from it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

REWARD_STATE_FILENAME = "breadth_reward_state.json"
_FORMAT = "breadth.reward_state/1"


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def _names(stateful: Sequence[Stateful]) -> list[str]:
    names = [getattr(obj, "__name__", type(obj).__name__) for obj in stateful]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"stateful rewards share the name(s) {repeated}; give each a unique __name__"
        )
    return names


def _payload(stateful: Sequence[Stateful]) -> dict[str, Any]:
    return {
        "format": _FORMAT,
        "states": {name: obj.state_dict() for name, obj in zip(_names(stateful), stateful)},
    }


def reward_state_digest(stateful: Sequence[Stateful]) -> str:
    """A hash of every object's state: equal on all processes when their counts agree.

    >>> from breadth.rewards.ucb import OutcomeUCB
    >>> reward_state_digest([OutcomeUCB()]) == reward_state_digest([OutcomeUCB()])
    True
    """
    text = json.dumps(_payload(stateful), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def save_reward_state(stateful: Sequence[Stateful], checkpoint_dir: str | Path) -> Path:
    """Write every object's state_dict as JSON into `checkpoint_dir`; returns the file path.

    The file is written to a temporary name and renamed, so a kill mid-write never leaves a
    truncated state beside a complete checkpoint.

    >>> import tempfile; from breadth.rewards.ucb import OutcomeUCB
    >>> save_reward_state([OutcomeUCB()], tempfile.mkdtemp()).name
    'breadth_reward_state.json'
    """
    folder = Path(checkpoint_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REWARD_STATE_FILENAME
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_payload(stateful), sort_keys=True))
    os.replace(tmp, path)
    return path


def load_reward_state(
    stateful: Sequence[Stateful], checkpoint_dir: str | Path, *, missing_ok: bool = False
) -> bool:
    """Restore every object's state from `checkpoint_dir`; True when a file was loaded.

    Raises FileNotFoundError when the checkpoint has no reward state (unless `missing_ok`),
    and KeyError when it lacks the state of one of the objects (the reward spec changed).

    >>> import tempfile; from breadth.rewards.ucb import OutcomeUCB
    >>> folder = tempfile.mkdtemp(); save_reward_state([OutcomeUCB()], folder).exists()
    True
    >>> load_reward_state([OutcomeUCB()], folder)
    True
    """
    if not stateful:
        return False
    path = Path(checkpoint_dir) / REWARD_STATE_FILENAME
    if not path.exists():
        if missing_ok:
            return False
        raise FileNotFoundError(
            f"no reward state at {path}: the checkpoint was saved without RewardStateCallback "
            "(add it to the trainer's callbacks), or pass missing_ok=True to start the "
            "stateful rewards from zero"
        )
    payload = json.loads(path.read_text())
    if payload.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a breadth reward state (format {payload.get('format')!r})")
    states = payload["states"]
    for name, obj in zip(_names(stateful), stateful):
        if name not in states:
            raise KeyError(
                f"{path} has no state for reward {name!r} (it has {sorted(states)}); resume with "
                "the reward spec the checkpoint was trained with"
            )
        obj.load_state_dict(states[name])
    return True
