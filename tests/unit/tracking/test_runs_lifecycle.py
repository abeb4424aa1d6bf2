"""Every run opened is closed: FINISHED, FAILED or KILLED on every path, and a later run closes
what a killed process left RUNNING (MLflow on a local SQLite store, no server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from breadth.tracking.reconcile import FLOW_RUN_TAG, owner_alive, reconcile_stale_runs
from breadth.tracking.rest import MlflowRequestError
from breadth.tracking.runs import PROCESS_TAG, MetricBuffer, start_run, this_process
from breadth.tracking.uploads import BackgroundLane


@pytest.fixture(scope="module")
def tracking(tmp_path_factory, mlflow_db):
    uri = f"sqlite:///{mlflow_db(tmp_path_factory.mktemp('mlflow') / 'mlflow.db')}"
    saved = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = uri
    yield uri
    if saved is None:
        os.environ.pop("MLFLOW_TRACKING_URI")
    else:
        os.environ["MLFLOW_TRACKING_URI"] = saved


def _status(run) -> str:
    return run.client.get_run(run.run_id).info.status


def test_a_run_is_finished_failed_or_killed_on_each_path(tracking):
    with start_run("lifecycle", "ok") as ok:
        pass
    assert _status(ok) == "FINISHED"
    failed = start_run("lifecycle", "raises")
    with pytest.raises(RuntimeError), failed:
        raise RuntimeError("inside training")
    assert _status(failed) == "FAILED"
    assert "inside training" in failed.client.get_run(failed.run_id).data.tags["breadth.error"]
    killed = start_run("lifecycle", "interrupted")
    with pytest.raises(KeyboardInterrupt), killed:
        raise KeyboardInterrupt
    assert _status(killed) == "KILLED"


def test_runs_are_tagged_with_their_owning_process(tracking):
    with start_run("lifecycle", "owned") as run:
        tag = run.client.get_run(run.run_id).data.tags[PROCESS_TAG]
    assert tag == this_process() and owner_alive(tag) is True


def _dead_process_tag() -> str:
    script = "from breadth.tracking.runs import this_process; print(this_process())"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return done.stdout.strip()


def test_owner_liveness_checks_pid_start_time_and_host():
    dead = _dead_process_tag()
    assert owner_alive(dead) is False
    host, pid, _ = this_process().rsplit(":", 2)
    assert owner_alive(f"{host}:{pid}:1") is False  # same pid, another start time: reused pid
    assert owner_alive(f"another-host:{pid}:1") is None
    assert owner_alive(None) is None


def test_reconciliation_kills_runs_of_dead_processes_and_spares_live_ones(tracking):
    live = start_run("reconcile", "live")
    stale = start_run("reconcile", "stale", tags={})
    stale.client.set_tag(stale.run_id, PROCESS_TAG, _dead_process_tag())
    foreign = start_run("reconcile", "other-host")
    foreign.client.set_tag(foreign.run_id, PROCESS_TAG, "another-host:1:1")
    notes = reconcile_stale_runs(tracking, prefect_api_url="")
    assert _status(stale) == "KILLED" and _status(live) == "RUNNING"
    assert _status(foreign) == "RUNNING"  # unknown owner, and no Prefect state says it ended
    assert len(notes) == 1 and stale.run_id in notes[0]
    live.finish()
    foreign.finish()


class _FlowRuns:
    """`reconcile.FlowRuns` with the flow runs' states given: records what it is asked."""

    def __init__(self, states: dict[str, str]):
        self.states, self.crashed = states, []

    def __call__(self, api_url: str) -> _FlowRuns:
        assert api_url == "http://prefect.test/api"
        return self

    def state(self, flow_run_id: str) -> str | None:
        return self.states.get(flow_run_id)

    def crash(self, flow_run_id: str, message: str) -> list[str]:
        self.crashed.append(flow_run_id)
        self.states[flow_run_id] = "CRASHED"
        return ["task-1"]


def test_reconciliation_asks_prefect_through_the_flow_runs_it_is_given(tracking):
    """A dead owner's flow run is crashed; another host's run is closed only when Prefect
    holds its flow run final, and left alone while Prefect calls it running."""
    flow_runs = _FlowRuns({"dead": "RUNNING", "done": "COMPLETED", "busy": "RUNNING"})
    runs = {}
    for name, process in (("dead", _dead_process_tag()), ("done", "another-host:1:1"),
                          ("busy", "another-host:2:1")):
        runs[name] = start_run("reconcile-prefect", name, tags={FLOW_RUN_TAG: name})
        runs[name].client.set_tag(runs[name].run_id, PROCESS_TAG, process)
    notes = reconcile_stale_runs(tracking, prefect_api_url="http://prefect.test/api",
                                 flow_runs=flow_runs)
    assert {name: _status(run) for name, run in runs.items()} == {
        "dead": "KILLED", "done": "KILLED", "busy": "RUNNING"}
    assert flow_runs.crashed == ["dead"]  # "done" is final already
    assert "Prefect flow run dead RUNNING -> CRASHED (and 1 unfinished task run(s))" in notes
    runs["busy"].finish()
    # Without a client for Prefect, only MLflow is closed.
    quiet = start_run("reconcile-prefect", "no-client", tags={FLOW_RUN_TAG: "x"})
    quiet.client.set_tag(quiet.run_id, PROCESS_TAG, _dead_process_tag())
    assert len(reconcile_stale_runs(tracking, "http://prefect.test/api")) == 1
    assert _status(quiet) == "KILLED"


def test_metric_buffer_flushes_through_a_background_lane(tracking):
    with start_run("lifecycle", "metrics") as run, BackgroundLane("MLflow", first_wait_s=0.01) as lane:
        buffer = MetricBuffer(run, lane=lane)
        for step in range(1, 6):
            buffer("train/reward", step / 10, step)
        buffer.flush()
    history = run.client.get_metric_history(run.run_id, "train/reward")
    assert sorted(point.step for point in history) == [1, 2, 3, 4, 5]


def test_set_tags_sends_every_tag_in_batches(tracking):
    tags = {f"tag.{i:03d}": i for i in range(130)}  # more than one batch of 100
    with start_run("lifecycle", "tagged") as run:
        run.set_tags(tags)
        stored = run.client.get_run(run.run_id).data.tags
    assert {key: stored[key] for key in tags} == {key: str(value) for key, value in tags.items()}


class _RacingClient:
    """Sees no experiment, then loses the create to a run that made it meanwhile (or has it
    refused with `error_code`)."""

    def __init__(self, created_by_other: str | None, error_code: str = "RESOURCE_ALREADY_EXISTS"):
        self.created_by_other = created_by_other
        self.error_code = error_code
        self.lookups = 0

    def experiment_id(self, name: str) -> str | None:
        self.lookups += 1
        return None if self.lookups == 1 else self.created_by_other

    def set_experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        pass

    def create_experiment(self, name: str, tags: dict[str, str] | None = None) -> str:
        answer = {"error_code": self.error_code, "message": f"Experiment '{name}' is refused."}
        raise MlflowRequestError("POST", "experiments/create", 400, json.dumps(answer).encode())


def test_an_experiment_created_meanwhile_by_another_run_is_taken():
    from breadth.tracking.runs import experiment_id_of

    assert experiment_id_of(_RacingClient(created_by_other="7"), "twins") == "7"


def test_a_refused_create_with_no_experiment_after_it_is_raised():
    from breadth.tracking.runs import experiment_id_of

    with pytest.raises(RuntimeError, match="RESOURCE_ALREADY_EXISTS"):
        experiment_id_of(_RacingClient(created_by_other=None), "twins")


def test_any_other_refused_create_is_raised_at_once():
    from breadth.tracking.runs import experiment_id_of

    client = _RacingClient(created_by_other="7", error_code="PERMISSION_DENIED")
    with pytest.raises(RuntimeError, match="PERMISSION_DENIED"):
        experiment_id_of(client, "twins")
    assert client.lookups == 1  # no second look-up


def test_start_child_run_waits_only_when_asked(monkeypatch):
    from types import SimpleNamespace

    from breadth.tracking import runs

    calls = []
    monkeypatch.setattr(runs, "wait_for_tracking_server", lambda uri, wait_s: calls.append(("wait", wait_s)))
    monkeypatch.setattr(runs, "check_tracking_server", lambda uri: calls.append(("check", 0)))
    monkeypatch.setattr(runs, "_create_run", lambda *args: "run")
    parent = SimpleNamespace(tracking_uri="http://mlflow", run_id="p", tracking=None, experiment_id="1")
    assert runs.start_child_run(parent, "sft", wait_s=300) == "run"
    assert runs.start_child_run(parent, "rl") == "run"
    assert calls == [("wait", 300), ("check", 0)]
