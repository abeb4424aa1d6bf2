"""A reward spec resolved once: its terms, each term's parameters and weight, and the GRPO
settings their formulas need.

The config parses the spec when it is validated and resolves this plan from the parse
(`RLConfig.reward_plan`); the TRL adapter, the trainer and every extra training process build
from the plan and never parse the spec again. It is picklable (term classes by reference), so
it travels to the extra processes inside the pickled config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from breadth.rewards.registry import REWARDS, ParamValue, resolve_params
from breadth.rewards.spec import RewardSpec
from breadth.rewards.terms import RewardTermFunc


@dataclass(frozen=True)
class PlannedTerm:
    """One term of a plan: what to build and with which values."""

    name: str
    term: type[RewardTermFunc]
    """Built as term(name, scorer, log_batch_diagnostics=..., seed=..., **params)."""
    params: dict[str, ParamValue]
    """Every parameter of the term: inline in the spec, else the config field, else default."""
    weight: float


@dataclass(frozen=True)
class RewardPlan:
    """A reward spec, resolved: build TRL's reward functions from it with
    `breadth.rewards.trl_adapter.build_trl_rewards`.

    >>> from breadth.rewards.spec import parse_reward_spec
    >>> plan = resolve_plan("passk:k=2", parse_reward_spec("passk:k=2"), None)
    >>> plan.terms[0].params, plan.grpo_settings
    ({'k': 2}, {'scale_rewards': 'none'})
    """

    spec: str
    terms: tuple[PlannedTerm, ...]
    grpo_settings: dict[str, Any]
    """GRPOConfig fields the terms' formulas require (darling and passk: scale_rewards='none');
    the config sets them on `rl` when it is validated, so training and the logged params use
    them."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(term.name for term in self.terms)


def resolve_plan(
    text: str, spec: RewardSpec, reward_config: Any | None,
    group_sizes: Mapping[str, int | None] | None = None,
) -> RewardPlan:
    """The plan of the parsed spec `spec` (written as `text`): each parameter inline, else
    `reward_config`'s field `<name>_<param>`, else its default; ValueError when a term cannot
    work with `group_sizes` (config key -> size, e.g. {"rl.num_generations": 8})."""
    terms, settings = [], {}
    for term in spec.terms:
        entry = REWARDS[term.name]
        params = resolve_params(term.name, term.params, reward_config)
        if group_sizes is not None:
            entry.term.check_group_sizes(params, group_sizes)
        terms.append(PlannedTerm(term.name, entry.term, params, term.weight))
        settings.update(entry.term.grpo_overrides)
    return RewardPlan(text, tuple(terms), settings)
