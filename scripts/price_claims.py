"""Price a published claims table's inconclusive rows against the nightly's budget, without its
grid's MLflow: each row's seeds for a verdict (`claims.json`'s `power`, the run's and the
pilot's) for a nightly of the grid's cells of the row's format, at their minutes of stage work
per full seed, on the nightly's workers, against its hours. The sentence is the one `breadth
compare --grid` now writes into each such row (`breadth.study.power.NightlyBudget`); this
script gives it for tables published before.

A table's header has each format's minutes of stage work ("minutes of stage work ...: free_form
115.5, mcq 226.8; 342.3 in all") and, since this script was written, its cells per format
("cells per format (in all / a full seed): free_form 8 / 2, mcq 4 / 1"). A table published
before has no such line, so it is named with them: PATH:FORMAT=CELLS/FULL[,...], the format's
cells in the grid and the cells of one full seed (the objectives it ran there; more than a
thinned seed's). They must add up to the header's cell count.

    PYTHONPATH=src .venv/bin/python scripts/price_claims.py \\
        docs/results/claims.md:free_form=8/2,mcq=4/1 \\
        docs/results/multi/claims.md:free_form=25/6 --markdown docs/results/budget.md
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
from breadth.study.power import NightlyBudget, nightly_budgets

_CELLS = re.compile(r"^- cells: (\d+) ", re.MULTILINE)
_WORK = re.compile(r"^- minutes of stage work .*\): ([^;\n]+); [\d.]+ in all$", re.MULTILINE)
_GRID = re.compile(r"^# Claims of grid (\S+)$", re.MULTILINE)
_FORMAT_CELLS = re.compile(r"^- cells per format \(in all / a full seed\): (.+)$", re.MULTILINE)


def parse_table_arg(arg: str) -> tuple[Path, dict[str, list[int]] | None]:
    """'PATH:free_form=8/2,mcq=4/1' -> (PATH, {format: [cells, cells of a full seed]}); a bare
    PATH -> (PATH, None): its header says them.

    >>> parse_table_arg("a/claims.md:free_form=8/2,mcq=4/1")
    (PosixPath('a/claims.md'), {'free_form': [8, 2], 'mcq': [4, 1]})
    >>> parse_table_arg("a/claims.md")
    (PosixPath('a/claims.md'), None)
    """
    if ":" not in arg:
        return Path(arg), None
    path, _, spec = arg.rpartition(":")
    try:
        cells = {fmt: [int(n) for n in counts.split("/")]
                 for fmt, counts in (part.split("=") for part in spec.split(","))}
    except ValueError:
        cells = {}
    if not path or not cells or any(len(c) != 2 or min(c) < 1 for c in cells.values()):
        raise ValueError(f"{arg!r}: name a table as PATH:FORMAT=CELLS/FULL[,...], e.g. "
                         "docs/results/claims.md:free_form=8/2,mcq=4/1")
    return Path(path), cells


def header_budgets(markdown: str, format_cells: dict[str, list[int]] | None, workers: int,
                   hours: float) -> tuple[str, dict[str, NightlyBudget]]:
    """(grid id, budgets by format and "both") from a claims.md header and the cells named for
    it (None: the header's own line); a header without its lines, or cells that do not add
    up, is an error saying which."""
    if format_cells is None:
        line = _FORMAT_CELLS.search(markdown)
        if line is None:
            raise ValueError("the claims header has no cells per format line (published before "
                             "it was written): name them, PATH:FORMAT=CELLS/FULL[,...]")
        format_cells = {fmt: [int(n) for n in counts.split(" / ")] for fmt, counts in
                        (item.split(" ", 1) for item in line.group(1).split(", "))}
    found = {name: pattern.search(markdown)
             for name, pattern in (("grid", _GRID), ("cells", _CELLS), ("work", _WORK))}
    missing = [name for name, match in found.items() if match is None]
    if missing:
        raise ValueError(f"the claims header lacks its {', '.join(missing)} line(s); publish it "
                         "with `breadth compare --grid`, whose header has them")
    minutes = {fmt: float(value) for fmt, value in
               (item.rsplit(" ", 1) for item in found["work"].group(1).split(", "))}
    total = int(found["cells"].group(1))
    if sorted(minutes) != sorted(format_cells) or sum(c for c, _ in format_cells.values()) != total:
        raise ValueError(f"cells named {format_cells} do not match the header: formats "
                         f"{sorted(minutes)}, {total} cells in all")
    budgets = nightly_budgets({"compute_minutes": minutes, "format_cells": format_cells},
                              workers, hours)
    return found["grid"].group(1), budgets


def priced_rows(rows: list[dict], budgets: dict[str, NightlyBudget]) -> list[list[str]]:
    """One table row per inconclusive claim row with power: its seeds, their hours, the fit."""
    out = []
    for row in rows:
        power = row.get("power") or {}
        if row["verdict"] != "inconclusive" or not power.get("reason"):
            continue
        budget = budgets[row["format"]]
        need, pilot = power["seeds_for_verdict"], power.get("pilot_seeds_for_verdict")
        sized = power.get("pilot_sd") is not None

        out.append([row["claim"], row["format"], row["measure"], power["reason"],
                    f"{power['num_seeds']} / {'>200' if need is None else need}"
                    + (f" (pilot: {'>200' if pilot is None else pilot})" if sized else ""),
                    f"{budget.minutes_per_seed:.1f}",
                    _hours(budget, need) + (f" (pilot: {_hours(budget, pilot)})" if sized else ""),
                    "yes" if budget.holds(need) else "no"])
    return out


def _hours(budget: NightlyBudget, seeds: int | None) -> str:
    return ">200 seeds" if seeds is None else f"{budget.hours_for(seeds):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tables", nargs="+", help="PATH[:FORMAT=CELLS/FULL,...] per claims.md, "
                        "each with its claims.json beside it")
    parser.add_argument("--markdown", type=Path, required=True)
    defaults = ClaimSettings()
    parser.add_argument("--workers", type=int, default=defaults.nightly_workers)
    parser.add_argument("--hours", type=float, default=defaults.nightly_hours)
    args = parser.parse_args()

    command = "PYTHONPATH=src .venv/bin/python " + shlex.join(["scripts/price_claims.py",
                                                              *sys.argv[1:]])
    lines = ["# The nightly's budget against the claims' seeds", "",
             f"Written by `{command}` (do not edit by hand).", "",
             ("Each inconclusive row of a published claims table, with the seeds it needs for a "
              "verdict (a Holm half-width below δ/2 at its grid's spread, and at the pilot's "
              "where one sized it), priced as a nightly of its grid's cells of the row's format "
              "(every objective the grid ran there; both formats for the format claim) at that "
              f"many seeds, at their minutes of stage work per full seed, on {args.workers} "
              f"workers. *Fits*: within the {args.hours:g}-h nightly. A nightly thinned to the "
              "row's own arms (its objectives only) costs less than this."), ""]
    for arg in args.tables:
        path, format_cells = parse_table_arg(arg)
        grid, budgets = header_budgets(path.read_text(), format_cells, args.workers, args.hours)
        rows = priced_rows(json.loads((path.parent / "claims.json").read_text()), budgets)
        link = os.path.relpath(path, args.markdown.parent)
        lines += [f"## [{grid}]({link})", ""]
        lines += [f"- {fmt}: {budget.minutes_per_seed:.1f} min of stage work a full seed; the "
                  f"{args.hours:g}-h nightly holds {budget.seeds_within()} seeds of its cells"
                  for fmt, budget in budgets.items()] + [""]
        if not rows:
            lines += ["No inconclusive row with power.", ""]
            continue
        lines += [("| claim | format | measure | why inconclusive | seeds: run / for a verdict | "
                   "min a seed | hours for a verdict | fits |"),
                  "|---|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(cells) + " |" for cells in rows] + [""]
    args.markdown.write_text("\n".join(lines))
    print(args.markdown.read_text())


if __name__ == "__main__":
    main()
