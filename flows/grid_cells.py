"""How a grid's cells run: one after another inside the grid's process (`in_process`, a
laptop), or each as a run of the pipeline deployment that any worker of its work pool picks up
(`deployment`, the nightly on a pool). Either way a failed cell is recorded, not raised: the
others go on, and the grid names it in its summary.

Why deployment runs rather than a distributed task runner: a cell is a whole pipeline flow
(cached stages, child MLflow runs, its own retries), and a deployment run keeps all of it, is
placed by the work pool's job template (a process, a container, a Kubernetes pod with a GPU),
is capped by the pool's queue and worker limits, and can be watched, cancelled or re-run from
the UI on its own. A task runner (Dask, Ray) would need its own cluster beside the pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from breadth.config import PipelineConfig
from breadth.grid_progress import CellOutcome, progress_line
from flows.pipeline import pipeline

Cell = tuple[str, str, int, PipelineConfig]  # (format, objective, seed, validated config)
POLL_S = 3.0
# With every cell still waiting this long, the log asks whether any worker polls the pool.
NO_WORKER_HINT_S = 120.0


def cell_name(fmt: str, objective: str, seed: int) -> str:
    return f"{fmt}/{objective}/seed{seed}"


def cell_tags(grid_id: str, study_hash: str, fmt: str, objective: str, seed: int) -> dict[str, str]:
    # grid.objective tells apart cells that share a reward spec (e.g. the entropy variant).
    return {"grid.id": grid_id, "grid.cell": cell_name(fmt, objective, seed),
            "grid.objective": objective, "grid.config_hash": study_hash}  # fmt: skip


def run_name(grid_id: str, fmt: str, objective: str, seed: int) -> str:
    return f"{grid_id}-{fmt}-{objective}-s{seed}"


class Progress:
    """Turns each finished cell into an outcome and reports "cell i/N" with an ETA."""

    def __init__(self, total: int, report: Callable[[str], None]):
        self.total, self.report = total, report
        self.started = time.monotonic()
        self.outcomes: list[CellOutcome] = []

    def finished(self, cell: str, state: str, flow_run: str, message: str = "") -> None:
        elapsed = time.monotonic() - self.started
        outcome = CellOutcome(cell, state, elapsed, flow_run, "" if state == "COMPLETED" else message)
        self.outcomes.append(outcome)
        self.report(progress_line(len(self.outcomes), self.total, elapsed, outcome))


def run_in_process(
    cells: list[Cell], grid_id: str, study_hash: str, report: Callable[[str], None]
) -> list[CellOutcome]:
    """Each cell a pipeline subflow of the grid, in order; SFT is shared through the cache."""
    progress = Progress(len(cells), report)
    for fmt, objective, seed, config in cells:
        name = run_name(grid_id, fmt, objective, seed)
        state = pipeline.with_options(flow_run_name=name)(
            config=config, tags=cell_tags(grid_id, study_hash, fmt, objective, seed),
            return_state=True,
        )  # fmt: skip
        progress.finished(cell_name(fmt, objective, seed), state.type.value, name,
                          state.message or "")  # fmt: skip
    return progress.outcomes


class CellDeploymentMissing(RuntimeError):
    """The deployment the grid would submit cells to is not registered; says how to fix it."""


def run_on_deployment(
    cells: list[Cell], grid_id: str, study_hash: str, deployment: str,
    report: Callable[[str], None],
) -> list[CellOutcome]:  # fmt: skip
    """Each cell a run of `deployment` (linked to the grid as a subflow); waits for all.

    Cells are submitted in the grid's order (seeds vary fastest), so the first cells a pool
    starts have distinct (format, seed) pairs and train their SFT starts in parallel; a later
    cell of the same pair gets the SFT stage from the cache, or waits on its work-dir lock
    while it is being trained and then reuses it.
    """
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.deployments import run_deployment

    pool = _work_pool_of(deployment)
    waiting: dict[str, tuple[str, str]] = {}  # flow run id -> (cell, flow run name)
    for fmt, objective, seed, config in cells:
        name = run_name(grid_id, fmt, objective, seed)
        flow_run = run_deployment(
            deployment, timeout=0, flow_run_name=name, tags=["grid-cell"],
            parameters={"config": config.model_dump(mode="json"),
                        "tags": cell_tags(grid_id, study_hash, fmt, objective, seed)},
        )  # fmt: skip
        waiting[str(flow_run.id)] = (cell_name(fmt, objective, seed), name)
    report(f"{len(cells)} cells submitted to {deployment} (work pool {pool}); every worker of "
           f"the pool takes them: `prefect worker start --pool {pool}`")  # fmt: skip
    progress = Progress(len(cells), report)
    hinted = False
    with get_client(sync_client=True) as client:
        while waiting:
            time.sleep(POLL_S)
            runs = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(waiting)))
            )
            for run in runs:
                if run.state is not None and run.state.is_final():
                    cell, _ = waiting.pop(str(run.id))
                    progress.finished(cell, run.state.type.value, str(run.id),
                                      run.state.message or "")  # fmt: skip
            started = any(r.state is not None and not r.state.is_scheduled() for r in runs)
            if not hinted and not started and not progress.outcomes and \
                    time.monotonic() - progress.started > NO_WORKER_HINT_S:  # fmt: skip
                hinted = True
                report(f"no cell has started after {NO_WORKER_HINT_S:.0f}s: is a worker "
                       f"polling work pool {pool}? `prefect worker start --pool {pool}`")  # fmt: skip
    return progress.outcomes


def _work_pool_of(deployment: str) -> str:
    from prefect import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL

    with get_client(sync_client=True) as client:
        try:
            return client.read_deployment_by_name(deployment).work_pool_name or "(none)"
        except ObjectNotFound:
            raise CellDeploymentMissing(
                f"grid.cell_deployment={deployment!r} is not registered on the Prefect server "
                f"at {PREFECT_API_URL.value()}. Register it with `breadth deploy` and start "
                "workers on its pool (`prefect worker start --pool breadth-cpu`), or run the "
                "cells in this process with grid.cell_runner=in_process."
            ) from None
