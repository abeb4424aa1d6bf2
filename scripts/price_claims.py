"""Price a published claims table's inconclusive rows against the nightly's budget, without its
grid's MLflow: each row's seeds for a verdict (`claims.json`'s `power`, the run's and the
pilot's) at the grid's minutes of stage work per seed (the `claims.md` header's "minutes of
stage work ... in all", over its seeds), on the nightly's workers, against its hours. The
sentence is the one `breadth compare --grid` now writes into each such row
(`breadth.study.power.NightlyBudget`); this script gives it for tables published before.

    PYTHONPATH=src .venv/bin/python scripts/price_claims.py \
        docs/results/claims.md docs/results/multi/claims.md --markdown docs/results/budget.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from pathlib import Path

from breadth.evaluation.grid_settings import ClaimSettings
from breadth.study.power import NightlyBudget, nightly_budget

_SEEDS = re.compile(r"^- seeds: (\d+)$", re.MULTILINE)
_WORK = re.compile(r"^- minutes of stage work .*; ([\d.]+) in all$", re.MULTILINE)
_GRID = re.compile(r"^# Claims of grid (\S+)$", re.MULTILINE)


def header_budget(markdown: str, workers: int, hours: float) -> tuple[str, NightlyBudget]:
    """(grid id, budget) from a claims.md header; a header without them is an error naming
    the line it lacks."""
    found = {name: pattern.search(markdown)
             for name, pattern in (("grid", _GRID), ("seeds", _SEEDS), ("work", _WORK))}
    missing = [name for name, match in found.items() if match is None]
    if missing:
        raise ValueError(f"the claims header lacks its {', '.join(missing)} line(s); publish it "
                         "with `breadth compare --grid`, whose header has them")
    budget = nightly_budget({"compute_minutes": {"all": float(found["work"].group(1))},
                             "seeds": int(found["seeds"].group(1))}, workers, hours)
    assert budget is not None  # the regexes matched a positive count and minutes
    return found["grid"].group(1), budget


def priced_rows(rows: list[dict], budget: NightlyBudget) -> list[list[str]]:
    """One table row per inconclusive claim row with power: its seeds, their hours, the fit."""
    out = []
    for row in rows:
        power = row.get("power") or {}
        if row["verdict"] != "inconclusive" or not power.get("reason"):
            continue
        need, pilot = power["seeds_for_verdict"], power.get("pilot_seeds_for_verdict")

        def hours(count: int | None) -> str:
            return ">200 seeds" if count is None else f"{budget.hours_for(count):.1f}"

        out.append([row["claim"], row["format"], row["measure"], power["reason"],
                    f"{power['num_seeds']} / {'>200' if need is None else need}"
                    + ("" if pilot is None else f" (pilot: {pilot})"),
                    hours(need) + ("" if pilot is None else f" (pilot: {hours(pilot)})"),
                    "yes" if budget.holds(need) else "no"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("claims", type=Path, nargs="+",
                        help="claims.md files, each with its claims.json beside it")
    parser.add_argument("--markdown", type=Path, required=True)
    defaults = ClaimSettings()
    parser.add_argument("--workers", type=int, default=defaults.nightly_workers)
    parser.add_argument("--hours", type=float, default=defaults.nightly_hours)
    args = parser.parse_args()

    command = "PYTHONPATH=src .venv/bin/python " + shlex.join(["scripts/price_claims.py",
                                                              *sys.argv[1:]])
    lines = ["# The nightly's budget against the claims' seeds", "",
             f"Written by `{command}` (do not edit by hand).", "",
             (f"Each inconclusive row of a published claims table, with the seeds it needs for a "
              f"verdict (a Holm half-width below δ/2 at its grid's spread, and at the pilot's "
              f"where one sized it), priced at its grid's minutes of stage work per seed on "
              f"{args.workers} workers: hours at the least, as the workers are taken never to "
              f"idle. *Fits*: within the {args.hours:g}-h nightly."), ""]
    for path in args.claims:
        grid, budget = header_budget(path.read_text(), args.workers, args.hours)
        rows = priced_rows(json.loads((path.parent / "claims.json").read_text()), budget)
        link = os.path.relpath(path, args.markdown.parent)
        lines += [f"## [{grid}]({link})", "",
                  (f"{budget.minutes_per_seed:.1f} min of stage work per seed; the "
                   f"{args.hours:g}-h nightly on {args.workers} workers holds "
                   f"{budget.seeds_within()} seeds."), ""]
        if not rows:
            lines += ["No inconclusive row with power.", ""]
            continue
        lines += [("| claim | format | measure | why inconclusive | seeds: run / for a verdict | "
                   "hours for a verdict | fits |"), "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(cells) + " |" for cells in rows] + [""]
    args.markdown.write_text("\n".join(lines))
    print(args.markdown.read_text())


if __name__ == "__main__":
    main()
