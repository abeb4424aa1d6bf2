"""Side-by-side timing for the benchmarks: warm-up, interleaved arms, spread and machine load.

Every benchmark compares arm A with arm B the same way: each arm runs once untimed (imports,
caches and first-call costs land there), then the arms alternate A B A B ... for `pairs`
rounds, so load from other processes hits both alike. The report gives min/median/max of each
arm, the ratio B/A of each pair with its min/median/max, and the 1-minute load average before
and after with the core count: on a shared machine a ratio is only as good as its spread.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


@dataclass
class Comparison:
    """Seconds of each arm per round (wall clock, and CPU time of this process)."""

    names: tuple[str, str]
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    load_before: str = ""
    load_after: str = ""
    warmed_up: bool = True

    def ratios(self, clock: str = "wall") -> list[float]:
        """B / A for each pair (the same round)."""
        times = self.wall if clock == "wall" else self.cpu
        a, b = (times[name] for name in self.names)
        return [tb / ta for ta, tb in zip(a, b)]

    def median_ratio(self, clock: str = "wall") -> float:
        return statistics.median(self.ratios(clock))

    def report(self, label: str = "", clocks: tuple[str, ...] = ("wall",)) -> str:
        a, b = self.names
        start = "after a warm-up" if self.warmed_up else "from cold"
        lines = [
            f"{label}  ({len(self.wall[a])} pairs {start}, interleaved A B A B ...; A = {a}, B = {b})"
        ]
        for clock in clocks:
            times = self.wall if clock == "wall" else self.cpu
            for name in self.names:
                lines.append(f"  {clock:>4} {name:<28} {_spread(times[name], 's')}")
            lines.append(f"  {clock:>4} ratio {b} / {a}: {_spread(self.ratios(clock), '')}")
        lines.append(f"  before: {self.load_before}")
        lines.append(f"  after:  {self.load_after}")
        return "\n".join(lines)


def compare(
    arm_a: tuple[str, Callable[[], object]],
    arm_b: tuple[str, Callable[[], object]],
    *,
    pairs: int = 3,
    warm_up: bool = True,
    self_timed: bool = False,
) -> Comparison:
    """Warm both arms up, then time them alternately `pairs` times (A first in each pair).

    With `self_timed`, each arm returns the seconds to record (e.g. its median step time, so
    set-up inside the arm is left out); its CPU time is still measured around the call.
    """
    if pairs < 3:
        raise ValueError(f"pairs must be >= 3 for a min/median/max to mean anything, got {pairs}")
    result = Comparison((arm_a[0], arm_b[0]), load_before=load_line(), warmed_up=warm_up)
    if warm_up:
        arm_a[1]()
        arm_b[1]()
    for name, _ in (arm_a, arm_b):
        result.wall[name], result.cpu[name] = [], []
    for _ in range(pairs):
        for name, fn in (arm_a, arm_b):
            wall, cpu = time.perf_counter(), time.process_time()
            returned = fn()
            result.cpu[name].append(time.process_time() - cpu)
            result.wall[name].append(
                float(returned) if self_timed else time.perf_counter() - wall  # type: ignore[arg-type]
            )
    result.load_after = load_line()
    return result


def _spread(values: list[float], unit: str) -> str:
    return (
        f"min {min(values):.3f}{unit}  median {statistics.median(values):.3f}{unit}  "
        f"max {max(values):.3f}{unit}"
    )
