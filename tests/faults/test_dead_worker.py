"""A worker killed outright (kill -9, as a lost host) while its flow run is Running: the run's
heartbeats stop and the server's automation (tasks/dead_runs.py) marks it Crashed within
HEARTBEAT_S + its window plus the trigger's evaluation. The time from the kill to Crashed is
measured and printed (run with -s to see it).

The automation here is the production one (`ensure_zombie_automation`) with a window of
WINDOW_S, not MISSED_AFTER_S's 90 s: the test watches the mechanism (heartbeats stop, the
proactive trigger fires, the run turns Crashed with the automation's message), and the 90 s
held one of the suite's two workers idle about 45 s longer. The production window's value is
tests/unit/tasks/test_dead_runs.py's. The run is killed 5 s after it starts, so the shorter
window cannot fire on it while it lives. The stack's automation is put back as the test found
it: none, or the production one."""

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
# One and a half heartbeats (HEARTBEAT_S = 30): no run lives through a whole window here.
WINDOW_S = 45


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
    from breadth_tasks.dead_runs import AUTOMATION_NAME, ensure_zombie_automation
    from prefect.automations import Automation

    def delete_if_there() -> bool:
        try:
            return Automation.read(name=AUTOMATION_NAME).delete()
        except ValueError:  # not found
            return False

    # An earlier test on this stack may have made the production one (a grid does).
    had_one = delete_if_there()
    made = ensure_zombie_automation(WINDOW_S)
    assert ensure_zombie_automation(WINDOW_S) == made  # one automation, not many
    try:
        _time_a_killed_workers_run(live_stack, tmp_path, env)
    finally:
        delete_if_there()
        if had_one:
            ensure_zombie_automation()


def _time_a_killed_workers_run(live_stack, tmp_path, env):
    from breadth_tasks.dead_runs import HEARTBEAT_S, heartbeat_env
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.deployments import run_deployment

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
            bound = HEARTBEAT_S + WINDOW_S + SLACK_S
            wait_until(lambda: state_is("CRASHED"), bound + 60,
                       "the dead worker's run to be marked Crashed")
            took = time.monotonic() - killed_at
            message = client.read_flow_run(run.id).state.message or ""
        print(f"\ndead worker: its run was marked Crashed {took:.0f}s after kill -9 "
              f"(heartbeat {HEARTBEAT_S}s, window {WINDOW_S}s): {message}")
        assert took <= bound, f"Crashed {took:.0f}s after the kill, over the bound of {bound:.0f}s"
        assert f"No heartbeat for {WINDOW_S} s" in message, f"not the automation's Crashed: {message}"
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        log.close()
