"""Dead runs, the Prefect half: a run whose process died is marked Crashed, on Prefect's client.

breadth finds dead runs in two places, by what each can see, and talks to Prefect the same way
in both: through Prefect's own client (docs/design/architecture.md, "Dead runs").

- **On this host**, `breadth.tracking.reconcile` (the library) closes the MLflow runs whose
  process is gone, at the next pipeline run and `breadth stack up`, and asks `PrefectFlowRuns`
  here to mark their flow runs (and unfinished task runs) Crashed. Runs started in the
  caller's process (`breadth run`, `breadth grid`) are found this way only.
- **On workers elsewhere** (kill -9, a lost host, an evicted pod), nothing on this host can see
  the process. Prefect's documented remedy (docs.prefect.io, "detect zombie flows") is two
  parts: the flow-run process emits a heartbeat event every `PREFECT_FLOWS_HEARTBEAT_FREQUENCY`
  seconds, and a server automation marks a run Crashed when, after a heartbeat, neither another
  heartbeat nor a final state follows within a window. So a dead worker's run is Crashed at most
  HEARTBEAT_S + MISSED_AFTER_S after its death, plus the server's trigger evaluation (measured:
  tests/faults/test_dead_worker.py). `breadth worker` sets the frequency, `breadth deploy` and
  every grid on a pool create the automation (idempotent).

Prefect is imported on use: `breadth stack up` and `breadth worker` read this module and start
without Prefect's import (seconds), which only a dead run or the automation needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from uuid import UUID

from breadth.tracking.reconcile import OPEN_PREFECT_STATES

if TYPE_CHECKING:
    from prefect.automations import Automation

HEARTBEAT_S = 30  # Prefect's lowest allowed frequency: the dead are found soonest
MISSED_AFTER_S = 90  # three heartbeats missed: a busy worker is not mistaken for a dead one
AUTOMATION_NAME = "breadth: crash flow runs whose heartbeats stopped"
FINAL_EVENTS = ("Completed", "Failed", "Cancelled", "Crashed")


class PrefectFlowRuns:
    """`breadth.tracking.reconcile.FlowRuns` on Prefect's client, for the server at `api_url`
    (credentials from Prefect's settings: PREFECT_API_AUTH_STRING, PREFECT_API_KEY)."""

    def __init__(self, api_url: str):
        self.api_url = api_url

    @contextmanager
    def _client(self) -> Iterator[Any]:
        from prefect.client.orchestration import SyncPrefectClient
        from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_KEY

        with SyncPrefectClient(self.api_url, auth_string=PREFECT_API_AUTH_STRING.value(),
                               api_key=PREFECT_API_KEY.value()) as client:
            yield client

    def state(self, flow_run_id: str) -> str | None:
        from prefect.exceptions import ObjectNotFound

        with self._client() as client:
            try:
                state_type = client.read_flow_run(UUID(flow_run_id)).state_type
            except ObjectNotFound:
                return None
        return state_type.value if state_type is not None else None

    def crash(self, flow_run_id: str, message: str) -> list[str]:
        from prefect.client.schemas.filters import (
            FlowRunFilter,
            FlowRunFilterId,
            TaskRunFilter,
            TaskRunFilterState,
            TaskRunFilterStateType,
        )
        from prefect.client.schemas.objects import StateType
        from prefect.states import Crashed

        with self._client() as client:
            client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
            unfinished = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)])),
                task_run_filter=TaskRunFilter(state=TaskRunFilterState(type=TaskRunFilterStateType(
                    any_=[StateType(name) for name in sorted(OPEN_PREFECT_STATES)]))))
            for task_run in unfinished:
                client.set_task_run_state(task_run.id, Crashed(message=message), force=True)
        return [str(task_run.id) for task_run in unfinished]


def heartbeat_env() -> dict[str, str]:
    """What a worker's environment needs so its deployment runs send heartbeats."""
    return {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_S)}


def zombie_automation(missed_after_s: float = MISSED_AFTER_S) -> Automation:
    from datetime import timedelta

    from prefect.automations import Automation
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    return Automation(
        name=AUTOMATION_NAME,
        description=(f"Marks a flow run Crashed when {missed_after_s:.0f} s pass after a heartbeat "
                     "with neither another heartbeat nor a final state (its worker died)."),
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in FINAL_EVENTS)},
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=missed_after_s),
        ),
        actions=[ChangeFlowRunState(
            state=StateType.CRASHED,
            message=(f"No heartbeat for {missed_after_s:.0f} s: the worker running this flow run "
                     "died or lost the server (breadth's dead-worker automation)."),
        )],
    )


def ensure_zombie_automation(missed_after_s: float = MISSED_AFTER_S) -> str:
    """Create the automation on the server unless one of its name exists; its id."""
    from prefect.automations import Automation

    try:
        return str(Automation.read(name=AUTOMATION_NAME).id)
    except ValueError:  # not found
        return str(zombie_automation(missed_after_s).create().id)
