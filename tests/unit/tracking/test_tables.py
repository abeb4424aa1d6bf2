"""`log_table` writes the file and the tag `MlflowClient.log_table` writes, through breadth's
tracking client (the claims' table no longer needs the `mlflow` package)."""

from __future__ import annotations

import json
from pathlib import Path

from breadth.tracking.clients import tracking_client
from breadth.tracking.tables import LOGGED_ARTIFACTS_TAG, log_table

ROWS = [{"claim": "sharpening", "estimate": 0.25, "low": None, "verdict": "inconclusive"},
        {"claim": "batch", "estimate": -0.5, "low": -0.75, "verdict": "reproduced"}]


def test_the_table_and_its_tag_are_those_mlflow_logs(tmp_path, monkeypatch, mlflow_db):
    import pandas as pd
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)  # a sqlite store keeps its artifacts under ./mlruns
    uri = f"sqlite:///{mlflow_db(tmp_path / 'mlflow.db')}"
    mlflow = MlflowClient(uri)
    experiment = mlflow.create_experiment("tables")
    ours, theirs = (mlflow.create_run(experiment).info.run_id for _ in range(2))
    client = tracking_client(uri)
    log_table(client, ours, ROWS, "claims/claims_table.json")
    log_table(client, ours, ROWS, "claims/claims_table.json")  # a retried task: listed once
    mlflow.log_table(theirs, pd.DataFrame(ROWS), "claims/claims_table.json")
    files = [mlflow.download_artifacts(run, "claims/claims_table.json", str(tmp_path / run))
             for run in (ours, theirs)]
    ours_table, theirs_table = (json.loads(Path(f).read_text()) for f in files)
    assert ours_table == theirs_table
    tags = [mlflow.get_run(run).data.tags[LOGGED_ARTIFACTS_TAG] for run in (ours, theirs)]
    assert json.loads(tags[0]) == json.loads(tags[1]) == [
        {"path": "claims/claims_table.json", "type": "table"}]
