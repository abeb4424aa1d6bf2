"""The claims table's model: a row (`Claim`), its verdict, the family's Holm decisions and the
markdown table. `breadth.study.claims` measures the rows; this module decides and
shows them (see that module's docstring and `docs/design/algorithms.md`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from breadth.stats.seed_interval import holm_adjusted, t_interval
from breadth.study.budget import NightlyBudget, row_arms
from breadth.study.power import UNDERPOWERED, PilotSizing, RowPower, row_power

__all__ = [
    "INCONCLUSIVE",
    "MEASURED",
    "NOT_RUN",
    "NO_EFFECT",
    "REFUTED",
    "REPRODUCED",
    "SMALLER_THAN_DELTA",
    "VERDICTS",
    "Claim",
    "Reading",
    "claims_markdown",
    "decide_family",
    "effect_text",
    "interval_text",
    "read_interval",
    "unadjusted_text",
    "verdict",
    "verdict_text",
]

REPRODUCED, REFUTED, NO_EFFECT, INCONCLUSIVE = "reproduced", "refuted", "no effect", "inconclusive"
# An effect Holm finds (0 excluded) whose equivalence interval still lies inside ±δ: real, and
# too small to matter. Neither "no effect" (it is not zero) nor "reproduced" (it is below δ).
SMALLER_THAN_DELTA = "smaller than δ, but not zero"
# Not "inconclusive": that reads as "measured, no clear effect"; here nothing was measured.
NOT_RUN = "not run"
MEASURED = "measured"  # a row in the family, before `decide_family` gives its verdict
VERDICTS = (REPRODUCED, REFUTED, SMALLER_THAN_DELTA, NO_EFFECT, INCONCLUSIVE, NOT_RUN)
FAMILY_MEANING = ("Each verdict reports two tests over the family of measured rows: whether the "
                  "effect differs from 0 (Holm: the adjusted interval, its level in brackets, "
                  "excludes 0) and whether it lies within ±δ (equivalence: the Bonferroni TOST "
                  "interval, level 1 − 2α/m, lies inside ±δ). *reproduced* / *refuted*: not 0, "
                  "on the claimed / the other side, and not within ±δ (*beyond δ* where the "
                  "adjusted interval clears δ too); *smaller than δ, but not zero*: both tests "
                  "pass; *no effect*: within ±δ and 0 not excluded; *inconclusive*: neither. δ is "
                  "pre-registered per claim (`docs/design/algorithms.md`). *Seeds: run / for a "
                  "verdict*: the seeds the grid ran, and the seeds this spread of per-seed means "
                  "would need for a Holm half-width below δ/2 (at α/m), where every interval gets "
                  "a verdict; *underpowered*: the Holm half-width is at least δ, so no interval "
                  "holding 0 can lie within ±δ.")
INTERVAL_MEANING = ("Intervals: Student's t over the per-seed paired means (S − 1 df, "
                    "`breadth.stats.seed_interval`), the method `docs/results/calibration.md` "
                    "keeps: its false positives stay within 5% ± 1.5% under normal seed effects "
                    "at 4 to 15 seeds, and at 15 under heavy-tailed, exponentially skewed and "
                    "small-transition ones; under a strongly skewed (lognormal) seed effect or "
                    "one seed in 15 crossing a large transition (10 seed sds) they do not, and "
                    "neither do a sign-flip randomisation interval's or a bootstrap-t's (the "
                    "page's candidates): a mean over seeds cannot see a rare seed the grid did "
                    "not draw.")
BUDGET_MEANING = ("An inconclusive row's details price the seeds it needs as a nightly of its "
                  "own arms (the objectives it compares, in its format) at that many seeds: "
                  "each seed's warm start (data, SFT and its rollouts, shared by the seed's "
                  "objectives) and each objective's own stages, at this grid's minutes of stage "
                  "work, on the nightly's workers, against its hours (`breadth.study.budget`).")
NOT_RUN_MEANING = (f"*{NOT_RUN}*: the grid lacks an arm (or a measurement) the claim needs, so "
                   "nothing was measured: no evidence either way.")


@dataclass(frozen=True)
class Claim:
    """One row of the claims table. `low`/`high` are the unadjusted 95% interval; the verdict
    reads `adjusted_low`/`adjusted_high` (Holm, at `adjusted_confidence`)."""

    claim: str
    format: str
    measure: str
    estimate: float | None
    low: float | None
    high: float | None
    verdict: str
    detail: str
    delta: float | None = None
    """Pre-registered smallest effect of interest, on the measure's scale."""
    adjusted_low: float | None = None
    adjusted_high: float | None = None
    adjusted_confidence: float | None = None
    p_value: float | None = None
    """Two-sided p-value of the seed t test against 0 (unadjusted)."""
    p_holm: float | None = None
    standard_error: float | None = None
    num_seeds: int | None = None
    sign: int = 0
    """Claimed sign: +1, -1, or 0 (two-sided)."""
    paper: str = ""
    """What the source paper reports, or "not reported"."""
    delta_name: str = ""
    """The pre-registered δ's name (`claim_registry.DELTAS`)."""
    delta_rule: str = ""
    """The δ's formula where it is a rule of SFT's level (`Smallest.formula`), else ''."""
    sft_level: float | None = None
    """SFT's level of the row's measure on its problems, which a δ rule read."""
    power: RowPower | None = None
    """A family row's spread, Holm half-width and seeds needed (`breadth.study.power`)."""
    objectives: tuple[str, ...] = ()
    """The grid objectives the row's arms read (the SFT start comes with any of them); in each
    format for a row of "both". What a nightly must run to measure it."""
    differs_from_zero: bool | None = None
    """Holm rejects 0 (the adjusted interval excludes it); None outside the Holm family."""
    within_delta: bool | None = None
    """The equivalence interval lies inside ±δ; None outside the family or without a δ."""
    beyond_delta: bool | None = None
    """The adjusted interval lies beyond δ on one side (the effect is at least δ)."""
    wording: str = ""
    """The verdict as a sentence with both tests' results (`verdict_text`), for quoting."""

    def to_dict(self) -> dict:
        """The row as claims.json keeps it, `wording` filled for every row (a row outside the
        family reads as its verdict)."""
        return asdict(replace(self, wording=verdict_text(self)))

    def interval_at(self, confidence: float) -> tuple[float, float]:
        """The row's t interval at another confidence (same estimate and standard error)."""
        return t_interval(self.estimate, self.standard_error, self.num_seeds, confidence)


@dataclass(frozen=True)
class Reading:
    """What both tests saw in a row's intervals, and the verdict they give (`read_interval`)."""

    verdict: str
    differs_from_zero: bool | None = None
    within_delta: bool | None = None
    beyond_delta: bool | None = None
    direction: int = 0
    """The side of 0 the adjusted interval lies on (+1, -1), 0 where it holds 0."""


def read_interval(low, high, sign: int, delta: float | None = None,
                  equivalence: tuple[float, float] | None = None) -> Reading:
    """The verdict of an (adjusted) interval, the claimed sign (+1, -1; 0 for two-sided), δ
    and the equivalence interval, with the two tests it reads.

    Differs from 0 (D): the adjusted interval excludes 0, on the side `direction`. Within δ
    (W): the equivalence interval lies inside ±δ. Beyond δ (B): the adjusted interval clears
    δ (low > δ or high < -δ); B implies D, and W and B exclude each other (both intervals
    hold the estimate). The verdict (`docs/design/algorithms.md` has the table):

    - D and W: *smaller than δ, but not zero*, on either side;
    - D, not W: *reproduced* on the claimed side (either side for a two-sided claim), else
      *refuted* (B says the effect is at least δ);
    - not D, W: *no effect*;
    - not D, not W, or an interval that cannot be read: *inconclusive*.

    >>> [read_interval(*i, +1).verdict for i in ((0.01, 0.05), (-0.05, -0.01), (-0.01, 0.02))]
    ['reproduced', 'refuted', 'inconclusive']
    >>> read_interval(-0.01, 0.02, +1, delta=0.05, equivalence=(-0.005, 0.015)).verdict
    'no effect'
    >>> r = read_interval(-0.019, -0.013, +1, delta=0.02, equivalence=(-0.019, -0.013))
    >>> r.verdict, r.differs_from_zero, r.within_delta, r.direction
    ('smaller than δ, but not zero', True, True, -1)
    >>> r = read_interval(-0.3, -0.1, 0, delta=0.05, equivalence=(-0.28, -0.12))
    >>> r.verdict, r.beyond_delta
    ('reproduced', True)
    """
    has_delta = delta is not None
    within = None
    if has_delta and equivalence is not None:
        within = bool(np.isfinite(equivalence).all() and -delta < equivalence[0]
                      and equivalence[1] < delta)
    if low is None or high is None or not np.isfinite([low, high]).all():
        return Reading(NO_EFFECT if within else INCONCLUSIVE, None, within)
    differs = bool(low > 0 or high < 0)
    direction = (1 if low > 0 else -1) if differs else 0
    beyond = bool(low > delta or high < -delta) if has_delta else None
    if differs and within:
        result = SMALLER_THAN_DELTA
    elif differs:
        result = REPRODUCED if sign in (0, direction) else REFUTED
    else:
        result = NO_EFFECT if within else INCONCLUSIVE
    return Reading(result, differs, within, beyond, direction)


def verdict(low, high, sign: int, delta: float | None = None,
            equivalence: tuple[float, float] | None = None) -> str:
    """The verdict alone of `read_interval`.

    >>> verdict(0.01, 0.05, +1), verdict(-0.3, -0.1, 0), verdict(0.01, 0.03, +1, 0.05, (0.012, 0.028))
    ('reproduced', 'reproduced', 'smaller than δ, but not zero')
    """
    return read_interval(low, high, sign, delta, equivalence).verdict


def verdict_text(c: Claim) -> str:
    """The row's verdict as a sentence saying what both tests saw (its `wording` once decided).

    >>> row = Claim("forking", "free_form", "m", -0.0157, -0.019, -0.013, SMALLER_THAN_DELTA,
    ...             "", delta=0.02, p_holm=4.92e-9, sign=+1, differs_from_zero=True,
    ...             within_delta=True, beyond_delta=False)
    >>> verdict_text(row)
    'smaller than δ, but not zero (-0.016 within ±0.02; Holm p 4.9e-09; against the claimed sign)'
    >>> verdict_text(replace(row, verdict=NO_EFFECT, differs_from_zero=False, p_holm=0.07))
    'no effect (-0.016 within ±0.02; 0 not excluded, Holm p 0.07)'

    A δ from a rule, e.g. (1 - SFT pass@n)/4, reads to three digits:

    >>> verdict_text(replace(row, delta=(1 - 0.8484375) / 4))
    'smaller than δ, but not zero (-0.016 within ±0.0379; Holm p 4.9e-09; against the claimed sign)'
    >>> verdict_text(Claim("x", "mcq", "m", None, None, None, NOT_RUN, "no arm"))
    'not run'
    """
    if c.wording:
        return c.wording
    if c.differs_from_zero is None or c.estimate is None or c.p_holm is None:
        return c.verdict  # outside the Holm family: the verdict says all there is
    p = f"Holm p {c.p_holm:.2g}"
    delta = "" if c.delta is None else f"±{c.delta:.3g}"
    side = "" if not c.differs_from_zero or c.sign == 0 or \
        np.sign(c.estimate) == c.sign else "; against the claimed sign"
    if c.verdict == SMALLER_THAN_DELTA:
        return f"{c.verdict} ({c.estimate:+.3f} within {delta}; {p}{side})"
    if c.verdict == NO_EFFECT:
        return f"{c.verdict} ({c.estimate:+.3f} within {delta}; 0 not excluded, {p})"
    if c.verdict in (REPRODUCED, REFUTED):
        size = "" if c.beyond_delta is None else (
            f"; beyond {delta}" if c.beyond_delta else f"; not shown beyond {delta}")
        return f"{c.verdict} ({c.estimate:+.3f}, not 0: {p}{size})"
    if c.verdict == INCONCLUSIVE:
        within = "" if c.within_delta is None else f"; not within {delta}"
        return f"{c.verdict} ({c.estimate:+.3f}; 0 not excluded, {p}{within})"
    return c.verdict


def decide_family(claims: list[Claim], confidence: float = 0.95,
                  pilot: PilotSizing | None = None,
                  budget: NightlyBudget | None = None) -> list[Claim]:
    """Verdicts of the measured rows (`MEASURED`) as one family; other rows are unchanged.

    Holm's step-down on the rows' two-sided seed-t p-values. The j-th smallest p-value
    (0-based, of m) is tested at alpha / (m - j): a rejected row's adjusted interval is its t
    interval at level 1 - alpha / (m - j), which excludes 0 exactly because Holm rejects it;
    a row Holm does not reject gets the Bonferroni interval (1 - alpha / m), which then holds
    0. The equivalence check ("no effect") uses the Bonferroni TOST interval, level
    1 - 2 alpha / m, against ±δ.

    Each row gets its power (`breadth.study.power.row_power`: seeds needed at alpha / m), and
    an inconclusive row's detail opens with why: underpowered, or an interval near δ's edge;
    with a `pilot`, the rows it sized cite its numbers beside the run's; with a `budget`, an
    inconclusive row says whether the seeds it needs, as a nightly of its arms, fit its hours.
    """
    alpha = 1 - confidence
    family = [i for i, c in enumerate(claims) if c.verdict == MEASURED]
    m = len(family)
    if not m:
        return claims
    p = np.array([claims[i].p_value for i in family], dtype=np.float64)
    adjusted = holm_adjusted(p)
    rank = {family[j]: r for r, j in enumerate(np.argsort(p, kind="stable"))}
    out = list(claims)
    for i, p_holm in zip(family, adjusted):
        c = claims[i]
        rejected = p_holm <= alpha
        level = 1 - alpha / (m - rank[i]) if rejected else 1 - alpha / m
        low, high = c.interval_at(level)
        equivalence = c.interval_at(1 - 2 * alpha / m)
        reading = read_interval(low, high, c.sign, c.delta, equivalence)
        result = reading.verdict
        note = f"family of {m}; Holm p = {p_holm:.3g} (unadjusted {c.p_value:.3g})"
        if reading.within_delta is not None:
            note += (f"; equivalence interval [{equivalence[0]:+.3f}, {equivalence[1]:+.3f}] "
                     f"{'inside' if reading.within_delta else 'not inside'} ±{c.delta:.3g}")
        power = _power(c, level, m, result == INCONCLUSIVE, confidence, pilot, budget)
        if power is not None and power.reason:
            note = f"{power.text(c.delta, c.estimate)}; {note}"
        decided = replace(c, verdict=result, adjusted_low=float(low), adjusted_high=float(high),
                          adjusted_confidence=float(level), p_holm=float(p_holm),
                          detail=f"{note}; {c.detail}", power=power,
                          differs_from_zero=reading.differs_from_zero,
                          within_delta=reading.within_delta, beyond_delta=reading.beyond_delta)
        out[i] = replace(decided, wording=verdict_text(decided))
    return out


def _power(c: Claim, level: float, m: int, inconclusive: bool, confidence: float,
           pilot: PilotSizing | None, budget: NightlyBudget | None) -> RowPower | None:
    """The row's power, or None where it has no spread to size from (or no δ)."""
    if c.delta is None or c.standard_error is None or not c.num_seeds or c.num_seeds < 2 \
            or not np.isfinite(c.standard_error):
        return None
    sized = pilot.sd_of(c.claim, c.delta_name, c.format) if pilot is not None else None
    return row_power(c.standard_error, c.num_seeds, c.delta, level, m, inconclusive,
                     confidence, sized, budget,
                     row_arms(c.format, c.objectives) if c.objectives else None)


def interval_text(claim: Claim) -> str:
    """'+0.100 [+0.020, +0.200]' (unadjusted), the estimate alone, or 'n/a'."""
    if claim.low is None or claim.high is None or claim.estimate is None:
        return "n/a" if claim.estimate is None else f"{claim.estimate:+.3f}"
    return f"{claim.estimate:+.3f} [{claim.low:+.3f}, {claim.high:+.3f}]"


def _k(value: float | None) -> str:
    return "beyond" if value is None else f"{value:g}"


def effect_text(c: Claim) -> str:
    """A claim's effect with the interval its verdict reads (Holm-adjusted where it has one).

    >>> effect_text(Claim("batch", "mcq", "m", 0.1, 0.02, 0.2, "reproduced", ""))
    '+0.100 [+0.020, +0.200]'
    >>> effect_text(Claim("batch", "mcq", "m", 0.1, 0.02, 0.2, "inconclusive", "",
    ...                   adjusted_low=-0.5, adjusted_high=0.7, adjusted_confidence=0.9975))
    '+0.100 [-0.500, +0.700] (99.75%)'
    >>> effect_text(Claim("crossover", "mcq", "m", 4.0, 2.0, None, "inconclusive", ""))
    'k = 4 [2, beyond]'
    >>> effect_text(Claim("crossover", "mcq", "m", None, None, None, "not run", ""))
    'n/a'
    """
    if c.verdict == NOT_RUN:  # nothing measured: not "none [beyond, beyond]", a crossing never seen
        return "n/a"
    if c.claim == "crossover":
        return " ".join(["none" if c.estimate is None else f"k = {c.estimate:g}",
                         f"[{_k(c.low)}, {_k(c.high)}]"])
    if c.estimate is None:
        return "n/a"
    if c.adjusted_low is not None and c.adjusted_high is not None:
        return (f"{c.estimate:+.3f} [{c.adjusted_low:+.3f}, {c.adjusted_high:+.3f}] "
                f"({100 * c.adjusted_confidence:.4g}%)")
    return interval_text(c)


def unadjusted_text(c: Claim) -> str:
    """The unadjusted 95% interval ('' for the crossover, whose interval is its only one)."""
    if c.claim == "crossover" or c.low is None or c.high is None:
        return ""
    return f"[{c.low:+.3f}, {c.high:+.3f}]"


def claims_markdown(claims: list[Claim], header: str = "", plan: str = "") -> str:
    """The claims table: one row per claim and format, δ, both intervals, verdict, paper; and
    `plan`, where given, the nightly that would decide the most of its priced rows
    (`breadth.study.budget.plan_text`)."""
    lines = [header, ""] if header else []
    lines += [("| claim | format | measure | δ | effect [Holm-adjusted t interval over seeds] | "
               "unadjusted 95% t interval | seeds: run / for a verdict | verdict | paper reports |"),
              "|---|---|---|---|---|---|---|---|---|"]
    for c in claims:
        delta = f"±{c.delta:.3g}" if c.delta is not None else c.delta_rule
        seeds = "" if c.power is None else c.power.cell()
        shown = (f"{verdict_text(c)} ({UNDERPOWERED})" if c.power is not None
                 and c.power.reason == UNDERPOWERED else verdict_text(c))
        lines.append(f"| **{c.claim}** | {c.format} | {c.measure} | {delta} | {effect_text(c)} | "
                     f"{unadjusted_text(c)} | {seeds} | {shown} | {c.paper} |")
    lines += ["", INTERVAL_MEANING, "", FAMILY_MEANING]
    if any(c.power is not None and c.power.price is not None for c in claims):
        lines += ["", BUDGET_MEANING] + (["", plan] if plan else [])
    if any(c.verdict == NOT_RUN for c in claims):
        lines += ["", NOT_RUN_MEANING]
    lines += ["", "Details:", ""] + [f"- {c.claim} ({c.format}): {c.detail}" for c in claims]
    return "\n".join(lines) + "\n"
