"""Flow runs started in the caller's process run without Prefect's heartbeats
(flows/in_process.py)."""

from __future__ import annotations

import breadth_flows.pipeline
from breadth_flows.in_process import in_process_run
from prefect.settings import get_current_settings
from typer.testing import CliRunner

from breadth import cli


def test_in_process_runs_have_no_heartbeats_and_others_keep_them():
    before = get_current_settings().flows.heartbeat_frequency
    with in_process_run():
        assert get_current_settings().flows.heartbeat_frequency is None
    assert get_current_settings().flows.heartbeat_frequency == before is not None


def test_breadth_run_runs_its_flow_in_process_and_reconciles_once(monkeypatch):
    seen, stack_ups = [], []

    def pipeline(config):
        seen.append(get_current_settings().flows.heartbeat_frequency)
        raise RuntimeError("stop here")

    def bring_up_stack(reconcile=True):
        stack_ups.append(reconcile)
        return {"PREFECT_UI_URL": "http://ui"}

    monkeypatch.setattr(cli.stack, "bring_up_stack", bring_up_stack)
    monkeypatch.setattr(breadth_flows.pipeline, "pipeline", pipeline)
    result = CliRunner().invoke(cli.app, ["run"])
    assert seen == [None]
    assert stack_ups == [False]  # the pipeline reconciles as it opens its parent run
    assert "stop here" in result.output and result.exit_code != 0
