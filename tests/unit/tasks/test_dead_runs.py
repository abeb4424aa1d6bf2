"""Dead runs, the Prefect half (tasks/dead_runs.py): a dead worker's run is marked Crashed by
Prefect's documented zombie-flow automation from its heartbeats (measured on the real stack in
tests/faults/test_dead_worker.py), and the runs reconciliation finds dead on this host are
crashed through Prefect's own client."""

from __future__ import annotations

from typing import ClassVar
from uuid import UUID, uuid4

import pytest


def test_a_worker_sends_heartbeats_every_30_s_unless_told_otherwise(monkeypatch) -> None:
    """Heartbeats are how the server tells a dead worker's run (tasks/dead_runs.py)."""
    from breadth.cli.stack import worker_invocation

    monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    argv, env = worker_invocation("breadth-cpu", {"PREFECT_API_URL": "http://x/api"}, limit=1)
    assert argv[-4:] == ["--pool", "breadth-cpu", "--limit", "1"]
    assert env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "30"
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "60")
    assert worker_invocation("p", {})[1]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "60"


def test_the_dead_worker_automation_is_prefects_documented_zombie_trigger() -> None:
    from breadth_tasks.dead_runs import (
        AUTOMATION_NAME,
        HEARTBEAT_S,
        MISSED_AFTER_S,
        zombie_automation,
    )

    automation = zombie_automation()
    trigger = automation.trigger
    assert automation.name == AUTOMATION_NAME
    assert trigger.after == {"prefect.flow-run.heartbeat"}
    assert {"prefect.flow-run.heartbeat", "prefect.flow-run.Completed",
            "prefect.flow-run.Crashed"} <= trigger.expect
    assert trigger.posture.value == "Proactive"
    assert trigger.within.total_seconds() == MISSED_AFTER_S >= 3 * HEARTBEAT_S
    assert automation.actions[0].state.value == "CRASHED"


class _Client:
    """Prefect's SyncPrefectClient as PrefectFlowRuns uses it: flow run `known` is running and
    has one unfinished task run; records the states set."""

    known = uuid4()
    made: ClassVar[list[_Client]] = []

    def __init__(self, api, auth_string=None, api_key=None):
        self.api = api
        self.task_run_id = uuid4()
        self.set = []
        self.task_filter = None
        _Client.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read_flow_run(self, flow_run_id):
        from prefect.client.schemas.objects import StateType
        from prefect.exceptions import ObjectNotFound

        if flow_run_id != self.known:
            raise ObjectNotFound(http_exc=None)
        return type("FlowRun", (), {"state_type": StateType.RUNNING})()

    def set_flow_run_state(self, flow_run_id, state, force=False):
        self.set.append((str(flow_run_id), state.type.value, state.message, force))

    def read_task_runs(self, *, flow_run_filter, task_run_filter):
        self.task_filter = (flow_run_filter.id.any_, task_run_filter.state.type.any_)
        return [type("TaskRun", (), {"id": self.task_run_id})()]

    def set_task_run_state(self, task_run_id, state, force=False):
        self.set.append((str(task_run_id), state.type.value, state.message, force))


@pytest.fixture
def prefect_client(monkeypatch):
    import prefect.client.orchestration

    monkeypatch.setattr(_Client, "made", [])
    monkeypatch.setattr(prefect.client.orchestration, "SyncPrefectClient", _Client)
    return _Client


def test_state_is_the_flow_runs_state_type_or_none(prefect_client):
    from breadth_tasks.dead_runs import PrefectFlowRuns

    flow_runs = PrefectFlowRuns("http://prefect.test/api")
    assert flow_runs.state(str(prefect_client.known)) == "RUNNING"
    assert flow_runs.state(str(uuid4())) is None  # 404: no such flow run
    assert [client.api for client in prefect_client.made] == ["http://prefect.test/api"] * 2


def test_crash_marks_the_flow_run_and_its_unfinished_task_runs(prefect_client):
    from breadth_tasks.dead_runs import PrefectFlowRuns

    from breadth.tracking.reconcile import OPEN_PREFECT_STATES

    flow_run = str(uuid4())
    tasks = PrefectFlowRuns("http://prefect.test/api").crash(flow_run, "its process was killed")
    (client,) = prefect_client.made
    assert tasks == [str(client.task_run_id)]
    assert client.set == [(flow_run, "CRASHED", "its process was killed", True),
                          (str(client.task_run_id), "CRASHED", "its process was killed", True)]
    runs, states = client.task_filter
    assert runs == [UUID(flow_run)] and {s.value for s in states} == OPEN_PREFECT_STATES
