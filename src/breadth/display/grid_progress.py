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
    cell_seconds: float | None = None
    """The cell's own wall time (its flow run's), or None when unknown."""
    cached: bool = False
    """Whether the cell computed nothing (every stage came from the cache). False when
    unknown: the ETA then counts the cell as one that computed."""

    @property
    def completed(self) -> bool:
        return self.state == "COMPLETED"


def eta_seconds(
    done: int, total: int, elapsed_s: float, cached: int = 0, cached_s: float = 0.0
) -> float | None:
    """Time left at the observed throughput of the cells that computed: (elapsed - cached_s) /
    (done - cached) x cells left; None while every finished cell was a cache hit.

    Throughput rather than a mean cell time, so that the estimate holds however many cells run
    at once (one in process, or one per worker of a pool). Cache hits are not counted as
    throughput: one takes seconds, and extrapolating from it promised 3 s for a grid that
    then computed for 1m44s. `cached_s` is the wall time the hits took: where cells run one
    after another (the only runner that knows its hits), no cell computed meanwhile, and
    charging it to the computed cells made each look slower (3 s of hits over one 60 s cell
    said 126 s for two more, not 120 s).

    It assumes that every cell left computes, at that pace: which of them the cache holds is
    not known until each runs, so a grid whose remaining cells are hits ends sooner than said.

    >>> eta_seconds(done=1, total=4, elapsed_s=60.0)
    180.0
    >>> eta_seconds(done=2, total=4, elapsed_s=63.0, cached=1, cached_s=3.0)  # a 3 s hit
    120.0
    >>> eta_seconds(done=1, total=4, elapsed_s=3.0, cached=1, cached_s=3.0) is None
    True
    >>> eta_seconds(done=4, total=4, elapsed_s=200.0)
    0.0
    """
    if done <= 0:
        raise ValueError(f"the ETA needs at least one finished cell, got done={done}")
    if done == total:
        return 0.0
    computed = done - cached
    if computed <= 0:
        return None
    if cached_s > elapsed_s:
        raise ValueError(f"cache hits took {cached_s:.1f}s of {elapsed_s:.1f}s elapsed: their "
                         "time is subtracted only for cells run one after another")
    return (elapsed_s - cached_s) / computed * (total - done)


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


def progress_line(
    done: int, total: int, elapsed_s: float, outcome: CellOutcome, cached: int = 0,
    cached_s: float = 0.0,
) -> str:
    """The line printed as a cell finishes (`cached`: how many of the `done` cells were cache
    hits, `cached_s` the time they took; see `eta_seconds`). "at" is the time since the grid
    started; the cell's own time is in brackets (both were once one "after", which read as the
    cell's time).

    >>> progress_line(2, 4, 100.0, CellOutcome("mcq/darling/seed0", "COMPLETED", 100.0,
    ...                                          cell_seconds=17.0))
    'cell 2/4 mcq/darling/seed0 COMPLETED at 1m40s (cell 17s); ETA 1m40s'
    >>> hit = CellOutcome("mcq/passk/seed0", "COMPLETED", 3.0, cell_seconds=3.0, cached=True)
    >>> progress_line(1, 4, 3.0, hit, cached=1, cached_s=3.0)
    'cell 1/4 mcq/passk/seed0 COMPLETED at 3s (cell 3s, all stages cached); ETA unknown until a cell computes'
    >>> progress_line(4, 4, 90.0, CellOutcome("mcq/passk/seed1", "FAILED", 90.0))
    'cell 4/4 mcq/passk/seed1 FAILED at 1m30s; all cells done'
    """
    left = eta_seconds(done, total, elapsed_s, cached, cached_s)
    if done == total:
        tail = "all cells done"
    else:
        tail = "ETA unknown until a cell computes" if left is None else f"ETA {duration(left)}"
    own = [] if outcome.cell_seconds is None else [f"cell {duration(outcome.cell_seconds)}"]
    own += ["all stages cached"] if outcome.cached else []
    brackets = f" ({', '.join(own)})" if own else ""
    return (f"cell {done}/{total} {outcome.cell} {outcome.state} at {duration(outcome.seconds)}"
            f"{brackets}; {tail}")


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
    ])


def _one_line(message: str, limit: int = 300) -> str:
    # A traceback would break the table: its last line names the error.
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    text = (lines[-1] if lines else "(no message)").replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."
