"""Deployment runs whose worker died are marked Crashed, within a bound.

A worker killed outright (kill -9, a lost host, an evicted pod) leaves its flow run Running:
nothing is left to report its end. Prefect's documented remedy (docs.prefect.io, "detect zombie
flows") is two parts: the flow-run process emits a heartbeat event every
`PREFECT_FLOWS_HEARTBEAT_FREQUENCY` seconds, and a server automation marks a run Crashed when,
after a heartbeat, neither another heartbeat nor a final state follows within a window.

So a dead worker's run is Crashed at most HEARTBEAT_S + MISSED_AFTER_S after its death, plus the
server's trigger evaluation (measured: tests/faults/test_dead_worker.py). `breadth worker` sets
the frequency, `breadth deploy` and every grid on a pool create the automation (idempotent).
"""

from __future__ import annotations

from datetime import timedelta

from prefect.automations import Automation
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import EventTrigger, Posture
from prefect.events.schemas.events import ResourceSpecification

HEARTBEAT_S = 30  # Prefect's lowest allowed frequency: the dead are found soonest
MISSED_AFTER_S = 90  # three heartbeats missed: a busy worker is not mistaken for a dead one
AUTOMATION_NAME = "breadth: crash flow runs whose heartbeats stopped"
FINAL_EVENTS = ("Completed", "Failed", "Cancelled", "Crashed")


def heartbeat_env() -> dict[str, str]:
    """What a worker's environment needs so its deployment runs send heartbeats."""
    return {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_S)}


def zombie_automation(missed_after_s: float = MISSED_AFTER_S) -> Automation:
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
    try:
        return str(Automation.read(name=AUTOMATION_NAME).id)
    except ValueError:  # not found
        return str(zombie_automation(missed_after_s).create().id)
