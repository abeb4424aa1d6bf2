"""Diversity-aware rewards: pure group functions (numpy only) and the TRL adapter.

Formulas and sources: docs/design/algorithms.md. Importing this package imports neither torch nor
transformers; the checkpoint callback lives in `breadth.rewards.callback`, which does.
"""

from breadth.rewards.darling import (
    NgramOverlapJudge,
    darling_diversity,
    equivalence_classes,
    ngram_overlap,
    short_text_equivalent,
)
from breadth.rewards.groups import IncompleteGroupError, RowGroup, group_rows
from breadth.rewards.passk import group_passk, passk_advantages
from breadth.rewards.plan import PlannedTerm, RewardPlan, resolve_plan
from breadth.rewards.registry import (
    REWARDS,
    RewardEntry,
    RewardParam,
    register,
    reward_names,
)
from breadth.rewards.repetition import batch_repetition_penalty
from breadth.rewards.spec import RewardSpec, RewardTerm, parse_reward_spec
from breadth.rewards.state import load_reward_state, reward_state_digest, save_reward_state
from breadth.rewards.trl_adapter import TrlRewardSetup, build_trl_rewards
from breadth.rewards.ucb import OutcomeUCB
from breadth.rewards.unlikeliness import likelihood_ranks, unlikeliness_reward
from breadth.rewards.vector import set_level_vector_reward

__all__ = [
    "REWARDS",
    "IncompleteGroupError",
    "NgramOverlapJudge",
    "OutcomeUCB",
    "PlannedTerm",
    "RewardEntry",
    "RewardParam",
    "RewardPlan",
    "RewardSpec",
    "RewardTerm",
    "RowGroup",
    "TrlRewardSetup",
    "batch_repetition_penalty",
    "build_trl_rewards",
    "darling_diversity",
    "equivalence_classes",
    "group_passk",
    "group_rows",
    "likelihood_ranks",
    "load_reward_state",
    "ngram_overlap",
    "parse_reward_spec",
    "passk_advantages",
    "register",
    "resolve_plan",
    "reward_names",
    "reward_state_digest",
    "save_reward_state",
    "set_level_vector_reward",
    "short_text_equivalent",
    "unlikeliness_reward",
]
