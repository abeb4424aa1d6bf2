"""A worker killed outright (kill -9, as a lost host) while its flow run is Running: the run's
heartbeats stop and the server's automation (tasks/dead_runs.py) marks it Crashed within
HEARTBEAT_S + MISSED_AFTER_S plus the trigger's evaluation. The time from the kill to Crashed
is measured and printed (run with -s to see it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.faults.helpers import REPO, kill_tree, wait_until
from tests.integration.helpers import PREFECT, create_process_pool, register_deployment

pytestmark = [pytest.mark.faults, pytest.mark.integration]

POOL = "dead-worker-test"
# The evaluation of proactive triggers and the state change on top of the bound itself.
SLACK_S = 60.0


def test_a_dead_workers_run_is_marked_crashed_within_the_bound(live_stack, tmp_path):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env = {**os.environ, **live_stack}
    create_process_pool(live_stack["PREFECT_API_URL"], POOL)
    # As `prefect deploy tests/faults/sleepy_flow.py:waits` would, without the CLI's process.
    register_deployment(live_stack["PREFECT_API_URL"], "tests/faults/sleepy_flow.py:waits",
                        "dead-worker", POOL)
    # This process's Prefect settings may predate the stack's environment: name the server.
    with temporary_settings(updates={PREFECT_API_URL: live_stack["PREFECT_API_URL"]}):
        _kill_a_worker_and_time_its_run(live_stack, tmp_path, env)


def _kill_a_worker_and_time_its_run(live_stack, tmp_path, env):
    from breadth_tasks.dead_runs import (
        HEARTBEAT_S,
        MISSED_AFTER_S,
        ensure_zombie_automation,
        heartbeat_env,
    )
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.deployments import run_deployment

    ensure_zombie_automation()
    assert ensure_zombie_automation() == ensure_zombie_automation()  # one automation, not many

    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [PREFECT, "worker", "start", "--pool", POOL, "--limit", "1"], cwd=REPO, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True,
        env={**env, **heartbeat_env(), "PREFECT_WORKER_QUERY_SECONDS": "2"},
    )
    try:
        run = run_deployment("breadth-waits/dead-worker", timeout=0)
        # One client for the minutes of polling, once a second: a new client per read (as
        # tests.faults.helpers.flow_run_state makes) cost about 0.08 CPU s a read, the
        # server's included, against 0.013 on one.
        with SyncPrefectClient(live_stack["PREFECT_API_URL"]) as client:
            def state_is(name: str) -> bool:
                state_type = client.read_flow_run(run.id).state_type
                return state_type is not None and state_type.value == name

            wait_until(lambda: state_is("RUNNING"), 180, "the run to start")
            time.sleep(5)  # its first heartbeat is sent as it starts running
            killed_at = time.monotonic()
            kill_tree(worker.pid)
            worker.wait(timeout=30)
            bound = HEARTBEAT_S + MISSED_AFTER_S + SLACK_S
            wait_until(lambda: state_is("CRASHED"), bound + 60,
                       "the dead worker's run to be marked Crashed")
        took = time.monotonic() - killed_at
        print(f"\ndead worker: its run was marked Crashed {took:.0f}s after kill -9 "
              f"(heartbeat {HEARTBEAT_S}s, window {MISSED_AFTER_S}s)")
        assert took <= bound, f"Crashed {took:.0f}s after the kill, over the bound of {bound:.0f}s"
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        log.close()
