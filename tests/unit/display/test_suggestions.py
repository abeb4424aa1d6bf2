""""Did you mean" wherever a name can be misspelt: config keys (in --set and in a preset file),
presets, reward names; one helper behind them all."""

from __future__ import annotations

import pytest

from breadth.config import ConfigError, load_config
from breadth.display.suggestions import did_you_mean


@pytest.mark.parametrize(("name", "choices", "expected"), [
    ("corectness", ["correctness", "darling"], " Did you mean 'correctness'?"),
    ("rl.max_step", ["rl.max_steps", "sft.epochs"], " Did you mean 'rl.max_steps'?"),
    ("max_steps", ["rl.max_steps", "rl.save_steps"], " Did you mean 'rl.max_steps'?"),
    ("sft.max_steps", ["rl.max_steps"], " Did you mean 'rl.max_steps'?"),
    ("stud", ["study", "study-mcq", "default"], " Did you mean 'study'?"),
    ("ucb", ["ucb1", "ucb2", "batch"], " Did you mean 'ucb1' or 'ucb2'?"),
    ("xyz", ["correctness", "darling"], ""),
    ("anything", [], ""),
])
def test_did_you_mean(name, choices, expected):
    assert did_you_mean(name, choices) == expected


@pytest.mark.parametrize(("preset_text", "overrides", "must_mention"), [
    (None, ["rl.max_step=3"], "unknown config key 'rl.max_step' in --set. Did you mean 'rl.max_steps'?"),
    ("rl:\n  max_step: 3\n", [],
     "config key rl.max_step: Extra inputs are not permitted (got 3) Did you mean 'rl.max_steps'?"),
    (None, ["rl.reward.spec=darlin"], "unknown reward 'darlin'. Did you mean 'darling'?"),
])
def test_config_errors_suggest_the_key_or_reward(tmp_path, preset_text, overrides, must_mention):
    preset = "default"
    if preset_text is not None:
        preset = str(tmp_path / "mine.yaml")
        (tmp_path / "mine.yaml").write_text(preset_text)
    with pytest.raises(ConfigError) as caught:
        load_config(preset, overrides)
    assert must_mention in " ".join(str(caught.value).split())


def test_an_unknown_preset_suggests_the_closest():
    with pytest.raises(ConfigError, match="unknown preset 'defualt'. Did you mean 'default'?"):
        load_config("defualt")
