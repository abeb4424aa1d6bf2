"""The reward registry: each reward name -> its term class, parameters and help.

Everything that knows reward names reads this one table: the spec parser
(`breadth.rewards.spec`), `RewardConfig` (one field `<name>_<param>` per parameter, so
`rl.reward.passk_k`), the reward plan (`breadth.rewards.plan`), `breadth config --keys` and
`breadth config --rewards` (the README's reward table). Adding a reward means one term class
(`breadth.rewards.terms`) plus one `RewardEntry` below; `register` adds one from outside, before
or after `breadth.config` is imported: the config checks `rl.reward.<name>_<param>` against this
table when it validates (a reward registered later has no field in the Prefect run form's
schema, and is still taken from presets, `--set` and the form's submitted values).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from breadth.rewards.terms import (
    PLACEMENTS,
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
from breadth.rewards.ucb import UCB_APPLY_TO, UCB_VARIANTS, OutcomeUCB

ParamValue = int | float | str


@dataclass(frozen=True)
class RewardParam:
    """One parameter of a reward term: inline (`passk:k=8`) or a config field (`passk_k`)."""

    name: str
    default: ParamValue
    """Its type (int, float or str) is the parameter's type."""
    help: str
    choices: tuple[str, ...] = ()
    """Allowed values of a str parameter."""
    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    @property
    def kind(self) -> type:
        return type(self.default)

    def bounds_text(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        parts = [f"{op} {bound:g}" for op, bound in ((">=", self.ge), (">", self.gt),
                                                     ("<=", self.le)) if bound is not None]
        return ", ".join(parts)

    def check(self, value: Any, where: str) -> ParamValue:
        """`value` typed and range-checked; ValueError names `where` and the allowed values.

        >>> RewardParam("k", 4, "k", ge=1).check("8", "passk:k")
        8
        >>> RewardParam("k", 4, "k", ge=1).check(0, "passk:k")
        Traceback (most recent call last):
        ValueError: passk:k=0 is out of range; allowed: >= 1
        """
        if self.choices:
            if value not in self.choices:
                raise ValueError(
                    f"{where}={value!r} is not allowed; use one of {', '.join(self.choices)}"
                )
            return str(value)
        try:
            typed: Any = self.kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}={value!r} must be {self.kind.__name__}") from None
        if self.kind is int and isinstance(value, float) and value != typed:
            raise ValueError(f"{where}={value!r} must be int")
        if isinstance(typed, float) and not math.isfinite(typed):
            raise ValueError(f"{where}={value!r} must be finite")
        out_of_range = (
            (self.ge is not None and typed < self.ge)
            or (self.gt is not None and typed <= self.gt)
            or (self.le is not None and typed > self.le)
        )
        if out_of_range:
            raise ValueError(f"{where}={value!r} is out of range; allowed: {self.bounds_text()}")
        return typed


@dataclass(frozen=True)
class RewardEntry:
    """A reward name and everything the spec parser, the config and the adapter need."""

    name: str
    term: type[RewardTermFunc]
    """Built as term(name, scorer, log_batch_diagnostics=..., seed=..., **params)."""
    help: str
    params: tuple[RewardParam, ...] = ()
    base: bool = False
    """Contains the task reward itself: a spec holds at most one base term."""
    not_in_training: str = ""
    """Why the GRPO pipeline cannot run this term (empty: it can); the config refuses it."""

    def param(self, key: str) -> RewardParam | None:
        return next((p for p in self.params if p.name == key), None)

    def config_key(self, param: RewardParam) -> str:
        """The RewardConfig field of a parameter: `passk` + `k` -> `passk_k`."""
        return f"{self.name}_{param.name}"


def _constructor_default(cls: type, name: str) -> Any:
    # OutcomeUCB documents its own defaults; read them rather than repeat them.
    return inspect.signature(cls).parameters[name].default


REWARDS: dict[str, RewardEntry] = {}


def register(entry: RewardEntry) -> RewardEntry:
    """Add `entry`; a name already taken is refused (no silent replacement)."""
    if entry.name in REWARDS:
        raise ValueError(f"reward {entry.name!r} is already registered")
    if not entry.name.isidentifier():
        raise ValueError(f"reward name {entry.name!r} must be an identifier (it names a config key)")
    REWARDS[entry.name] = entry
    return entry


def reward_names() -> tuple[str, ...]:
    return tuple(REWARDS)


def resolve_params(
    name: str, inline: Mapping[str, ParamValue], reward_config: Any | None = None
) -> dict[str, ParamValue]:
    """Each parameter's value: inline in the spec, else the config field, else the default."""
    entry = REWARDS[name]
    values: dict[str, ParamValue] = {}
    for param in entry.params:
        if param.name in inline:
            values[param.name] = inline[param.name]
        else:
            value = getattr(reward_config, entry.config_key(param), param.default)
            values[param.name] = param.check(value, f"rl.reward.{entry.config_key(param)}")
    return values


def param_text(entry: RewardEntry, param: RewardParam) -> str:
    """One parameter of a reward as its table shows it, code in backticks.

    >>> param_text(REWARDS["format"], REWARDS["format"].params[0])
    '`bonus` (`rl.reward.format_bonus` = 0.1; >= 0): bonus for a well-formed answer line'
    """
    bounds = f"; {param.bounds_text()}" if param.bounds_text() else ""
    return (f"`{param.name}` (`rl.reward.{entry.config_key(param)}` = {param.default!r}{bounds})"
            f": {param.help}")


def reward_table_markdown() -> str:
    """The README's reward table, generated from the registry
    (`breadth config --rewards --markdown`; a terminal gets `breadth.cli.config`'s table)."""
    lines = ["| reward | what it gives | parameters (config key = default) |", "|---|---|---|"]
    for entry in REWARDS.values():
        params = "<br>".join(param_text(entry, p) for p in entry.params)
        note = f" **Not in training:** {entry.not_in_training}" if entry.not_in_training else ""
        lines.append(f"| `{entry.name}` | {entry.help}{note} | {params or '-'} |")
    return "\n".join(lines)


register(RewardEntry("correctness", CorrectnessReward, "1 when the verifier accepts, else 0.",
                     base=True))
register(RewardEntry(
    "format", FormatReward, "A bonus when an answer could be extracted.",
    (RewardParam("bonus", 0.1, "bonus for a well-formed answer line", ge=0),),
))
PLACEMENT_HELP = ("advantage: added to GRPO's normalised advantage, as the outcome-based "
                  "exploration paper does; reward: added to the reward before normalisation "
                  "(a deviation)")
register(RewardEntry(
    "ucb", UCBReward,
    "Outcome-count UCB bonus (Song, Kempe, Munos 2025): b = min(1, 1/sqrt(N(x, outcome))) "
    "from earlier batches, c * (b - b0) by default (stateful).",
    (
        RewardParam("coef", _constructor_default(OutcomeUCB, "coef"), "bonus coefficient c",
                    ge=0),
        RewardParam("variant", _constructor_default(OutcomeUCB, "variant"),
                    "`ucb` = `c*b`, `ucb_mean` = `c*(b - mean of b over the group)`, `ucb_con` = "
                    "`c*(b - baseline)`",
                    choices=UCB_VARIANTS),
        RewardParam("baseline", _constructor_default(OutcomeUCB, "baseline"),
                    "constant baseline b0 of ucb_con", ge=0, le=1),
        RewardParam("apply_to", _constructor_default(OutcomeUCB, "apply_to"),
                    "all completions (the paper) or only correct ones (a deviation)",
                    choices=UCB_APPLY_TO),
        RewardParam("placement", "advantage", PLACEMENT_HELP, choices=PLACEMENTS),
    ),
))
register(RewardEntry(
    "batch", BatchRepetitionReward, "Minus a within-group repetition penalty.",
    (
        RewardParam("coef", 0.5, "repetition penalty coefficient", ge=0),
        RewardParam("placement", "advantage", PLACEMENT_HELP, choices=PLACEMENTS),
    ),
))
register(RewardEntry(
    "darling", DarlingReward, "Correctness times within-group diversity (DARLING).",
    (
        RewardParam("judge", "outcome", "outcome: equal outcomes are equivalent; text: n-gram "
                    "overlap of the texts", choices=("outcome", "text")),
        RewardParam("n", 2, "n-gram size of the text judge", ge=1),
        RewardParam("threshold", 0.5, "overlap at which the text judge calls two texts "
                    "equivalent", ge=0, le=1),
    ),
    base=True,
))
register(RewardEntry(
    "passk", PassKReward, "Pass@k advantages (sets scale_rewards=none).",
    (RewardParam("k", 4, "target k; 1 <= k < rl.num_generations", ge=1),),
    base=True,
))
register(RewardEntry(
    "vector", VectorReward,
    "Set-level vector reward over (correctness, score, uniqueness), seeded by the run's seed.",
    (
        RewardParam("draws", 64, "Dirichlet draws", ge=1),
        RewardParam("alpha", 1.0, "Dirichlet concentration", gt=0),
    ),
    base=True,
))
register(RewardEntry(
    "unlikeliness", UnlikelinessReward,
    "Correctness times (1 - beta * likelihood rank / G).",
    (RewardParam("beta", 0.25, "rank penalty beta", ge=0, le=1),),
    base=True,
    not_in_training="it needs each completion's sampling log-prob (a `completion_mean_logprob` "
    "column), which TRL's GRPOTrainer does not pass to reward functions.",
))
