"""A table artifact as `MlflowClient.log_table` writes it, through whichever client the run
uses (`breadth.tracking.clients.tracking_client`): no `import mlflow` over REST."""

from __future__ import annotations

import json
import posixpath
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The run tag listing its tables: MLflow's UI shows the files it names as tables.
LOGGED_ARTIFACTS_TAG = "mlflow.loggedArtifacts"


def log_table(client: Any, run_id: str, rows: Sequence[dict[str, Any]], artifact_file: str) -> None:
    """`rows` as the JSON table `artifact_file` (pandas' "split" layout, as MLflow writes it) on
    the run, listed in its `mlflow.loggedArtifacts` tag. Logged again, the file is replaced
    (MLflow's own client appends the rows to it)."""
    import pandas as pd

    folder, name = posixpath.split(artifact_file)
    with tempfile.TemporaryDirectory() as scratch:
        local = Path(scratch) / name
        pd.DataFrame(list(rows)).to_json(local, orient="split", index=False, date_format="iso")
        client.log_artifact(run_id, local, folder or None)
    tables = json.loads(client.get_run(run_id).tags.get(LOGGED_ARTIFACTS_TAG, "[]"))
    entry = {"path": artifact_file, "type": "table"}
    if entry not in tables:
        client.set_tag(run_id, LOGGED_ARTIFACTS_TAG, json.dumps([*tables, entry]))
