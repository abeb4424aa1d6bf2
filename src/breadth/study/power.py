"""Each measured claim row's power: the spread of its per-seed means, the Holm half-width it
had, the seeds it would need, and why an *inconclusive* row is inconclusive.

A row's seed sd is its standard error times √S (the spread of the S per-seed paired means).
The seeds it needs come from `breadth.stats.sizing` at Holm's strictest level for the
family it was decided in (α / m), for a half-width below δ / 2 (a verdict guaranteed: an
interval holding 0 then lies within ±δ) and below δ (*no effect* reachable). An inconclusive
row is either

- *underpowered*: its Holm half-width is at least δ, so no interval holding 0 can lie
  within ±δ; the row says how many seeds its spread needs;
- or *near δ*: its interval is narrower than δ but holds 0 and reaches past ±δ, so the effect
  is about δ in size. More seeds settle that too, but the interval is not too wide for δ.

A power pilot (`scripts/results/pilot.py`, its `pilot.json`) can be given beside the grid, read
by `read_pilot_sizing` from a path the caller names: the rows whose measure the pilot sized
then cite its sd and seeds needed beside the run's own.

An inconclusive row also prices the seeds it needs as a nightly of its own arms
(`breadth.study.budget`), so a row that no nightly can decide in its hours says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from breadth.stats.sizing import decisive_half_width, half_width, seeds_needed
from breadth.study.budget import Arms, NightlyBudget, RowPrice
from breadth.study.claim_registry import today

__all__ = ["PILOT_MEASURES", "PilotSizing", "RowPower", "read_pilot_sizing", "row_power",
           "seeds_text"]

UNDERPOWERED, NEAR_DELTA = "underpowered", "near δ"

PILOT_MEASURES: dict[tuple[str, str], tuple[str, float]] = {
    ("sharpening", "pass@1"): ("Δ pass@1", 1.0),
    ("sharpening", "pass@n"): ("Δ pass@n", 1.0),
    ("diversity on unsolved", "distinct"): ("Δ distinct outcomes, SFT-unsolved (held-out half)",
                                            1.0),
    ("forking share", "forking"): ("Δ forking share of reasoning tokens", 1.0),
    # A difference of two formats' falls, each as the pilot measured one: sd x sqrt(2).
    ("format", "format"): ("relative fall of distinct reasoning paths (1 - RL/SFT)",
                           math.sqrt(2.0)),
}
"""(claim, δ name) -> (the pilot's measure, as `scripts/results/pilot.py` keys it in
pilot.json, and the row's spread over that measure's). Rows not here (ucb, the objectives'
correct answers, search, coverage) measure contrasts the pilot did not run: they cite no pilot
numbers. Claims by today's names; a table written before #52 item 4 is matched through
`claim_registry.today`."""


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
        key = (today(claim), delta_name)
        if key not in PILOT_MEASURES or fmt not in (self.format, "both"):
            return None
        label, spread = PILOT_MEASURES[key]
        finite = np.array([v for v in self.values.get(label, ()) if math.isfinite(v)])
        if finite.size < 2:
            return None
        return float(finite.std(ddof=1)) * spread, int(finite.size)


def read_pilot_sizing(path: Path, fmt: str = "free_form") -> PilotSizing:
    """`scripts/results/pilot.py`'s JSON ({"seeds": [{measure: value, ...}, ...], ...}) at `path`;
    `fmt` is the format its preset ran (the pilot's presets are free-form)."""
    path = Path(path)
    try:
        seeds = json.loads(path.read_text())["seeds"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"pilot sizing {path}: not a power pilot's JSON with a 'seeds' list "
                         f"({error}); write it with scripts/results/pilot.py") from error
    labels = {label for label, _ in PILOT_MEASURES.values()}
    values = {label: tuple(float(s[label]) if s.get(label) is not None else math.nan
                           for s in seeds) for label in labels}
    return PilotSizing(values, fmt, str(path))


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
    price: RowPrice | None = None
    """The seeds for a verdict as a nightly of the row's arms, where the caller gave a budget."""

    def text(self, delta: float, estimate: float) -> str:
        """The detail sentence of an inconclusive row ('' for a decided one)."""
        width = f"±{self.holm_half_width:.3g}"
        need = (f"about {seeds_text(self.seeds_for_verdict)} seeds at this spread (seed sd "
                f"{self.seed_sd:.3g}) for a verdict either way, {seeds_text(self.seeds_for_delta)} "
                "for a half-width below δ")
        pilot = "" if self.pilot_sd is None else (
            f"; the pilot ({self.pilot_seeds} seeds): seed sd {self.pilot_sd:.3g}, about "
            f"{seeds_text(self.pilot_seeds_for_verdict)} seeds for a verdict, "
            f"{seeds_text(self.pilot_seeds_for_delta)} below δ")
        budget = "" if self.price is None else "; " + self.price.text()
        if self.reason == UNDERPOWERED:
            return (f"underpowered: at {self.num_seeds} seeds the Holm half-width {width} "
                    f"exceeds δ = {delta:.3g}; {need}{pilot}{budget}")
        if self.reason == NEAR_DELTA:
            return (f"not for lack of power at δ: the Holm interval ({width}) is narrower than "
                    f"δ = {delta:.3g} but holds 0 and reaches past ±δ, so the effect "
                    f"({estimate:+.3g}) is about δ in size; {need}{pilot}{budget}")
        return ""

    def cell(self) -> str:
        """The table's column: seeds run / seeds for a verdict (and the pilot's)."""
        pilot = "" if self.pilot_sd is None else f" (pilot: {seeds_text(self.pilot_seeds_for_verdict)})"
        return f"{self.num_seeds} / {seeds_text(self.seeds_for_verdict)}{pilot}"


def seeds_text(count: int | None) -> str:
    """A seed count as tables show it: '>200' past any sizing (None)."""
    return ">200" if count is None else str(count)


def row_power(standard_error: float, num_seeds: int, delta: float, holm_confidence: float,
              family_size: int, inconclusive: bool, confidence: float = 0.95,
              pilot: tuple[float, int] | None = None, budget: NightlyBudget | None = None,
              arms: Arms | None = None) -> RowPower:
    """A decided row's power from its seed t interval: standard error over `num_seeds` seeds,
    decided at `holm_confidence` in a family of `family_size`; `pilot` = (sd, seeds) where a
    pilot sized this row's measure; `budget` prices the seeds an inconclusive row needs as a
    nightly of its `arms`."""
    sd = standard_error * math.sqrt(num_seeds)
    width = half_width(sd, num_seeds, holm_confidence)

    def needed(spread: float) -> tuple[int | None, int | None]:
        return (seeds_needed(spread, decisive_half_width(delta), confidence, family_size),
                seeds_needed(spread, delta, confidence, family_size))

    reason = "" if not inconclusive else UNDERPOWERED if width >= delta else NEAR_DELTA
    power = RowPower(sd, num_seeds, family_size, width, *needed(sd), reason=reason)
    if pilot is not None:
        pilot_sd, pilot_seeds = pilot
        for_verdict, for_delta = needed(pilot_sd)
        power = replace(power, pilot_sd=pilot_sd, pilot_seeds=pilot_seeds,
                        pilot_seeds_for_verdict=for_verdict, pilot_seeds_for_delta=for_delta)
    if budget is None or not arms or not reason:
        return power
    return replace(power, price=budget.price(arms, power.seeds_for_verdict, pilot is not None,
                                             power.pilot_seeds_for_verdict))
