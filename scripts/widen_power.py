"""Widen the intervals of a power.json written before the few-seed widening (commit ccc6a9a),
without re-running its hours of training: each row's Δ pass@1 and Δ pass@n interval is widened
by sqrt(S / (S - 1)) about its estimate, inside [-1, 1] (a difference of proportions), by the
function the claims, the grid summary and `power_analysis.py` now use; "powered" is decided
again from the widened half-widths. The table is `power_analysis.py`'s own (`--markdown`).

    PYTHONPATH=src .venv/bin/python scripts/widen_power.py docs/results/power.json \
        --markdown docs/results/power_widened.md
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from power_analysis import markdown

from breadth.stats.bootstrap import widened_for_few_seeds


def widened(row: dict) -> dict:
    """The row with its two intervals widened for its seeds and `powered` decided again."""
    out = dict(row)
    for name in ("delta_pass_at_1", "delta_pass_at_n"):
        estimate, low, high = row[name]
        wide_low, wide_high = widened_for_few_seeds(estimate, low, high, row["seeds"], -1.0, 1.0)
        out[name] = [estimate, round(float(wide_low), 4), round(float(wide_high), 4)]
    # As power_analysis.py decides it: every effect beyond twice its interval's half-width.
    out["powered"] = all(abs(out[n][0]) > (out[n][2] - out[n][1])
                         for n in ("delta_pass_at_1", "delta_pass_at_n"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="a power_analysis.py --json file")
    parser.add_argument("--markdown", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = [widened(row) for row in json.loads(args.results.read_text())]
    table = markdown(rows, time.perf_counter() - started)
    args.markdown.write_text(
        table + f"\nWidened from `{args.results}` (the runs' own seeds, above); the wall time is "
        "this command's, not the runs'.\n"
    )


if __name__ == "__main__":
    main()
