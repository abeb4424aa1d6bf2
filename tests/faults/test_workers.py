"""Two identical runs at once, and a fresh worker with an empty work dir on a cache hit.

The twins' finished stages are what the fresh worker's cache hit reads (the `twins` fixture,
once per module): one pipeline run fewer than a first run of its own, whichever test runs
first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.faults.helpers import (
    environment,
    experiment_runs,
    finish,
    metric_steps,
    overrides,
    parent_run_id,
    run,
    start,
)

pytestmark = [pytest.mark.faults, pytest.mark.integration]
TWINS_SEED = 322


@pytest.fixture(scope="module")
def twins(live_stack, tmp_path_factory) -> tuple[Path, list[tuple[int, str]]]:
    """Two identical pipeline runs started at once on one work dir, both waited for: their
    work dir and each one's (exit code, output)."""
    folder = tmp_path_factory.mktemp("twins")
    values = overrides("twins", seed=TWINS_SEED)
    env = environment(live_stack, folder / "work")
    processes = [start(values, env, folder / f"twin-{i}.log") for i in range(2)]
    results = [finish(process, folder / f"twin-{i}.log") for i, process in enumerate(processes)]
    for code, output in results:
        assert code == 0, output[-4000:]
    return folder / "work", results


def test_two_identical_runs_at_once_both_finish_with_one_training(live_stack, twins):
    runs = experiment_runs(live_stack, "twins")
    assert all(r.info.status == "FINISHED" for r in runs)
    assert len([r for r in runs if "mlflow.parentRunId" not in r.data.tags]) == 2
    trained = [r for r in runs if r.info.run_name == "rl" and "breadth.reused_output" not in r.data.tags]
    assert len(trained) == 1
    assert metric_steps(live_stack, trained[0].info.run_id, "train/reward")


def test_a_fresh_worker_on_a_cache_hit_downloads_only_the_stages_own_objects(
    live_stack, twins, tmp_path
):
    from mlflow import MlflowClient

    from breadth.tracking.objects import ObjectStore

    work, results = twins
    shutil.rmtree(work)  # the worker that ran the stages is gone
    # The twins' config and seed (so every stage is a cache hit) in an experiment of its own
    # (the experiment is in no stage's cache key), which leaves the twins' runs as they were.
    values = overrides("fresh-worker", seed=TWINS_SEED)
    fresh = tmp_path / "fresh"
    code, output = run(values, environment(live_stack, fresh), tmp_path / "fresh.log")
    assert code == 0, output[-4000:]

    # Every stage came from the cache; only the report (publish_report reads it) is fetched,
    # from under the twin whose evaluation the cache holds.
    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    parent = client.get_run(parent_run_id(output)).data.tags
    assert parent["breadth.cached"] == "all", parent["breadth.cached"]
    evaluated_by = client.get_run(parent["stage_run.evaluate"]).data.tags["mlflow.parentRunId"]
    assert evaluated_by in {parent_run_id(twin_output) for _, twin_output in results}
    store = ObjectStore.from_env(live_stack)
    prefix = f"runs/{evaluated_by}/report/"
    expected = sorted(key.removeprefix(prefix) for key in store.list(prefix))
    downloaded = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    assert expected and len({path.split("/")[0] for path in downloaded}) == 1
    assert [path.split("/", 2)[2] for path in downloaded] == expected
    assert all(path.split("/")[1] == "report" for path in downloaded)
