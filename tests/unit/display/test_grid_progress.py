"""The grid's progress line, ETA and failed-cells section (breadth.display.grid_progress)."""

from __future__ import annotations

import pytest

from breadth.display.grid_progress import (
    CellOutcome,
    duration,
    eta_seconds,
    failed_cells_markdown,
    progress_line,
)


@pytest.mark.parametrize(("done", "total", "elapsed", "expected"), [
    (1, 4, 60.0, 180.0),    # one cell a minute, three left
    (2, 4, 60.0, 60.0),     # two workers finishing together halve the estimate
    (3, 3, 99.0, 0.0),
])
def test_eta_follows_the_observed_throughput(done, total, elapsed, expected):
    assert eta_seconds(done, total, elapsed) == pytest.approx(expected)


def test_eta_refuses_before_any_cell_finished():
    with pytest.raises(ValueError, match="at least one finished cell"):
        eta_seconds(0, 4, 10.0)


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (59.4, "59s"), (60, "1m00s"), (3599, "59m59s"), (3600, "1h00m"),
    (26 * 3600 + 61, "26h01m"),
])
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_progress_line_counts_cells_and_names_the_one_that_finished():
    line = progress_line(1, 3, 30.0, CellOutcome("free_form/ucb/seed2", "CRASHED", 30.0))
    assert line == "cell 1/3 free_form/ucb/seed2 CRASHED at 30s; ETA 1m00s"


def test_progress_line_tells_the_grid_time_from_the_cell_time():
    """`cell 3/4 ... COMPLETED after 1m24s` was the time since the grid started, read as the
    cell's (17 s)."""
    line = progress_line(3, 4, 84.0, CellOutcome("mcq/ucb/seed0", "COMPLETED", 84.0,
                                                 cell_seconds=17.0))
    assert line == "cell 3/4 mcq/ucb/seed0 COMPLETED at 1m24s (cell 17s); ETA 28s"


def test_eta_does_not_extrapolate_from_cache_hits():
    """After a cached cell (3 s) the ETA said 3s; the grid then computed for 1m44s."""
    hit = CellOutcome("mcq/correctness/seed0", "COMPLETED", 3.0, cell_seconds=3.0, cached=True)
    line = progress_line(1, 2, 3.0, hit, cached=1, cached_s=3.0)
    assert line.endswith("(cell 3s, all stages cached); ETA unknown until a cell computes")
    assert eta_seconds(1, 2, 3.0, cached=1) is None
    assert eta_seconds(2, 2, 6.0, cached=2) == 0.0  # nothing left: no estimate needed


@pytest.mark.parametrize(("done", "total", "elapsed", "cached", "cached_s", "expected"), [
    (3, 5, 106.0, 2, 6.0, 200.0),   # 2 hits (6 s), 1 computed cell (100 s): 100 s per cell
    (2, 4, 63.0, 1, 3.0, 120.0),    # a hit after the computed cell changes nothing either
    (12, 14, 90.0, 10, 30.0, 60.0),  # a re-run: 10 hits of 3 s, 2 cells of 30 s
    (3, 5, 106.0, 2, 0.0, 212.0),   # hits' time unknown (0): charged to the computed cells
])
def test_eta_paces_the_computed_cells_by_their_own_time_not_the_hits(
    done, total, elapsed, cached, cached_s, expected
):
    """The hits' seconds were charged to the computed cells: 2 hits (6 s) and one 100 s cell
    said 212 s for two more cells, and a re-run of 10 hits said 1m30s where 1m was left."""
    assert eta_seconds(done, total, elapsed, cached, cached_s) == pytest.approx(expected)


def test_eta_refuses_hits_that_took_longer_than_the_grid():
    # Possible only if hits ran beside computing cells, where their time cannot be subtracted.
    with pytest.raises(ValueError, match="one after another"):
        eta_seconds(3, 5, 10.0, cached=2, cached_s=12.0)


def test_failed_cells_section_keeps_the_table_whole():
    traceback = "Traceback (most recent call last):\n  File x\nValueError: a | b"
    section = failed_cells_markdown([
        CellOutcome("mcq/passk/seed0", "FAILED", 1.0, "run-1", traceback),
        CellOutcome("mcq/darling/seed0", "CANCELLED", 2.0, "run-2", ""),
        CellOutcome("mcq/batch/seed0", "COMPLETED", 3.0, "run-3"),
    ])
    rows = [line for line in section.splitlines() if line.startswith("| mcq/")]
    assert rows == ["| mcq/passk/seed0 | FAILED | run-1 | ValueError: a \\| b |",
                    "| mcq/darling/seed0 | CANCELLED | run-2 | (no message) |"]
    assert "## Failed cells (2 of 3)" in section


def test_no_failed_cells_section_when_every_cell_completed():
    assert failed_cells_markdown([CellOutcome("mcq/batch/seed0", "COMPLETED", 3.0)]) == ""
