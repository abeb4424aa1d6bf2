"""What a researcher sees of two `breadth run`s of one config in the UIs, against the real stack:
MLflow experiments that open on their runs, parent runs named and tagged so a first run and its
cached re-run are told apart, their data sets as dataset inputs, and Prefect flow runs named and
tagged alike whose log holds breadth's own lines (config summary, cache hits and misses, stage
headlines)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from tests.integration.helpers import SMALL_PIPELINE, run_cli, set_args

pytestmark = pytest.mark.integration

EXPERIMENT = "labels-test"


@pytest.fixture(scope="module")
def first_and_cached(live_stack):
    """A run and its re-run, served from the cache; a seed of its own (the stack's cache is
    shared with the session's other tests). Their MLflow parent runs, first and second."""
    from mlflow import MlflowClient

    args = ["run", *set_args([*SMALL_PIPELINE, f"tracking.experiment={EXPERIMENT}", "seed=13",
                              "tracking.log_models=false"])]
    ids = []
    for _ in range(2):
        code, output, _ = run_cli(args, live_stack)
        assert code == 0, output[-4000:]
        match = re.search(r"MLflow run:\s*\S*runs/([0-9a-f]{32})", output.replace("\n", ""))
        assert match, output[-2000:]
        ids.append(match.group(1))
    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    return client, [client.get_run(run_id) for run_id in ids], output


def test_the_experiment_opens_on_its_runs(first_and_cached):
    """MLflow 3.17 opens an experiment by the browser's GenAI / Model training switch, unless
    the link names the mode; older MLflow 3 releases read the experiment's kind."""
    client, (first, _), output = first_and_cached
    experiment = client.get_experiment(first.info.experiment_id)
    assert experiment.tags.get("mlflow.experimentKind") == "custom_model_development"
    assert re.search(r"MLflow run:\s*\S+/runs/[0-9a-f]{32}\?workflowType=machine_learning",
                     output.replace("\n", "")), output[-2000:]


def test_a_run_and_its_cached_rerun_are_told_apart_by_name_and_tags(first_and_cached):
    _, (first, second), _ = first_and_cached
    # Seed 13 and the small pipeline's keys differ from the preset: named, not just hashed.
    assert first.info.run_name.startswith("default·seed=13·")
    assert first.info.run_name.split("·")[-1] == first.data.tags["config.hash"][:8]
    assert second.info.run_name == first.info.run_name + "·cached"
    assert first.data.tags["breadth.cached"] == "none"
    assert second.data.tags["breadth.cached"] == "all"
    assert first.data.tags["data.source"] == "synthetic:arithmetic"


def test_the_parent_run_logs_its_train_and_eval_sets_as_dataset_inputs(first_and_cached):
    _, runs, _ = first_and_cached
    for run in runs:  # the cached re-run too
        inputs = {next(t.value for t in i.tags if t.key == "mlflow.data.context"): i.dataset
                  for i in run.inputs.dataset_inputs}
        assert set(inputs) == {"train", "eval"}
        assert json.loads(inputs["train"].profile) == {"num_rows": 200}
        assert json.loads(inputs["eval"].profile) == {"num_rows": 12}
        assert inputs["train"].name == "arithmetic·train" and inputs["train"].source_type == "s3"
        content_hash = run.data.tags["dataset.hash"]
        assert json.loads(inputs["eval"].source)["uri"].endswith(f"{content_hash}/eval.parquet")


def _flow_run_and_logs(flow_run_id: str, api_url: str) -> tuple[object, list[str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def read():
        async with get_client() as client:
            flow_run = await client.read_flow_run(flow_run_id)
            logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
            return flow_run, [log.message for log in logs]

    # This process's Prefect settings may predate the stack's environment (a unit test's
    # temporary server ran here first): name the stack's server.
    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        return asyncio.run(read())


def test_prefect_flow_runs_are_named_and_tagged_like_the_parent_and_log_breadths_lines(
    first_and_cached, live_stack,
):
    _, runs, output = first_and_cached
    for run, cached in zip(runs, (False, True), strict=True):
        flow_run, messages = _flow_run_and_logs(run.data.tags["prefect.flow_run_id"],
                                                live_stack["PREFECT_API_URL"])
        assert flow_run.name == run.info.run_name
        assert {"preset:default", "format:free_form", "reward:correctness", "seed:13",
                "data:arithmetic"} <= set(flow_run.tags)
        assert ("cached" in flow_run.tags) == cached
        text = "\n".join(messages)
        assert f"breadth run {run.info.run_name.removesuffix('·cached')} (preset default" in text
        assert "differs from preset default: seed=13" in text
        assert ("prepare: cache hit" if cached else "prepare: cache miss, computed here") in text
        assert re.search(r"sft: cache (hit|miss).*sft/train_loss \d", text), text
        assert re.search(r"rl: cache (hit|miss).*train/reward [-0-9.]", text), text
        assert re.search(r"result: rl pass@1 [0-9.]+", text), text
    # `breadth run` prints them too (Prefect's console handler).
    assert "prepare: cache hit" in output and "differs from preset default" in output
