"""Price a published claims table's inconclusive rows against the nightly's budget, without its
grid's MLflow, and plan the nightly that decides the most of them: each row's seeds for a
verdict (`claims.json`'s `power`, the run's and the pilot's) as a nightly of its own arms (the
objectives it compares), at the grid's minutes of stage work, on the nightly's workers, against
its hours (`breadth.study.budget`: a seed's warm start, shared by its objectives, and each
objective's own stages). `breadth compare --grid` writes the same sentence into each such row;
this script gives it for tables published before, and the plan for any table.

A table's header has each format's minutes of stage work ("minutes of stage work ...: free_form
115.5, mcq 226.8; 342.3 in all"), and, in tables published since, its cells per format and the
split of its stage work into warm starts and objectives. A table published before lacks them,
so it is named with them: PATH:FORMAT=CELLS/FULL[/SHARE][,...], the format's cells in the grid,
the cells of one full seed (more than a thinned seed's) and, where known, the warm start's share
of a full seed's stage work (from a pilot's stage times or the grid's note). A format without
a share is priced at a full seed whatever a row's arms. Cells must add up to the header's count.
Rows of a claims.json from before rows carried their objectives are read for them from their
measure (`legacy_objectives`).

    PYTHONPATH=src .venv/bin/python scripts/results/budget.py \\
        docs/results/superseded/nightly-grid-80e1e8eb/claims.md:free_form=8/2/0.37,mcq=4/1 \\
        docs/results/grids/multi-grid-3862d9ef/claims.md:free_form=25/6/0.20 \\
        --markdown docs/results/budget.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import sys
import time
from pathlib import Path

from breadth.study.budget import (
    FormatCost,
    NightlyBudget,
    arms_text,
    plan_text,
    row_arms,
    row_name,
)
from breadth.study.grid_design import CORRECTNESS, STUDY_OBJECTIVES, UCB, UNSCALED_CONTROL
from breadth.study.grid_settings import ClaimSettings
from breadth.study.power import seeds_text

_CELLS = re.compile(r"^- cells: (\d+) ", re.MULTILINE)
_SEEDS = re.compile(r"^- seeds: (\d+)$", re.MULTILINE)
_MACHINE = re.compile(r"^- machine: .+$", re.MULTILINE)
_WORK = re.compile(r"^- minutes of stage work .*\): ([^;\n]+); [\d.]+ in all$", re.MULTILINE)
_GRID = re.compile(r"^# Claims of grid (\S+)$", re.MULTILINE)
_FORMAT_CELLS = re.compile(r"^- cells per format \(in all / a full seed\): (.+)$", re.MULTILINE)
_SPLIT = re.compile(r"^- minutes of stage work of a seed's warm start / of one objective's own "
                    r"stages: (.+)$", re.MULTILINE)
_KNOWN = {*STUDY_OBJECTIVES, UNSCALED_CONTROL, "ucb"}


def parse_table_arg(arg: str) -> tuple[Path, dict[str, list[float]] | None]:
    """'PATH:free_form=8/2/0.37,mcq=4/1' -> (PATH, {format: [cells, cells of a full seed,
    warm start's share]}), the share absent where not named; a bare PATH -> (PATH, None): its
    header says them.

    >>> parse_table_arg("a/claims.md:free_form=8/2/0.37,mcq=4/1")
    (PosixPath('a/claims.md'), {'free_form': [8.0, 2.0, 0.37], 'mcq': [4.0, 1.0]})
    >>> parse_table_arg("a/claims.md")
    (PosixPath('a/claims.md'), None)
    """
    if ":" not in arg:
        return Path(arg), None
    path, _, spec = arg.rpartition(":")
    try:
        cells = {fmt: [float(n) for n in counts.split("/")]
                 for fmt, counts in (part.split("=") for part in spec.split(","))}
    except ValueError:
        cells = {}
    if not path or not cells or any(
            len(c) not in (2, 3) or min(c[:2]) < 1 or c[0] != int(c[0]) or c[1] != int(c[1])
            or (len(c) == 3 and not 0 <= c[2] < 1) for c in cells.values()):
        raise ValueError(f"{arg!r}: name a table as PATH:FORMAT=CELLS/FULL[/SHARE][,...], e.g. "
                         "docs/results/superseded/nightly-grid-80e1e8eb/claims.md:"
                         "free_form=8/2/0.37,mcq=4/1 (SHARE: the warm start's share of a full seed's stage work, in [0, 1))")
    return Path(path), cells


def header_budget(markdown: str, format_cells: dict[str, list[float]] | None, workers: int,
                  hours: float) -> tuple[str, NightlyBudget]:
    """(grid id, the budget) from a claims.md header and the cells named for it (None: the
    header's own lines); a header without its lines, or cells that do not add up, is an error
    saying which."""
    found = {name: pattern.search(markdown)
             for name, pattern in (("grid", _GRID), ("cells", _CELLS), ("work", _WORK))}
    missing = [name for name, match in found.items() if match is None]
    if missing:
        raise ValueError(f"the claims header lacks its {', '.join(missing)} line(s); publish it "
                         "with `breadth compare --grid`, whose header has them")
    if format_cells is None:
        line = _FORMAT_CELLS.search(markdown)
        if line is None:
            raise ValueError("the claims header has no cells per format line (published before "
                             "it was written): name them, PATH:FORMAT=CELLS/FULL[/SHARE][,...]")
        format_cells = {fmt: [float(n) for n in counts.split(" / ")] for fmt, counts in
                        _items(line.group(1))}
    minutes = {fmt: float(value) for fmt, value in _items(found["work"].group(1))}
    total = int(found["cells"].group(1))
    if sorted(minutes) != sorted(format_cells) or sum(c[0] for c in format_cells.values()) != total:
        raise ValueError(f"cells named {format_cells} do not match the header: formats "
                         f"{sorted(minutes)}, {total} cells in all")
    split = _SPLIT.search(markdown)
    costs = {fmt: FormatCost(*(float(n) for n in pair.split(" / ")))
             for fmt, pair in (_items(split.group(1)) if split else [])}
    seeds = int(_SEEDS.search(markdown).group(1)) if _SEEDS.search(markdown) else None
    for fmt, (cells, full, *share) in format_cells.items():
        if share and fmt in costs:
            raise ValueError(f"the claims header measures {fmt}'s split of stage work itself; drop "
                             f"the share named for it ({share[0]:g})")
        if share and not seeds:
            raise ValueError(f"a share for {fmt} needs the header's seeds line, which this one "
                             "lacks: drop the share to price a full seed")
        if fmt in costs:
            continue
        if share:
            # minutes = seeds x warm + cells x own, with warm = share x F and own = (1 - share)
            # x F / full for a full seed's F: a thinned seed still paid a whole warm start.
            full_seed = minutes[fmt] / (seeds * share[0] + cells * (1 - share[0]) / full)
            costs[fmt] = FormatCost(share[0] * full_seed, (1 - share[0]) * full_seed / full)
        else:
            costs[fmt] = FormatCost(minutes[fmt] / cells * full, 0.0, split=False)
    return found["grid"].group(1), NightlyBudget(costs, workers, hours)


def _items(line: str) -> list[tuple[str, str]]:
    """'free_form 8 / 2, mcq 4 / 1' -> [('free_form', '8 / 2'), ('mcq', '4 / 1')]."""
    return [tuple(item.split(" ", 1)) for item in line.split(", ")]


def legacy_objectives(row: dict) -> list[str]:
    """A row's objectives: its own (`objectives`, since rows carry them), else the study
    objectives its measure names ('ucb' for correctness+ucb), else correctness, the arm of
    every claims row whose measure names none (transfer, forking, format).

    >>> legacy_objectives({"measure": "Δ pass@1, ucb − correctness"})
    ['correctness+ucb', 'correctness']
    >>> legacy_objectives({"measure": "Δ distinct correct outcomes, vector − correctness"})
    ['vector', 'correctness']
    >>> legacy_objectives({"measure": "Δ forking share, RL − SFT (answer line excluded)"})
    ['correctness']
    """
    if row.get("objectives"):
        return list(row["objectives"])
    named = [UCB if token == "ucb" else token for token in re.split(r"[\s,()]+", row["measure"])
             if token in _KNOWN]
    return list(dict.fromkeys(named)) or [CORRECTNESS]


def priced_rows(rows: list[dict], budget: NightlyBudget) -> list[tuple[dict, dict, object]]:
    """(row, its arms, its price) of each inconclusive row with power and a cost for its
    format(s)."""
    out = []
    for row in rows:
        power = row.get("power") or {}
        if row["verdict"] != "inconclusive" or not power.get("reason"):
            continue
        arms = row_arms(row["format"], legacy_objectives(row))
        price = budget.price(arms, power["seeds_for_verdict"], power.get("pilot_sd") is not None,
                             power.get("pilot_seeds_for_verdict"))
        if price is not None:
            out.append((row, arms, price))
    return out


def table_lines(priced: list[tuple[dict, dict, object]]) -> list[str]:
    """The markdown table of the priced rows."""
    lines = [("| claim | format | measure | why inconclusive | seeds: run / for a verdict | "
              "arms | min a seed | hours for a verdict | fits |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for row, arms, price in priced:
        power = row["power"]
        seeds, hours = seeds_text(price.seeds), _hours(price, price.seeds)
        if price.pilot_sized:
            seeds += f" (pilot: {seeds_text(price.pilot_seeds)})"
            hours += f" (pilot: {_hours(price, price.pilot_seeds)})"
        lines.append(f"| {row['claim']} | {row['format']} | {row['measure']} | {power['reason']} "
                     f"| {power['num_seeds']} / {seeds} | {arms_text(arms)} | "
                     f"{price.seed_minutes:.1f} "
                     f"| {hours} | {'yes' if price.fits else 'no'} |")
    return lines


def plan_lines(priced: list[tuple[dict, dict, object]], budget: NightlyBudget) -> list[str]:
    """The nightly that decides the most of the priced rows, and what it leaves out."""
    return [plan_text([(row_name(row["claim"], row["format"], row["measure"]), arms, price.seeds)
                       for row, arms, price in priced], budget)]


def _hours(price, seeds: int | None) -> str:
    return ">200 seeds" if seeds is None else f"{price.hours(seeds):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tables", nargs="+", help="PATH[:FORMAT=CELLS/FULL[/SHARE],...] per "
                        "claims.md, each with its claims.json beside it")
    parser.add_argument("--markdown", type=Path, required=True)
    parser.add_argument("--source", action="append", default=[],
                        help="a line saying where a named share comes from (repeatable)")
    defaults = ClaimSettings()
    parser.add_argument("--workers", type=int, default=defaults.nightly_workers)
    parser.add_argument("--hours", type=float, default=defaults.nightly_hours)
    args = parser.parse_args()
    started = time.perf_counter()

    command = "PYTHONPATH=src .venv/bin/python " + shlex.join(["scripts/results/budget.py",
                                                              *sys.argv[1:]])
    lines = ["# The nightly's budget against the claims' seeds", "",
             f"Written by `{command}` (do not edit by hand).", "",
             ("Each inconclusive row of a published claims table, with the seeds it needs for a "
              "verdict (a Holm half-width below δ/2 at its grid's spread and family, and at the "
              "pilot's where one sized it), priced as a nightly of its own arms (the objectives "
              "it compares, in its format; both formats for the format claim) at that many "
              "seeds: each seed's warm start (data, SFT and its rollouts, shared by its "
              "objectives) and each objective's own stages (RL, its rollouts, evaluate), at the "
              f"grid's minutes of stage work, on {args.workers} workers with none idle. *Fits*: "
              f"within the {args.hours:g}-h nightly. A nightly of fewer rows is a smaller Holm "
              "family, so its rows would need somewhat fewer seeds than these."), ""]
    lines += [f"- {source}" for source in args.source] + ([""] if args.source else [])
    for arg in args.tables:
        path, format_cells = parse_table_arg(arg)
        markdown = path.read_text()
        grid, budget = header_budget(markdown, format_cells, args.workers, args.hours)
        priced = priced_rows(json.loads((path.parent / "claims.json").read_text()), budget)
        link = os.path.relpath(path, args.markdown.parent)
        lines += [f"## [{grid}]({link})", ""]
        # Where its figures come from: the grid's own seeds and machine, as its header says.
        lines += [line.group(0) for line in (_SEEDS.search(markdown), _MACHINE.search(markdown))
                  if line] + [""]
        lines += [(f"- {fmt}: a seed's warm start {cost.warm_start:.1f} min, an objective's own "
                   f"stages {cost.objective:.1f} min" if cost.split else
                   f"- {fmt}: {cost.warm_start:.1f} min of stage work a full seed (not split by "
                   "stage: a row is priced at a full seed whatever its arms)")
                  for fmt, cost in budget.costs.items()] + [""]
        if not priced:
            lines += ["No inconclusive row with power.", ""]
            continue
        lines += table_lines(priced) + [""] + plan_lines(priced, budget) + [""]
    lines += [(f"Priced on {platform.node()} ({os.cpu_count()} CPU cores) in "
              f"{time.perf_counter() - started:.3f} s: arithmetic on the tables above, which "
              "give their own grids' seeds and machines."), ""]
    args.markdown.write_text("\n".join(lines))
    print(args.markdown.read_text())


if __name__ == "__main__":
    main()
