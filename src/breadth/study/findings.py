"""Committed claims tables read again by the current verdict code, and the README's table of
what the study found.

A claims.json keeps the verdicts of the code that wrote it. Before #52 a row whose equivalence
interval lay inside ±δ read *no effect* even where Holm excluded 0 (the nightly's forking row,
-0.016 at Holm p 4.9e-09). The committed tables stay as they were written (test_committed_table
recomputes them); to quote them, `redecided` puts each table's measured rows through today's
`decide_family` again: the same rows form the family, and each keeps its committed estimate,
standard error, seeds, p-value and δ, so only the reading of the two tests is new. The Holm
p-values and intervals come out equal to the committed ones. Rows outside the family (the
crossover, a k read by its own bootstrap; *not run* rows; rows without an estimate) keep their
verdict.

`findings_markdown` is the README's "What the study found": every decided row of each grid,
worded as `verdict_text` words it, and the rows each grid's Holm family adjusted together. A
committed row keeps the claim's name it was written with (#52 item 4 renamed two,
`claim_registry.RENAMED`: its claimed sign went with the old name); the table says what each
old name is called today.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from breadth.study.claim_registry import RENAMED
from breadth.study.claim_table import (
    INCONCLUSIVE,
    MEASURED,
    NO_EFFECT,
    NOT_RUN,
    REFUTED,
    REPRODUCED,
    SMALLER_THAN_DELTA,
    Claim,
    decide_family,
    effect_text,
    unadjusted_text,
    verdict_text,
)

__all__ = ["DECIDED", "GridTable", "committed_claims", "findings_markdown", "read_grid",
           "redecided"]

# What "decided" means for quoting: a verdict on the effect, either way. *inconclusive* and
# *not run* are counted beside each family, not quoted.
DECIDED = (REPRODUCED, REFUTED, SMALLER_THAN_DELTA, NO_EFFECT)
HEADER = ("| grid | claim: measure | effect [Holm-adjusted CI] | unadjusted 95% CI | "
          "verdict (both tests) |")
FAMILIES = "Holm families, one per grid (its measured rows, adjusted together and with no other grid's):"
# The crossover is a k read by its own two-level bootstrap, not a mean with a seed t test.
OUTSIDE = "outside the Holm family: a k, with its own bootstrap interval"
_CLAIM_FIELDS = frozenset(f.name for f in fields(Claim))


def committed_claims(rows: Sequence[dict]) -> list[Claim]:
    """A claims.json's rows as `Claim`s, its Holm family (the rows with a Holm p) handed back as
    `evaluate_claims` hands it to `decide_family`: measured, with its own p-value and none of
    the decision (adjusted interval, Holm p, power, both tests, wording).

    >>> row = {"claim": "x", "format": "free_form", "measure": "m", "estimate": 0.1,
    ...        "low": 0.0, "high": 0.2, "verdict": "no effect", "detail": "d", "p_holm": 0.3,
    ...        "p_value": 0.1, "standard_error": 0.05, "num_seeds": 4, "objectives": ["a"]}
    >>> [(c.verdict, c.p_holm, c.objectives) for c in committed_claims([row])]
    [('measured', None, ('a',))]
    """
    claims = []
    for number, row in enumerate(rows, 1):
        if lacking := [k for k in ("claim", "format", "measure", "verdict", "detail")
                       if k not in row]:
            raise ValueError(f"claims row {number} lacks {', '.join(lacking)}: give the "
                             "claims.json `breadth compare --grid ID --claims-out DIR` wrote")
        given = {k: v for k, v in row.items() if k in _CLAIM_FIELDS}
        given.update(objectives=tuple(row.get("objectives") or ()), power=None, wording="")
        if row.get("p_holm") is not None:
            given.update(verdict=MEASURED, detail="", adjusted_low=None, adjusted_high=None,
                         adjusted_confidence=None, p_holm=None, differs_from_zero=None,
                         within_delta=None, beyond_delta=None)
        claims.append(Claim(**given))
    return claims


def redecided(rows: Sequence[dict], confidence: float = 0.95) -> list[Claim]:
    """A committed table's rows with its family decided again by today's `decide_family`
    (each row's `wording` filled); rows outside the family as committed."""
    return [c if c.wording else replace(c, wording=verdict_text(c))
            for c in decide_family(committed_claims(rows), confidence)]


@dataclass(frozen=True)
class GridTable:
    """One grid's committed claims table, as the README quotes it."""

    name: str
    """What the README calls the grid, e.g. "nightly"."""
    grid_id: str
    link: str
    """Its claims.md, as the README links it."""
    about: str
    """The grid in a few words: task, formats, objectives, seeds."""
    claims: tuple[Claim, ...]
    """The table's rows, re-decided (`redecided`)."""
    formats: Collection[str] | None = None
    """Quote only the rows of these formats (a grid cited for the formats another left out);
    None: every format."""

    @property
    def family(self) -> list[Claim]:
        return [c for c in self.claims if c.p_holm is not None]

    @property
    def quoted(self) -> list[Claim]:
        return [c for c in self.claims if c.verdict in DECIDED
                and (self.formats is None or c.format in self.formats)]


def read_grid(path: Path, name: str, grid_id: str, link: str, about: str,
              formats: Collection[str] | None = None) -> GridTable:
    """The claims.json at `path`, re-decided, as the README quotes it."""
    try:
        rows = json.loads(Path(path).read_text())
        if not isinstance(rows, list) or not rows:
            raise ValueError("not a non-empty list of claim rows")
        claims = redecided(rows)
    except (OSError, ValueError, TypeError) as error:
        raise ValueError(f"claims table {path} ({name}): {error}") from error
    return GridTable(name, grid_id, link, about, tuple(claims),
                     None if formats is None else frozenset(formats))


def _members(claims: Sequence[Claim]) -> str:
    """The family's rows by claim, in table order: a claim's format where not free form, and
    how many rows it has where more than one.

    >>> rows = [Claim("sharpening", "free_form", "Δ pass@1", 0, 0, 0, "", ""),
    ...         Claim("sharpening", "free_form", "Δ pass@n", 0, 0, 0, "", ""),
    ...         Claim("transfer", "mcq", "Δ distinct outcomes", 0, 0, 0, "", "")]
    >>> _members(rows)
    'sharpening x2, transfer (mcq)'
    """
    counts: dict[str, int] = {}
    for c in claims:
        name = c.claim if c.format == "free_form" else f"{c.claim} ({c.format})"
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counts.items())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def findings_markdown(grids: Sequence[GridTable]) -> str:
    """Every decided row of each grid (`DECIDED`) as one table: the grid, the claim and its
    measure, the effect with the interval its verdict reads, the unadjusted interval and the
    verdict as both tests saw it; then one paragraph naming each grid's Holm family (the rows
    adjusted together, and with no other grid's) and the rows not quoted."""
    lines = [HEADER, "|---|---|---|---|---|"]
    families = []
    for grid in grids:
        for c in grid.quoted:
            where = "" if c.p_holm is not None else f" ({OUTSIDE})"
            fmt = "" if c.format == "free_form" else f" ({c.format})"
            lines.append(f"| [{grid.name}]({grid.link}) | **{_cell(c.claim)}**{fmt}: "
                         f"{_cell(c.measure)}{where} | {effect_text(c)} | "
                         f"{unadjusted_text(c)} | {_cell(c.wording)} |")
        shown = [c for c in grid.claims if grid.formats is None or c.format in grid.formats]
        rest = [f"{sum(c.verdict == v for c in shown)} {v}" for v in (INCONCLUSIVE, NOT_RUN)]
        scope = (";" if grid.formats is None else
                 f"; only its rows in {' and '.join(sorted(grid.formats))} are quoted, and of those")
        families.append(f"**{grid.name}** (`{grid.grid_id}`, {grid.about}): {len(grid.family)} "
                        f"rows, {_members(grid.family)}{scope} not quoted: {', '.join(rest)}.")
    old = sorted({c.claim for grid in grids for c in grid.claims if c.claim in RENAMED})
    return "\n".join([*lines, "", " ".join([FAMILIES, *families, *_renamed(old)])]) + "\n"


def _renamed(old: Sequence[str]) -> list[str]:
    """The sentence naming today's claims of the old names quoted ([] for none).

    >>> "*forking* is today's *forking share*" in _renamed(["forking"])[0], _renamed([])
    (True, [])
    """
    if not old:
        return []
    names = "; ".join(f"*{name}* is today's *{RENAMED[name]}*" for name in old)
    return [(f"Renamed since (#52 item 4, to what they measure): {names}; each row keeps the "
            "claimed sign it was decided with.")]
