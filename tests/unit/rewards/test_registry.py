import json
import subprocess
import sys
from pathlib import Path

import pytest

from breadth.config import RewardConfig, load_config
from breadth.rewards.registry import REWARDS, RewardParam, reward_table_markdown

ROOT = Path(__file__).resolve().parents[3]


# `after`: registered once breadth.config was imported; RewardConfig was made without the
# toy's field, and still takes, checks, lists and plans its parameter.
@pytest.mark.parametrize("order", ["before", "after"])
def test_a_toy_term_registered_in_one_place_reaches_parser_config_cli_and_adapter(order):
    out = subprocess.run(
        [sys.executable, "-m", "tests.unit.rewards._toy_reward", order],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    report = json.loads(out.stdout)
    assert report["parsed"] == {"gain": 1.5}
    assert report["config_gain"] == 3.0
    assert report["names"] == ["correctness", "toy"]
    assert report["values"] == [3.0, 0.0]  # "?" extracts nothing
    assert report["inline_values"] == [5.0, 0.0]  # inline beats the config field
    assert len(report["keys_line"]) == 1 and "toy gain" in report["keys_line"][0]
    assert report["in_table"]
    assert "rl.reward.toy_gain" in report["bad_value"]
    assert "toy:gain='-1' is out of range" in report["bad_inline"]
    assert "Did you mean 'toy'?" in report["misspelt"]
    assert "already registered" in report["collision"]
    assert "rl.reward.toy_gian" in report["misspelt_key"]
    assert "Did you mean 'rl.reward.toy_gain'?" in report["misspelt_key"]
    assert report["pickled_gain"] == {"gain": 3.0}


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_parameter_is_a_config_field_with_the_registry_default(name):
    entry = REWARDS[name]
    fields = RewardConfig.model_fields
    for param in entry.params:
        field = fields[entry.config_key(param)]
        assert field.default == param.default
        assert param.help in (field.description or "")


def test_config_fields_enforce_the_registry_ranges():
    for bad in ("rl.reward.passk_k=0", "rl.reward.unlikeliness_beta=2", "rl.reward.ucb_variant=x",
                "rl.reward.darling_threshold=1.5", "rl.reward.vector_alpha=0"):
        with pytest.raises(ValueError, match=bad.split("=")[0].removeprefix("rl.reward.")):
            load_config("default", [bad])


def test_param_check_rejects_non_integers_and_non_finite_values():
    k = RewardParam("k", 4, "k", ge=1)
    alpha = RewardParam("alpha", 1.0, "alpha", gt=0)
    assert k.check("8", "passk:k") == 8 and alpha.check("0.5", "vector:alpha") == 0.5
    for param, raw, message in ((k, 2.5, "must be int"), (k, "x", "must be int"),
                                (alpha, "nan", "must be finite"), (alpha, 0, "out of range")):
        with pytest.raises(ValueError, match=message):
            param.check(raw, "where")


def test_readme_reward_table_is_the_registry_table():
    readme = (ROOT / "README.md").read_text()
    assert reward_table_markdown() in readme, (
        "README's reward table is out of date: paste the output of `breadth config --rewards --markdown`"
    )
