"""Close the records a killed process left open: the MLflow half of breadth's dead-run design.

A process killed with SIGKILL (or a machine that lost power) cannot close its MLflow runs or
tell Prefect it ended: they stay RUNNING / Running forever. A later pipeline run and
`breadth stack up` call `reconcile_stale_runs`, which finds every RUNNING MLflow run whose
owner is gone and marks it KILLED, and marks the Prefect flow run (and its unfinished task
runs) Crashed.

An owner is gone when its process (tagged `breadth.process` = host:pid:start time) no longer
runs on this host, or when Prefect already holds its flow run in a final state. A run owned by
a live process, or by a process on another host whose flow run Prefect still calls running,
is left alone.

Dead runs, one design (docs/design/architecture.md, "Dead runs"): this module decides from
MLflow and the process table, which only this host can see; the Prefect server decides for
deployment runs on workers elsewhere, from their heartbeats (`breadth_tasks.dead_runs`' automation).
Both talk to Prefect through Prefect's own client: this library imports no Prefect, so the
caller hands in `flow_runs` (`breadth_tasks.dead_runs.PrefectFlowRuns`), which reads a flow run's
state and marks it Crashed. Without it only MLflow runs are closed.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from typing import Any, Protocol

from breadth.stack.processes import pid_alive, start_time
from breadth.tracking.clients import tracking_client
from breadth.tracking.rest import RunRecord
from breadth.tracking.runs import PROCESS_TAG, check_tracking_server

log = logging.getLogger("breadth.reconcile")

FINAL_PREFECT_STATES = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
OPEN_PREFECT_STATES = {"RUNNING", "PENDING", "SCHEDULED", "PAUSED", "CANCELLING"}
FLOW_RUN_TAG = "prefect.flow_run_id"
def owner_alive(process_tag: str | None, host: str | None = None) -> bool | None:
    """True/False for a process on this host; None when unknown (no tag, another host)."""
    if not process_tag or process_tag.count(":") < 2:
        return None
    owner_host, pid, started = process_tag.rsplit(":", 2)
    if owner_host != (host or socket.gethostname()) or not pid.isdigit():
        return None
    return pid_alive(int(pid)) and start_time(int(pid)) == started


class FlowRuns(Protocol):
    """What reconciliation asks of Prefect, for flow runs by id (`breadth_tasks.dead_runs`)."""

    def state(self, flow_run_id: str) -> str | None:
        """The flow run's state type ("RUNNING", "COMPLETED", ...); None where there is none."""

    def crash(self, flow_run_id: str, message: str) -> list[str]:
        """Mark the flow run and its unfinished task runs Crashed; the task run ids."""


def _flow_run_id(client: Any, run: RunRecord, cache: dict[str, RunRecord]) -> str:
    """The run's own Prefect flow run tag, else its parent's (stage runs are children)."""
    if run.tags.get(FLOW_RUN_TAG):
        return run.tags[FLOW_RUN_TAG]
    parent_id = run.tags.get("mlflow.parentRunId")
    if not parent_id:
        return ""
    if parent_id not in cache:
        cache[parent_id] = client.get_run(parent_id)
    return cache[parent_id].tags.get(FLOW_RUN_TAG, "")


def reconcile_stale_runs(
    tracking_uri: str, prefect_api_url: str | None = None, host: str | None = None,
    flow_runs: Callable[[str], FlowRuns] | None = None,
) -> list[str]:
    """Mark RUNNING MLflow runs whose owner is gone KILLED and their flow runs Crashed.

    `flow_runs` makes the Prefect client for the server at `prefect_api_url` (default
    PREFECT_API_URL); without either, Prefect is not asked and no flow run is crashed.
    Returns one line per record changed (for the terminal and the logs). It runs before every
    pipeline run, so it talks REST to an http(s) server (`tracking_client`): importing `mlflow`
    here was most of a cached run's start-up.
    """
    check_tracking_server(tracking_uri)  # seconds, not the client's minutes of retries
    client = tracking_client(tracking_uri)
    prefect_url = prefect_api_url if prefect_api_url is not None else os.environ.get("PREFECT_API_URL")
    prefect = flow_runs(prefect_url) if prefect_url and flow_runs is not None else None
    experiments = client.experiment_ids()
    if not experiments:
        return []
    running = client.search_runs(experiments, "attributes.status = 'RUNNING'", max_results=5000)
    parents: dict[str, Any] = {}
    states: dict[str, str | None] = {}
    notes: list[str] = []
    to_crash: set[str] = set()
    for run in running:
        flow_run_id = _flow_run_id(client, run, parents)
        alive = owner_alive(run.tags.get(PROCESS_TAG), host)
        if alive is None and prefect and flow_run_id:
            if flow_run_id not in states:
                states[flow_run_id] = prefect.state(flow_run_id)
            alive = False if states[flow_run_id] in FINAL_PREFECT_STATES else None
        if alive is not False:
            continue
        why = f"its process ({run.tags.get(PROCESS_TAG, 'unknown')}) is gone"
        client.set_tag(run.run_id, "breadth.reconciled", f"KILLED by reconciliation: {why}")
        client.set_terminated(run.run_id, "KILLED")
        notes.append(f"MLflow run {run.run_id} ({run.run_name}) RUNNING -> KILLED: {why}")
        if flow_run_id:
            to_crash.add(flow_run_id)
    for flow_run_id in sorted(to_crash):
        if prefect is None:
            continue
        state = states.get(flow_run_id) or prefect.state(flow_run_id)
        if state in OPEN_PREFECT_STATES:
            tasks = prefect.crash(flow_run_id, "its process was killed (found by reconciliation)")
            notes.append(f"Prefect flow run {flow_run_id} {state} -> CRASHED "
                         f"(and {len(tasks)} unfinished task run(s))")
    for note in notes:
        log.warning(note)
    return notes
