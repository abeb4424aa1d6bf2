"""Each measured claim row's power: the spread of its per-seed means, the Holm half-width it
had, the seeds it would need, and why an *inconclusive* row is inconclusive.

A row's seed sd is its standard error times √S (the spread of the S per-seed paired means).
The seeds it needs come from `breadth.evaluation.sizing` at Holm's strictest level for the
family it was decided in (α / m), for a half-width below δ / 2 (a verdict guaranteed: an
interval holding 0 then lies within ±δ) and below δ (*no effect* reachable). An inconclusive
row is either

- *underpowered*: its Holm half-width is at least δ, so no interval holding 0 can lie
  within ±δ; the row says how many seeds its spread needs;
- or *near δ*: its interval is narrower than δ but holds 0 and reaches past ±δ, so the effect
  is about δ in size. More seeds settle that too, but the interval is not too wide for δ.

A power pilot (`scripts/pilot_claims.py`, its `pilot.json`) can be given beside the grid, read
by `read_pilot_sizing` from a path the caller names: the rows whose measure the pilot sized
then cite its sd and seeds needed beside the run's own.

An inconclusive row also prices the seeds it needs against the nightly's budget
(`NightlyBudget`: the grid's own minutes of stage work per seed, on the nightly's workers,
against its hours), so a δ that no nightly of this machine can reach says so in its row.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from breadth.evaluation.sizing import decisive_half_width, half_width, seeds_needed

__all__ = ["PILOT_MEASURES", "NightlyBudget", "PilotSizing", "RowPower", "nightly_budget",
           "read_pilot_sizing", "row_power"]

UNDERPOWERED, NEAR_DELTA = "underpowered", "near δ"

PILOT_MEASURES: dict[tuple[str, str], tuple[str, float]] = {
    ("sharpening", "pass@1"): ("Δ pass@1", 1.0),
    ("sharpening", "pass@n"): ("Δ pass@n", 1.0),
    ("transfer", "distinct"): ("Δ distinct outcomes, SFT-unsolved (held-out half)", 1.0),
    ("forking", "forking"): ("Δ forking share of reasoning tokens", 1.0),
    # A difference of two formats' falls, each as the pilot measured one: sd x sqrt(2).
    ("format", "format"): ("relative fall of distinct reasoning paths (1 - RL/SFT)",
                           math.sqrt(2.0)),
}
"""(claim, δ name) -> (the pilot's measure, as `pilot_claims.py` keys it in pilot.json, and the
row's spread over that measure's). Rows not here (ucb, the objectives' correct answers,
search) measure contrasts the pilot did not run: they cite no pilot numbers."""


@dataclass(frozen=True)
class PilotSizing:
    """A power pilot's per-seed values of each measure (pilot.json's "seeds")."""

    values: dict[str, tuple[float, ...]]
    format: str = "free_form"
    """The format the pilot's preset ran: its numbers are cited on that format's rows (and the
    format claim's "both")."""
    source: str = ""

    def sd_of(self, claim: str, delta_name: str, fmt: str) -> tuple[float, int] | None:
        """(seed sd on the row's scale, the pilot's seeds with a value), or None where the
        pilot did not measure this row."""
        if (claim, delta_name) not in PILOT_MEASURES or fmt not in (self.format, "both"):
            return None
        label, spread = PILOT_MEASURES[(claim, delta_name)]
        finite = np.array([v for v in self.values.get(label, ()) if math.isfinite(v)])
        if finite.size < 2:
            return None
        return float(finite.std(ddof=1)) * spread, int(finite.size)


def read_pilot_sizing(path: Path, fmt: str = "free_form") -> PilotSizing:
    """`scripts/pilot_claims.py`'s JSON ({"seeds": [{measure: value, ...}, ...], ...}) at `path`;
    `fmt` is the format its preset ran (the pilot's presets are free-form)."""
    path = Path(path)
    try:
        seeds = json.loads(path.read_text())["seeds"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"pilot sizing {path}: not a pilot_claims.py JSON with a 'seeds' list "
                         f"({error}); write it with scripts/pilot_claims.py") from error
    labels = {label for label, _ in PILOT_MEASURES.values()}
    values = {label: tuple(float(s[label]) if s.get(label) is not None else math.nan
                           for s in seeds) for label in labels}
    return PilotSizing(values, fmt, str(path))


@dataclass(frozen=True)
class NightlyBudget:
    """What a nightly can afford, priced at a grid's own cost.

    `minutes_per_seed` is the grid's minutes of stage work (each stage's run once) over its
    seeds; `workers` run cells side by side. The hours are a lower bound: they assume the
    workers are never idle, and a seed's RL cells wait for its SFT start.
    """

    minutes_per_seed: float
    workers: int = 2
    hours: float = 3.0

    def hours_for(self, seeds: int) -> float:
        """Hours of `seeds` seeds of this grid on the workers, at the least.

        >>> NightlyBudget(90.0).hours_for(4)
        3.0
        """
        return seeds * self.minutes_per_seed / self.workers / 60.0

    def seeds_within(self) -> int:
        """The most seeds the budget's hours hold.

        >>> NightlyBudget(90.0).seeds_within(), NightlyBudget(90.0, hours=2.9).seeds_within()
        (4, 3)
        """
        return int(self.hours * 60.0 * self.workers // self.minutes_per_seed)

    def holds(self, seeds: int | None) -> bool:
        """Whether `seeds` seeds (None: more than any sizing gives) fit the hours.

        >>> budget = NightlyBudget(90.0)
        >>> budget.holds(4), budget.holds(5), budget.holds(None)
        (True, False, False)
        """
        return seeds is not None and self.hours_for(seeds) <= self.hours

    def text(self, seeds: int | None, pilot_seeds: int | None = None) -> str:
        """The clause an inconclusive row adds: whether the seeds a verdict needs (and the
        pilot's, where given) fit the nightly."""
        def cost(count: int | None) -> str:
            return "more than 200 seeds" if count is None else \
                f"{count} seeds take at least {self.hours_for(count):.1f} h"

        pilot = "" if pilot_seeds is None else f" (the pilot's {cost(pilot_seeds)})"
        head = (f"at this grid's {self.minutes_per_seed:.0f} min of stage work per seed on "
                f"{self.workers} workers, {cost(seeds)}{pilot}")
        if self.holds(seeds):
            return f"{head}: within the {self.hours:g}-h nightly"
        return (f"{head}: beyond the {self.hours:g}-h nightly, which holds "
                f"{self.seeds_within()} seeds, so this δ cannot be decided in {self.hours:g} h "
                "on this machine")


def nightly_budget(provenance: dict, workers: int = 2, hours: float = 3.0) -> NightlyBudget | None:
    """The budget priced at a grid's provenance (`breadth.study.frame.grid_provenance`): its
    minutes of stage work over its seeds; None where it has no stage work to price.

    >>> nightly_budget({"compute_minutes": {"mcq": 200.0, "free_form": 100.0}, "seeds": 4})
    NightlyBudget(minutes_per_seed=75.0, workers=2, hours=3.0)
    >>> nightly_budget({"seeds": 4}) is None
    True
    """
    minutes = sum((provenance.get("compute_minutes") or {}).values())
    seeds = provenance.get("seeds") or 0
    if minutes <= 0 or seeds < 1:
        return None
    return NightlyBudget(minutes / seeds, workers, hours)


@dataclass(frozen=True)
class RowPower:
    """What a measured row's spread says about its seeds (see the module docstring)."""

    seed_sd: float
    num_seeds: int
    family_size: int
    holm_half_width: float
    """Half-width of the interval the verdict read (Holm's level for this row)."""
    seeds_for_verdict: int | None
    """Seeds for a Holm half-width below δ / 2 at this spread (None: more than 200)."""
    seeds_for_delta: int | None
    """Seeds for a Holm half-width below δ."""
    reason: str = ""
    """Why an inconclusive row is: "underpowered" or "near δ"; "" for a decided row."""
    pilot_sd: float | None = None
    pilot_seeds: int | None = None
    pilot_seeds_for_verdict: int | None = None
    pilot_seeds_for_delta: int | None = None
    budget: NightlyBudget | None = None
    """The nightly's budget, priced at the grid's cost, where the caller gave one."""

    def text(self, delta: float, estimate: float) -> str:
        """The detail sentence of an inconclusive row ('' for a decided one)."""
        width = f"±{self.holm_half_width:.3g}"
        need = (f"about {_seeds(self.seeds_for_verdict)} seeds at this spread (seed sd "
                f"{self.seed_sd:.3g}) for a verdict either way, {_seeds(self.seeds_for_delta)} "
                "for a half-width below δ")
        pilot = "" if self.pilot_sd is None else (
            f"; the pilot ({self.pilot_seeds} seeds): seed sd {self.pilot_sd:.3g}, about "
            f"{_seeds(self.pilot_seeds_for_verdict)} seeds for a verdict, "
            f"{_seeds(self.pilot_seeds_for_delta)} below δ")
        budget = "" if self.budget is None else "; " + self.budget.text(
            self.seeds_for_verdict,
            None if self.pilot_sd is None else self.pilot_seeds_for_verdict)
        if self.reason == UNDERPOWERED:
            return (f"underpowered: at {self.num_seeds} seeds the Holm half-width {width} "
                    f"exceeds δ = {delta:g}; {need}{pilot}{budget}")
        if self.reason == NEAR_DELTA:
            return (f"not for lack of power at δ: the Holm interval ({width}) is narrower than "
                    f"δ = {delta:g} but holds 0 and reaches past ±δ, so the effect "
                    f"({estimate:+.3g}) is about δ in size; {need}{pilot}{budget}")
        return ""

    def cell(self) -> str:
        """The table's column: seeds run / seeds for a verdict (and the pilot's)."""
        pilot = "" if self.pilot_sd is None else f" (pilot: {_seeds(self.pilot_seeds_for_verdict)})"
        return f"{self.num_seeds} / {_seeds(self.seeds_for_verdict)}{pilot}"


def _seeds(count: int | None) -> str:
    return ">200" if count is None else str(count)


def row_power(standard_error: float, num_seeds: int, delta: float, holm_confidence: float,
              family_size: int, inconclusive: bool, confidence: float = 0.95,
              pilot: tuple[float, int] | None = None,
              budget: NightlyBudget | None = None) -> RowPower:
    """A decided row's power from its seed t interval: standard error over `num_seeds` seeds,
    decided at `holm_confidence` in a family of `family_size`; `pilot` = (sd, seeds) where a
    pilot sized this row's measure; `budget` prices the seeds an inconclusive row needs."""
    sd = standard_error * math.sqrt(num_seeds)
    width = half_width(sd, num_seeds, holm_confidence)

    def needed(spread: float) -> tuple[int | None, int | None]:
        return (seeds_needed(spread, decisive_half_width(delta), confidence, family_size),
                seeds_needed(spread, delta, confidence, family_size))

    reason = "" if not inconclusive else UNDERPOWERED if width >= delta else NEAR_DELTA
    power = RowPower(sd, num_seeds, family_size, width, *needed(sd), reason=reason,
                     budget=budget)
    if pilot is None:
        return power
    pilot_sd, pilot_seeds = pilot
    for_verdict, for_delta = needed(pilot_sd)
    return replace(power, pilot_sd=pilot_sd, pilot_seeds=pilot_seeds,
                   pilot_seeds_for_verdict=for_verdict, pilot_seeds_for_delta=for_delta)
