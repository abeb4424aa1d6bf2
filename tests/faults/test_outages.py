"""S3 and MLflow stopped together under a running GRPO stage (the host that keeps the records
down): the run finishes, nothing is lost.

The outage starts at a known point (training paused inside step 2, just before checkpoint-2 is
written and queued for upload) and lasts OUTAGE_S, longer than the S3 client's own retries
(two tries, refused at once when the service is down) that used to abort the stage. 10 s, not
30: the retries back off 1, 2, 4, 8 ... s (S3 uploads) and 2, 4, 8 ... s (MLflow's client), so
a 30 s outage (and the restart after it) held the run about 30 s longer for the next try. That
the outage was crossed, not dodged, is checked: an upload logged "retrying", and metrics made
while MLflow was down reached it. One run meets both outages at once (a run for each cost one
more pipeline process, about 25 CPU s and 50 s, and showed nothing more: the uploads and the
metrics retry on their own lanes); each service's checks are a test of their own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.faults.helpers import (
    MAX_STEPS,
    environment,
    experiment_runs,
    finish,
    metric_steps,
    overrides,
    stage_dir,
    start,
    start_service,
    stop_service,
    wait_for,
)

pytestmark = [pytest.mark.faults, pytest.mark.integration]
OUTAGE_S = 10


SERVICES = ("s3", "mlflow")  # started again in this order: MLflow stores its artifacts in S3


class Outage(NamedTuple):
    code: int
    output: str
    work: Path
    down: float  # when the services stopped (time.time())
    up: float  # when the last of them answered again


@pytest.fixture(scope="module")
def outage(live_stack, tmp_path_factory) -> Outage:
    folder = tmp_path_factory.mktemp("outage")
    work, signals, log = folder / "work", folder / "signals", folder / "outage.log"
    signals.mkdir()
    env = environment(live_stack, work, pause_at_step=2, signals=signals)
    process = start(overrides("outage", 311), env, log)
    wait_for(lambda: (signals / "paused").exists(), process, log, "step 2")
    for service in SERVICES:
        stop_service(service)
    down = [time.time()]  # when they went down, then when the last answered again
    (signals / "resume").write_text("")

    def restart() -> None:
        for service in SERVICES:
            start_service(service)
        down.append(time.time())

    # Bring the services back after the outage, whatever the run is doing meanwhile.
    timer = threading.Timer(OUTAGE_S, restart)
    timer.start()
    try:
        code, output = finish(process, log)
    finally:
        timer.join()
    assert len(down) == 2, "a service did not start again after the outage (see the log above)"
    return Outage(code, output, work, *down)


def test_s3_stopped_during_checkpoint_uploads(outage, live_stack):
    from breadth.tracking.objects import ObjectStore
    from breadth.training.checkpointing import checkpoint_folders

    assert outage.code == 0, outage.output[-4000:]
    assert "retrying" in outage.output, "the outage should have crossed at least one upload"
    rl_dir = stage_dir(outage.work, "rl")
    checkpoints = checkpoint_folders(rl_dir)
    assert [c.name for c in checkpoints] == [f"checkpoint-{s}" for s in range(MAX_STEPS, 0, -2)]
    store = ObjectStore.from_env(live_stack)
    for checkpoint in checkpoints:  # size and sha256 of every file
        assert store.missing_or_different(checkpoint, f"checkpoints/{rl_dir.name}/{checkpoint.name}") == []


def test_mlflow_stopped_during_training_loses_no_metric(outage, live_stack):
    from mlflow import MlflowClient

    assert outage.code == 0, outage.output[-4000:]
    runs = experiment_runs(live_stack, "outage")
    assert all(r.info.status == "FINISHED" for r in runs)
    (rl_run,) = [r for r in runs if r.info.run_name == "rl"]
    for metric in ("train/reward", "train/loss"):
        assert metric_steps(live_stack, rl_run.info.run_id, metric) == list(range(1, MAX_STEPS + 1))
    # A metric's timestamp is when training made it: some were made while MLflow was down.
    history = MlflowClient(live_stack["MLFLOW_TRACKING_URI"]).get_metric_history(
        rl_run.info.run_id, "train/loss")
    made_while_down = [p.step for p in history
                       if outage.down * 1000 <= p.timestamp <= outage.up * 1000]
    assert made_while_down, f"no metric was made during the outage ({outage.down:.0f}-{outage.up:.0f})"
