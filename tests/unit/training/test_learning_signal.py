"""breadth.training.learning_signal: a GRPO run that did not change its policy says so."""

from __future__ import annotations

import pytest

from breadth.training.learning_signal import no_learning_signal


@pytest.mark.parametrize(("logged", "warns", "names_the_cause"), [
    # The audit's small runs: every group's rewards equal, every step's gradient 0.
    ({"train/grad_norm": [0.0] * 4, "train/frac_reward_zero_std": [1.0] * 4}, True, True),
    # A zero gradient for another reason: warned, without claiming the rewards were flat.
    ({"train/grad_norm": [0.0, 0.0], "train/frac_reward_zero_std": [1.0, 0.5]}, True, False),
    # Flat rewards but a moving policy (a bonus on the advantage, an entropy bonus): no warning.
    ({"train/grad_norm": [0.0, 0.2], "train/frac_reward_zero_std": [1.0, 1.0]}, False, False),
    ({}, False, False),
])
def test_a_policy_that_never_moved_is_named(logged, warns, names_the_cause):
    warning = no_learning_signal(logged)
    assert (warning is not None) is warns
    if warning:
        assert "rl model is its SFT start" in warning
        assert ("frac_reward_zero_std = 1" in warning) is names_the_cause
