"""The study's claims: computed from a grid's cells (`breadth.study.publish.publish_claims`),
published on its MLflow summary run (a table artifact and the report files) and as a Prefect
markdown artifact."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from breadth_tasks.common import retry_if_transient
from breadth_tasks.grid_tasks import claim_settings
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from breadth.study import publish
from breadth.study.grid_design import GridConfig
from breadth.study.power import PilotSizing, read_pilot_sizing
from breadth.study.reference import ReferenceTable, read_reference
from breadth.tracking.clients import tracking_client
from breadth.tracking.runs import tracking_uri
from breadth.tracking.tables import log_table

T = TypeVar("T")


def pilot_of(study: GridConfig) -> PilotSizing | None:
    """The power pilot the study names (`GridConfig.pilot`), read; None where it names none.
    The grid reads it before any cell starts, so a missing or malformed file costs no night."""
    return _read_named_file(study, "pilot", read_pilot_sizing)


def reference_of(study: GridConfig) -> ReferenceTable | None:
    """The fuller grid's table the study cites for the rows it leaves out
    (`GridConfig.reference`), read before any cell starts as the pilot is; None where it
    names none."""
    return _read_named_file(study, "reference", read_reference)


def _read_named_file(study: GridConfig, key: str, read: Callable[[Path], T]) -> T | None:
    if not (path := getattr(study, key)):
        return None
    try:
        return read(Path(path))
    except ValueError as error:
        raise ValueError(f"study.{key}: {error} (or leave study.{key} empty)") from error


@task(name="study-claims", cache_policy=NO_CACHE, retries=1, retry_condition_fn=retry_if_transient)
def publish_claims(study: GridConfig, grid_id: str, summary_run_id: str,
                   pilot: PilotSizing | None = None,
                   reference: ReferenceTable | None = None) -> dict[str, Any]:
    """Each claim's effect, CI and verdict -> `claims/` on the summary run + a Prefect artifact;
    with a `pilot` (`pilot_of`), the rows it sized cite its seed sd and seeds needed; with a
    `reference` (`reference_of`), the rows the grid left out cite what it measured."""
    client = tracking_client(tracking_uri())
    with tempfile.TemporaryDirectory() as scratch:
        published = publish.publish_claims(tracking_uri(), grid_id, Path(scratch),
                                           claim_settings(study), pilot=pilot,
                                           reference=reference)
        client.log_artifact(summary_run_id, Path(scratch), "claims")
        markdown = published.markdown.read_text()
    rows = [c.to_dict() for c in published.claims]
    log_table(client, summary_run_id, rows, "claims/claims_table.json")
    create_markdown_artifact(key="breadth-claims", description=f"claims of grid {grid_id}",
                             markdown=markdown)
    return {"claims": rows, "markdown": markdown}
