"""Presets that compare: an objective preset differs from the run it extends only in the
objective, so two runs side by side in MLflow differ only in what their preset names say.

The objective keys are the study's (`breadth.study.grid_design.OBJECTIVE_KEYS`, the fairness
rule between a grid's cells): the reward (rl.reward.*), rl.scale_rewards (set by the rewards
whose formula needs it, darling and passk) and the entropy knobs (rl.epsilon_high,
rl.top_entropy_quantile, rl.entropy_coef, rl.adaptive_entropy, rl.entropy_target).
"""

from __future__ import annotations

import pytest

from breadth.config import available_presets, load_config
from breadth.study.grid_design import OBJECTIVE_KEYS

# Each objective preset and the run it claims to differ from only in the objective.
OBJECTIVE_PRESETS = {
    "batch": "default",
    "darling": "default",
    "passk": "default",
    "vector": "default",
    "entropy": "default",
    "ucb": "study",
}
# The runs the objective presets start from, and the presets of another task, format or model:
# these make no claim to differ only in the objective.
BASE_PRESETS = {"default", "study"}
TASK_PRESETS = {"mcq", "countdown", "reasoning", "multi", "qwen-gsm8k", "smollm2"}
# A config's label, not what it computes.
LABEL_KEYS = {"preset"}


def beyond_the_objective(preset: str, base: str) -> dict[str, tuple]:
    """The keys whose validated values differ between `preset` and `base` other than the
    objective's: {key: (base's value, preset's value)}."""
    ours, theirs = load_config(preset).flat(), load_config(base).flat()
    return {key: (theirs.get(key), ours.get(key)) for key in sorted(ours.keys() | theirs.keys())
            if ours.get(key) != theirs.get(key) and key not in LABEL_KEYS
            and not key.startswith(OBJECTIVE_KEYS)}


def test_objective_keys_name_the_reward_the_scaling_and_the_entropy_knobs():
    assert set(OBJECTIVE_KEYS) == {
        "rl.reward.", "rl.scale_rewards", "rl.epsilon_high", "rl.top_entropy_quantile",
        "rl.entropy_coef", "rl.adaptive_entropy", "rl.entropy_target"}


@pytest.mark.parametrize(("preset", "base"), sorted(OBJECTIVE_PRESETS.items()))
def test_an_objective_preset_differs_from_its_base_only_in_the_objective(preset, base):
    assert beyond_the_objective(preset, base) == {}, (
        f"--preset {preset} differs from --preset {base} beyond the objective: set these in "
        f"{base}.yaml or drop them from {preset}.yaml")
    ours, theirs = load_config(preset).flat(), load_config(base).flat()
    objective = {key for key in ours if ours[key] != theirs[key]} - LABEL_KEYS
    assert objective, f"--preset {preset} is --preset {base} under another name"


def test_every_shipped_preset_is_classified():
    """A new preset says whether it claims to differ from a base only in the objective."""
    assert set(available_presets()) == set(OBJECTIVE_PRESETS) | BASE_PRESETS | TASK_PRESETS


def test_the_check_finds_a_preset_that_changes_more_than_the_objective(tmp_path):
    fake = tmp_path / "fast_darling.yaml"
    fake.write_text("extends: default\nrl:\n  reward:\n    spec: darling\n"
                    "  learning_rate: 0.001\n  max_steps: 50\n")
    assert beyond_the_objective(str(fake), "default") == {
        "rl.learning_rate": (0.0003, 0.001), "rl.max_steps": (300, 50)}
    only_knobs = tmp_path / "knobs.yaml"
    only_knobs.write_text("extends: default\nrl:\n  entropy_coef: 0.05\n")
    assert beyond_the_objective(str(only_knobs), "default") == {}
