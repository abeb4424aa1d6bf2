"""Where the test suite's CPU goes, per module, from the log a run writes with
BREADTH_TEST_CPU_LOG=PATH (`tests/conftest.py`): CPU seconds in pytest's own process and in
the child processes it waited for, wall seconds, and each module's share of all CPU counted.
On a 2-core machine the suite is CPU-bound, so its length follows the CPU column.

    BREADTH_TEST_CPU_LOG=/tmp/cpu.jsonl make test
    .venv/bin/python scripts/tools/test_cpu_report.py /tmp/cpu.jsonl --top 25
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def module_costs(lines: list[str]) -> dict[str, dict[str, float]]:
    """Per module, its costs summed over the sessions (xdist workers) that ran a part of it.

    >>> module_costs(['{"module": "a", "cpu_s": 1.0, "children_cpu_s": 2.0, "wall_s": 4.0}',
    ...               '{"module": "a", "cpu_s": 0.5, "children_cpu_s": 0.0, "wall_s": 1.0}'])
    {'a': {'cpu_s': 1.5, 'children_cpu_s': 2.0, 'wall_s': 5.0}}
    """
    costs: dict[str, dict[str, float]] = defaultdict(
        lambda: {"cpu_s": 0.0, "children_cpu_s": 0.0, "wall_s": 0.0})
    for line in lines:
        if line.strip():
            row = json.loads(line)
            for key in ("cpu_s", "children_cpu_s", "wall_s"):
                costs[row["module"]][key] += float(row[key])
    return dict(costs)


def report(costs: dict[str, dict[str, float]], top: int) -> list[str]:
    """The modules by CPU (own and children's), most first, with their share of all CPU."""
    total = sum(c["cpu_s"] + c["children_cpu_s"] for c in costs.values()) or 1.0
    ranked = sorted(costs.items(), key=lambda kv: -(kv[1]["cpu_s"] + kv[1]["children_cpu_s"]))
    lines = [f"{'CPU s':>8} {'own':>8} {'children':>8} {'wall s':>8} {'share':>6}  module"]
    for module, c in ranked[:top]:
        cpu = c["cpu_s"] + c["children_cpu_s"]
        lines.append(f"{cpu:8.1f} {c['cpu_s']:8.1f} {c['children_cpu_s']:8.1f} "
                     f"{c['wall_s']:8.1f} {cpu / total:6.1%}  {module}")
    walls = sum(c["wall_s"] for c in costs.values())
    lines.append(f"{total:8.1f} CPU s counted in {len(costs)} modules ({walls:.0f} s of wall "
                 "summed over them)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the BREADTH_TEST_CPU_LOG file of a test run")
    parser.add_argument("--top", type=int, default=30, help="modules to list")
    args = parser.parse_args()
    print("\n".join(report(module_costs(args.log.read_text().splitlines()), args.top)))


if __name__ == "__main__":
    main()
