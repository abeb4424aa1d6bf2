"""A grid whose cells are deployment runs, taken by two workers of the pool: both workers take
cells, two cells of one (format, seed) train SFT once, and a cell that fails is named in the
grid summary while the others finish."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.grid_cell_flows import FAILING_OBJECTIVE
from tests.integration.helpers import (
    create_process_pool,
    register_deployment,
    run_cli,
    set_args,
    start_workers,
    stop_workers,
)

pytestmark = pytest.mark.integration

DEPLOYMENT = "breadth-pipeline-one-objective-fails/grid-test"
EXPERIMENT = "grid-on-workers-test"
GRID_ID = "grid-on-workers"
# Two tiny cells (and one that fails at once) sharing one (format, seed): one SFT between them.
TINY_CELL = [
    "data.num_train=48", "data.num_eval=8", "sft.epochs=1", "rl.max_steps=2", "rl.save_steps=2",
    "rl.num_generations=4", "rl.prompts_per_step=2", "rollout.num_samples=4",
    "evaluation.bootstrap_samples=20", "evaluation.search_budget=0",
    "tracking.log_models=false", f"tracking.experiment={EXPERIMENT}",
]
GRID = ["grid", "--preset", "default", "--format", "free_form", "--seed", "5",
        "--reward", "correctness", "--reward", "correctness+batch", "--reward", FAILING_OBJECTIVE,
        "--cell-runner", "deployment", "--cell-deployment", DEPLOYMENT, "--grid-id", GRID_ID,
        *set_args(TINY_CELL)]


@pytest.fixture(scope="module")
def grid_on_two_workers(live_stack, tmp_path_factory):
    logs = tmp_path_factory.mktemp("grid-workers")
    env = {**live_stack, "BREADTH_WORK_DIR": str(logs / "work"), "CUDA_VISIBLE_DEVICES": ""}
    create_process_pool(live_stack["PREFECT_API_URL"], "breadth-cpu")
    # As `prefect deploy ...grid_cell_flows.py:pipeline_one_objective_fails` would, without the
    # CLI's process (`breadth deploy` is tested in test_deployments_on_stack.py).
    register_deployment(live_stack["PREFECT_API_URL"],
                        "tests/integration/grid_cell_flows.py:pipeline_one_objective_fails",
                        DEPLOYMENT.split("/")[1], "breadth-cpu")
    workers = start_workers(2, env, logs)
    try:
        code, output, _ = run_cli(GRID, env, timeout=600)
    finally:
        stop_workers(workers)
    worker_logs = [(logs / f"worker-{i}.log").read_text() for i in range(2)]
    return code, output, worker_logs


def test_the_failing_cell_is_named_and_the_others_finish(grid_on_two_workers, live_stack):
    from mlflow import MlflowClient

    code, output, worker_logs = grid_on_two_workers
    failing = f"free_form/{FAILING_OBJECTIVE}/seed5"
    assert code != 0, output[-3000:]  # a grid with a failed cell is not a green grid
    assert f"1 of 3 cells of grid {GRID_ID} failed: {failing} (FAILED)" in output, (
        output[-4000:] + "".join(log[-2000:] for log in worker_logs))
    assert "cell 3/3" in output and "ETA" in output

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    cells = [r for r in client.search_runs([experiment], f"tags.`grid.id` = '{GRID_ID}'")
             if "grid.cell" in r.data.tags]
    finished = sorted(r.data.tags["grid.cell"] for r in cells if r.info.status == "FINISHED")
    # Once each: a cell finished twice when the dead-worker automation marked its run Crashed
    # while alive and the grid submitted it again (its workers lacked heartbeats).
    assert finished == ["free_form/correctness+batch/seed5", "free_form/correctness/seed5"], (
        output[-4000:])
    [summary] = client.search_runs([experiment], f"tags.`grid.id` = '{GRID_ID}' and "
                                                 "tags.`breadth.kind` = 'grid-summary'")
    assert summary.data.tags["grid.failed_cells"] == failing
    markdown = Path(client.download_artifacts(summary.info.run_id, "grid/summary.md")).read_text()
    assert "## Failed cells (1 of 3)" in markdown
    assert f"| {failing} | FAILED |" in markdown and "fails on purpose" in markdown


def test_two_cells_of_one_format_and_seed_train_sft_once(grid_on_two_workers, live_stack):
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    sft_runs = client.search_runs([experiment], "attributes.run_name = 'sft'")
    trained = [r for r in sft_runs if "breadth.reused_output" not in r.data.tags]
    # The other cell got the SFT stage from the cache (no child run) or waited on its lock and
    # reused the finished model (a child run tagged breadth.reused_output).
    assert len(trained) == 1, [r.data.tags for r in sft_runs]


def test_both_workers_took_cells(grid_on_two_workers, live_stack):
    import httpx

    _, output, worker_logs = grid_on_two_workers
    # 120 s, not 30: in CI's suite the other xdist worker's night of faults loads the 2 cores,
    # and this server once took over 30 s to answer one filter (a ReadTimeout, not a finding).
    runs = httpx.post(live_stack["PREFECT_API_URL"] + "/flow_runs/filter", timeout=120, json={
        "flow_runs": {"tags": {"all_": ["grid-cell"]}, "name": {"like_": GRID_ID}},
    }).json()
    # One run per cell; a second one would be the grid's resubmission of a Crashed run.
    states = [(r["name"], r["state"]["name"], r["state"]["message"]) for r in runs]
    assert len(runs) == 3, (states, output[-3000:])
    # A worker logs "submitting" before it claims the run; the loser of a race logs "Aborted".
    taken = [{r["id"] for r in runs if f"submitting flow run '{r['id']}'" in log
              and f"Aborted submission of flow run '{r['id']}'" not in log}
             for log in worker_logs]
    # Any worker of the pool takes any cell: here each took at least one.
    assert all(taken), taken
    assert taken[0] | taken[1] == {r["id"] for r in runs}
