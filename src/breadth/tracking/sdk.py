"""`MlflowRest`'s methods on the `mlflow` package's `MlflowClient`: for local stores, auth only
the package speaks, and artifact stores the server does not proxy (`breadth.tracking.clients`
picks the client). `mlflow` is imported when a `SdkTracking` is made, not with this module."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from breadth.tracking.records import ArtifactFile, MetricPoint, RunRecord


def _every_page(search: Any, **kwargs: Any) -> Iterator[Any]:
    """Every item of every page of an `MlflowClient.search_*` call."""
    token = None
    while True:
        page = search(page_token=token, **kwargs)
        yield from page
        token = page.token
        if not token:
            return


def _record(run: Any) -> RunRecord:
    info = run.info
    return RunRecord(info.run_id, info.experiment_id, info.run_name or "", info.status,
                     info.artifact_uri, dict(run.data.tags), dict(run.data.metrics),
                     info.start_time, info.end_time, dict(run.data.params))


class SdkTracking:
    """`MlflowRest`'s methods on `MlflowClient` (imported here, on first use only)."""

    def __init__(self, uri: str):
        from mlflow import MlflowClient

        self.uri = uri
        self.client = MlflowClient(uri)

    def experiment_id(self, name: str) -> str | None:
        found = self.client.get_experiment_by_name(name)
        return found.experiment_id if found else None

    def create_experiment(self, name: str, tags: dict[str, str] | None = None) -> str:
        return self.client.create_experiment(name, tags=tags)

    def set_experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        self.client.set_experiment_tag(experiment_id, key, value)

    def experiment_ids(self) -> list[str]:
        from mlflow.entities import ViewType

        return [e.experiment_id for e in _every_page(self.client.search_experiments,
                                                      view_type=ViewType.ALL)]

    def experiment_names(self) -> dict[str, str]:
        return {e.experiment_id: e.name for e in _every_page(self.client.search_experiments)}

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> RunRecord:
        return _record(self.client.create_run(experiment_id, tags=tags, run_name=run_name))

    def get_run(self, run_id: str) -> RunRecord:
        return _record(self.client.get_run(run_id))

    def search_runs(self, experiment_ids: list[str], filter_string: str,
                    max_results: int | None = 5000,
                    order_by: Sequence[str] = ()) -> list[RunRecord]:
        runs = _every_page(self.client.search_runs, experiment_ids=experiment_ids,
                           filter_string=filter_string, order_by=list(order_by),
                           max_results=min(max_results or 5000, 5000))
        return [_record(run) for run in itertools.islice(runs, max_results)]

    def metric_history(self, run_id: str, key: str) -> list[MetricPoint]:
        return [MetricPoint(m.step, m.value, m.timestamp)
                for m in self.client.get_metric_history(run_id, key)]

    def list_artifacts(self, run_id: str, path: str = "") -> list[ArtifactFile]:
        return [ArtifactFile(f.path, f.is_dir) for f in self.client.list_artifacts(run_id, path or None)]

    def download_artifacts(self, run_id: str, path: str, destination: Path) -> Path:
        return Path(self.client.download_artifacts(run_id, path, str(destination)))

    def log_batch(self, run_id: str, *, metrics: Sequence[tuple[str, float, int, int]] = (),
                  params: Sequence[tuple[str, str]] = (),
                  tags: Sequence[tuple[str, str]] = ()) -> None:
        from mlflow.entities import Metric, Param, RunTag

        self.client.log_batch(run_id, metrics=[Metric(*m) for m in metrics],
                              params=[Param(*p) for p in params],
                              tags=[RunTag(*t) for t in tags])


    def log_inputs(self, run_id: str, datasets: Sequence[dict[str, Any]]) -> None:
        from mlflow.entities import Dataset, DatasetInput, InputTag

        self.client.log_inputs(run_id, datasets=[
            DatasetInput(Dataset(**entry["dataset"]), [InputTag(**t) for t in entry["tags"]])
            for entry in datasets])

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.client.set_tag(run_id, key, value)

    def set_terminated(self, run_id: str, status: str = "FINISHED") -> None:
        self.client.set_terminated(run_id, status)

    def log_artifact(self, run_id: str, local: Path, artifact_path: str | None = None) -> None:
        if Path(local).is_dir():
            self.client.log_artifacts(run_id, str(local), artifact_path)
        else:
            self.client.log_artifact(run_id, str(local), artifact_path)
