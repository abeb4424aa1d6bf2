"""Historical exploration: an outcome-count UCB bonus per problem.

Song, Kempe, Munos 2025, "Outcome-based Exploration for LLM Reasoning". N(x, a) counts how
often outcome a was produced for problem x in *earlier* training batches;
`bonus_i = c / sqrt(1 + N(x, outcome_i))`. The paper's exact constants were not available to
us: c is a config value (default 0.5).

Choices made here, each documented where it applies:
- `None` outcomes (nothing extractable) are counted as one "no answer" outcome, like any other,
  so unanswerable text does not keep a permanent maximal bonus.
- Problem ids are compared as strings (they are keys of the JSON state).
- `ucb_mean` subtracts the mean bonus over the completions the bonus applies to (all of them,
  or the correct ones under `apply_to="correct"`); the others keep 0. With `apply_to="all"`
  this is a per-group constant, which GRPO's group-centred advantage ignores; with
  `apply_to="correct"` it makes correct completions compete on rarity among themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

UCB_VARIANTS = ("ucb", "ucb_mean")
UCB_APPLY_TO = ("all", "correct")
STATE_FORMAT = "breadth.OutcomeUCB/1"


class OutcomeUCB:
    """Outcome counts per problem and the UCB bonus they give.

    Call `bonus` for a group first, then `update` with the same outcomes once the batch is
    scored (training batches only).

    >>> ucb = OutcomeUCB(coef=0.5)
    >>> ucb.bonus("p1", ["4", "5"]).tolist()
    [0.5, 0.5]
    >>> ucb.update("p1", ["4", "4", "4"])
    >>> ucb.bonus("p1", ["4", "5"]).round(4).tolist()
    [0.25, 0.5]
    """

    def __init__(
        self,
        coef: float = 0.5,
        variant: Literal["ucb", "ucb_mean"] = "ucb",
        apply_to: Literal["all", "correct"] = "all",
    ) -> None:
        if coef < 0:
            raise ValueError(f"OutcomeUCB coef must be >= 0, got {coef}")
        if variant not in UCB_VARIANTS:
            raise ValueError(f"OutcomeUCB variant must be one of {UCB_VARIANTS}, got {variant!r}")
        if apply_to not in UCB_APPLY_TO:
            raise ValueError(f"OutcomeUCB apply_to must be one of {UCB_APPLY_TO}, got {apply_to!r}")
        self.coef = float(coef)
        self.variant = variant
        self.apply_to = apply_to
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
        """
        counts = self._counts.get(str(problem_id), Counter())
        raw = self.coef / np.sqrt(1.0 + np.array([counts[o] for o in outcomes], dtype=float))
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
        return np.where(applies, raw, 0.0)

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
