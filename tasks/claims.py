"""The study's claims: computed from a grid's cells (`breadth.study.publish.publish_claims`),
published on its MLflow summary run (a table artifact and the report files) and as a Prefect
markdown artifact."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from breadth_tasks.common import retry_if_transient
from breadth_tasks.grid import claim_settings
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from breadth.study import publish
from breadth.study.grid import GridConfig
from breadth.study.power import PilotSizing, read_pilot_sizing
from breadth.tracking.clients import tracking_client
from breadth.tracking.runs import tracking_uri
from breadth.tracking.tables import log_table


def pilot_of(study: GridConfig) -> PilotSizing | None:
    """The power pilot the study names (`GridConfig.pilot`), read; None where it names none.
    The grid reads it before any cell starts, so a missing or malformed file costs no night."""
    if not study.pilot:
        return None
    try:
        return read_pilot_sizing(Path(study.pilot))
    except ValueError as error:
        raise ValueError(f"study.pilot: {error} (or leave study.pilot empty)") from error


@task(name="study-claims", cache_policy=NO_CACHE, retries=1, retry_condition_fn=retry_if_transient)
def publish_claims(study: GridConfig, grid_id: str, summary_run_id: str,
                   pilot: PilotSizing | None = None) -> dict[str, Any]:
    """Each claim's effect, CI and verdict -> `claims/` on the summary run + a Prefect artifact;
    with a `pilot` (`pilot_of`), the rows it sized cite its seed sd and seeds needed."""
    client = tracking_client(tracking_uri())
    with tempfile.TemporaryDirectory() as scratch:
        published = publish.publish_claims(tracking_uri(), grid_id, Path(scratch),
                                           claim_settings(study), pilot=pilot)
        client.log_artifact(summary_run_id, Path(scratch), "claims")
        markdown = published.markdown.read_text()
    rows = [c.to_dict() for c in published.claims]
    log_table(client, summary_run_id, rows, "claims/claims_table.json")
    create_markdown_artifact(key="breadth-claims", description=f"claims of grid {grid_id}",
                             markdown=markdown)
    return {"claims": rows, "markdown": markdown}
