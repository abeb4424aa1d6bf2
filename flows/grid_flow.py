"""The nightly study: formats x objectives x seeds, each cell a pipeline run, then a grid
summary run in MLflow, the claims report (each literature claim with its effect, CI and
verdict), Prefect artifacts, and the collapse alarm against the previous grid.

Cells run in this process or as deployment runs on a work pool (`GridConfig.cell_runner`,
flows/grid_cells.py). SFT warm starts are shared across reward specs of the same format and
seed without extra code: their cache key does not involve the reward, so the second cell that
needs one gets a cache hit (or, while it is being trained, waits on its work-dir lock and
reuses it). A failed cell does not stop the others; the summary names it, and the grid run
fails at the end, after the summary, claims and alarm are published.
"""

from __future__ import annotations

from typing import Any

from breadth_flows.grid_cells import run_in_process, run_on_deployment
from breadth_tasks.claims import pilot_of, publish_claims, reference_of
from breadth_tasks.grid_tasks import alarm_against_previous, summarise_grid
from prefect import flow, get_run_logger, runtime

from breadth.display.grid_progress import failed_cells
from breadth.study.grid_design import GridConfig


class CellsFailed(RuntimeError):
    """Some cells of a grid did not finish; the grid summary names them."""


@flow(name="breadth-grid", validate_parameters=True)
def grid(study: GridConfig = GridConfig()) -> dict[str, Any]:  # noqa: B008 - the UI form's defaults
    """Run every cell of the study and compare it with the previous night's grid.

    Args:
        study: The grid: cells are formats x objectives (reward specs) x seeds, each the
            `preset` with the overrides on top; `cell_runner` says where they run.
    """
    cells = study.cells()  # every cell's config validated before any compute
    # The pilot the claims cite and the fuller grid's table the left-out rows cite, read
    # before any compute too.
    pilot, reference = pilot_of(study), reference_of(study)
    grid_id = study.grid_id or f"grid-{(runtime.flow_run.id or 'local')[:8]}"
    report = get_run_logger().info
    if study.cell_runner == "deployment":
        outcomes = run_on_deployment(cells, grid_id, study.content_hash(), study.cell_deployment,
                                     report)
    else:
        outcomes = run_in_process(cells, grid_id, study.content_hash(), report)
    failed = failed_cells(outcomes)
    if len(failed) == len(outcomes):
        raise CellsFailed(f"every cell of grid {grid_id} failed, nothing to summarise: "
                          + "; ".join(f"{o.cell}: {o.message}" for o in failed))
    summary = summarise_grid(study, grid_id, outcomes)
    claims = publish_claims(study, grid_id, summary["run_id"], pilot, reference)
    alarm = alarm_against_previous(study, grid_id, summary)
    if failed:
        raise CellsFailed(
            f"{len(failed)} of {len(outcomes)} cells of grid {grid_id} failed: "
            f"{', '.join(f'{o.cell} ({o.state})' for o in failed)}. The others finished; the "
            f"summary run {summary['run_id']} names the failed cells with their errors."
        )
    return {"grid_id": grid_id, "cells": len(outcomes), "summary_run": summary["run_id"],
            "claims": claims["markdown"], "alarm": alarm}
