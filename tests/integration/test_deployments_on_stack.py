"""Deployments against the real Prefect server: `breadth deploy` registers nightly (cron) and
adhoc; a worker runs adhoc when it is triggered through the API, as the UI does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from breadth.config import PipelineConfig, describe_keys, load_config
from tests.integration.helpers import REPO, SMALL_PIPELINE, run_cli

pytestmark = pytest.mark.integration


def _api(env: dict[str, str], method: str, path: str, body: dict | None = None) -> object:
    import httpx

    response = httpx.request(method, env["PREFECT_API_URL"] + path, json=body, timeout=30)
    response.raise_for_status()
    return response.json()


@pytest.fixture(scope="module")
def deployed(live_stack):
    code, output, _ = run_cli(["deploy"], live_stack, timeout=300)
    assert code == 0, output[-4000:]
    # It names every deployment it registered (it used to print a tail that cut the first off).
    assert "breadth-grid/nightly" in output and "breadth-pipeline/adhoc" in output, output
    deployments = _api(live_stack, "POST", "/deployments/filter", {})
    return {d["name"]: d for d in deployments}


def test_nightly_has_its_cron_schedule_and_adhoc_exists(deployed, live_stack):
    assert {"nightly", "multi", "adhoc"} <= set(deployed)
    # The chain nightly Monday to Saturday, the multi-answer grid on Sundays: never both at
    # once on one pool.
    for name, cron in (("nightly", "0 2 * * 1-6"), ("multi", "0 2 * * 0")):
        schedules = _api(live_stack, "GET", f"/deployments/{deployed[name]['id']}/schedules")
        assert cron in [s["schedule"].get("cron") for s in schedules], (name, schedules)
        assert all(s["schedule"].get("timezone") == "UTC" for s in schedules)
    assert deployed["adhoc"]["work_pool_name"] == deployed["nightly"]["work_pool_name"] == "breadth-cpu"


def _schema_fields(schema: dict, definitions: dict, prefix: str = "") -> dict[str, dict]:
    fields = {}
    for name, spec in schema.get("properties", {}).items():
        ref = spec.get("$ref") or (spec.get("allOf") or [{}])[0].get("$ref")
        if ref:
            fields.update(_schema_fields(definitions[ref.split("/")[-1]], definitions,
                                         f"{prefix}{name}."))
        else:
            fields[f"{prefix}{name}"] = spec
    return fields


def test_parameter_schema_documents_every_config_field(deployed):
    schema = deployed["adhoc"]["parameter_openapi_schema"]
    definitions = schema.get("definitions") or schema.get("$defs") or {}
    config_schema = definitions["PipelineConfigForm"]
    fields = _schema_fields(config_schema, definitions)
    expected = {key for key, _ in describe_keys(PipelineConfig)}
    assert set(fields) == expected
    undocumented = [key for key, spec in fields.items() if not spec.get("description")]
    assert not undocumented, f"fields without help text in the UI form: {undocumented}"


def test_worker_runs_adhoc_triggered_through_the_api(deployed, live_stack, tmp_path):
    config = load_config("default", [*SMALL_PIPELINE, "rl.enabled=false",
                                     "tracking.log_models=false"])
    flow_run = _api(live_stack, "POST", f"/deployments/{deployed['adhoc']['id']}/create_flow_run",
                    {"parameters": {"config": config.model_dump(mode="json")}})
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115
    # A fresh shell knows only where the stack lives (BREADTH_HOME, its ports), not its client
    # environment: `breadth worker` must give the worker all of it, MLflow and S3 included.
    shell = {key: value for key, value in os.environ.items() if key not in live_stack}
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "breadth"), "worker", "--pool", "breadth-cpu",
         "--run-once"],
        cwd=REPO, env=shell, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        state = None
        while time.monotonic() < deadline:
            state = _api(live_stack, "GET", f"/flow_runs/{flow_run['id']}")["state"]["type"]
            if state in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}:
                break
            time.sleep(3)
        assert state == "COMPLETED", (tmp_path / "worker.log").read_text()[-4000:]
        # Before the worker is stopped: stopping it can drop the batch still in flight.
        # The run's last lines reach the server after its state does (the worker's process sends
        # them in batches as it exits): read until the result line is there.
        deadline, text = time.monotonic() + 60, ""
        while "result: " not in text and time.monotonic() < deadline:
            time.sleep(2)
            logs = _api(live_stack, "POST", "/logs/filter",
                        {"logs": {"flow_run_id": {"any_": [flow_run["id"]]}}})
            text = "\n".join(entry["message"] for entry in logs)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
    runs = _api(live_stack, "POST", "/flow_runs/filter",
                {"flow_runs": {"id": {"any_": [flow_run["id"]]}}})
    assert json.dumps(runs[0]["parameters"]["config"]["rl"]["enabled"]) == "false"
    # On a worker too: named and tagged like its MLflow parent, breadth's lines in its log.
    assert runs[0]["name"].startswith("default·data.num_train=200·"), runs[0]["name"]
    assert {"preset:default", "format:free_form", "reward:correctness", "seed:0"} <= set(runs[0]["tags"])
    assert "breadth run default·data.num_train=200·" in text, text[-3000:]
    assert "prepare: cache" in text and "result: sft pass@1" in text, text[-3000:]
