"""Registers a toy reward term in one place, then reports where it shows up (as JSON).

Run in a fresh interpreter by test_registry.py, as a user's own reward module would be loaded:
`before` registers it before `breadth.config` is imported, `after` once breadth.config and the
CLI are (the config checks reward parameters against the registry when it validates, so the
order does not matter).
"""

from __future__ import annotations

import json
import pickle
import sys
from typing import Any

from breadth.rewards.registry import RewardEntry, RewardParam, register
from breadth.rewards.terms import RewardTermFunc


class ToyReward(RewardTermFunc):
    """`gain` for every completion with an extractable answer."""

    def __init__(self, name: str, scorer: Any, *, gain: float, **kw: Any) -> None:
        super().__init__(name, scorer, **kw)
        self.gain = gain

    def compute(self, batch, kwargs):
        return self.gain * batch.answered.astype(float), {}


def register_toy() -> None:
    register(RewardEntry("toy", ToyReward, "A toy bonus.", (RewardParam("gain", 2.0, "toy gain", ge=0),)))


def _error(func: Any) -> str:
    try:
        func()
    except Exception as error:  # noqa: BLE001 - the message is the result
        return str(error)
    return ""


def main(order: str) -> None:
    if order == "before":
        register_toy()
        assert "breadth.config" not in sys.modules
    from typer.testing import CliRunner

    from breadth.cli import app
    from breadth.config import load_config
    from breadth.rewards.spec import parse_reward_spec
    from breadth.rewards.trl_adapter import build_trl_rewards
    from tests.unit.rewards._fakes import call, fake_verify, make_batch

    if order == "after":
        assert "breadth.config" in sys.modules
        register_toy()
    config = load_config("default", ["rl.reward.spec=correctness+toy", "rl.reward.toy_gain=3"])
    setup = build_trl_rewards(config.rl.reward_plan, num_generations=2, verify_fn=fake_verify)
    inline = build_trl_rewards(
        load_config("default", ["rl.reward.spec=correctness+toy:gain=5"]).rl.reward_plan,
        num_generations=2, verify_fn=fake_verify,
    )
    batch = make_batch([("p", "4", ["4", "?"])])
    keys = CliRunner().invoke(app, ["config", "--keys"]).output
    table = CliRunner().invoke(app, ["config", "--rewards", "--markdown"]).output
    report = {
        "parsed": parse_reward_spec("correctness+toy:gain=1.5").terms[1].params,
        "config_gain": config.rl.reward.toy_gain,
        "names": [func.__name__ for func in setup.reward_funcs],
        "values": call(setup.reward_funcs[1], batch),
        "inline_values": call(inline.reward_funcs[1], batch),
        "keys_line": [line for line in keys.splitlines() if "rl.reward.toy_gain" in line],
        "in_table": "`toy`" in table,
        "bad_value": _error(lambda: load_config("default", ["rl.reward.toy_gain=-1"])),
        "bad_inline": _error(lambda: load_config("default", ["rl.reward.spec=toy:gain=-1"])),
        "misspelt": _error(lambda: load_config("default", ["rl.reward.spec=correctness+tyo"])),
        "collision": _error(lambda: register(RewardEntry("toy", ToyReward, "again"))),
        "misspelt_key": _error(lambda: load_config("default", ["rl.reward.toy_gian=3"])),
        "pickled_gain": pickle.loads(pickle.dumps(config)).rl.reward_plan.terms[1].params,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
