"""S3 and MLflow stopped under a running GRPO stage: the run finishes, nothing is lost.

The outage starts at a known point (training paused inside step 2, just before checkpoint-2 is
written and queued for upload) and lasts OUTAGE_S, longer than the S3 client's own retries
(two tries, refused at once when the service is down) that used to abort the stage. 10 s, not
30: the retries back off 1, 2, 4, 8 ... s (S3 uploads) and 2, 4, 8 ... s (MLflow's client), so
a 30 s outage (and the restart after it) held each test about 30 s longer for the next try. That
the outage was crossed, not dodged, is checked: an upload logged "retrying", and metrics made
while MLflow was down reached it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

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


def _run_through_outage(service: str, name: str, seed: int, stack_env: dict, tmp_path: Path):
    work, signals, log = tmp_path / "work", tmp_path / "signals", tmp_path / f"{name}.log"
    signals.mkdir()
    env = environment(stack_env, work, pause_at_step=2, signals=signals)
    process = start(overrides(name, seed), env, log)
    wait_for(lambda: (signals / "paused").exists(), process, log, "step 2")
    stop_service(service)
    down = [time.time()]  # when it went down, then when it answered again
    (signals / "resume").write_text("")

    def restart() -> None:
        start_service(service)
        down.append(time.time())

    # Bring the service back after the outage, whatever the run is doing meanwhile.
    timer = threading.Timer(OUTAGE_S, restart)
    timer.start()
    try:
        code, output = finish(process, log)
    finally:
        timer.join()
    assert len(down) == 2, f"{service} did not start again after the outage (see the log above)"
    return code, output, work, tuple(down)


def test_s3_stopped_during_checkpoint_uploads(live_stack, tmp_path):
    from breadth.tracking.objects import ObjectStore
    from breadth.training.checkpointing import checkpoint_folders

    code, output, work, _ = _run_through_outage("s3", "s3-outage", 311, live_stack, tmp_path)
    assert code == 0, output[-4000:]
    assert "retrying" in output, "the outage should have crossed at least one upload"
    rl_dir = stage_dir(work, "rl")
    checkpoints = checkpoint_folders(rl_dir)
    assert [c.name for c in checkpoints] == [f"checkpoint-{s}" for s in range(MAX_STEPS, 0, -2)]
    store = ObjectStore.from_env(live_stack)
    for checkpoint in checkpoints:  # size and sha256 of every file
        assert store.missing_or_different(checkpoint, f"checkpoints/{rl_dir.name}/{checkpoint.name}") == []


def test_mlflow_stopped_during_training_loses_no_metric(live_stack, tmp_path):
    from mlflow import MlflowClient

    code, output, _, (down, up) = _run_through_outage("mlflow", "mlflow-outage", 312, live_stack,
                                                      tmp_path)
    assert code == 0, output[-4000:]
    runs = experiment_runs(live_stack, "mlflow-outage")
    assert all(r.info.status == "FINISHED" for r in runs)
    (rl_run,) = [r for r in runs if r.info.run_name == "rl"]
    for metric in ("train/reward", "train/loss"):
        assert metric_steps(live_stack, rl_run.info.run_id, metric) == list(range(1, MAX_STEPS + 1))
    # A metric's timestamp is when training made it: some were made while MLflow was down.
    history = MlflowClient(live_stack["MLFLOW_TRACKING_URI"]).get_metric_history(
        rl_run.info.run_id, "train/loss")
    made_while_down = [p.step for p in history if down * 1000 <= p.timestamp <= up * 1000]
    assert made_while_down, f"no metric was made during the outage ({down:.0f}-{up:.0f})"
