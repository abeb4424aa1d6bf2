"""Cells as deployment runs (flows/grid_cells.py) against a scripted Prefect API: what is
submitted when, and how each cell's end is reported."""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta
from types import SimpleNamespace

import breadth_flows.grid_cells
import httpx
import pytest
from prefect.states import Completed, Crashed, Failed, Running

from breadth.study.grid_design import GridConfig


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
        self.by_key: dict[str, str] = {}  # idempotency key -> run id

    def run_deployment(self, name, timeout, flow_run_name, tags, parameters, idempotency_key):
        assert timeout == 0 and "grid-cell" in tags  # submitted, not waited on, one by one
        if idempotency_key in self.by_key:  # as Prefect does: the run that key made
            return SimpleNamespace(id=self.by_key[idempotency_key])
        run_id = str(uuid.uuid4())
        self.by_key[idempotency_key] = run_id
        cell = parameters["tags"]["grid.cell"]
        # A run that will crash never gets as far as its SFT (its worker dies first).
        self.runs[run_id] = {"cell": cell, "since": self.poll,
                             "no_sft": self.crashing.get(cell, 0) > 0}
        self.submitted.append((self.poll, cell))
        return SimpleNamespace(id=run_id)

    def read_flow_runs(self, flow_run_filter):
        self.poll += 1
        # Like Prefect's FlowRun: a start time once it runs, and its total run time.
        return [SimpleNamespace(id=run_id, state=self._state(run_id), start_time=None,
                                total_run_time=timedelta(0))
                for run_id in map(str, flow_run_filter.id.any_)]

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
                if self.poll > self.runs[run_id]["since"] and not self.runs[run_id]["no_sft"]]

    def read_deployment_by_name(self, name):
        return SimpleNamespace(work_pool_name="breadth-cpu")


@pytest.fixture()
def pool(monkeypatch):
    scripted = ScriptedPool()
    monkeypatch.setattr(breadth_flows.grid_cells, "POLL_S", 0.0)
    monkeypatch.setattr(breadth_flows.grid_cells, "ensure_zombie_automation", lambda: "automation-id")
    monkeypatch.setattr(breadth_flows.grid_cells, "run_deployment", scripted.run_deployment)
    monkeypatch.setattr(breadth_flows.grid_cells, "get_client",
                        lambda sync_client: contextlib.nullcontext(scripted))
    return scripted


def _run(study: GridConfig, lines: list[str]):
    return breadth_flows.grid_cells.run_on_deployment(study.cells(), "g1", study.content_hash(),
                                              "breadth-pipeline/adhoc", lines.append)


STUDY = GridConfig(preset="default", formats=["free_form"], rewards=["correctness", "darling"],
                   seeds=[0, 1])


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
        ["1/4", "2/4", "3/4", "4/4"]


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
                        lambda sync_client: contextlib.nullcontext(NoDeployments()))
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
        [("free_form/correctness/seed1", "CRASHED", "No heartbeat for 90 s")]
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


class ServerOutage:
    """Wraps a scripted pool's method: it raises like a Prefect client whose server is down
    (a refused connection, after its own retries) on its first `calls` calls."""

    def __init__(self, method, calls: int, after: bool = False):
        self.method, self.left, self.after = method, calls, after

    def __call__(self, *args, **kwargs):
        if self.left > 0:
            self.left -= 1
            if self.after:  # the server did the work; its reply was lost
                self.method(*args, **kwargs)
            raise httpx.ConnectError("[Errno 111] Connection refused")
        return self.method(*args, **kwargs)


def test_the_grid_keeps_polling_through_a_prefect_server_outage(pool, monkeypatch):
    """A restart longer than the client's own retries (about a minute) no longer ends the
    grid: it asks again, says so, and every cell is still reported."""
    monkeypatch.setattr(pool, "read_flow_runs", ServerOutage(pool.read_flow_runs, calls=3))
    lines: list[str] = []
    outcomes = _run(STUDY, lines)
    assert sorted(o.state for o in outcomes) == ["COMPLETED"] * 4
    down = [line for line in lines if "does not answer (ConnectError)" in line]
    assert len(down) == 1 and "reading the cells' states" in down[0]
    assert any(line.startswith("the Prefect server answers again after") for line in lines)


def test_a_submission_asked_again_after_a_lost_reply_is_not_a_second_run(pool, monkeypatch):
    """The server created the run but the reply never came: asked again with the same
    idempotency key, Prefect returns that run; the grid waits on one run per cell."""
    lost = ServerOutage(pool.run_deployment, calls=1, after=True)
    monkeypatch.setattr(breadth_flows.grid_cells, "run_deployment", lost)
    outcomes = _run(STUDY, [])
    assert len(pool.runs) == 4 and len(outcomes) == 4  # one run per cell, not five
    assert sorted(o.state for o in outcomes) == ["COMPLETED"] * 4


def test_a_crashed_cells_second_run_has_its_own_idempotency_key(pool):
    """Otherwise Prefect would hand back the crashed run instead of starting a new one."""
    pool.crashing = {"free_form/darling/seed0": 1}
    _run(STUDY, [])
    keys = [key for key in pool.by_key if "/free_form/darling/seed0/" in key]
    assert len(keys) == 2 and len({pool.by_key[k] for k in keys}) == 2


def test_a_server_down_past_the_bound_fails_the_grid_saying_what_to_do(pool, monkeypatch):
    monkeypatch.setattr(breadth_flows.grid_cells, "SERVER_OUTAGE_S", 0.0)
    monkeypatch.setattr(pool, "read_flow_runs", ServerOutage(pool.read_flow_runs, calls=99))
    with pytest.raises(breadth_flows.grid_cells.PrefectServerDown,
                       match=r"has not answered for .*breadth stack up.*from the cache"):
        _run(STUDY, [])


def test_a_refused_request_is_not_an_outage(pool, monkeypatch):
    """A 4xx is the request's fault: raised at once, not asked again for 15 minutes."""
    from prefect.exceptions import PrefectHTTPStatusError

    request = httpx.Request("POST", "http://127.0.0.1:4200/api/flow_runs/filter")
    refused = PrefectHTTPStatusError.from_httpx_error(httpx.HTTPStatusError(
        "422", request=request, response=httpx.Response(422, request=request)))

    def read_flow_runs(flow_run_filter):
        raise refused

    monkeypatch.setattr(pool, "read_flow_runs", read_flow_runs)
    with pytest.raises(PrefectHTTPStatusError):
        _run(STUDY, [])
