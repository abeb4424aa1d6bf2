"""The collapse alarm: tonight's grid summary against the previous one, cell by cell.

Pure pandas: both inputs are `breadth.study.grid_statistics.grid_summary` frames (columns format,
reward, and per metric `<name>`, `<name>_ci_low`, `<name>_ci_high`); nothing here reads MLflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from breadth.study.grid_statistics import estimate_text, summary_k

__all__ = [
    "DEFAULT_ALARM_METRICS",
    "AlarmResult",
    "CellComparison",
    "collapse_alarm",
]

# What collapses first when RL narrows the model: pass@k at the largest k, and the number of
# distinct outcomes on the problems the base model could not solve.
DEFAULT_ALARM_METRICS = ("pass_at_kmax", "distinct_unsolved")
_KEYS = ("format", "reward")


@dataclass(frozen=True)
class CellComparison:
    """One metric of one cell, previous grid vs current grid."""

    format: str
    reward: str
    metric: str
    previous: float
    previous_low: float
    previous_high: float
    current: float
    current_low: float
    current_high: float
    dropped: bool
    """True when this comparison fires the alarm (see `collapse_alarm`)."""
    verdict: str
    """One line: why it dropped, or why not (within CI, drop too small, not measured)."""


@dataclass(frozen=True)
class AlarmResult:
    """Whether the alarm fired, why, and every comparison made."""

    fired: bool
    reasons: tuple[str, ...]
    """One line per cell-metric that dropped (empty when quiet)."""
    compared: tuple[CellComparison, ...]
    """Every cell-metric present in both grids, dropped or not."""
    notes: tuple[str, ...] = ()
    """Reported, never alarmed: cells in one grid only, metrics not measured, a k mismatch."""

    def markdown(self) -> str:
        """A short report for a Prefect artifact or the flow run's log."""
        head = "**Collapse alarm FIRED**" if self.fired else "Collapse alarm quiet"
        lines = [f"## {head}", ""]
        lines += [f"- {r}" for r in self.reasons]
        if self.notes:
            lines += ["", "Notes:", *(f"- {n}" for n in self.notes)]
        # One narrow table per metric (the cell in one column, the verdict short), so that it
        # fits a flow-run page; a drop's full sentence is in the list above.
        for metric in dict.fromkeys(c.metric for c in self.compared):
            lines += ["", f"**{metric}**", "", "| cell | previous [CI] | current [CI] | verdict |",
                      "| --- | --- | --- | --- |"]
            for c in (c for c in self.compared if c.metric == metric):
                lines.append(
                    f"| {c.format} / {c.reward} | "
                    f"{estimate_text(c.previous, c.previous_low, c.previous_high)} | "
                    f"{estimate_text(c.current, c.current_low, c.current_high)} | "
                    f"{'DROPPED' if c.dropped else c.verdict} |"
                )
        return "\n".join(lines) + "\n"


def collapse_alarm(
    previous: pd.DataFrame,
    current: pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_ALARM_METRICS,
    *,
    min_relative_drop: float = 0.2,
    min_relative_drop_without_ci: float = 0.4,
) -> AlarmResult:
    """Fire when, in any cell (matched on format + reward), a metric fell beyond the CI.

    A metric of a cell *drops* when both hold:

    1. **Beyond the CI, both ways**: the current estimate is below the previous CI's low end
       AND the current CI's high end is below the previous estimate. Each grid's estimate lies
       outside the other's interval, so neither grid's noise alone explains the gap.
    2. **A material drop**: previous - current >= `min_relative_drop` x |previous| (a fifth).

    Without a CI on either side (a one-seed grid and a metric logged without its bootstrap
    interval, e.g. the transfer splits), only (2) can be checked, with the larger floor
    `min_relative_drop_without_ci`. Rises never fire. Cells in only one grid, metrics measured
    in only one, and a different largest k are reported in `notes`, never alarmed.

    Why both conditions, and how often each fires on noise alone (simulated):
    docs/design/algorithms.md, "Grid statistics and the collapse alarm".

    >>> prev = pd.DataFrame({"format": ["mcq"], "reward": ["correctness"], "pass_at_kmax": [0.8],
    ...     "pass_at_kmax_ci_low": [0.7], "pass_at_kmax_ci_high": [0.9]})
    >>> cur = prev.assign(pass_at_kmax=[0.4], pass_at_kmax_ci_low=[0.3], pass_at_kmax_ci_high=[0.5])
    >>> result = collapse_alarm(prev, cur, metrics=["pass_at_kmax"])
    >>> result.fired
    True
    >>> result.reasons[0]
    'mcq / correctness: pass_at_kmax fell 0.800 [0.700, 0.900] -> 0.400 [0.300, 0.500] (-50%)'

    >>> collapse_alarm(prev, prev.assign(pass_at_kmax=[0.75]), metrics=["pass_at_kmax"]).fired
    False
    """
    for name, frame in (("previous", previous), ("current", current)):
        missing = [c for c in _KEYS if c not in frame.columns]
        if missing:
            raise ValueError(
                f"the {name} grid summary lacks the column(s) {missing}: pass grid_summary(...) "
                "output (one row per format x reward cell)"
            )
        duplicated = frame.duplicated(list(_KEYS))
        if duplicated.any():
            cells = [f"{r.format} / {r.reward}" for r in frame[duplicated].itertuples()]
            raise ValueError(
                f"the {name} grid summary has more than one row for cell(s) {cells}: "
                "summarise each grid separately with grid_summary(...)"
            )
    notes: list[str] = []
    prev_cells = {tuple(r): i for i, r in zip(previous.index, previous[list(_KEYS)].values)}
    cur_cells = {tuple(r): i for i, r in zip(current.index, current[list(_KEYS)].values)}
    for cell in sorted(set(prev_cells) - set(cur_cells), key=str):
        notes.append(f"{cell[0]} / {cell[1]}: only in the previous grid (not compared)")
    for cell in sorted(set(cur_cells) - set(prev_cells), key=str):
        notes.append(f"{cell[0]} / {cell[1]}: only in the current grid (not compared)")
    prev_k, cur_k = summary_k(previous), summary_k(current)
    if prev_k is not None and cur_k is not None and prev_k != cur_k:
        notes.append(f"largest k differs: previous {prev_k}, current {cur_k} (pass@k read at each)")

    compared: list[CellComparison] = []
    for cell in sorted(set(prev_cells) & set(cur_cells), key=str):
        p, c = previous.loc[prev_cells[cell]], current.loc[cur_cells[cell]]
        for metric in metrics:
            comparison = _compare(
                cell, metric, _triple(p, metric), _triple(c, metric),
                min_relative_drop, min_relative_drop_without_ci,
            )
            if comparison is None:
                # A split too small to read is no missing measurement: say which it was.
                why = "; ".join(f"{reason} in the {name} grid" for name, row in
                                (("previous", p), ("current", c))
                                if isinstance(reason := row.get(f"{metric}_inconclusive"), str))
                notes.append(f"{cell[0]} / {cell[1]}: {metric} "
                             + (f"not compared: {why}" if why else "not measured in both grids"))
            else:
                compared.append(comparison)
    reasons = tuple(c.verdict for c in compared if c.dropped)
    return AlarmResult(bool(reasons), reasons, tuple(compared), tuple(notes))


def _compare(cell, metric, prev, cur, min_drop, min_drop_without_ci) -> CellComparison | None:
    (p, p_low, p_high), (c, c_low, c_high) = prev, cur
    if not (math.isfinite(p) and math.isfinite(c)):
        return None
    drop = p - c
    relative = drop / abs(p) if p else math.nan
    change = f"{estimate_text(p, p_low, p_high)} -> {estimate_text(c, c_low, c_high)}"
    where = f"{cell[0]} / {cell[1]}: {metric}"
    has_ci = math.isfinite(p_low) and math.isfinite(c_high)
    floor = min_drop if has_ci else min_drop_without_ci
    # The tolerance keeps a drop of exactly the floor (1.0 -> 0.8 at 20%) from rounding away.
    material = p != 0 and drop > 0 and drop >= floor * abs(p) * (1 - 1e-9)
    beyond = c < p_low and c_high < p if has_ci else True
    dropped = material and beyond
    if dropped:
        verdict = f"{where} fell {change} ({-relative:+.0%})"
        if not has_ci:
            verdict += f" (no CI: judged by the {floor:.0%} floor alone)"
    elif drop <= 0:
        verdict = "no drop"
    elif not beyond:
        verdict = "within the CIs"
    else:
        verdict = f"beyond the CIs but under the {floor:.0%} floor ({relative:.0%})"
    return CellComparison(str(cell[0]), str(cell[1]), metric, p, p_low, p_high, c, c_low,
                          c_high, dropped, verdict)


def _triple(row: pd.Series, metric: str) -> tuple[float, float, float]:
    return tuple(  # type: ignore[return-value]
        _float(row.get(name)) for name in (metric, f"{metric}_ci_low", f"{metric}_ci_high")
    )


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
