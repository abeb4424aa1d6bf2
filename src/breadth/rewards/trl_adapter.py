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

Each term below is a small picklable class. Terms of one setup share a `BatchScorer`, so a
batch is verified once however many terms read it. Per-step diagnostics go to TRL's official
`log_metric` hook (averaged per logging step, prefixed `eval_` in evaluation) and are kept in
each term's `last_stats`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from breadth.rewards.darling import NgramOverlapJudge, darling_diversity, equivalence_classes
from breadth.rewards.groups import IncompleteGroupError, RowGroup, group_rows
from breadth.rewards.passk import group_passk, passk_advantages
from breadth.rewards.repetition import batch_repetition_penalty
from breadth.rewards.spec import RewardSpec, RewardTerm, parse_reward_spec
from breadth.rewards.ucb import OutcomeUCB
from breadth.rewards.unlikeliness import unlikeliness_reward
from breadth.rewards.vector import set_level_vector_reward

VerifyFn = Callable[[str, Mapping[str, Any]], Any]

# Keys TRL adds to the dataset columns; everything else of batch length is a column.
TRL_EXTRA_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
REQUIRED_COLUMNS = ("problem_id", "answer", "format", "task")
# Columns a rollout_func may add with the sampling log-probs (TRL does not pass them itself).
LOGPROB_MEAN_COLUMN = "completion_mean_logprob"
LOGPROBS_COLUMN = "completion_logprobs"


def completion_text(completion: Any) -> str:
    """The text of one completion, plain or conversational.

    >>> completion_text("42"), completion_text([{"role": "assistant", "content": "42"}])
    ('42', '42')
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content_text(completion.get("content"))
    if isinstance(completion, Sequence):
        return "".join(
            _content_text(message.get("content"))
            for message in completion
            if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant"
        )
    raise TypeError(
        f"a completion must be a string or a list of chat messages, got {type(completion).__name__}"
    )


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # Content blocks: [{"type": "text", "text": ...}, ...]
    return "".join(block.get("text", "") for block in content if isinstance(block, Mapping))


@dataclass
class ScoredBatch:
    """One reward call's batch, verified once and shared by every term."""

    texts: list[str]
    problem_ids: list[Any]
    splits: list[str] | None
    correct: np.ndarray
    """bool per completion."""
    scores: np.ndarray
    outcomes: list[str | None]
    """Canonical outcome per completion; None = nothing extracted (one "no answer" bucket)."""
    answered: np.ndarray
    """bool: an answer could be extracted."""
    groups: list[RowGroup] | None
    group_error: IncompleteGroupError | None = None

    def require_groups(self, term: str) -> list[RowGroup]:
        if self.group_error is not None:
            raise IncompleteGroupError(f"reward {term!r}: {self.group_error}")
        assert self.groups is not None
        return self.groups

    def train_only(self, group: RowGroup, term: str) -> bool:
        if self.splits is None:
            raise ValueError(
                f"reward {term!r} keeps state and must tell training from evaluation batches, "
                "but the batch has no `split` column; render rows with breadth.data.formats "
                "(they carry split = 'train' | 'eval') and keep GRPOConfig.remove_unused_columns"
                "=False"
            )
        return all(split == "train" for split in self.splits[group.rows])


class BatchScorer:
    """Verifies a batch once and caches it for the other terms of the same reward call."""

    def __init__(
        self,
        verify_fn: VerifyFn,
        num_generations: int | None = None,
        num_generations_eval: int | None = None,
    ) -> None:
        self.verify_fn = verify_fn
        self.num_generations = num_generations
        self.num_generations_eval = num_generations_eval or num_generations
        self._cache_key: tuple[Any, ...] | None = None
        self._cache: ScoredBatch | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache_key": None, "_cache": None}

    def _group_size(self, splits: list[str] | None) -> int | None:
        kinds = set(splits or ())
        if kinds == {"train"}:
            return self.num_generations
        if kinds == {"eval"}:
            return self.num_generations_eval
        return None

    def score(self, completions: Sequence[Any], columns: Mapping[str, Any]) -> ScoredBatch:
        size = len(completions)
        table = {
            key: value
            for key, value in columns.items()
            if key not in TRL_EXTRA_KWARGS
            and isinstance(value, (list, tuple))
            and len(value) == size
        }
        missing = [name for name in REQUIRED_COLUMNS if name not in table]
        if missing:
            raise ValueError(
                f"reward batch lacks the column(s) {missing} (has {sorted(table)}); train on "
                "rows rendered by breadth.data.formats and keep GRPOConfig.remove_unused_columns"
                "=False so TRL passes them to the reward functions"
            )
        texts = [completion_text(c) for c in completions]
        problem_ids = list(table["problem_id"])
        splits = list(table["split"]) if "split" in table else None
        key = (tuple(texts), tuple(problem_ids), tuple(splits or ()))
        if key == self._cache_key and self._cache is not None:
            return self._cache
        rows = [{name: column[i] for name, column in table.items()} for i in range(size)]
        verdicts = [self.verify_fn(text, row) for text, row in zip(texts, rows)]
        outcomes = [v.outcome for v in verdicts]
        try:
            groups, error = group_rows(problem_ids, self._group_size(splits)), None
        except IncompleteGroupError as exc:
            groups, error = None, exc
        batch = ScoredBatch(
            texts=texts,
            problem_ids=problem_ids,
            splits=splits,
            correct=np.array([bool(v.correct) for v in verdicts], dtype=bool),
            scores=np.array([float(v.score) for v in verdicts], dtype=float),
            outcomes=outcomes,
            answered=np.array([o is not None for o in outcomes], dtype=bool),
            groups=groups,
            group_error=error,
        )
        self._cache_key, self._cache = key, batch
        return batch


def batch_diagnostics(batch: ScoredBatch) -> dict[str, float]:
    """Accuracy, answer rate and distinct outcomes per group (None counts as one outcome)."""
    stats = {
        "breadth/accuracy": float(batch.correct.mean()) if batch.texts else 0.0,
        "breadth/answered": float(batch.answered.mean()) if batch.texts else 0.0,
    }
    if batch.groups:
        distinct = [len(set(batch.outcomes[g.rows])) for g in batch.groups]
        stats["breadth/distinct_outcomes_per_group"] = float(np.mean(distinct))
        stats["breadth/distinct_outcome_fraction"] = float(
            np.mean([d / g.size for d, g in zip(distinct, batch.groups)])
        )
    return stats


class RewardTermFunc:
    """Base of the TRL reward callables: verify (shared), compute, record and log stats."""

    def __init__(self, name: str, scorer: BatchScorer, log_batch_diagnostics: bool = False):
        self.__name__ = name
        self.scorer = scorer
        self.log_batch_diagnostics = log_batch_diagnostics
        self.last_stats: dict[str, float] = {}

    def compute(self, batch: ScoredBatch, kwargs: Mapping[str, Any]) -> tuple[np.ndarray, dict]:
        raise NotImplementedError

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        batch = self.scorer.score(completions, kwargs)
        values, own = self.compute(batch, kwargs)
        stats = {f"breadth/{self.__name__}/{key}": float(v) for key, v in own.items()}
        if self.log_batch_diagnostics:
            stats.update(batch_diagnostics(batch))
        self.last_stats = {key: v for key, v in stats.items() if np.isfinite(v)}
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for key, value in self.last_stats.items():
                log_metric(key, value)
        return [float(v) for v in values]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.__name__!r})"


class CorrectnessReward(RewardTermFunc):
    """1.0 when the verifier accepts the completion, else 0.0."""

    def compute(self, batch, kwargs):
        # TRL already logs rewards/correctness/mean; the batch diagnostics add the rest.
        return batch.correct.astype(float), {}


class FormatReward(RewardTermFunc):
    """`bonus` when an answer could be extracted (a well-formed answer line), else 0."""

    def __init__(self, name: str, scorer: BatchScorer, bonus: float = 0.1, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.bonus = bonus

    def compute(self, batch, kwargs):
        values = self.bonus * batch.answered.astype(float)
        return values, {"answered": batch.answered.mean() if values.size else 0.0}


class UCBReward(RewardTermFunc):
    """Outcome-count UCB bonus; counts updated after scoring, on training groups only."""

    def __init__(self, name: str, scorer: BatchScorer, ucb: OutcomeUCB, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.ucb = ucb

    def compute(self, batch, kwargs):
        groups = batch.require_groups(self.__name__)
        values = np.zeros(len(batch.texts))
        for group in groups:
            values[group.rows] = self.ucb.bonus(
                group.problem_id, batch.outcomes[group.rows], batch.correct[group.rows]
            )
        # Bonuses of the whole batch come from earlier batches only: update afterwards.
        for group in groups:
            if batch.train_only(group, self.__name__):
                self.ucb.update(group.problem_id, batch.outcomes[group.rows])
        return values, {
            "bonus_mean": values.mean() if values.size else 0.0,
            "problems_tracked": self.ucb.num_problems,
        }

    def state_dict(self) -> dict[str, Any]:
        return self.ucb.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ucb.load_state_dict(state)


class BatchRepetitionReward(RewardTermFunc):
    """Minus the within-group repetition penalty."""

    def __init__(self, name: str, scorer: BatchScorer, coef: float = 0.5, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.coef = coef

    def compute(self, batch, kwargs):
        values = np.zeros(len(batch.texts))
        for group in batch.require_groups(self.__name__):
            values[group.rows] = -batch_repetition_penalty(batch.outcomes[group.rows], self.coef)
        return values, {"penalty_mean": -values.mean() if values.size else 0.0}


class DarlingReward(RewardTermFunc):
    """correctness * DARLING diversity; judge "outcome" (equal outcomes) or "text"."""

    def __init__(
        self,
        name: str,
        scorer: BatchScorer,
        judge: str = "outcome",
        n: int = 2,
        threshold: float = 0.5,
        **kw: Any,
    ):
        super().__init__(name, scorer, **kw)
        self.judge = judge
        self.text_judge = NgramOverlapJudge(n=n, threshold=threshold) if judge == "text" else None

    def compute(self, batch, kwargs):
        values = np.zeros(len(batch.texts))
        classes = []
        for group in batch.require_groups(self.__name__):
            items = batch.texts[group.rows] if self.text_judge else batch.outcomes[group.rows]
            class_ids = equivalence_classes(items, self.text_judge)
            classes.append(max(class_ids) + 1)
            diversity = darling_diversity(class_ids)
            values[group.rows] = batch.correct[group.rows] * diversity
        return values, {"classes_per_group": np.mean(classes) if classes else 0.0}


class PassKReward(RewardTermFunc):
    """Pass@k advantages A (use with scale_rewards="none": the advantage is then A)."""

    def __init__(self, name: str, scorer: BatchScorer, k: int = 4, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.k = k

    def compute(self, batch, kwargs):
        values = np.zeros(len(batch.texts))
        group_values = []
        for group in batch.require_groups(self.__name__):
            correct = batch.correct[group.rows]
            values[group.rows] = passk_advantages(correct, self.k)
            group_values.append(group_passk(correct, self.k))
        return values, {"group_passk_mean": np.mean(group_values) if group_values else 0.0}


class VectorReward(RewardTermFunc):
    """breadth's set-level vector reward over (correctness, verifier score, uniqueness).

    uniqueness is the DARLING diversity of the completion's outcome in its group. The Dirichlet
    draws are seeded by (seed, global step, problem_id), so a resumed run draws the same.
    """

    def __init__(
        self,
        name: str,
        scorer: BatchScorer,
        draws: int = 64,
        alpha: float = 1.0,
        seed: int = 0,
        **kw: Any,
    ):
        super().__init__(name, scorer, **kw)
        self.draws, self.alpha, self.seed = draws, alpha, seed

    def compute(self, batch, kwargs):
        step = int(getattr(kwargs.get("trainer_state"), "global_step", 0) or 0)
        values = np.zeros(len(batch.texts))
        for group in batch.require_groups(self.__name__):
            uniqueness = darling_diversity(equivalence_classes(batch.outcomes[group.rows]))
            vectors = np.column_stack(
                [batch.correct[group.rows].astype(float), batch.scores[group.rows], uniqueness]
            )
            pid_hash = zlib.crc32(str(group.problem_id).encode())
            rng = np.random.default_rng([self.seed, step, pid_hash])
            values[group.rows] = set_level_vector_reward(vectors, self.draws, self.alpha, rng)
        return values, {"abs_mean": np.abs(values).mean() if values.size else 0.0}


class UnlikelinessReward(RewardTermFunc):
    """correctness * (1 - beta * rank / G), rank of the sampling log-prob (0 = least likely).

    TRL 1.16 does not pass sampling log-probs to reward functions: a rollout_func must add a
    `completion_mean_logprob` (float) or `completion_logprobs` (per-token list) field.
    """

    def __init__(self, name: str, scorer: BatchScorer, beta: float = 0.25, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.beta = beta

    def _mean_logprobs(self, kwargs: Mapping[str, Any]) -> np.ndarray:
        if LOGPROB_MEAN_COLUMN in kwargs:
            return np.asarray(kwargs[LOGPROB_MEAN_COLUMN], dtype=float)
        if LOGPROBS_COLUMN in kwargs:
            return np.array(
                [float(np.mean(lp)) if len(lp) else 0.0 for lp in kwargs[LOGPROBS_COLUMN]]
            )
        raise ValueError(
            f"reward 'unlikeliness' needs the sampling log-probs: a `{LOGPROB_MEAN_COLUMN}` or "
            f"`{LOGPROBS_COLUMN}` field per completion (TRL 1.16 does not pass them to reward "
            "functions; return it from a rollout_func as an extra field)"
        )

    def compute(self, batch, kwargs):
        logprobs = self._mean_logprobs(kwargs)
        values = np.zeros(len(batch.texts))
        for group in batch.require_groups(self.__name__):
            values[group.rows] = unlikeliness_reward(
                batch.correct[group.rows].astype(float), logprobs[group.rows], self.beta
            )
        return values, {"correct_mean": batch.correct.mean() if values.size else 0.0}


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
            )
            func = UCBReward(**common, ucb=ucb)
            stateful.append(func)
        elif term.name == "batch":
            coef = float(_param(term, "coef", cfg.batch_coef))
            if coef < 0:
                raise ValueError(f"reward batch coef must be >= 0, got {coef}")
            func = BatchRepetitionReward(**common, coef=coef)
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
    return TrlRewardSetup(
        reward_funcs=funcs,
        reward_weights=[term.weight for term in spec.terms],
        grpo_overrides=overrides,
        stateful=stateful,
        spec=spec,
    )
