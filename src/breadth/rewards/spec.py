"""Parse a reward spec string: terms joined by '+', each `NAME[:key=val,...][*weight]`.

    "correctness"                      plain verifier reward
    "correctness+ucb*0.5+batch"        correctness, half-weighted UCB bonus, repetition penalty
    "passk:k=8"                        pass@k advantages with k = 8
    "darling:judge=text,threshold=0.6" DARLING with the n-gram text judge

Names, parameters and their types come from `breadth.rewards.registry`. Inline params
override the RewardConfig fields. A spec holds at most one *base* term (one that contains the
task reward itself, e.g. correctness or darling): `darling`, `passk`, `vector` and
`unlikeliness` already multiply or transform correctness, so adding `correctness` beside them
would count it twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from breadth.display.suggestions import did_you_mean
from breadth.rewards.registry import REWARDS, ParamValue, reward_names


@dataclass(frozen=True)
class RewardTerm:
    """One term of a reward spec."""

    name: str
    """A registered reward name (`breadth.rewards.registry`)."""
    params: dict[str, ParamValue] = field(default_factory=dict)
    """Inline parameters (`passk:k=8` gives {"k": 8}), typed and checked by the registry."""
    weight: float = 1.0
    """TRL reward weight of this term (`ucb*0.5` gives 0.5)."""


@dataclass(frozen=True)
class RewardSpec:
    """A parsed reward spec: its terms in the order written."""

    terms: tuple[RewardTerm, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(term.name for term in self.terms)

    def term(self, name: str) -> RewardTerm | None:
        return next((term for term in self.terms if term.name == name), None)


def _unknown_name(spec: str, name: str) -> ValueError:
    return ValueError(
        f"reward spec {spec!r}: unknown reward {name!r}.{did_you_mean(name, reward_names())} "
        f"Allowed names: {', '.join(reward_names())}"
    )


def _parse_term(spec: str, text: str) -> RewardTerm:
    body, weight = text, 1.0
    if "*" in text:
        body, _, raw_weight = text.rpartition("*")
        try:
            weight = float(raw_weight)
        except ValueError:
            raise ValueError(
                f"reward spec {spec!r}: weight {raw_weight!r} in term {text!r} is not a number "
                "(write e.g. ucb*0.5)"
            ) from None
        if not math.isfinite(weight):
            raise ValueError(f"reward spec {spec!r}: weight in term {text!r} must be finite")
    name, _, raw_params = body.partition(":")
    name = name.strip()
    if name not in REWARDS:
        raise _unknown_name(spec, name)
    entry = REWARDS[name]
    params: dict[str, ParamValue] = {}
    for item in filter(None, (part.strip() for part in raw_params.split(","))):
        key, eq, raw = (part.strip() for part in item.partition("="))
        if not eq or not raw:
            raise ValueError(
                f"reward spec {spec!r}: parameter {item!r} of {name} is not key=value "
                "(write e.g. passk:k=8)"
            )
        param = entry.param(key)
        if param is None:
            allowed = ", ".join(p.name for p in entry.params) or "none"
            raise ValueError(
                f"reward spec {spec!r}: {name} has no parameter {key!r}; allowed: {allowed}"
            )
        if key in params:
            raise ValueError(f"reward spec {spec!r}: {name}:{key} is given twice")
        try:
            params[key] = param.check(raw, f"{name}:{key}")
        except ValueError as error:
            raise ValueError(f"reward spec {spec!r}: {error}") from None
    return RewardTerm(name=name, params=params, weight=weight)


def parse_reward_spec(spec: str) -> RewardSpec:
    """Parse `NAME[:key=val,...][*weight]` terms joined by '+'.

    Raises ValueError on unknown names (listing the allowed ones), unknown or mistyped
    parameters, repeated terms, and more than one base term.

    >>> parse_reward_spec("correctness+ucb*0.5").names
    ('correctness', 'ucb')
    >>> parse_reward_spec("passk:k=8").terms[0].params
    {'k': 8}
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(
            f"reward spec must be a non-empty string like 'correctness+ucb', got {spec!r}; "
            f"allowed names: {', '.join(reward_names())}"
        )
    texts = [part.strip() for part in spec.split("+")]
    if any(not text for text in texts):
        raise ValueError(f"reward spec {spec!r} has an empty term (a stray '+')")
    terms = tuple(_parse_term(spec, text) for text in texts)
    names = [term.name for term in terms]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"reward spec {spec!r} repeats {', '.join(repeated)}; give each term once "
            "(use *weight to scale it)"
        )
    bases = [name for name in names if REWARDS[name].base]
    if len(bases) > 1:
        all_bases = ", ".join(entry.name for entry in REWARDS.values() if entry.base)
        raise ValueError(
            f"reward spec {spec!r} combines {' and '.join(bases)}, which each contain the task "
            f"reward (base terms: {all_bases}); keep one of them, e.g. 'darling' or "
            "'correctness+batch'"
        )
    return RewardSpec(terms=terms)
