"""A dead worker's run is marked Crashed: workers send heartbeats, and the server holds
Prefect's documented zombie-flow automation (flows/zombies.py). Measured on the real stack in
tests/faults/test_dead_worker.py."""

from __future__ import annotations


def test_a_worker_sends_heartbeats_every_30_s_unless_told_otherwise(monkeypatch) -> None:
    """Heartbeats are how the server tells a dead worker's run (flows/zombies.py)."""
    from breadth.cli.stack import worker_invocation

    monkeypatch.delenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", raising=False)
    argv, env = worker_invocation("breadth-cpu", {"PREFECT_API_URL": "http://x/api"}, limit=1)
    assert argv[-4:] == ["--pool", "breadth-cpu", "--limit", "1"]
    assert env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "30"
    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "60")
    assert worker_invocation("p", {})[1]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "60"


def test_the_dead_worker_automation_is_prefects_documented_zombie_trigger() -> None:
    from breadth_flows.zombies import (
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
