"""Grid tasks: the summary run of a study and the collapse alarm against the previous night."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from breadth_tasks.common import retry_if_transient
from prefect import runtime, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from breadth.config import load_config
from breadth.display.grid_progress import CellOutcome, failed_cells, failed_cells_markdown
from breadth.study.alarm import collapse_alarm
from breadth.study.frame import study_frame_of_runs
from breadth.study.grid_design import GridConfig
from breadth.study.grid_report import plot_grid, summary_markdown
from breadth.study.grid_settings import ClaimSettings
from breadth.study.grid_statistics import grid_summary
from breadth.tracking.fetch import GRID_SUMMARY_KIND, fetch_runs, previous_grid_id
from breadth.tracking.runs import start_run, tracking_uri


@task(name="summarise-grid", cache_policy=NO_CACHE, retries=1,
      retry_condition_fn=retry_if_transient)
def summarise_grid(
    study: GridConfig, grid_id: str, outcomes: list[CellOutcome] | None = None
) -> dict[str, Any]:
    """One MLflow run with the grid's table and plots, and the same as a Prefect artifact;
    cells that did not finish are named under the table (and in the tag `grid.failed_cells`)."""
    runs = fetch_runs(tracking_uri(), grid_id=grid_id)
    summary = summary_of(runs, study)
    experiment = load_experiment_name(study)
    markdown = summary_markdown(summary) + failed_cells_markdown(outcomes or [])
    failed = ",".join(o.cell for o in failed_cells(outcomes or []))
    with start_run(experiment, f"{grid_id}-summary", tags={
        "grid.id": grid_id, "breadth.kind": GRID_SUMMARY_KIND, "grid.config_hash": study.content_hash(),
        "prefect.flow_run_id": runtime.flow_run.id or "", "grid.failed_cells": failed[:5000],
    }) as run, tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "summary.md").write_text(markdown)
        summary.to_csv(folder / "summary.csv", index=False)
        plot_grid(runs, summary, folder)
        run.log_artifact(folder, "grid")
        run.log_params({"grid.cells": len(runs), **{f"grid.{k}": v for k, v in
                                                    study.model_dump(mode="json").items()}})
    create_markdown_artifact(key="breadth-grid", description=f"grid {grid_id}",
                             markdown=f"[MLflow summary run]({run.url()})\n\n{markdown}")
    return {"run_id": run.run_id, "summary": summary.to_dict(orient="records")}


def claim_settings(study: GridConfig) -> ClaimSettings:
    """The transfer split of the study's cells, so claims and summary split problems alike."""
    return ClaimSettings.of_evaluation(study.cells()[0][3].evaluation.model_dump())


def summary_of(runs: Any, study: GridConfig) -> Any:
    """The grid summary with bootstrap intervals from the cells' per-problem tables; cells
    logged before those tables existed get none, and the summary's `ci` column says so."""
    try:
        per_problem = study_frame_of_runs(tracking_uri(), runs)
    except FileNotFoundError as error:
        logging.getLogger("breadth.grid").warning("grid summary without intervals: %s", error)
        per_problem = None
    return grid_summary(runs, per_problem, settings=claim_settings(study))


def load_experiment_name(study: GridConfig) -> str:
    config = load_config(study.preset, list(study.overrides))
    return config.tracking.experiment or config.preset


@task(name="collapse-alarm", cache_policy=NO_CACHE, retries=1,
      retry_condition_fn=retry_if_transient)
def alarm_against_previous(study: GridConfig, grid_id: str, current: dict[str, Any]) -> dict:
    """Compare with the newest earlier grid of the same study; publish the verdict."""
    import pandas as pd

    previous_id = previous_grid_id(tracking_uri(), load_experiment_name(study),
                                   study.content_hash(), grid_id)
    if previous_id is None:
        verdict = {"fired": False, "previous_grid": None,
                   "markdown": "No earlier grid of this study: nothing to compare."}
    else:
        result = collapse_alarm(summary_of(fetch_runs(tracking_uri(), grid_id=previous_id), study),
                                pd.DataFrame(current["summary"]))
        verdict = {"fired": result.fired, "previous_grid": previous_id,
                   "markdown": result.markdown()}
    title = "COLLAPSE ALARM" if verdict["fired"] else "no collapse"
    create_markdown_artifact(key="breadth-collapse-alarm", description=title,
                             markdown=f"# {title}\n\n{verdict['markdown']}")
    if verdict["fired"]:
        # Marks the flow run failed (after the artifact is published): a red nightly in the UI.
        raise RuntimeError(f"collapse alarm: grid {grid_id} vs {verdict['previous_grid']}\n"
                           f"{verdict['markdown']}")
    return verdict
