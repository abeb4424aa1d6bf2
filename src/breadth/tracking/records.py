"""What the pipeline reads back from MLflow, whichever client read it (`breadth.tracking.rest`,
or `breadth.tracking.sdk` over the `mlflow` package)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True)
class RunRecord:
    """What the pipeline reads back about a run (MLflow's `Run`, flattened)."""

    run_id: str
    experiment_id: str
    run_name: str
    status: str
    artifact_uri: str
    tags: dict[str, str] = field(default_factory=dict)
    # Each metric's latest value, and the run's start and end in ms since the epoch (None
    # while it has not ended).
    metrics: dict[str, float] = field(default_factory=dict)
    start_time: int | None = None
    end_time: int | None = None
    # The run's params (a pipeline parent's: its whole config, flattened).
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, run: dict[str, Any]) -> RunRecord:
        info, data = run["info"], run.get("data", {})
        return cls(info["run_id"], info["experiment_id"], info.get("run_name", ""),
                   info.get("status", ""), info.get("artifact_uri", ""),
                   {t["key"]: t.get("value", "") for t in data.get("tags", [])},
                   {m["key"]: float(m["value"]) for m in data.get("metrics", [])},
                   info.get("start_time"), info.get("end_time"),
                   {p["key"]: p.get("value", "") for p in data.get("params", [])})


class MetricPoint(NamedTuple):
    """One logged value of a metric (MLflow's `Metric`, without its key)."""

    step: int
    value: float
    timestamp: int


class ArtifactFile(NamedTuple):
    """One entry of a run's artifact listing; `path` is relative to the run's artifact root."""

    path: str
    is_dir: bool
