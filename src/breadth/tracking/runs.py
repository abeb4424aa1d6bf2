"""MLflow run structure: one parent run per pipeline run, one nested child run per stage.

Everything goes through a client with explicit run ids instead of the fluent active-run
stack, so stages running in Prefect worker threads never log into each other's runs. For an
http(s) server that client speaks MLflow's REST API (`breadth.tracking.rest`), so a cached run
never imports `mlflow` (1.3-1.7 s); local stores go through `MlflowClient`
(`breadth.tracking.clients`).
"""

from __future__ import annotations

import logging
import math
import os
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from breadth.display.urls import scheme_hint, without_userinfo
from breadth.stack.processes import start_time
from breadth.tracking.clients import tracking_client
from breadth.tracking.rest import UNREACHABLE_FIX, MlflowRest, RunRecord

# Values MLflow refuses as params beyond this length; longer ones are truncated, marked so.
MAX_PARAM_LENGTH = 500


class TrackingError(RuntimeError):
    """MLflow cannot be reached; the message names the server and the fix."""


class TrackingServerDown(TrackingError):
    """The MLflow server does not answer: down, or restarting (a retry may pass)."""


def metric_name(name: str) -> str:
    """MLflow rejects '@' in metric keys: pass@k -> pass_at_k.

    >>> metric_name("eval/pass@16")
    'eval/pass_at_16'
    """
    return name.replace("@", "_at_")


@dataclass(frozen=True)
class RunHandle:
    run_id: str
    experiment_id: str
    tracking_uri: str

    @property
    def tracking(self) -> Any:
        """The client every write goes through: REST for an http(s) server (no `import mlflow`
        on a cached run), `MlflowClient` for local stores (`breadth.tracking.clients`)."""
        return tracking_client(self.tracking_uri)

    @property
    def client(self) -> Any:
        """`MlflowClient` itself, for what only the `mlflow` package does (models); importing
        it costs over a second."""
        from mlflow import MlflowClient

        return MlflowClient(self.tracking_uri)

    def url(self) -> str:
        # Printed and logged: no credentials (mlflow_ui_url drops them).
        return mlflow_ui_url(self.tracking_uri, self.experiment_id, self.run_id)

    def get_run(self, run_id: str | None = None) -> RunRecord:
        """This run (or another by id) as stored: its tags, status and experiment."""
        return self.tracking.get_run(run_id or self.run_id)

    def log_params(self, params: Mapping[str, Any]) -> None:
        items = [(key, str(value)[:MAX_PARAM_LENGTH]) for key, value in sorted(params.items())]
        tracking = self.tracking
        for start in range(0, len(items), 100):
            tracking.log_batch(self.run_id, params=items[start : start + 100])

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        buffer = MetricBuffer(self)
        buffer.add(metrics, step)
        buffer.flush()

    def log_inputs(self, datasets: list[dict[str, Any]]) -> None:
        """Dataset inputs of this run (`breadth.tracking.datasets.dataset_inputs`)."""
        if datasets:
            self.tracking.log_inputs(self.run_id, datasets)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        # One request per 100 tags, not one per tag: each request is a round trip to MLflow,
        # and the pipeline sets a dozen tags on every run, cache hits included.
        items = [(key, str(value)) for key, value in tags.items()]
        tracking = self.tracking
        for start in range(0, len(items), 100):
            tracking.log_batch(self.run_id, tags=items[start : start + 100])

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        """A file, or a folder's files, under `artifact_path` of the run's artifacts."""
        self.tracking.log_artifact(self.run_id, Path(path), artifact_path)

    def finish(self, status: str = "FINISHED") -> None:
        self.tracking.set_terminated(self.run_id, status)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the run on every path: FINISHED, FAILED on an error, KILLED on an interrupt.

        Closing must not hide the stage's own error, so a failure to reach MLflow here is only
        logged (the reconciler closes the run later).
        """
        status = "FINISHED" if kind is None else "FAILED" if issubclass(kind, Exception) else "KILLED"
        try:
            if kind is not None:
                self.tracking.set_tag(self.run_id, "breadth.error",
                                      error_text(kind, error)[:MAX_PARAM_LENGTH])
            self.finish(status)
        except Exception as close_error:
            if kind is None:
                raise
            logging.getLogger("breadth.tracking").warning(
                "could not mark MLflow run %s %s: %s", self.run_id, status, close_error
            )


def error_text(kind: type[BaseException], error: BaseException | None) -> str:
    """A failed or killed run's `breadth.error` tag: the error and its message, or what
    stopped the run when the exception carries no message.

    Prefect's TerminationSignal (a cancellation from Prefect sends SIGTERM) and Ctrl-C have
    empty messages, which left the tag reading "TerminationSignal: ".

    >>> from prefect.exceptions import TerminationSignal
    >>> error_text(TerminationSignal, TerminationSignal(15))
    'cancelled (TerminationSignal: SIGTERM)'
    >>> error_text(RuntimeError, RuntimeError("inside training"))
    'RuntimeError: inside training'
    """
    number = getattr(error, "signal", None)
    if isinstance(number, int) and not isinstance(number, bool):
        import signal

        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"cancelled ({kind.__name__}: {name})"
    if issubclass(kind, KeyboardInterrupt):
        return f"interrupted ({kind.__name__}: Ctrl-C or SIGINT)"
    message = str(error) if error is not None else ""
    return f"{kind.__name__}: {message}" if message else f"{kind.__name__} (no message)"


# MLflow 3.17's UI shows an experiment as its "GenAI" or "Model training" switch says, a
# choice each browser keeps (GenAI on a first visit: the Overview of traces, runs filed under
# "Evaluations"); it reads the experiment's `mlflow.experimentKind` tag only with that switch
# off. A link's `workflowType` parameter overrides the browser's choice: every link breadth
# prints opens in Model training, an experiment on its runs table.
UI_MODE = "workflowType=machine_learning"


def mlflow_ui_url(tracking_uri: str, experiment_id: str, run_id: str | None = None) -> str:
    """The MLflow UI's page of a run (or of an experiment: its runs table), in Model training,
    without the URI's credentials (it is printed and logged).

    >>> mlflow_ui_url("http://u:pw@mlflow:5000", "3", "r1")
    'http://mlflow:5000/#/experiments/3/runs/r1?workflowType=machine_learning'
    """
    run = f"/runs/{run_id}" if run_id else ""
    return f"{without_userinfo(tracking_uri)}/#/experiments/{experiment_id}{run}?{UI_MODE}"


class MetricBuffer:
    """A `(name, value, step)` sink that sends metrics to MLflow in batches.

    One HTTP call per point from inside the training loop quadrupled SFT and GRPO time on the
    tiny model; batching keeps tracking off the hot path. It flushes every `flush_every` points
    (so long runs still show progress in the UI) and on `flush()`.
    """

    MAX_BATCH = 1000  # MLflow's limit of metrics per log_batch call

    def __init__(self, run: RunHandle, flush_every: int = 2000, lane: Any = None):
        self.run = run
        self.flush_every = flush_every
        self.lane = lane  # a BackgroundLane: flushes then leave the caller's thread
        self.pending: list[tuple[str, float, int, int]] = []

    def __call__(self, key: str, value: float, step: int = 0) -> None:
        if value is None or not math.isfinite(float(value)):
            return
        self.pending.append((metric_name(key), float(value), int(time.time() * 1000), step))
        if len(self.pending) >= self.flush_every:
            self.flush()

    def add(self, metrics: Mapping[str, float], step: int = 0) -> None:
        """Every metric of `metrics` at `step`."""
        for key, value in metrics.items():
            self(key, value, step)

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for start in range(0, len(pending), self.MAX_BATCH):
            batch = pending[start : start + self.MAX_BATCH]
            if self.lane is None:
                self._send(batch)
            else:
                self.lane.submit(f"{len(batch)} metrics of MLflow run {self.run.run_id}",
                                 lambda batch=batch: self._send(batch))

    def _send(self, batch: list[tuple[str, float, int, int]]) -> None:
        self.run.tracking.log_batch(self.run.run_id, metrics=batch)


# Which process owns a run (host:pid:start time since boot), so a later run can tell a dead
# owner (`breadth.stack.processes.start_time`).
PROCESS_TAG = "breadth.process"


def this_process() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}:{start_time(os.getpid())}"


def tracking_uri() -> str:
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise TrackingError(
            "MLFLOW_TRACKING_URI is not set. Run `breadth stack up` (the pipeline does this "
            "itself) or export it for your MLflow server."
        )
    return uri


def check_tracking_server(uri: str) -> None:
    """Fail in seconds, with the fix, when the MLflow server is down (MLflow's own client
    retries a refused connection for minutes), or when `uri` names a store MLflow refuses with
    a traceback: host:port without a scheme (read as a folder) or a folder (MLflow 3 refuses
    its file store unless MLFLOW_ALLOW_FILE_STORE=true)."""

    if hint := scheme_hint(uri):
        raise TrackingError(f"MLFLOW_TRACKING_URI={uri} is not an MLflow server URL.{hint}")
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme in ("", "file") and os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() not in ("true", "1"):
        raise TrackingError(
            f"MLFLOW_TRACKING_URI={uri} names a folder, and MLflow 3 refuses a folder as its "
            "tracking store. Use a server (`breadth stack up`, or http://HOST:PORT), a database "
            "(sqlite:///PATH/mlflow.db), or set MLFLOW_ALLOW_FILE_STORE=true to use the folder."
        )
    if not uri.startswith("http"):
        return
    try:
        MlflowRest(uri).health(timeout_s=5)
    except OSError as error:
        raise TrackingServerDown(
            f"MLflow at {without_userinfo(uri)} does not answer ({error}). {UNREACHABLE_FIX}"
        ) from None


# How long a deployment run's start waits for an MLflow server that does not answer. A cell
# of a nightly grid started while the server restarted (41 s under load in
# tests/faults/test_night_of_faults.py) failed at once, and the grid lost it; a worker has
# nobody at its terminal to read the fix, so it waits out a restart instead. Runs from the
# terminal keep failing in seconds (wait_s=0).
DEPLOYMENT_SERVER_WAIT_S = 300.0


def wait_for_tracking_server(uri: str, wait_s: float, *, poll_s: float = 5.0,
                             sleep: Any = time.sleep, clock: Any = time.monotonic) -> None:
    """`check_tracking_server`, retried every `poll_s` for up to `wait_s` while the server
    does not answer (a restart); a URI that names no server fails at once."""
    deadline = clock() + wait_s
    warned = False
    while True:
        try:
            check_tracking_server(uri)
            return
        except TrackingServerDown as error:
            if clock() >= deadline:
                raise TrackingServerDown(f"{error} (waited {wait_s:.0f}s for it)") from None
            if not warned:
                logging.getLogger("breadth.tracking").warning(
                    "%s Waiting up to %.0fs for it (a restart).", error, wait_s)
                warned = True
            sleep(poll_s)


# MLflow 3's UI opens an experiment by its kind: without this tag on its GenAI pages (traces,
# latency, tokens; runs filed under "Evaluations"), with it on the runs table, as "Machine
# learning" (its JS redirects custom_model_development to the runs tab).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


def experiment_id_of(client: Any, name: str) -> str:
    """The id of experiment `name`, created if missing, marked to open on its runs table (an
    existing one too: one created by an older breadth or by hand). Two runs that start in a
    new experiment at the same moment both see it missing; the one whose create is refused
    takes the other's."""
    found = client.experiment_id(name)
    if found is not None:
        client.set_experiment_tag(found, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
        return found
    try:
        return client.create_experiment(name, {EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
    except Exception as error:
        # MlflowRequestError and mlflow's MlflowException both carry MLflow's error code.
        if getattr(error, "error_code", "") != "RESOURCE_ALREADY_EXISTS":
            raise
        created_meanwhile = client.experiment_id(name)
        if created_meanwhile is None:
            raise
        return created_meanwhile


def _reach_tracking_server(uri: str, wait_s: float) -> None:
    if wait_s > 0:
        wait_for_tracking_server(uri, wait_s)
    else:
        check_tracking_server(uri)


def start_run(
    experiment: str, run_name: str, *, tags: Mapping[str, Any] | None = None,
    wait_s: float = 0.0,
) -> RunHandle:
    """Open a top-level run in `experiment` (created if missing); with `wait_s`, wait that long
    for a server that does not answer before failing (`wait_for_tracking_server`)."""
    uri = tracking_uri()
    _reach_tracking_server(uri, wait_s)
    client = tracking_client(uri)
    return _create_run(client, uri, experiment_id_of(client, experiment), run_name, tags)


def start_child_run(
    parent: RunHandle, run_name: str, *, tags: Mapping[str, Any] | None = None,
    wait_s: float = 0.0,
) -> RunHandle:
    """Open a child run of `parent`, in its experiment (by id: no look-up by name); with
    `wait_s`, wait that long for a server that does not answer, as `start_run` does."""
    _reach_tracking_server(parent.tracking_uri, wait_s)
    tags = {**(tags or {}), "mlflow.parentRunId": parent.run_id}
    return _create_run(parent.tracking, parent.tracking_uri, parent.experiment_id, run_name, tags)


def _create_run(
    client: Any, uri: str, experiment_id: str, run_name: str, tags: Mapping[str, Any] | None
) -> RunHandle:
    all_tags = {key: str(value) for key, value in (tags or {}).items()}
    all_tags["mlflow.runName"] = run_name
    all_tags[PROCESS_TAG] = this_process()
    run = client.create_run(experiment_id, run_name, all_tags)
    return RunHandle(run.run_id, experiment_id, uri)


def log_curves(
    run: RunHandle,
    curves: Mapping[str, list[tuple[int, float]]],
    metrics: Mapping[str, float] | None = None,
) -> None:
    """Log each curve (`eval/pass_at_k` -> [(k, value), ...]) as one metric with step = k, so
    MLflow's chart view draws it and overlays it across runs, and `metrics` (at step 0) in the
    same requests: one round trip for up to 1000 points."""
    buffer = MetricBuffer(run)
    buffer.add(metrics or {})
    for name, points in curves.items():
        for k, value in points:
            buffer(name, value, k)
    buffer.flush()
