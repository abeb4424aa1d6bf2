"""Turn a resolved reward plan (`breadth.rewards.plan`) into TRL 1.16 reward functions and weights.

TRL 1.16 calls every reward function once per generation batch of a process, as
`func(prompts=..., completions=..., completion_ids=..., **reward_kwargs)` (see
`GRPOTrainer._calculate_rewards`), where `reward_kwargs` holds every dataset column as a list
(one value per completion; here problem_id, answer, format, task, options, letter, meta,
split, ...), plus `trainer_state` (transformers TrainerState), `log_extra(column, values)` and
`log_metric(name, value)`. Completions are strings for plain-text prompts and lists of
`{"role": "assistant", "content": ...}` messages for conversational ones. A function returns
one float (or None: not applicable) per completion; TRL names its metrics after `__name__`
(`rewards/<name>/mean`), multiplies by `reward_weights`, sums, and computes advantages per
group of `num_generations` consecutive rows.

Each term (in `breadth.rewards.terms`) is a small picklable class, named with its parameters by
the plan, which the config resolved from the spec once. Terms of one setup share a `BatchScorer`, so a batch is verified
once however many terms read it. Per-step diagnostics go to TRL's official `log_metric` hook
(averaged per logging step, prefixed `eval_` in evaluation) and are kept in each term's
`last_stats`.

Under N training processes each process scores only its own slice of the generation batch.
breadth gives each process whole groups (`rl.prompts_per_step / N` prompts times
`num_generations`, contiguous as TRL's sampler lays them out), so the group-level terms (batch,
darling, passk, vector) compute on whole groups as in one process; the one cross-group state,
the UCB counts, is all-gathered (`gather_objects`) so that every process holds the global counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from breadth.data.generators import verify
from breadth.rewards.plan import RewardPlan
from breadth.rewards.scoring import BatchScorer, VerifyFn
from breadth.rewards.terms import GatherObjects, RewardTermFunc, single_process_gather


@dataclass(frozen=True)
class TrlRewardSetup:
    """Everything GRPOTrainer needs from the reward plan (its GRPO settings are on the config:
    `RewardPlan.grpo_settings`)."""

    reward_funcs: list[RewardTermFunc]
    """Pass as GRPOTrainer(reward_funcs=...)."""
    reward_weights: list[float]
    """Set GRPOConfig.reward_weights to this."""
    stateful: list[Any] = field(default_factory=list)
    """Objects with state_dict/load_state_dict: give them to RewardStateCallback."""
    advantage_terms: list[tuple[RewardTermFunc, float]] = field(default_factory=list)
    """(term, weight) of terms placed on the advantage: the trainer adds weight * values to
    TRL's normalised advantages (`breadth.training.grpo`)."""


def build_trl_rewards(
    plan: RewardPlan,
    *,
    seed: int = 0,
    num_generations: int | None = None,
    num_generations_eval: int | None = None,
    verify_fn: VerifyFn | None = None,
    gather_objects: GatherObjects = single_process_gather,
) -> TrlRewardSetup:
    """Build the TRL reward callables of `plan` (`RLConfig.reward_plan`, or
    `breadth.rewards.plan.resolve_plan`), which holds each term's class and parameters.

    `seed` is the run's seed (randomised terms draw from it). Pass `num_generations` (and
    `num_generations_eval` if it differs) so that every call checks its groups are whole;
    without them, groups are only checked for equal sizes. `verify_fn` defaults to
    `breadth.data.generators.verify`. With several training processes, `gather_objects` is
    their all-gather: terms with state (ucb) then keep global counts, identical on every process.

    >>> from types import SimpleNamespace as NS
    >>> from breadth.rewards.plan import resolve_plan
    >>> from breadth.rewards.spec import parse_reward_spec
    >>> fake_verify = lambda text, row: NS(correct=text == row["answer"], score=1.0, outcome=text)
    >>> spec = "correctness+batch*0.5"
    >>> plan = resolve_plan(spec, parse_reward_spec(spec), NS(batch_coef=0.5))
    >>> setup = build_trl_rewards(plan, num_generations=2, verify_fn=fake_verify)
    >>> [f.__name__ for f in setup.reward_funcs], setup.reward_weights
    (['correctness', 'batch'], [1.0, 0.5])
    """
    scorer = BatchScorer(verify_fn or verify, num_generations, num_generations_eval)
    funcs: list[RewardTermFunc] = []
    sizes = {"num_generations": num_generations, "num_generations_eval": num_generations_eval}
    for index, term in enumerate(plan.terms):
        term.term.check_group_sizes(term.params, sizes)
        func = term.term(term.name, scorer, log_batch_diagnostics=index == 0, seed=seed,
                         **term.params)
        func.gather_objects = gather_objects
        funcs.append(func)
    weights = [term.weight for term in plan.terms]
    return TrlRewardSetup(
        reward_funcs=funcs,
        reward_weights=weights,
        stateful=[func for func in funcs if hasattr(func, "state_dict")],
        advantage_terms=[(f, w) for f, w in zip(funcs, weights) if f.placement == "advantage"],
    )
