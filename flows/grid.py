"""The nightly study: formats x objectives x seeds, each cell a pipeline subflow, then a grid
summary run in MLflow, the claims report (each literature claim with its effect, CI and
verdict), Prefect artifacts, and the collapse alarm against the previous grid.

SFT warm starts are shared across reward specs of the same format and seed without extra code:
their cache key does not involve the reward, so the second cell that needs one gets a cache hit.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, runtime

from breadth.config import GridConfig
from flows.pipeline import pipeline
from tasks.claims import publish_claims
from tasks.grid import alarm_against_previous, summarise_grid


@flow(name="breadth-grid", validate_parameters=True)
def grid(study: GridConfig = GridConfig()) -> dict[str, Any]:  # noqa: B008 - the UI form's defaults
    """Run every cell of the study and compare it with the previous night's grid."""
    cells = study.cells()  # every cell's config validated before any compute
    grid_id = study.grid_id or f"grid-{(runtime.flow_run.id or 'local')[:8]}"
    results = []
    for fmt, reward, seed, config in cells:
        # grid.objective tells apart cells that share a reward spec (e.g. the entropy variant).
        tags = {"grid.id": grid_id, "grid.cell": f"{fmt}/{reward}/seed{seed}",
                "grid.objective": reward, "grid.config_hash": study.content_hash()}  # fmt: skip
        result = pipeline.with_options(flow_run_name=f"{grid_id}-{fmt}-{reward}-s{seed}")(
            config=config, tags=tags
        )
        results.append({"format": fmt, "reward": reward, "seed": seed, **result})
    summary = summarise_grid(study, grid_id)
    claims = publish_claims(study, grid_id, summary["run_id"])
    alarm = alarm_against_previous(study, grid_id, summary)
    return {"grid_id": grid_id, "cells": len(results), "summary_run": summary["run_id"],
            "claims": claims["markdown"], "alarm": alarm}  # fmt: skip
