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
(`NightlyBudget`: the grid's own minutes of stage work per full seed of the row's format, on the
nightly's workers, against its hours), so a row that a nightly of those cells cannot decide in
its hours says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from breadth.evaluation.sizing import decisive_half_width, half_width, seeds_needed

__all__ = ["PILOT_MEASURES", "NightlyBudget", "PilotSizing", "RowPower", "nightly_budgets",
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

    `minutes_per_seed` is the grid's minutes of stage work (each stage's run once) for one full
    seed of the cells a row is read from (`scope`: one format's cells, or both formats'), with
    every objective the grid ran in them; `workers` run cells side by side. It prices a nightly
    of those cells, not the cheapest one: a nightly thinned to the row's own arms costs less.
    """

    minutes_per_seed: float
    scope: str = "cells"
    workers: int = 2
    hours: float = 3.0

    def hours_for(self, seeds: int) -> float:
        """Hours of `seeds` seeds of these cells on the workers, none of them idle.

        >>> NightlyBudget(90.0).hours_for(4)
        3.0
        """
        return seeds * self.minutes_per_seed / self.workers / 60.0

    def seeds_within(self) -> int:
        """The most seeds the budget's hours hold.

        >>> NightlyBudget(90.0).seeds_within(), NightlyBudget(90.0, hours=2.9).seeds_within()
        (4, 3)
        """
        seeds = int(self.hours * 60.0 * self.workers // self.minutes_per_seed)
        # Float division may land a hair below a whole seed that `holds` accepts.
        return seeds + 1 if self.holds(seeds + 1) else seeds

    def holds(self, seeds: int | None) -> bool:
        """Whether `seeds` seeds (None: more than any sizing gives) fit the hours.

        >>> budget = NightlyBudget(90.0)
        >>> budget.holds(4), budget.holds(5), budget.holds(None)
        (True, False, False)
        """
        return seeds is not None and self.hours_for(seeds) <= self.hours

    def cost(self, seeds: int | None) -> str:
        """'17 seeds take 13.7 h', or 'more than 200 seeds' (None: past any sizing)."""
        return ("more than 200 seeds" if seeds is None
                else f"{seeds} seeds take {self.hours_for(seeds):.1f} h")

    def text(self, seeds: int | None, pilot_sized: bool = False,
             pilot_seeds: int | None = None) -> str:
        """The clause an inconclusive row adds: whether a nightly of these cells at the seeds
        a verdict needs (and at the pilot's `pilot_seeds`, where a pilot sized the row) fits
        the hours."""
        pilot_text = f" (the pilot's {self.cost(pilot_seeds)})" if pilot_sized else ""
        head = (f"this grid's {self.scope}, at {self.minutes_per_seed:.0f} min of stage work a "
                f"seed on {self.workers} workers: {self.cost(seeds)}{pilot_text}")
        if self.holds(seeds):
            return f"{head}, within the {self.hours:g}-h nightly"
        return (f"{head}, beyond the {self.hours:g}-h nightly, which holds "
                f"{self.seeds_within()} seeds of them (a nightly thinned to the row's own arms "
                "costs less)")


def nightly_budgets(provenance: dict, workers: int = 2,
                    hours: float = 3.0) -> dict[str, NightlyBudget]:
    """Per format, and "both" for rows that read both, the budget priced at a grid's provenance
    (`breadth.study.frame.grid_provenance`): a format's minutes of stage work per full seed,
    its minutes over its cells times the most cells a seed ran (seeds thinned to fewer cells
    would otherwise make a seed look cheap). Empty where it has no stage work to price.

    >>> budgets = nightly_budgets({"compute_minutes": {"mcq": 200.0, "free_form": 100.0},
    ...                            "format_cells": {"mcq": [4, 1], "free_form": [7, 2]}})
    >>> budgets["mcq"].minutes_per_seed, round(budgets["free_form"].minutes_per_seed, 2)
    (50.0, 28.57)
    >>> round(budgets["both"].minutes_per_seed, 2), budgets["both"].scope
    (78.57, 'free_form and mcq cells')
    >>> nightly_budgets({"seeds": 4})
    {}
    """
    per_seed = {}
    for fmt, minutes in (provenance.get("compute_minutes") or {}).items():
        cells, full_seed = (provenance.get("format_cells") or {}).get(fmt, (0, 0))
        if minutes > 0 and cells > 0:
            per_seed[fmt] = minutes / cells * full_seed
    budgets = {fmt: NightlyBudget(minutes, f"{fmt} cells", workers, hours)
               for fmt, minutes in per_seed.items()}
    if per_seed:
        budgets["both"] = NightlyBudget(sum(per_seed.values()),
                                        f"{' and '.join(sorted(per_seed))} cells", workers, hours)
    return budgets


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
            self.seeds_for_verdict, self.pilot_sd is not None, self.pilot_seeds_for_verdict)
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
