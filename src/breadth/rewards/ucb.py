"""Historical exploration: an outcome-count UCB bonus per problem.

Song, Kempe, Munos 2025, "Outcome-based Exploration for LLM Reasoning" (arXiv 2509.06941).
N(x, a) counts how often outcome a was sampled for problem x in *earlier* training batches,
correct or not. The paper's bonus and its baseline-corrected variants:

    b(x, a)   = min(1, 1 / sqrt(N(x, a)))            (N = 0 gives the cap, 1)
    ucb       : c * b(x, a_i)
    ucb_mean  : c * (b(x, a_i) - mean_j b(x, a_j))   mean over the group of problem x
    ucb_con   : c * (b(x, a_i) - b0)                 a constant baseline b0

The paper adds `c * bonus` to GRPO's *advantage*, outside the group normalisation (placement
`advantage`, the default: see `breadth.training.grpo`); with placement `reward` it is summed
into the reward before normalisation, where the group mean removes any constant baseline.
Defaults follow the paper's reported settings: `ucb_con`, c = 0.2, b0 = 0.5, all completions.

Named deviations, kept only as options: `apply_to="correct"` (the bonus only for correct
completions) and placement `reward`. `None` outcomes (nothing extractable) are counted as one
"no answer" outcome like any other, so unanswerable text does not keep a maximal bonus. The
paper does not say whether N may be 0; the min(1, .) cap gives such an outcome the full bonus.
Problem ids are compared as strings (they are keys of the JSON state).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

UCB_VARIANTS = ("ucb", "ucb_mean", "ucb_con")
UCB_APPLY_TO = ("all", "correct")
STATE_FORMAT = "breadth.OutcomeUCB/2"
DEFAULT_COEF = 0.2
DEFAULT_VARIANT = "ucb_con"
DEFAULT_BASELINE = 0.5


class OutcomeUCB:
    """Outcome counts per problem and the UCB bonus they give.

    Call `bonus` for a group first, then `update` with the same outcomes once the batch is
    scored (training batches only).

    >>> ucb = OutcomeUCB(coef=0.5, variant="ucb")
    >>> ucb.bonus("p1", ["4", "5"]).tolist()
    [0.5, 0.5]
    >>> ucb.update("p1", ["4", "4", "4", "4"])
    >>> ucb.bonus("p1", ["4", "5"]).round(4).tolist()
    [0.25, 0.5]
    """

    def __init__(
        self,
        coef: float = DEFAULT_COEF,
        variant: Literal["ucb", "ucb_mean", "ucb_con"] = DEFAULT_VARIANT,
        apply_to: Literal["all", "correct"] = "all",
        baseline: float = DEFAULT_BASELINE,
    ) -> None:
        if not 0 <= baseline <= 1:
            raise ValueError(f"OutcomeUCB baseline b0 must be in [0, 1] (b is), got {baseline}")
        if coef < 0:
            raise ValueError(f"OutcomeUCB coef must be >= 0, got {coef}")
        if variant not in UCB_VARIANTS:
            raise ValueError(f"OutcomeUCB variant must be one of {UCB_VARIANTS}, got {variant!r}")
        if apply_to not in UCB_APPLY_TO:
            raise ValueError(f"OutcomeUCB apply_to must be one of {UCB_APPLY_TO}, got {apply_to!r}")
        self.coef = float(coef)
        self.variant = variant
        self.apply_to = apply_to
        self.baseline = float(baseline)
        self._counts: dict[str, Counter[Hashable | None]] = {}

    def count(self, problem_id: Hashable, outcome: Hashable | None) -> int:
        """N(x, a): how often `outcome` was recorded for `problem_id`.

        >>> OutcomeUCB().count("p1", "4")
        0
        """
        counts = self._counts.get(str(problem_id))
        return counts[outcome] if counts else 0

    def bonus(
        self,
        problem_id: Hashable,
        outcomes: Sequence[Hashable | None],
        correct: Sequence[bool] | None = None,
    ) -> np.ndarray:
        """The bonus of each completion of one group, from the counts of earlier batches.

        `correct` is required when `apply_to="correct"`: incorrect completions get 0.

        >>> OutcomeUCB(0.5, "ucb", "correct").bonus("p", ["4", "5"], [True, False]).tolist()
        [0.5, 0.0]
        >>> OutcomeUCB(0.2, "ucb_con", baseline=0.5).bonus("p", ["4"]).tolist()
        [0.1]
        """
        counts = self._counts.get(str(problem_id), Counter())
        seen = np.array([counts[o] for o in outcomes], dtype=float)
        # min(1, 1/sqrt(N)): an outcome never seen (N = 0) gets the cap.
        raw = np.minimum(1.0, 1.0 / np.sqrt(np.maximum(seen, 1.0)))
        if self.apply_to == "correct":
            if correct is None or len(correct) != len(outcomes):
                raise ValueError(
                    "OutcomeUCB(apply_to='correct') needs one `correct` flag per outcome; "
                    f"got {None if correct is None else len(correct)} for {len(outcomes)} outcomes"
                )
            applies = np.asarray(correct, dtype=bool)
        else:
            applies = np.ones(len(outcomes), dtype=bool)
        if self.variant == "ucb_mean" and applies.any():
            raw = raw - raw[applies].mean()
        elif self.variant == "ucb_con":
            raw = raw - self.baseline
        return np.where(applies, self.coef * raw, 0.0)

    def update(self, problem_id: Hashable, outcomes: Sequence[Hashable | None]) -> None:
        """Add one batch's outcomes of `problem_id` to the counts (after computing bonuses).

        >>> ucb = OutcomeUCB(); ucb.update("p", [None, None, "4"]); ucb.count("p", None)
        2
        """
        self._counts.setdefault(str(problem_id), Counter()).update(outcomes)

    @property
    def num_problems(self) -> int:
        """Problems with at least one recorded outcome."""
        return len(self._counts)

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable counts (outcome `None` is stored as JSON null).

        >>> ucb = OutcomeUCB(); ucb.update("p", ["4"]); ucb.state_dict()["counts"]
        {'p': [['4', 1]]}
        """
        return {
            "format": STATE_FORMAT,
            "coef": self.coef,
            "variant": self.variant,
            "apply_to": self.apply_to,
            "baseline": self.baseline,
            "counts": {
                problem_id: [[outcome, n] for outcome, n in counts.items()]
                for problem_id, counts in sorted(self._counts.items())
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the counts saved by `state_dict`. Hyperparameters stay those of this object.

        >>> a = OutcomeUCB(); a.update("p", ["4"]); b = OutcomeUCB(); b.load_state_dict(a.state_dict())
        >>> b.count("p", "4")
        1
        """
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"not an OutcomeUCB state: format {state.get('format')!r}, expected "
                f"{STATE_FORMAT!r}; was the reward state file written by another reward spec?"
            )
        counts: dict[str, Counter[Hashable | None]] = {}
        for problem_id, pairs in state["counts"].items():
            bucket: Counter[Hashable | None] = Counter()
            for pair in pairs:
                if len(pair) != 2 or not isinstance(pair[1], int) or pair[1] < 0:
                    raise ValueError(
                        f"OutcomeUCB state: counts[{problem_id!r}] has a bad entry {pair!r}; "
                        "expected [outcome, non-negative count]"
                    )
                bucket[pair[0]] += pair[1]
            counts[str(problem_id)] = bucket
        self._counts = counts
