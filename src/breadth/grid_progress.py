"""A grid's cells as they finish: how each ended, the "cell i/N" line with an ETA, and the
section of the grid summary that names the cells that did not finish.

Pure and independent of how cells run (one after another in one process, or as deployment
runs spread over a work pool): the grid flow feeds it what it observed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CellOutcome:
    """How one cell of a grid ended."""

    cell: str
    """The cell's name, `format/objective/seedN` (its `grid.cell` tag in MLflow)."""
    state: str
    """The final state of its flow run: COMPLETED, FAILED, CRASHED or CANCELLED."""
    seconds: float
    """Wall time from the grid's start to this cell's end."""
    flow_run: str = ""
    """The cell's Prefect flow run (its id, or its name when it ran in process)."""
    message: str = ""
    """Why it did not complete (the error, as Prefect recorded it); empty when it did."""

    @property
    def completed(self) -> bool:
        return self.state == "COMPLETED"


def eta_seconds(done: int, total: int, elapsed_s: float) -> float:
    """Time left at the observed throughput: elapsed / done x cells left.

    Throughput rather than a mean cell time, so that the estimate holds however many cells run
    at once (one in process, or one per worker of a pool).

    >>> eta_seconds(done=1, total=4, elapsed_s=60.0)
    180.0
    >>> eta_seconds(done=4, total=4, elapsed_s=200.0)
    0.0
    """
    if done <= 0:
        raise ValueError(f"the ETA needs at least one finished cell, got done={done}")
    return elapsed_s / done * (total - done)


def duration(seconds: float) -> str:
    """A short human duration.

    >>> duration(42.4), duration(185), duration(3 * 3600 + 120)
    ('42s', '3m05s', '3h02m')
    """
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(done: int, total: int, elapsed_s: float, outcome: CellOutcome) -> str:
    """The line printed as a cell finishes.

    >>> progress_line(2, 4, 100.0, CellOutcome("mcq/darling/seed0", "COMPLETED", 100.0))
    'cell 2/4 mcq/darling/seed0 COMPLETED after 1m40s; ETA 1m40s'
    >>> progress_line(4, 4, 90.0, CellOutcome("mcq/passk/seed1", "FAILED", 90.0))
    'cell 4/4 mcq/passk/seed1 FAILED after 1m30s; all cells done'
    """
    left = eta_seconds(done, total, elapsed_s)
    tail = "all cells done" if done == total else f"ETA {duration(left)}"
    return f"cell {done}/{total} {outcome.cell} {outcome.state} after {duration(outcome.seconds)}; {tail}"


def failed_cells(outcomes: list[CellOutcome]) -> list[CellOutcome]:
    return [outcome for outcome in outcomes if not outcome.completed]


def failed_cells_markdown(outcomes: list[CellOutcome]) -> str:
    """The summary's section naming every cell that did not complete, with its flow run and
    error; empty when all completed (the summary table already holds the finished cells).

    >>> print(failed_cells_markdown([CellOutcome("ff/ucb/seed0", "FAILED", 9.0, "r1", "boom"),
    ...                              CellOutcome("ff/batch/seed0", "COMPLETED", 8.0)]))
    <BLANKLINE>
    ## Failed cells (1 of 2)
    <BLANKLINE>
    These cells did not finish; the table above leaves them out.
    <BLANKLINE>
    | cell | state | flow run | error |
    | --- | --- | --- | --- |
    | ff/ucb/seed0 | FAILED | r1 | boom |
    """
    failed = failed_cells(outcomes)
    if not failed:
        return ""
    rows = [f"| {o.cell} | {o.state} | {o.flow_run} | {_one_line(o.message)} |" for o in failed]
    return "\n".join([
        "", f"## Failed cells ({len(failed)} of {len(outcomes)})", "",
        "These cells did not finish; the table above leaves them out.", "",
        "| cell | state | flow run | error |", "| --- | --- | --- | --- |", *rows,
    ])  # fmt: skip


def _one_line(message: str, limit: int = 300) -> str:
    # A traceback would break the table: its last line names the error.
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = (lines[-1] if lines else "(no message)").replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."
