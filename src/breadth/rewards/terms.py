"""The per-term TRL reward callables (one small picklable class per reward name).

Each term reads the batch its `BatchScorer` verified once (`breadth.rewards.scoring`), computes
one value per completion and records its diagnostics. Every term is built the same way,
`Term(name, scorer, log_batch_diagnostics=..., seed=..., **params)`, with the parameters (and
their defaults) declared once in `breadth.rewards.registry`; `breadth.rewards.trl_adapter`
builds them from a reward spec.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from breadth.rewards.darling import NgramOverlapJudge, darling_diversity, equivalence_classes
from breadth.rewards.passk import group_passk, passk_advantages
from breadth.rewards.repetition import batch_repetition_penalty
from breadth.rewards.scoring import BatchScorer, ScoredBatch, batch_diagnostics
from breadth.rewards.ucb import OutcomeUCB
from breadth.rewards.unlikeliness import unlikeliness_reward
from breadth.rewards.vector import set_level_vector_reward

# Columns a rollout_func may add with the sampling log-probs (TRL does not pass them itself).
LOGPROB_MEAN_COLUMN = "completion_mean_logprob"
LOGPROBS_COLUMN = "completion_logprobs"


PLACEMENTS = ("advantage", "reward")

GatherObjects = Callable[[Any], list[Any]]
"""All-gather across the training processes: each process passes one picklable object and
gets every process's, in rank order (`breadth.training.distributed.gather_objects`)."""


def single_process_gather(obj: Any) -> list[Any]:
    """The all-gather of a run with one process: its own object, alone.

    >>> single_process_gather({"p": ["4"]})
    [{'p': ['4']}]
    """
    return [obj]


class RewardTermFunc:
    """Base of the TRL reward callables: verify (shared), compute, record and log stats.

    `placement="reward"`: the values enter TRL's reward sum, before the group normalisation.
    `placement="advantage"`: TRL gets zeros, and the values wait in `pending_advantage` for
    `breadth.training.grpo` to add them to the normalised advantages, where the outcome-based
    exploration paper puts its bonuses (there a constant baseline is not cancelled by the group
    mean, and the bonus is not rescaled by the group's reward std).
    """

    grpo_overrides: ClassVar[dict[str, Any]] = {}
    """GRPOConfig fields this term's formula requires."""

    def __init__(
        self,
        name: str,
        scorer: BatchScorer,
        *,
        log_batch_diagnostics: bool = False,
        seed: int = 0,
        placement: str = "reward",
    ) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"reward {name}: placement must be one of {PLACEMENTS}, got {placement!r}")
        self.__name__ = name
        self.scorer = scorer
        self.log_batch_diagnostics = log_batch_diagnostics
        self.seed = seed
        self.placement = placement
        self.pending_advantage: np.ndarray | None = None
        self.last_stats: dict[str, float] = {}
        self.gather_objects: GatherObjects = single_process_gather
        """Set by the trainer when several processes train: terms with state share it."""

    def take_pending_advantage(self) -> np.ndarray | None:
        """The advantage-placed values of the last call, once (None if nothing is pending)."""
        pending, self.pending_advantage = self.pending_advantage, None
        return pending

    @classmethod
    def check_group_sizes(cls, params: Mapping[str, Any], sizes: Mapping[str, int | None]) -> None:
        """Raise ValueError when `params` cannot work with these group sizes (config key ->
        size, e.g. {"rl.num_generations": 8}); called by the config and by the adapter."""

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
        if self.placement == "advantage":
            self.pending_advantage = np.asarray(values, dtype=float)
            return [0.0] * len(values)
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

    def __init__(self, name: str, scorer: BatchScorer, *, bonus: float, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.bonus = bonus

    def compute(self, batch, kwargs):
        values = self.bonus * batch.answered.astype(float)
        return values, {"answered": batch.answered.mean() if values.size else 0.0}


class UCBReward(RewardTermFunc):
    """Outcome-count UCB bonus; counts updated after scoring, on training groups only.

    The counts are global: each process adds the training outcomes of every process's groups
    (through `gather_objects`), so all processes hold the counts one process would hold, give
    the same bonus to the same outcome, and any one of them can checkpoint the counts.
    The keywords beyond the base class's are OutcomeUCB's constructor arguments.
    """

    def __init__(self, name: str, scorer: BatchScorer, **kw: Any):
        base = {key: kw.pop(key) for key in ("log_batch_diagnostics", "seed", "placement")
                if key in kw}
        super().__init__(name, scorer, **base)
        self.ucb = OutcomeUCB(**kw)

    def compute(self, batch, kwargs):
        groups = batch.require_groups(self.__name__)
        values = np.zeros(len(batch.texts))
        for group in groups:
            values[group.rows] = self.ucb.bonus(
                group.problem_id, batch.outcomes[group.rows], batch.correct[group.rows]
            )
        # Bonuses of the whole batch come from earlier batches only: update afterwards. Every
        # process calls this once per reward call, so the all-gather runs in step on all of them.
        local = [(str(group.problem_id), list(batch.outcomes[group.rows])) for group in groups
                 if batch.train_only(group, self.__name__)]
        for updates in self.gather_objects(local):
            for problem_id, outcomes in updates:
                self.ucb.update(problem_id, outcomes)
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

    def __init__(self, name: str, scorer: BatchScorer, *, coef: float, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.coef = coef

    def compute(self, batch, kwargs):
        values = np.zeros(len(batch.texts))
        for group in batch.require_groups(self.__name__):
            values[group.rows] = -batch_repetition_penalty(batch.outcomes[group.rows], self.coef)
        return values, {"penalty_mean": -values.mean() if values.size else 0.0}


class DarlingReward(RewardTermFunc):
    """correctness * DARLING diversity; judge "outcome" (equal outcomes) or "text"."""

    # DARLING mean-centres r * div without dividing by the group std.
    grpo_overrides: ClassVar[dict[str, Any]] = {"scale_rewards": "none"}

    def __init__(
        self, name: str, scorer: BatchScorer, *, judge: str, n: int, threshold: float, **kw: Any
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

    # A is already the advantage (group mean 0, unit-free): TRL must not rescale it.
    grpo_overrides: ClassVar[dict[str, Any]] = {"scale_rewards": "none"}

    def __init__(self, name: str, scorer: BatchScorer, *, k: int, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.k = k

    @classmethod
    def check_group_sizes(cls, params: Mapping[str, Any], sizes: Mapping[str, int | None]) -> None:
        """1 <= k <= every group size, and k < the first (training) group size.

        >>> PassKReward.check_group_sizes({"k": 4}, {"rl.num_generations": 8}) is None
        True
        """
        k = int(params["k"])
        for key, size in sizes.items():
            if k < 1 or (size is not None and k > size):
                raise ValueError(
                    f"reward passk: k={k} must be between 1 and {key}={size}; lower "
                    f"rl.reward.passk_k (or passk:k=...) or raise {key}"
                )
        train_key, train_size = next(iter(sizes.items()), ("", None))
        if train_size is not None and k == train_size:
            # Every k-subset is then the whole group: one pass@k for all its completions,
            # so the advantage is zero everywhere and training silently does nothing.
            raise ValueError(
                f"reward passk: k={k} equals {train_key}={train_size}, which makes every pass@k "
                f"advantage zero; use k < {train_key} (e.g. rl.reward.passk_k="
                f"{max(1, train_size // 2)}) or raise {train_key}"
            )

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

    def __init__(self, name: str, scorer: BatchScorer, *, draws: int, alpha: float, **kw: Any):
        super().__init__(name, scorer, **kw)
        self.draws, self.alpha = draws, alpha

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

    def __init__(self, name: str, scorer: BatchScorer, *, beta: float, **kw: Any):
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
