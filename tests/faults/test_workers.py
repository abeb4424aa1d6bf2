"""A fresh worker with an empty work dir on a cache hit, and two identical runs at once."""

from __future__ import annotations

import shutil

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


def test_a_fresh_worker_on_a_cache_hit_downloads_only_the_stages_own_objects(live_stack, tmp_path):
    from breadth.tracking.objects import ObjectStore

    values = overrides("fresh-worker", seed=321)
    code, output = run(values, environment(live_stack, tmp_path / "first"), tmp_path / "first.log")
    assert code == 0, output[-4000:]
    shutil.rmtree(tmp_path / "first")  # the worker that ran the stages is gone
    fresh = tmp_path / "fresh"
    code, output = run(values, environment(live_stack, fresh), tmp_path / "second.log")
    assert code == 0, output[-4000:]

    # Every stage came from the cache; only the report (publish_report reads it) is fetched.
    store = ObjectStore.from_env(live_stack)
    prefix = f"runs/{parent_run_id((tmp_path / 'first.log').read_text())}/report/"
    expected = sorted(key.removeprefix(prefix) for key in store.list(prefix))
    downloaded = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    assert expected and len({path.split("/")[0] for path in downloaded}) == 1
    assert [path.split("/", 2)[2] for path in downloaded] == expected
    assert all(path.split("/")[1] == "report" for path in downloaded)


def test_two_identical_runs_at_once_both_finish_with_one_training(live_stack, tmp_path):
    values = overrides("twins", seed=322)
    env = environment(live_stack, tmp_path / "work")
    processes = [start(values, env, tmp_path / f"twin-{i}.log") for i in range(2)]
    results = [finish(process, tmp_path / f"twin-{i}.log") for i, process in enumerate(processes)]
    for code, output in results:
        assert code == 0, output[-4000:]
    runs = experiment_runs(live_stack, "twins")
    assert all(r.info.status == "FINISHED" for r in runs)
    assert len([r for r in runs if "mlflow.parentRunId" not in r.data.tags]) == 2
    trained = [r for r in runs if r.info.run_name == "rl" and "breadth.reused_output" not in r.data.tags]
    assert len(trained) == 1
    assert metric_steps(live_stack, trained[0].info.run_id, "train/reward")
