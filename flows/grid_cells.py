"""How a grid's cells run: one after another inside the grid's process (`in_process`, a
laptop), or each as a run of the pipeline deployment that any worker of its work pool picks up
(`deployment`, the nightly on a pool). Either way a failed cell is recorded, not raised: the
others go on, and the grid names it in its summary.

Why deployment runs rather than a distributed task runner: a cell is a whole pipeline flow
(cached stages, child MLflow runs, its own retries), and a deployment run keeps all of it, is
placed by the work pool's job template (a process, a container, a Kubernetes pod with a GPU),
is capped by the deployment's concurrency limit and each worker's `--limit`, and can be
watched, cancelled or re-run from the UI on its own. A task runner (Dask, Ray) would need its own cluster beside the pool.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from breadth_flows.pipeline import pipeline
from breadth_tasks.dead_runs import ensure_zombie_automation
from breadth_tasks.train import sft
from prefect import get_client, runtime
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    TaskRunFilter,
    TaskRunFilterName,
    TaskRunFilterState,
    TaskRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError
from prefect.settings import PREFECT_API_URL

from breadth.config import PipelineConfig
from breadth.display.grid_progress import CellOutcome, progress_line

Cell = tuple[str, str, int, PipelineConfig]  # (format, objective, seed, validated config)
T = TypeVar("T")
POLL_S = 3.0
# A Prefect server restart (an upgrade, a crash under load, a database migration) can outlast
# the client's own retries (PREFECT_CLIENT_MAX_RETRIES: about a minute). The cells run on
# without it, so the grid keeps asking this long before it gives up.
SERVER_OUTAGE_S = 900.0
# With every cell still waiting this long, the log asks whether any worker polls the pool.
NO_WORKER_HINT_S = 120.0


def cell_name(fmt: str, objective: str, seed: int) -> str:
    return f"{fmt}/{objective}/seed{seed}"


def cell_tags(grid_id: str, study_hash: str, fmt: str, objective: str, seed: int) -> dict[str, str]:
    # grid.objective tells apart cells that share a reward spec (e.g. the entropy variant).
    return {"grid.id": grid_id, "grid.cell": cell_name(fmt, objective, seed),
            "grid.objective": objective, "grid.config_hash": study_hash}


def run_name(grid_id: str, fmt: str, objective: str, seed: int) -> str:
    return f"{grid_id}-{fmt}-{objective}-s{seed}"


class Progress:
    """Turns each finished cell into an outcome and reports "cell i/N" with an ETA."""

    def __init__(self, total: int, report: Callable[[str], None]):
        self.total, self.report = total, report
        self.started = time.monotonic()
        self.outcomes: list[CellOutcome] = []

    def finished(self, cell: str, state: str, flow_run: str, message: str = "",
                 cell_seconds: float | None = None, cached: bool = False) -> None:
        elapsed = time.monotonic() - self.started
        outcome = CellOutcome(cell, state, elapsed, flow_run,
                              "" if state == "COMPLETED" else message, cell_seconds, cached)
        self.outcomes.append(outcome)
        hits = [o for o in self.outcomes if o.cached]
        hits_s = sum(o.cell_seconds or 0.0 for o in hits)
        self.report(progress_line(len(self.outcomes), self.total, elapsed, outcome, len(hits),
                                  hits_s))


def computed_nothing(state: Any) -> bool:
    """Whether a finished pipeline subflow served every stage from the cache (its result's
    `computed_stages` is empty); False when its result cannot say, so the ETA counts it."""
    if not state.is_completed():
        return False
    try:
        result = state.result(raise_on_failure=False)
    except Exception:  # noqa: BLE001 - no result to read (e.g. not kept): unknown, not an error
        return False
    return isinstance(result, dict) and result.get("computed_stages") == []


def run_in_process(
    cells: list[Cell], grid_id: str, study_hash: str, report: Callable[[str], None]
) -> list[CellOutcome]:
    """Each cell a pipeline subflow of the grid, in order; SFT is shared through the cache."""
    progress = Progress(len(cells), report)
    for fmt, objective, seed, config in cells:
        name = run_name(grid_id, fmt, objective, seed)
        began = time.monotonic()
        state = pipeline.with_options(flow_run_name=name)(
            config=config, tags=cell_tags(grid_id, study_hash, fmt, objective, seed),
            return_state=True,
        )
        progress.finished(cell_name(fmt, objective, seed), state.type.value, name,
                          state.message or "", time.monotonic() - began,
                          computed_nothing(state))
    return progress.outcomes


class PrefectServerDown(RuntimeError):
    """The Prefect server did not answer the grid for longer than SERVER_OUTAGE_S."""


def through_outage(call: Callable[[], T], what: str, report: Callable[[str], None]) -> T:
    """`call()`, asked again every POLL_S while the Prefect server does not answer (a refused
    connection, a timeout, a 5xx), for up to SERVER_OUTAGE_S; reports the outage and its end.
    A 4xx is the request's fault, not the server's: raised at once."""
    down_since: float | None = None
    while True:
        try:
            result = call()
        except (httpx.TransportError, PrefectHTTPStatusError) as error:
            if isinstance(error, PrefectHTTPStatusError) and error.response.status_code < 500:
                raise
            now = time.monotonic()
            if down_since is None:
                down_since = now
                report(f"the Prefect server at {PREFECT_API_URL.value()} does not answer "
                       f"({type(error).__name__}) while {what}; the grid keeps asking for up "
                       f"to {SERVER_OUTAGE_S:.0f}s, and the cells run on meanwhile")
            elif now - down_since > SERVER_OUTAGE_S:
                raise PrefectServerDown(
                    f"the Prefect server at {PREFECT_API_URL.value()} has not answered for "
                    f"{now - down_since:.0f}s ({what}: {type(error).__name__}: {error}). Cells "
                    "already submitted run on on their workers. Start the server (`breadth "
                    "stack up`) and run the grid again: finished cells come back from the cache."
                ) from error
            time.sleep(POLL_S)
            continue
        if down_since is not None:
            report(f"the Prefect server answers again after {time.monotonic() - down_since:.0f}s")
        return result


class CellDeploymentMissing(RuntimeError):
    """The deployment the grid would submit cells to is not registered; says how to fix it."""


def run_on_deployment(
    cells: list[Cell], grid_id: str, study_hash: str, deployment: str,
    report: Callable[[str], None],
) -> list[CellOutcome]:
    """Each cell a run of `deployment` (linked to the grid as a subflow); waits for all.

    The first cell of each (format, seed) is submitted at once; the others of that pair once
    its SFT stage has completed (or its run has ended), so that they find the SFT start in the
    cache instead of training it again on another machine, and hold no accelerator meanwhile.

    A cell whose worker died is marked Crashed by the server (tasks/dead_runs.py) and submitted
    once more, to resume from its checkpoints in S3 on whichever worker takes it; crashed
    again, it is recorded as failed. No cell is waited on forever. A run marked Crashed while
    its process lived on (heartbeats rarer than the automation expects: a worker that is not
    `breadth worker` on a deployment not registered by `breadth deploy`) may finish as well: the
    cell then has two finished runs, the same by seed and cache, and `breadth compare` takes
    the newest.

    Through a Prefect server outage the grid keeps asking (`through_outage`); each submission
    carries an idempotency key, so one asked again after a lost reply is not a second run.
    """
    pool = _work_pool_of(deployment)
    # This grid run's own: a grid run again (same grid id) must get new cell runs, not these.
    batch = str(runtime.flow_run.id or uuid.uuid4())

    def submit(cell: Cell, attempt: int = 0) -> str:
        name = cell_name(cell[0], cell[1], cell[2])
        return through_outage(
            lambda: _submit(cell, grid_id, study_hash, deployment, waiting,
                            f"{batch}/{name}/{attempt}"),
            f"submitting cell {name}", report)

    ensure_zombie_automation()
    waiting: dict[str, str] = {}  # flow run id -> cell name
    submitted: dict[str, Cell] = {}  # cell name -> cell, to submit a crashed one again
    retried: set[str] = set()
    first_of_pair: dict[tuple[str, int], str] = {}  # (format, seed) -> its first cell's run
    held: list[Cell] = []
    for cell in cells:
        pair = (cell[0], cell[2])
        if pair in first_of_pair and cell[3].sft.enabled:
            held.append(cell)
        else:
            run_id = submit(cell)
            submitted[waiting[run_id]] = cell
            first_of_pair.setdefault(pair, run_id)
    report(f"{len(waiting)} of {len(cells)} cells submitted to {deployment} (work pool {pool}; "
           f"start workers with `breadth worker --pool {pool}`); the other cells of each "
           "(format, seed) follow once its SFT start is trained")
    progress = Progress(len(cells), report)
    hinted = False
    with get_client(sync_client=True) as client:
        while waiting or held:
            time.sleep(POLL_S)
            runs = through_outage(lambda: client.read_flow_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(waiting)))),
                "reading the cells' states", report) if waiting else []
            for run in runs:
                if run.state is not None and run.state.is_final():
                    name = waiting.pop(str(run.id))
                    if run.state.type == StateType.CRASHED and name not in retried:
                        retried.add(name)
                        again = submit(submitted[name], attempt=1)
                        # Its pair's other cells wait on the new run's SFT, not the dead one's.
                        for pair, first in first_of_pair.items():
                            if first == str(run.id):
                                first_of_pair[pair] = again
                        report(f"cell {name} crashed ({run.state.message or 'no message'}); "
                               f"submitted once more as flow run {again}, to resume from its "
                               "checkpoints")
                        continue
                    # Its own run time (the pool may run several at once); whether it was all
                    # cache hits is not read back from the worker, so the ETA counts it.
                    own = run.total_run_time.total_seconds() if run.start_time else None
                    progress.finished(name, run.state.type.value,
                                      str(run.id), run.state.message or "", own)
            if held:
                ready = through_outage(
                    lambda: _sft_done(client, set(first_of_pair.values()), set(waiting)),
                    "reading which SFT starts are trained", report)
                for cell in [c for c in held if first_of_pair[(c[0], c[2])] in ready]:
                    held.remove(cell)
                    run_id = submit(cell)
                    submitted[waiting[run_id]] = cell
            started = any(r.state is not None and not r.state.is_scheduled() for r in runs)
            if not hinted and not started and not progress.outcomes and \
                    time.monotonic() - progress.started > NO_WORKER_HINT_S:
                hinted = True
                report(f"no cell has started after {NO_WORKER_HINT_S:.0f}s: is a worker "
                       f"polling work pool {pool}? `breadth worker --pool {pool}`")
    return progress.outcomes


def _submit(cell: Cell, grid_id: str, study_hash: str, deployment: str,
            waiting: dict[str, str], idempotency_key: str) -> str:
    fmt, objective, seed, config = cell
    flow_run = run_deployment(
        deployment, timeout=0, flow_run_name=run_name(grid_id, fmt, objective, seed),
        tags=["grid-cell"], idempotency_key=idempotency_key,
        parameters={"config": config.model_dump(mode="json"),
                    "tags": cell_tags(grid_id, study_hash, fmt, objective, seed)},
    )
    waiting[str(flow_run.id)] = cell_name(fmt, objective, seed)
    return str(flow_run.id)


def _sft_done(client: Any, first_runs: set[str], still_running: set[str]) -> set[str]:
    """The first-of-pair runs whose SFT task completed (trained or from cache), or that ended."""
    ended = first_runs - still_running
    asked = sorted(first_runs & still_running)
    if not asked:
        return ended
    sft_runs = client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=asked)),
        task_run_filter=TaskRunFilter(
            name=TaskRunFilterName(like_=f"{sft.name}-"),
            state=TaskRunFilterState(type=TaskRunFilterStateType(any_=[StateType.COMPLETED])),
        ),
    )
    return ended | {str(run.flow_run_id) for run in sft_runs}


def _work_pool_of(deployment: str) -> str:
    with get_client(sync_client=True) as client:
        try:
            return client.read_deployment_by_name(deployment).work_pool_name or "(none)"
        except ObjectNotFound:
            raise CellDeploymentMissing(
                f"grid.cell_deployment={deployment!r} is not registered on the Prefect server "
                f"at {PREFECT_API_URL.value()}. Register it with `breadth deploy` and start "
                "workers on its pool (`breadth worker --pool breadth-cpu`), or run the "
                "cells in this process with grid.cell_runner=in_process."
            ) from None
