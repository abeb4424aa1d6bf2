"""README.md's "What the study found" table: every decided row of each current grid's committed
claims table, worded as today's verdict code words it, with each grid's Holm family.

    PYTHONPATH=src .venv/bin/python scripts/results/findings.py            # print the table
    PYTHONPATH=src .venv/bin/python scripts/results/findings.py --readme README.md

`--readme` replaces the README's table, from its header row to its line of Holm families;
without it the table is printed. tests/unit/scripts/test_findings.py checks that the README holds what this
prints. The grids are the current ones of docs/results/README.md; which rows each quotes and
why is in `CURRENT`. The committed tables are not rewritten (`breadth.study.findings`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from breadth.study.findings import FAMILIES, HEADER, GridTable, findings_markdown, read_grid

ROOT = Path(__file__).resolve().parents[2]
GRIDS = "docs/results/grids"

# (name, grid id, folder under docs/results/grids, about, formats quoted). The full grid is
# quoted only in the formats the nightly left out (its mcq rows, the format claim): the
# fresh-seed nightly is the same task and objectives on the leak-free split and decides free
# form. The 15-seed nightly it replaced (grid-80e1e8eb, leaky split, seeds not fresh) is in
# docs/results/superseded/, as the fresh nightly's plan fixed before its results.
CURRENT = [
    ("fresh-seed nightly", "grid-f9e9d325", "fresh-seed-nightly-grid-f9e9d325",
     "chain task, leak-free split, free form, correctness and ucb, 6 fresh seeds", None),
    ("full grid", "grid-6abeba80", "full-grid-6abeba80",
     "chain task, both formats, 4 seeds; cited by the nightly's mcq rows", ("mcq", "both")),
    ("default preset", "grid-eddd94d0", "default-preset-grid-eddd94d0",
     "arithmetic, the demo's preset, free form, correctness and ucb, 10 seeds", None),
    ("multi", "grid-3862d9ef", "multi-grid-3862d9ef",
     "pairs task, free form, 6 objectives, 4 seeds a comparison", None),
    ("vector", "grid-d32242e8", "vector-grid-d32242e8",
     "pairs task, free form, correctness and vector, 7 seeds", None),
    ("search", "grid-a58d65cb", "search-grid-a58d65cb",
     "pairs task, free form, correctness, 11 fresh seeds", None),
]


def current_grids(root: Path = ROOT) -> list[GridTable]:
    """The current grids' committed tables, re-decided."""
    return [read_grid(root / GRIDS / folder / "claims.json", name, grid_id,
                      f"{GRIDS}/{folder}/claims.md", about, formats)
            for name, grid_id, folder, about, formats in CURRENT]


def with_table(readme: str, table: str) -> str:
    """`readme` with its findings table (from the line `HEADER` to the line that opens with
    `FAMILIES`, both included) replaced by `table`."""
    lines = readme.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\n") == HEADER]
    ends = [i for i, line in enumerate(lines) if line.startswith(FAMILIES)]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"it needs one findings table: one line {HEADER!r} and, after it, one "
                         f"line opening with {FAMILIES!r} (paste the printed table once)")
    return "".join([*lines[:starts[0]], table, *lines[ends[0] + 1:]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", type=Path, default=None,
                        help="write the table into this README between its findings comments")
    args = parser.parse_args(argv)
    table = findings_markdown(current_grids())
    if args.readme is None:
        sys.stdout.write(table)
        return 0
    try:
        args.readme.write_text(with_table(args.readme.read_text(), table))
    except ValueError as error:
        parser.error(f"--readme {args.readme}: {error}")
    print(f"wrote the findings table into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
