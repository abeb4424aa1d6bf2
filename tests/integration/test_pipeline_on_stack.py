"""The walking skeleton against the real stack: one CLI command runs every stage, tracked in
MLflow and S3; a second identical run is served from Prefect's cache. And what a researcher
sees of the two in the UIs: MLflow experiments that open on their runs, parent runs named and
tagged so a first run and its cached re-run are told apart, their data sets as dataset inputs,
and Prefect flow runs named and tagged alike whose log holds breadth's own lines (config
summary, cache hits and misses, stage headlines)."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from tests.integration.helpers import SMALL_PIPELINE, run_cli, run_cli_reporting_imports, set_args

pytestmark = pytest.mark.integration

STAGES = {"prepare", "sft", "rl", "rollout-sft", "rollout-rl", "search-sft", "search-rl",
          "evaluate-sft", "evaluate-rl"}


# A seed of its own: other tests in the session (e.g. the deployment test) share the stack and
# Prefect's cache, and their cached stages must not stand in for this test's first run.
RUN = ["run", *set_args([*SMALL_PIPELINE, "tracking.experiment=skeleton-test", "seed=11"])]


@pytest.fixture(scope="module")
def runs_and_imports(live_stack):
    """The first run and its cached re-run, each (exit code, output, seconds), and the heavy
    packages the re-run imported: one re-run for the tests of both (a third run of its own
    for the import check cost 6-7 CPU s)."""
    first = run_cli(RUN, live_stack)
    assert first[0] == 0, first[1][-4000:]
    started = time.monotonic()
    code, stdout, stderr, loaded = run_cli_reporting_imports(RUN, live_stack, timeout=900)
    second = (code, stdout + stderr, time.monotonic() - started)
    assert code == 0, second[1][-4000:]
    return first, second, loaded


@pytest.fixture(scope="module")
def two_runs(runs_and_imports):
    return runs_and_imports[:2]


def _run_id(output: str) -> str:
    match = re.search(r"MLflow run:\s*\S*runs/([0-9a-f]{32})", output.replace("\n", ""))
    assert match, f"no MLflow run id printed in:\n{output[-2000:]}"
    return match.group(1)


# The smoke run of `make check`: the real stack, one small pipeline and its cached re-run.
@pytest.mark.smoke
def test_cli_prints_where_to_look(two_runs):
    output = two_runs[0][1]
    for label in ("MLflow run:", "Prefect run:", "S3 prefix:", "Report:"):
        assert label in output
    # This run's page, not the list of all runs.
    assert re.search(r"Prefect run: \S+/flow-runs/flow-run/[0-9a-f-]{36}",
                     output.replace("\n", "")), output[-2000:]


@pytest.mark.smoke
def test_parent_run_has_a_child_per_stage_and_the_tags(two_runs, live_stack):
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    parent = client.get_run(_run_id(two_runs[0][1]))
    for tag in ("prefect.flow_run_id", "prefect.flow_run_url", "git.sha", "code.version",
                "git.dirty", "host.gpus", "config.hash", "dataset.hash", "format", "reward",
                "model", "data.fit", "data.eval_prompt_tokens"):
        assert parent.data.tags.get(tag), f"parent run lacks tag {tag}"
    assert parent.data.tags["data.fit"] == "ok"  # the flow's own check of the rows' lengths
    children = client.search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    assert {child.info.run_name for child in children} == STAGES
    for child in children:
        if child.info.run_name.startswith("evaluate-"):
            curve = client.get_metric_history(child.info.run_id, "eval/pass_at_k")
            assert sorted(point.step for point in curve) == [1, 2, 4, 8]
            values = [point.value for point in sorted(curve, key=lambda p: p.step)]
            assert values == sorted(values), "pass@k must not fall as k grows"
    parent_curve = client.get_metric_history(parent.info.run_id, "rl/eval/pass_at_k")
    assert sorted(point.step for point in parent_curve) == [1, 2, 4, 8]
    artifacts = {item.path for item in client.list_artifacts(parent.info.run_id, "report")}
    assert {"report/report.md", "report/pass_at_k.png"} <= artifacts
    assert "train/rewards/correctness/mean" in client.get_run(
        next(c.info.run_id for c in children if c.info.run_name == "rl")
    ).data.metrics


def test_compare_reads_what_the_pipeline_logged(two_runs, live_stack):
    # The reader against the writer: `breadth compare` and the grid read this layout back.
    from breadth.study.frame import study_frame_of_runs
    from breadth.study.grid_statistics import grid_summary
    from breadth.tracking.fetch import CompareError, fetch_runs

    uri = live_stack["MLFLOW_TRACKING_URI"]
    first, second = (_run_id(run[1]) for run in two_runs)
    # The second run is a cached re-run of the first (same config and seed): no second seed.
    with pytest.raises(CompareError, match=f"{second} repeats {first}"):
        fetch_runs(uri, run_ids=[first, second])
    runs = fetch_runs(uri, run_ids=[first])
    assert list(runs["run_id"]) == [first]
    assert list(runs["seed"]) == [11] and set(runs["format"]) == {"free_form"}
    for model in ("sft", "rl"):
        assert [sorted(curve) for curve in runs[f"curve_{model}"]] == [[1, 2, 4, 8]]
    # The second run was served from the cache: its evaluate children are the first run's.
    assert fetch_runs(uri, run_ids=[second])["curve_rl"][0] == runs["curve_rl"][0]
    summary = grid_summary(runs, study_frame_of_runs(uri, runs)).iloc[0]
    assert summary["seeds"] == 1 and summary["k"] == 8
    assert summary["ci"] == "bootstrap over seeds × problems"
    for column in ("pass_at_1", "pass_at_kmax", "base_pass_at_kmax", "search_success"):
        assert summary[column] == summary[column], f"{column} not read back (NaN)"
        low, high = summary[f"{column}_ci_low"], summary[f"{column}_ci_high"]
        assert 0.0 <= low <= summary[column] <= high <= 1.0, column
    # Every eval problem is base-solved or base-unsolved: the split sizes are read back (splits
    # this small are too small for their diversity to be reported).
    sizes = [runs[f"rl/transfer/{split}/num_problems"][0] for split in ("solved", "unsolved")
             if f"rl/transfer/{split}/num_problems" in runs]
    assert sum(sizes) == 12  # data.num_eval of SMALL_PIPELINE
    # Below evaluation.transfer_min_split (20), the summary says so rather than a number.
    for column in ("distinct_solved", "distinct_unsolved"):
        assert summary[column] != summary[column], column
        assert summary[f"{column}_inconclusive"].startswith("inconclusive (n="), column


def test_a_cached_re_run_says_where_its_stages_came_from(two_runs, live_stack):
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    first, second = (client.get_run(_run_id(run[1])) for run in two_runs)
    assert first.data.tags["breadth.cached_stages"] == "none"
    cached = second.data.tags["breadth.cached_stages"].split(",")
    assert {"prepare", "sft", "rl", "evaluate"} <= set(cached)
    assert second.data.tags["breadth.cached_from"] == first.info.run_id
    assert first.info.run_id in second.data.tags["mlflow.note.content"]
    # Its stages' files stay under the first run's prefix, and the CLI says where.
    assert f"runs/{first.info.run_id}/rollouts/rl.parquet" in two_runs[1][1]
    assert f"runs/{first.info.run_id}/report" in two_runs[1][1]
    # The headline metrics are copied onto the cached run's parent: it is never empty.
    assert second.data.metrics["rl/eval/pass_at_1"] == first.data.metrics["rl/eval/pass_at_1"]
    # A few headline metrics on the parent, bounds under ci/; the rest on the evaluate runs.
    names = set(first.data.metrics)
    assert "rl/eval/pass_at_2" not in names and "rl/eval/distinct_1" not in names
    assert "rl/eval_ci/low/pass_at_1" in names and not [n for n in names if "_ci_" in n]
    assert len(names) < 60, sorted(names)


def test_models_load_back_with_mlflow_transformers(two_runs, live_stack):
    import mlflow
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    parent = client.get_run(_run_id(two_runs[0][1]))
    rl_run = client.get_run(parent.data.tags["stage_run.rl"])
    mlflow.set_tracking_uri(live_stack["MLFLOW_TRACKING_URI"])
    components = mlflow.transformers.load_model(rl_run.data.tags["model.mlflow_uri"],
                                                return_type="components")
    tokenizer = components["tokenizer"]
    assert tokenizer.decode(tokenizer("12+7=")["input_ids"]) == "12+7="
    assert components["model"].num_parameters() > 0
    # The model is the rl run's output, with the run as its source and the run's params.
    model_id = rl_run.data.tags["model.mlflow_uri"].removeprefix("models:/")
    assert [output.model_id for output in rl_run.outputs.model_outputs] == [model_id]
    logged = client.get_logged_model(model_id)
    assert (logged.source_run_id, str(logged.status)) == (rl_run.info.run_id, "READY")
    assert logged.params["rl.learning_rate"] == rl_run.data.params["rl.learning_rate"]


def test_s3_holds_dataset_checkpoints_and_rollouts(two_runs, live_stack):
    from mlflow import MlflowClient

    from breadth.tracking.objects import ObjectStore

    run_id = _run_id(two_runs[0][1])
    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    tags = client.get_run(run_id).data.tags
    dataset_hash = tags["dataset.hash"]
    store = ObjectStore.from_env(live_stack)
    keys = set(store.list())
    for name in ("train.parquet", "eval.parquet", "manifest.json"):
        assert f"datasets/{dataset_hash}/{name}" in keys
    assert f"runs/{run_id}/rollouts/sft.parquet" in keys
    assert f"runs/{run_id}/rollouts/rl.parquet" in keys
    # Checkpoints live under the training's content key (one prefix, shared by resumed runs).
    checkpoints = client.get_run(tags["stage_run.rl"]).data.tags["checkpoint.s3_prefix"]
    prefix = checkpoints.removeprefix(f"s3://{store.bucket}/")
    assert prefix.startswith("checkpoints/rl-")
    for step in (2, 4):
        assert f"{prefix}/checkpoint-{step}/trainer_state.json" in keys
        assert f"{prefix}/checkpoint-{step}/breadth_checkpoint_complete" in keys
    # Resumable: optimizer and RNG state travel with the weights.
    assert f"{prefix}/checkpoint-4/optimizer.pt" in keys
    assert any(key.startswith(f"{prefix}/checkpoint-4/rng_state") for key in keys)


def test_second_run_is_served_from_cache(two_runs, live_stack):
    from mlflow import MlflowClient

    (_, first_out, first_s), (_, second_out, second_s) = two_runs
    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    first = client.get_run(_run_id(first_out)).data.tags
    second = client.get_run(_run_id(second_out)).data.tags
    # Every stage of the second run points at the child run that the first run created.
    for stage in ("prepare", "sft", "rl", "rollout-sft", "rollout-rl", "evaluate"):
        assert second[f"stage_run.{stage}"] == first[f"stage_run.{stage}"], stage
    assert "Cached" in second_out
    # Compare the pipeline's own time as the CLI reports it: the process wall time also holds
    # ~4 s of interpreter and import start-up that no cache can remove, and on this small test
    # config that constant would dominate.
    first_pipeline, second_pipeline = (_pipeline_seconds(out) for out in (first_out, second_out))
    print(f"pipeline {first_pipeline:.1f}s then {second_pipeline:.1f}s "
          f"(process wall time {first_s:.1f}s then {second_s:.1f}s)")
    assert second_pipeline <= first_pipeline / 4


def _pipeline_seconds(output: str) -> float:
    match = re.search(r"pipeline finished in ([0-9.]+)s", output)
    assert match, f"no 'pipeline finished in' line in:\n{output[-2000:]}"
    return float(match.group(1))


def test_a_cached_re_run_imports_neither_mlflow_nor_torch(runs_and_imports):
    """A cached re-run talks REST to MLflow (importing mlflow was ~1.3 s of a ~4 s cached run),
    trains nothing and reads its cached results without pandas (~0.35 s): none of these
    packages may creep back onto its path."""
    _, (code, output, _), loaded = runs_and_imports
    assert code == 0, output[-4000:]
    assert "Cached" in output and "pipeline finished" in output
    assert not loaded, f"a cached re-run imported {loaded}"


def test_runs_lists_the_pipeline_runs_over_rest(two_runs, live_stack):
    """`breadth runs` reads the real server over REST: both runs, newest first, with the final
    model's headline figures and links, and without importing mlflow or pandas (`import
    mlflow`, 1.3-1.7 s, was most of its time)."""
    code, listed, stderr, loaded = run_cli_reporting_imports(
        ["runs", "--json", "--experiment", "skeleton-test"], live_stack)
    assert code == 0, (listed + stderr)[-4000:]
    assert not loaded, f"`breadth runs` imported {loaded}"
    rows = json.loads(listed)
    first, second = (_run_id(run[1]) for run in two_runs)
    ids = [row["run_id"] for row in rows]
    assert ids.index(second) < ids.index(first)  # newest first
    row = rows[ids.index(first)]
    assert (row["experiment"], row["status"], row["model"]) == ("skeleton-test", "FINISHED", "rl")
    assert 0.0 <= row["headline"]["pass@1"] <= 1.0 and row["duration_s"] > 0
    assert row["mlflow_url"].endswith(f"/runs/{first}?workflowType=machine_learning")
    assert "flow-run" in row["prefect_url"]


# What a researcher sees of the two runs in the UIs, read off this module's runs: a first run
# and a cached re-run of their own (these tests had a module of their own) cost 48 CPU s of
# `breadth run` more.


@pytest.fixture(scope="module")
def parent_runs(two_runs, live_stack):
    """An MLflow client and the parent runs of the first run and of its cached re-run."""
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    return client, [client.get_run(_run_id(run[1])) for run in two_runs]


def test_the_experiment_opens_on_its_runs(parent_runs, two_runs):
    """MLflow 3.17 opens an experiment by the browser's GenAI / Model training switch, unless
    the link names the mode; older MLflow 3 releases read the experiment's kind."""
    client, (first, _) = parent_runs
    experiment = client.get_experiment(first.info.experiment_id)
    assert experiment.tags.get("mlflow.experimentKind") == "custom_model_development"
    output = two_runs[1][1]
    assert re.search(r"MLflow run:\s*\S+/runs/[0-9a-f]{32}\?workflowType=machine_learning",
                     output.replace("\n", "")), output[-2000:]


def test_a_run_and_its_cached_rerun_are_told_apart_by_name_and_tags(parent_runs):
    _, (first, second) = parent_runs
    # Seed 11 and the small pipeline's keys differ from the preset: named, not just hashed.
    assert first.info.run_name.startswith("default·seed=11·")
    assert first.info.run_name.split("·")[-1] == first.data.tags["config.hash"][:8]
    assert second.info.run_name == first.info.run_name + "·cached"
    assert first.data.tags["breadth.cached"] == "none"
    assert second.data.tags["breadth.cached"] == "all"
    assert first.data.tags["data.source"] == "synthetic:arithmetic"


def test_the_parent_run_logs_its_train_and_eval_sets_as_dataset_inputs(parent_runs):
    _, runs = parent_runs
    for run in runs:  # the cached re-run too
        inputs = {next(t.value for t in i.tags if t.key == "mlflow.data.context"): i.dataset
                  for i in run.inputs.dataset_inputs}
        assert set(inputs) == {"train", "eval"}
        # data.num_train and data.num_eval of SMALL_PIPELINE
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
    parent_runs, two_runs, live_stack,
):
    _, runs = parent_runs
    for run, cached in zip(runs, (False, True), strict=True):
        flow_run, messages = _flow_run_and_logs(run.data.tags["prefect.flow_run_id"],
                                                live_stack["PREFECT_API_URL"])
        assert flow_run.name == run.info.run_name
        assert {"preset:default", "format:free_form", "reward:correctness", "seed:11",
                "data:arithmetic"} <= set(flow_run.tags)
        assert ("cached" in flow_run.tags) == cached
        text = "\n".join(messages)
        assert f"breadth run {run.info.run_name.removesuffix('·cached')} (preset default" in text
        assert "differs from preset default: seed=11" in text
        assert ("prepare: cache hit" if cached else "prepare: cache miss, computed here") in text
        assert re.search(r"sft: cache (hit|miss).*sft/train_loss \d", text), text
        assert re.search(r"rl: cache (hit|miss).*train/reward [-0-9.]", text), text
        assert re.search(r"result: rl pass@1 [0-9.]+", text), text
    # `breadth run` prints them too (Prefect's console handler).
    output = two_runs[1][1]
    assert "prepare: cache hit" in output and "differs from preset default" in output
