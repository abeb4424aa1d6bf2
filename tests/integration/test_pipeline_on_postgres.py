"""The production variant of the stack: the Prefect server and MLflow on PostgreSQL (as in
infra/compose.yaml), here without Docker: a throwaway Postgres cluster, the local stack
started with `PREFECT_API_DATABASE_CONNECTION_URL` and `MLFLOW_BACKEND_STORE_URI` pointing at
it, and one small pipeline run through the CLI. The checks read Postgres itself, so they fail
if either server quietly fell back to SQLite.

Skipped, with the reason, where PostgreSQL's server programs are not installed (`apt-get
install -y postgresql`) or MLflow's Postgres driver (psycopg2) is missing.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port, running_local_stack
from tests.integration.helpers import run_cli, set_args
from tests.integration.postgres import PostgresCluster, why_postgres_cannot_run

pytestmark = pytest.mark.integration

# Every stage, as small as it goes: the point is where the state lands, not the numbers.
TINY_PIPELINE = [
    "data.num_train=100", "data.num_eval=8", "sft.epochs=1", "rl.max_steps=2",
    "rl.save_steps=2", "rl.num_generations=4", "rl.prompts_per_step=2",
    "rollout.num_samples=4", "evaluation.bootstrap_samples=20", "evaluation.search_budget=0",
    "tracking.experiment=postgres-test", "seed=23",
]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresCluster]:
    reason = why_postgres_cannot_run()
    if reason:
        pytest.skip(reason)
    try:
        import psycopg2  # noqa: F401 - MLflow's SQLAlchemy store connects through it
    except ImportError:
        pytest.skip("MLflow's Postgres store needs the psycopg2 driver: pip install "
                    "psycopg2-binary")
    # Not under pytest's temporary folder: as root, Postgres runs as another user, who must
    # be able to reach its data folder.
    root = Path(tempfile.mkdtemp(prefix="breadth-postgres-"))
    cluster = PostgresCluster(root, free_port())
    try:
        cluster.start()
        for database in ("prefect", "mlflow"):
            cluster.create_database(database)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres_stack(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[tuple[dict[str, str], Path]]:
    home = tmp_path_factory.mktemp("postgres-stack-home")
    server_env = {
        "PREFECT_API_DATABASE_CONNECTION_URL": postgres.url("prefect", "postgresql+asyncpg"),
        "MLFLOW_BACKEND_STORE_URI": postgres.url("mlflow"),
    }
    with running_local_stack(home, server_env) as env:
        yield env, home


def test_the_pipeline_runs_on_postgres_backed_prefect_and_mlflow(postgres, postgres_stack):
    env, home = postgres_stack
    code, output, seconds = run_cli(["run", *set_args(TINY_PIPELINE)], env, timeout=600)
    assert code == 0, output[-4000:]
    print(f"pipeline on Postgres-backed Prefect and MLflow: {seconds:.0f}s")

    assert not (home / "mlflow.db").exists() and not (home / "prefect" / "prefect.db").exists(), (
        "a server wrote SQLite instead of Postgres"
    )
    experiments = {name for (name,) in postgres.query("mlflow", "SELECT name FROM experiments")}
    assert "postgres-test" in experiments
    runs = postgres.query(
        "mlflow",
        "SELECT r.name, r.status FROM runs r JOIN experiments e "
        "ON r.experiment_id = e.experiment_id WHERE e.name = 'postgres-test'",
    )
    stages = {name for name, _ in runs}
    assert {"prepare", "sft", "rl", "rollout-sft", "rollout-rl"} <= stages, stages
    assert {status for _, status in runs} == {"FINISHED"}, runs
    flow_runs = postgres.query("prefect", "SELECT state_type FROM flow_run")
    assert flow_runs and {state for (state,) in flow_runs} == {"COMPLETED"}, flow_runs
    task_states = {state for (state,) in postgres.query("prefect", "SELECT state_type FROM task_run")}
    assert task_states == {"COMPLETED"}, task_states
