"""A pipeline flow for the distributed-grid test: the real pipeline, except that the cells of
one objective fail at once, as a cell that breaks would. Deployed by the test itself."""

from __future__ import annotations

from typing import Any

from breadth_flows.pipeline import run_pipeline
from prefect import flow

from breadth.config import PipelineConfig

FAILING_OBJECTIVE = "correctness+format"


@flow(name="breadth-pipeline-one-objective-fails", validate_parameters=True)
def pipeline_one_objective_fails(
    config: PipelineConfig, tags: dict[str, str] | None = None
) -> dict[str, Any]:
    if (tags or {}).get("grid.objective") == FAILING_OBJECTIVE:
        raise RuntimeError(f"this cell's objective {FAILING_OBJECTIVE!r} fails on purpose")
    return run_pipeline(config, tags)
