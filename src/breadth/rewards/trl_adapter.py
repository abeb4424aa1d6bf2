"""Turn a RewardConfig into TRL 1.16 reward functions, weights and the GRPOConfig they need.

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

Each term (in `breadth.rewards.terms`) is a small picklable class. Terms of one setup share a
`BatchScorer`, so a batch is verified once however many terms read it. Per-step diagnostics go to TRL's official
`log_metric` hook (averaged per logging step, prefixed `eval_` in evaluation) and are kept in
each term's `last_stats`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from breadth.rewards.scoring import (
    REQUIRED_COLUMNS,
    TRL_EXTRA_KWARGS,
    BatchScorer,
    ScoredBatch,
    VerifyFn,
    batch_diagnostics,
    completion_text,
)
from breadth.rewards.spec import RewardSpec, RewardTerm, parse_reward_spec
from breadth.rewards.terms import (
    LOGPROB_MEAN_COLUMN,
    LOGPROBS_COLUMN,
    BatchRepetitionReward,
    CorrectnessReward,
    DarlingReward,
    FormatReward,
    PassKReward,
    RewardTermFunc,
    UCBReward,
    UnlikelinessReward,
    VectorReward,
)
from breadth.rewards.ucb import OutcomeUCB

__all__ = [
    "LOGPROBS_COLUMN",
    "LOGPROB_MEAN_COLUMN",
    "REQUIRED_COLUMNS",
    "TRL_EXTRA_KWARGS",
    "BatchRepetitionReward",
    "BatchScorer",
    "CorrectnessReward",
    "DarlingReward",
    "FormatReward",
    "PassKReward",
    "RewardTermFunc",
    "ScoredBatch",
    "TrlRewardSetup",
    "UCBReward",
    "UnlikelinessReward",
    "VectorReward",
    "VerifyFn",
    "batch_diagnostics",
    "build_trl_rewards",
    "completion_text",
]


@dataclass(frozen=True)
class TrlRewardSetup:
    """Everything GRPOTrainer needs from the reward spec."""

    reward_funcs: list[RewardTermFunc]
    """Pass as GRPOTrainer(reward_funcs=...)."""
    reward_weights: list[float]
    """Set GRPOConfig.reward_weights to this."""
    grpo_overrides: dict[str, Any]
    """GRPOConfig fields the formulas require; apply them over the user's RL config."""
    stateful: list[Any] = field(default_factory=list)
    """Objects with state_dict/load_state_dict: give them to RewardStateCallback."""
    advantage_terms: list[tuple[RewardTermFunc, float]] = field(default_factory=list)
    """(term, weight) of terms placed on the advantage: the trainer adds weight * values to
    TRL's normalised advantages (`breadth.training.grpo`)."""
    spec: RewardSpec | None = None


def _param(term: RewardTerm, key: str, default: Any) -> Any:
    return term.params.get(key, default)


def build_trl_rewards(
    reward_config: Any,
    *,
    num_generations: int | None = None,
    num_generations_eval: int | None = None,
    verify_fn: VerifyFn | None = None,
) -> TrlRewardSetup:
    """Build the TRL reward callables for `reward_config.spec` (a breadth RewardConfig).

    Pass `num_generations` (and `num_generations_eval` if it differs) so that every call
    checks its groups are whole; without them, groups are only checked for equal sizes.
    `verify_fn` defaults to `breadth.data.verifiers.verify`.

    >>> from types import SimpleNamespace as NS
    >>> fake_verify = lambda text, row: NS(correct=text == row["answer"], score=1.0, outcome=text)
    >>> cfg = NS(spec="correctness+batch*0.5", batch_coef=0.5)
    >>> setup = build_trl_rewards(cfg, num_generations=2, verify_fn=fake_verify)
    >>> [f.__name__ for f in setup.reward_funcs], setup.reward_weights
    (['correctness', 'batch'], [1.0, 0.5])
    """
    spec = parse_reward_spec(reward_config.spec)
    if verify_fn is None:
        from breadth.data.verifiers import verify as verify_fn
    scorer = BatchScorer(verify_fn, num_generations, num_generations_eval)
    cfg = reward_config
    funcs: list[RewardTermFunc] = []
    overrides: dict[str, Any] = {
        # "correctness + bonus" is a sum of reward functions before group normalisation.
        "multi_objective_aggregation": "sum_then_normalize",
    }
    stateful: list[Any] = []
    for index, term in enumerate(spec.terms):
        common = {"name": term.name, "scorer": scorer, "log_batch_diagnostics": index == 0}
        if term.name == "correctness":
            func: RewardTermFunc = CorrectnessReward(**common)
        elif term.name == "format":
            func = FormatReward(**common, bonus=float(_param(term, "bonus", 0.1)))
        elif term.name == "ucb":
            ucb = OutcomeUCB(
                coef=float(_param(term, "coef", cfg.ucb_coef)),
                variant=_param(term, "variant", cfg.ucb_variant),
                apply_to=_param(term, "apply_to", cfg.ucb_apply_to),
                baseline=float(_param(term, "baseline", cfg.ucb_baseline)),
            )
            func = UCBReward(**common, ucb=ucb,
                             placement=_param(term, "placement", cfg.ucb_placement))
            stateful.append(func)
        elif term.name == "batch":
            coef = float(_param(term, "coef", cfg.batch_coef))
            if coef < 0:
                raise ValueError(f"reward batch coef must be >= 0, got {coef}")
            func = BatchRepetitionReward(**common, coef=coef,
                                         placement=_param(term, "placement", cfg.batch_placement))
        elif term.name == "darling":
            func = DarlingReward(
                **common,
                judge=_param(term, "judge", "outcome"),
                n=int(_param(term, "n", 2)),
                threshold=float(_param(term, "threshold", 0.5)),
            )
            # DARLING mean-centres r * div without dividing by the group std.
            overrides["scale_rewards"] = "none"
        elif term.name == "passk":
            k = int(_param(term, "k", cfg.passk_k))
            for label, size in (
                ("num_generations", num_generations),
                ("num_generations_eval", num_generations_eval),
            ):
                if k < 1 or (size is not None and k > size):
                    raise ValueError(
                        f"reward passk: k={k} must be between 1 and {label}={size}; lower "
                        "rl.reward.passk_k (or passk:k=...) or raise the number of generations"
                    )
            if num_generations is not None and k == num_generations:
                # Every k-subset is then the whole group: one pass@k for all its completions,
                # so the advantage is zero everywhere and training silently does nothing.
                raise ValueError(
                    f"reward passk: k={k} equals num_generations={num_generations}, which makes "
                    "every pass@k advantage zero; use k < num_generations (e.g. "
                    f"rl.reward.passk_k={max(1, num_generations // 2)}) or raise rl.num_generations"
                )
            func = PassKReward(**common, k=k)
            # A is already the advantage (group mean 0, unit-free): TRL must not rescale it.
            overrides["scale_rewards"] = "none"
        elif term.name == "vector":
            func = VectorReward(
                **common,
                draws=int(_param(term, "draws", cfg.vector_draws)),
                alpha=float(_param(term, "alpha", cfg.vector_alpha)),
                seed=int(cfg.seed),
            )
        elif term.name == "unlikeliness":
            beta = float(_param(term, "beta", cfg.unlikeliness_beta))
            if not 0.0 <= beta <= 1.0:
                raise ValueError(f"reward unlikeliness beta must be in [0, 1], got {beta}")
            func = UnlikelinessReward(**common, beta=beta)
        else:  # parse_reward_spec admits only the names above
            raise AssertionError(term.name)
        funcs.append(func)
    weights = [term.weight for term in spec.terms]
    return TrlRewardSetup(
        reward_funcs=funcs,
        reward_weights=weights,
        grpo_overrides=overrides,
        stateful=stateful,
        spec=spec,
        advantage_terms=[(f, w) for f, w in zip(funcs, weights) if f.placement == "advantage"],
    )
