"""Side-by-side timing for the benchmarks: warm-up, interleaved arms, spread and machine load.

Every benchmark compares arm A with arm B the same way: each arm runs once untimed (imports,
caches and first-call costs land there), then the arms alternate A B A B ... for `pairs`
rounds, so load from other processes hits both alike. The report gives min/median/max of each
arm, the ratio B/A of each pair with its min/median/max, and the 1-minute load average before
and after with the core count: on a shared machine a ratio is only as good as its spread.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# The GRPO run the reward benchmarks time: the config's own defaults (G = 8, 8 prompts a step,
# temperature 1, no warmup), written out because the `default` preset is the demo's
# (docs/results/demo.md: 32 prompts a step at temperature 1.5 after a 12-epoch SFT of 9,000
# problems), and the figures on record were measured at these.
REWARD_BENCH_SETTINGS = [
    "data.num_train=4000", "data.num_eval=64", "sft.epochs=8", "sft.learning_rate=0.003",
    "rl.prompts_per_step=8", "rl.learning_rate=0.0001", "rl.warmup_steps=0",
    "rl.temperature=1.0", "rollout.temperature=1.0",
]


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


@dataclass
class Comparison:
    """Seconds of each arm per round (wall clock, and CPU time of this process)."""

    names: tuple[str, str]
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    # Per meter (e.g. "mlflow server CPU"), the counter's increase over each round of each arm.
    metered: dict[str, dict[str, list[float]]] = field(default_factory=dict)
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

    def median_ratio_interval(self, clock: str = "wall") -> tuple[float, float] | None:
        """95% CI of the median ratio (`median_interval`); None with fewer than 6 pairs."""
        return median_interval(self.ratios(clock))

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
            interval = self.median_ratio_interval(clock)
            lines.append(f"  {clock:>4} ratio median, 95% CI: [{interval[0]:.3f}, {interval[1]:.3f}] "
                         "(order statistics, no distribution assumed)" if interval else
                         f"  {clock:>4} ratio median: no 95% CI with fewer than 6 pairs")
        for meter, per_arm in self.metered.items():
            for name in self.names:
                lines.append(f"  {meter} during {name}: {_spread(per_arm[name], 's')}")
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
    meters: dict[str, Callable[[], float]] | None = None,
) -> Comparison:
    """Warm both arms up, then time them alternately `pairs` times (A first in each pair).

    With `self_timed`, each arm returns the seconds to record (e.g. its median step time, so
    set-up inside the arm is left out); its CPU time is still measured around the call.
    `meters` are cumulative counters read before and after each call (e.g. another process's
    CPU seconds, `process_tree_cpu`): what an arm costs outside this process.
    """
    if pairs < 3:
        raise ValueError(f"pairs must be >= 3 for a min/median/max to mean anything, got {pairs}")
    result = Comparison((arm_a[0], arm_b[0]), load_before=load_line(), warmed_up=warm_up)
    if warm_up:
        arm_a[1]()
        arm_b[1]()
    meters = meters or {}
    for name, _ in (arm_a, arm_b):
        result.wall[name], result.cpu[name] = [], []
        for meter in meters:
            result.metered.setdefault(meter, {})[name] = []
    for _ in range(pairs):
        for name, fn in (arm_a, arm_b):
            counters = {meter: read() for meter, read in meters.items()}
            wall, cpu = time.perf_counter(), time.process_time()
            returned = fn()
            result.cpu[name].append(time.process_time() - cpu)
            for meter, read in meters.items():
                result.metered[meter][name].append(read() - counters[meter])
            result.wall[name].append(
                float(returned) if self_timed else time.perf_counter() - wall  # type: ignore[arg-type]
            )
    result.load_after = load_line()
    return result


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free CI of the median: the innermost pair of order statistics
    (x_(k), x_(n+1-k)) whose coverage, 1 - 2 P(Binomial(n, 1/2) < k), is at least `level`.
    Pairs of a benchmark are not normal (a noisy neighbour gives a long tail), so no t-interval.
    None when even (min, max) covers less (fewer than 6 values at 95%).

    >>> median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # coverage 1 - 2/64 = 0.969
    (1.0, 6.0)
    >>> median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # (min, max) covers only 0.9375
    True
    """
    ordered, n = sorted(values), len(values)
    below, best = 0.0, None
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2**n  # now P(Binomial(n, 1/2) < k)
        if 1 - 2 * below < level:
            break
        best = (ordered[k - 1], ordered[n - k])
    return best


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its live children, from /proc
    (Linux); NaN where /proc is absent. Children that already exited are not counted."""
    if not os.path.isdir("/proc"):
        return float("nan")
    ticks = os.sysconf("SC_CLK_TCK")
    stats: dict[int, list[str]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                stats[int(entry)] = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it exited meanwhile
            continue
    children: dict[int, list[int]] = {}
    for child, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(child)
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        if current in stats:  # fields 14 and 15 of /proc/<pid>/stat: utime, stime
            total += (int(stats[current][11]) + int(stats[current][12])) / ticks
        todo.extend(children.get(current, []))
    return total


def _spread(values: list[float], unit: str) -> str:
    return (
        f"min {min(values):.3f}{unit}  median {statistics.median(values):.3f}{unit}  "
        f"max {max(values):.3f}{unit}"
    )
