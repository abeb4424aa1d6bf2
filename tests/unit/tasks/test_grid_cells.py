"""Cells as deployment runs (flows/grid_cells.py) against a scripted Prefect API: what is
submitted when, and how each cell's end is reported."""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta
from types import SimpleNamespace

import breadth_flows.grid_cells
import pytest
from prefect.states import Completed, Crashed, Failed, Running

from breadth.study.grid import GridConfig


class ScriptedPool:
    """The Prefect API as the grid sees it. Each run's SFT task completes on the poll after it
    is submitted; the run ends `polls_to_end` polls after it is submitted; cells named in
    `failing` end FAILED."""

    def __init__(self, polls_to_end: int = 3, failing: tuple[str, ...] = ()):
        self.poll = 0
        self.polls_to_end, self.failing = polls_to_end, failing
        self.crashing: dict[str, int] = {}  # cell -> how many of its runs crash
        self.runs: dict[str, dict] = {}
        self.submitted: list[tuple[int, str]] = []  # (poll, cell)

    def run_deployment(self, name, timeout, flow_run_name, tags, parameters):
        assert timeout == 0 and "grid-cell" in tags  # submitted, not waited on, one by one
        run_id = str(uuid.uuid4())
        cell = parameters["tags"]["grid.cell"]
        # A run that will crash never gets as far as its SFT (its worker dies first).
        self.runs[run_id] = {"cell": cell, "since": self.poll,
                             "no_sft": self.crashing.get(cell, 0) > 0}  # fmt: skip
        self.submitted.append((self.poll, cell))
        return SimpleNamespace(id=run_id)

    def read_flow_runs(self, flow_run_filter):
        self.poll += 1
        # Like Prefect's FlowRun: a start time once it runs, and its total run time.
        return [SimpleNamespace(id=run_id, state=self._state(run_id), start_time=None,
                                total_run_time=timedelta(0))
                for run_id in map(str, flow_run_filter.id.any_)]  # fmt: skip

    def _state(self, run_id):
        run = self.runs[run_id]
        if self.poll - run["since"] < self.polls_to_end:
            return Running()
        if self.crashing.get(run["cell"], 0) > 0:
            if not run.get("ended"):
                run["ended"] = True
                self.crashing[run["cell"]] -= 1
            return Crashed(message="No heartbeat for 90 s")
        return Failed(message="boom") if run["cell"] in self.failing else Completed()

    def read_task_runs(self, flow_run_filter, task_run_filter):
        assert task_run_filter.name.like_ == "sft-"
        return [SimpleNamespace(flow_run_id=run_id) for run_id in map(str, flow_run_filter.id.any_)
                if self.poll > self.runs[run_id]["since"] and not self.runs[run_id]["no_sft"]]  # fmt: skip

    def read_deployment_by_name(self, name):
        return SimpleNamespace(work_pool_name="breadth-cpu")


@pytest.fixture()
def pool(monkeypatch):
    scripted = ScriptedPool()
    monkeypatch.setattr(breadth_flows.grid_cells, "POLL_S", 0.0)
    monkeypatch.setattr(breadth_flows.grid_cells, "ensure_zombie_automation", lambda: "automation-id")
    monkeypatch.setattr(breadth_flows.grid_cells, "run_deployment", scripted.run_deployment)
    monkeypatch.setattr(breadth_flows.grid_cells, "get_client",
                        lambda sync_client: contextlib.nullcontext(scripted))  # fmt: skip
    return scripted


def _run(study: GridConfig, lines: list[str]):
    return breadth_flows.grid_cells.run_on_deployment(study.cells(), "g1", study.content_hash(),
                                              "breadth-pipeline/adhoc", lines.append)  # fmt: skip


STUDY = GridConfig(preset="default", formats=["free_form"], rewards=["correctness", "darling"],
                   seeds=[0, 1])  # fmt: skip


def test_the_other_cells_of_a_format_and_seed_wait_for_its_sft(pool):
    lines: list[str] = []
    outcomes = _run(STUDY, lines)
    first = {cell for poll, cell in pool.submitted if poll == 0}
    assert first == {"free_form/correctness/seed0", "free_form/correctness/seed1"}
    later = [(poll, cell) for poll, cell in pool.submitted if poll > 0]
    # Released on the first poll that saw their pair's SFT completed, long before it ended.
    assert sorted(later) == [(1, "free_form/darling/seed0"), (1, "free_form/darling/seed1")]
    assert sorted(o.cell for o in outcomes if o.completed) == sorted(c for _, c in pool.submitted)
    assert [line.split()[1] for line in lines if line.startswith("cell ")] == \
        ["1/4", "2/4", "3/4", "4/4"]  # fmt: skip


def test_without_sft_every_cell_is_submitted_at_once(pool):
    lines: list[str] = []
    _run(STUDY.model_copy(update={"overrides": ["sft.enabled=false"]}), lines)
    assert [poll for poll, _ in pool.submitted] == [0, 0, 0, 0]


def test_a_failed_cell_is_reported_and_the_others_finish(pool):
    pool.failing = ("free_form/darling/seed1",)
    outcomes = _run(STUDY, [])
    states = {o.cell: o.state for o in outcomes}
    assert states.pop("free_form/darling/seed1") == "FAILED"
    assert set(states.values()) == {"COMPLETED"} and len(states) == 3
    assert [o.message for o in outcomes if not o.completed] == ["boom"]


def test_a_missing_deployment_says_how_to_register_it(monkeypatch):
    from prefect.exceptions import ObjectNotFound

    class NoDeployments(ScriptedPool):
        def read_deployment_by_name(self, name):
            raise ObjectNotFound(http_exc=Exception("404"))

    monkeypatch.setattr(breadth_flows.grid_cells, "get_client",
                        lambda sync_client: contextlib.nullcontext(NoDeployments()))  # fmt: skip
    with pytest.raises(breadth_flows.grid_cells.CellDeploymentMissing, match="breadth deploy"):
        _run(STUDY, [])


def test_progress_paces_the_eta_by_the_computed_cells_own_time(monkeypatch):
    """In process, a hit's seconds are time no cell computed: they no longer slow the pace
    the ETA extrapolates (2 hits of 3 s, then a 60 s cell: 60 s per cell left, not 66 s)."""
    clock = iter([0.0, 3.0, 6.0, 66.0])
    monkeypatch.setattr(breadth_flows.grid_cells, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    lines: list[str] = []
    progress = breadth_flows.grid_cells.Progress(5, lines.append)
    progress.finished("a", "COMPLETED", "r1", cell_seconds=3.0, cached=True)
    progress.finished("b", "COMPLETED", "r2", cell_seconds=3.0, cached=True)
    progress.finished("c", "COMPLETED", "r3", cell_seconds=60.0)
    assert lines[-1] == "cell 3/5 c COMPLETED at 1m06s (cell 1m00s); ETA 2m00s"


def test_a_crashed_cell_is_submitted_once_more_and_resumes(pool):
    """Its worker died: the server marks the run Crashed (no heartbeat); the grid submits the
    cell again, once, and its second run's end is what the summary reports."""
    pool.crashing = {"free_form/darling/seed0": 1}
    lines: list[str] = []
    outcomes = _run(STUDY, lines)
    assert [cell for _, cell in pool.submitted].count("free_form/darling/seed0") == 2
    assert {o.cell: o.state for o in outcomes}["free_form/darling/seed0"] == "COMPLETED"
    assert len(outcomes) == 4
    assert any("crashed (No heartbeat for 90 s); submitted once more" in line for line in lines)


def test_a_cell_that_crashes_twice_is_named_failed_not_waited_on(pool):
    pool.crashing = {"free_form/correctness/seed1": 2}
    outcomes = _run(STUDY, [])
    assert [cell for _, cell in pool.submitted].count("free_form/correctness/seed1") == 2
    crashed = [o for o in outcomes if not o.completed]
    assert [(o.cell, o.state, o.message) for o in crashed] == \
        [("free_form/correctness/seed1", "CRASHED", "No heartbeat for 90 s")]  # fmt: skip
    assert len(outcomes) == 4


def test_the_cells_waiting_on_a_crashed_first_cell_wait_for_its_retrys_sft(pool):
    """The first cell of a (format, seed) crashed before its SFT: the pair's other cells wait
    for the resubmitted run's SFT instead of training it again beside it."""
    pool.crashing = {"free_form/correctness/seed0": 1}
    _run(STUDY, [])
    polls = [poll for poll, cell in pool.submitted if cell == "free_form/correctness/seed0"]
    held = [poll for poll, cell in pool.submitted if cell == "free_form/darling/seed0"]
    assert len(polls) == 2 and len(held) == 1
    assert held[0] > polls[1]  # after the retry's SFT, not when the first run crashed
