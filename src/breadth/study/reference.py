"""The rows a thinned grid left out, told from a fuller grid's table: what that grid measured,
and what deciding each row would cost.

A nightly thinned to what 3 hours decide (issue #26: "drop or thin cells rather than miss
that … the table says what the grid left out") runs fewer formats or objectives; the rows of
the rest are *not run*. Given a *reference*, the claims.json of a fuller grid (e.g.
`docs/results/grids/full-grid-6abeba80/claims.json`), each such row quotes that grid's verdict
and details: its seeds, spread, the seeds a verdict needs and their hours against the nightly
(`breadth.study.power`, `breadth.study.budget`). A reader then sees why a row is not run, with
the numbers, not only that it is. The reference is cited, never re-decided: its rows stay
*not run* here, out of this grid's Holm family.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from breadth.study.claim_registry import paper_of, today
from breadth.study.claim_table import NOT_RUN, Claim

__all__ = ["ReferenceTable", "read_reference", "with_reference"]

_ROW_KEYS = ("claim", "format", "measure", "verdict", "detail")


@dataclass(frozen=True)
class ReferenceTable:
    """A fuller grid's claim rows (its claims.json), cited by the path it was read from."""

    rows: tuple[dict, ...]
    source: str

    def row(self, claim: str, fmt: str, measure: str) -> dict | None:
        """The reference's row of this claim (by today's name: `claim_registry.RENAMED`),
        format and measure, or None."""
        return next((r for r in self.rows if (today(r["claim"]), r["format"], r["measure"])
                     == (claim, fmt, measure)), None)

    def account(self, row: dict) -> str:
        """What the reference measured for `row`: its verdict, seeds and details.

        >>> ReferenceTable((), "full/claims.json").account(
        ...     {"verdict": "inconclusive", "num_seeds": 4, "detail": "underpowered: …"})
        'full/claims.json measured it at 4 seeds: inconclusive (underpowered: …)'
        """
        seeds = f" at {row['num_seeds']} seeds" if row.get("num_seeds") else ""
        # `wording` (both tests' results) where the table has it; older tables have the verdict.
        return f"{self.source} measured it{seeds}: {row.get('wording') or row['verdict']} " \
               f"({row['detail']})"


def read_reference(path: Path, source: str | None = None) -> ReferenceTable:
    """A claims.json (`breadth compare --grid … --claims-out DIR`: a list of rows) at `path`;
    `source` is how rows cite it (default: the path as given)."""
    path = Path(path)
    try:
        rows = json.loads(path.read_text())
        if not isinstance(rows, list) or not rows:
            raise ValueError("not a non-empty list of claim rows")
        for number, row in enumerate(rows, 1):
            if not isinstance(row, dict) or (lacking := [k for k in _ROW_KEYS if k not in row]):
                raise ValueError(f"row {number} lacks {', '.join(lacking or _ROW_KEYS)}")
    except (OSError, ValueError) as error:
        raise ValueError(f"reference table {path}: {error}; give the claims.json that "
                         "`breadth compare --grid GRID --claims-out DIR` wrote for a fuller "
                         "grid") from error
    return ReferenceTable(tuple(rows), source or str(path))


def with_reference(claims: list[Claim], formats_run: Collection[str],
                   reference: ReferenceTable | None) -> list[Claim]:
    """`claims` with the reference's rows of the formats the grid did not run, as *not run*
    rows that cite it (before the last row, the format claim, which reads both formats), and
    this grid's own not-run rows citing it where it measured them.

    A row the reference did not measure either adds nothing: its own reason stands.
    """
    if reference is None:
        return claims
    cited = []
    for claim in claims:
        row = reference.row(claim.claim, claim.format, claim.measure)
        if claim.verdict == NOT_RUN and row is not None and row["verdict"] != NOT_RUN:
            claim = replace(claim, detail=f"{claim.detail}; {reference.account(row)}")
        cited.append(claim)
    left_out = [_left_out(row, reference) for row in reference.rows
                if row["format"] not in formats_run and row["format"] != "both"]
    own = [c for c in cited if c.format != "both"]
    return own + left_out + [c for c in cited if c.format == "both"]


def _left_out(row: dict, reference: ReferenceTable) -> Claim:
    """A row of a format the grid left out: not run, with what the reference measured."""
    reason = f"the grid left out {row['format']}"
    if row["verdict"] != NOT_RUN:
        reason += f"; {reference.account(row)}"
    else:
        reason += f"; not run in {reference.source} either: {row['detail']}"
    # By today's name and its paper's words where #52 item 4 renamed the claim (the reference's
    # own is in what it measured, quoted in `reason`), so one table holds one set of names.
    name = today(row["claim"])
    paper = row.get("paper", "") if name == row["claim"] else paper_of(name)
    return Claim(name, row["format"], row["measure"], None, None, None, NOT_RUN, reason,
                 delta=row.get("delta"), sign=row.get("sign", 0), paper=paper,
                 delta_name=row.get("delta_name", ""),
                 objectives=tuple(row.get("objectives") or ()))
