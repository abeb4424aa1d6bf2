"""Save and restore the state of stateful rewards (the UCB counts) beside a trainer checkpoint.

One JSON file per process in the checkpoint folder: `breadth_reward_state.json` for process
0 and `breadth_reward_state.rank<i>.json` for the others (each data-parallel process keeps
its own counts, because each scores only its own slice of the batch). The file maps each
stateful object's name (its `__name__`, e.g. "ucb") to its `state_dict()`.
"""

from __future__ import annotations

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


def reward_state_filename(process_index: int = 0) -> str:
    """File name of one process's reward state.

    >>> reward_state_filename(0), reward_state_filename(2)
    ('breadth_reward_state.json', 'breadth_reward_state.rank2.json')
    """
    if process_index == 0:
        return REWARD_STATE_FILENAME
    return REWARD_STATE_FILENAME.replace(".json", f".rank{process_index}.json")


def _names(stateful: Sequence[Stateful]) -> list[str]:
    names = [getattr(obj, "__name__", type(obj).__name__) for obj in stateful]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"stateful rewards share the name(s) {repeated}; give each a unique __name__"
        )
    return names


def save_reward_state(
    stateful: Sequence[Stateful], checkpoint_dir: str | Path, *, process_index: int = 0
) -> Path:
    """Write every object's state_dict as JSON into `checkpoint_dir`; returns the file path.

    The file is written to a temporary name and renamed, so a kill mid-write never leaves a
    truncated state beside a complete checkpoint.

    >>> import tempfile; from breadth.rewards.ucb import OutcomeUCB
    >>> save_reward_state([OutcomeUCB()], tempfile.mkdtemp()).name
    'breadth_reward_state.json'
    """
    folder = Path(checkpoint_dir)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": _FORMAT,
        "states": {name: obj.state_dict() for name, obj in zip(_names(stateful), stateful)},
    }
    path = folder / reward_state_filename(process_index)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, sort_keys=True))
    os.replace(tmp, path)
    return path


def load_reward_state(
    stateful: Sequence[Stateful],
    checkpoint_dir: str | Path,
    *,
    process_index: int = 0,
    missing_ok: bool = False,
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
    path = Path(checkpoint_dir) / reward_state_filename(process_index)
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
