"""Whether GRPO changed the policy at all: a check on what the trainer logged.

Light on purpose (no torch): the rl task imports it at flow start, and a cached re-run must not
pay for torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# What the check reads from TRL's logs: the gradient norm of each logged step, and the share of
# prompt groups whose rewards were all equal (their advantages, so their gradient, are zero).
GRAD_NORM_METRIC = "train/grad_norm"
ZERO_STD_METRIC = "train/frac_reward_zero_std"
WATCHED = (GRAD_NORM_METRIC, ZERO_STD_METRIC)


def no_learning_signal(logged: Mapping[str, Sequence[float]]) -> str | None:
    """A warning when every logged step's gradient norm was 0: the policy did not change, and
    the "trained" model is its start. None when some step moved it, or nothing was logged.
    (The gradient, not the rewards, decides: a bonus placed on the advantage or an entropy
    bonus move the policy even when every group's rewards are equal.)

    >>> no_learning_signal({"train/grad_norm": [0.0, 0.0],
    ...                     "train/frac_reward_zero_std": [1.0, 1.0]}) is not None
    True
    >>> no_learning_signal({"train/grad_norm": [0.0, 0.3]}) is None
    True
    """
    norms = logged.get(GRAD_NORM_METRIC, [])
    if not norms or max(norms) > 0.0:
        return None
    why = ""
    if logged.get(ZERO_STD_METRIC) and min(logged[ZERO_STD_METRIC]) >= 1.0:
        why = (" In every step every group's rewards were equal (frac_reward_zero_std = 1), so "
               "no advantage was non-zero: more samples per group (rl.num_generations), more "
               "steps, a higher rl.temperature or an easier task give the groups reward variance.")
    return (f"GRPO did not change the policy: the gradient norm was 0 in all {len(norms)} logged "
            f"steps, so the rl model is its SFT start.{why}")
