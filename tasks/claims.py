"""The study's claims: computed from a grid's cells, published on its MLflow summary run (a
table artifact and the report files) and as a Prefect markdown artifact."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from breadth_tasks.common import retry_if_transient
from breadth_tasks.grid import claim_settings
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from breadth.study.claims import evaluate_claims
from breadth.study.frame import grid_provenance, load_study_frame, provenance_header
from breadth.study.grid import GridConfig
from breadth.study.report import write_study_report
from breadth.tracking.clients import tracking_client
from breadth.tracking.runs import tracking_uri
from breadth.tracking.tables import log_table


@task(name="study-claims", cache_policy=NO_CACHE, retries=1, retry_condition_fn=retry_if_transient)
def publish_claims(study: GridConfig, grid_id: str, summary_run_id: str) -> dict[str, Any]:
    """Each claim's effect, CI and verdict -> `claims/` on the summary run + a Prefect artifact."""
    frame = load_study_frame(tracking_uri(), grid_id)
    settings = claim_settings(study)
    claims = evaluate_claims(frame, settings)
    header = provenance_header(grid_provenance(tracking_uri(), grid_id))
    client = tracking_client(tracking_uri())
    with tempfile.TemporaryDirectory() as scratch:
        paths = write_study_report(frame, claims, Path(scratch), header=header, settings=settings)
        client.log_artifact(summary_run_id, Path(scratch), "claims")
        markdown = paths[0].read_text()
    log_table(client, summary_run_id, [c.to_dict() for c in claims], "claims/claims_table.json")
    create_markdown_artifact(key="breadth-claims", description=f"claims of grid {grid_id}",
                             markdown=markdown)  # fmt: skip
    return {"claims": [c.to_dict() for c in claims], "markdown": markdown}
