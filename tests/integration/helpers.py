"""Helpers shared by the integration tests: run the CLI against the live stack, query MLflow."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BREADTH = str(Path(sys.executable).parent / "breadth")

# A pipeline small enough for CI (2 cores) that still exercises every stage for real.
SMALL_PIPELINE = [
    "data.num_train=200", "data.num_eval=12", "sft.epochs=1", "rl.max_steps=4",
    "rl.save_steps=2", "rl.num_generations=4", "rl.prompts_per_step=2",
    "rollout.num_samples=8", "evaluation.bootstrap_samples=50",
]


def run_cli(args: list[str], env: dict[str, str], timeout: float = 900) -> tuple[int, str, float]:
    """Run `breadth ARGS` in a subprocess; returns (exit code, combined output, seconds)."""
    started = time.monotonic()
    done = subprocess.run(
        [BREADTH, *args], env={**os.environ, **env}, cwd=REPO, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


# Runs `breadth ARGS` in-process and prints, on exit, which heavy packages it loaded.
_LOADED_AT_EXIT = """
import atexit, sys
from breadth.cli import app
HEAVY = ("mlflow", "torch", "transformers", "trl", "pandas")
atexit.register(lambda: print("LOADED:" + ",".join(m for m in HEAVY if m in sys.modules)))
sys.argv = ["breadth", *sys.argv[1:]]
app()
"""


def run_cli_reporting_imports(
    args: list[str], env: dict[str, str], timeout: float = 300
) -> tuple[int, str, str, set[str]]:
    """Run `breadth ARGS` in a subprocess; returns (exit code, stdout without the report,
    stderr, the heavy packages it imported: mlflow, torch, transformers, trl, pandas)."""
    done = subprocess.run([sys.executable, "-c", _LOADED_AT_EXIT, *args], cwd=REPO,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=timeout, check=False)
    stdout, marker, loaded = done.stdout.rpartition("LOADED:")
    assert marker, f"the import report is missing: {(done.stdout + done.stderr)[-2000:]}"
    return done.returncode, stdout, done.stderr, set(filter(None, loaded.strip().split(",")))


def set_args(values: list[str]) -> list[str]:
    return [arg for value in values for arg in ("--set", value)]


def installed_vllm_env() -> Path:
    """The vLLM environment ($BREADTH_VLLM_ENV or <repo>/.breadth/envs/vllm), installed by
    scripts/tools/install_vllm_env.sh when missing or stale (a no-op when current)."""
    env_dir = Path(os.environ.get("BREADTH_VLLM_ENV") or REPO / ".breadth" / "envs" / "vllm")
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    # Two test modules need it, and pytest-xdist may run them at once on two workers: one
    # installs while the other waits, then finds it current.
    with open(env_dir.parent / f".{env_dir.name}.install-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            ["bash", str(REPO / "scripts" / "tools" / "install_vllm_env.sh")],
            env={**os.environ, "BREADTH_VLLM_ENV": str(env_dir)}, capture_output=True,
            text=True, check=False, timeout=3600,
        )
    output = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, f"scripts/tools/install_vllm_env.sh failed:\n{output}"
    return env_dir


PREFECT = str(Path(sys.executable).parent / "prefect")


def create_process_pool(api_url: str, name: str) -> None:
    """What `prefect work-pool create NAME --type process --overwrite` does, on this process's
    Prefect client: the CLI in a process of its own imports Prefect's whole CLI first (8 CPU s
    on 2 busy cores, measured in the night-of-faults test)."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    pool = WorkPoolCreate(name=name, type="process",
                          base_job_template=ProcessWorker.get_default_base_job_template())
    with SyncPrefectClient(api_url) as client:
        client.create_work_pool(pool, overwrite=True)


def register_deployment(api_url: str, entrypoint: str, name: str, pool: str) -> None:
    """What `prefect --no-prompt deploy ENTRYPOINT --name NAME --pool POOL` registers when run
    in the repository (a name prefect.yaml does not define): the flow's parameter schema,
    description and version, and a pull step that sets the working directory to the
    repository, so a worker runs the flow as it would the CLI's. The CLI's own process costs
    6-7 CPU s of imports; this, in the test's process, about 1.3 (the flow's module included).
    Read back from a Prefect 3.8 server, both deployments matched in every field but id and
    name."""
    from prefect.deployments.runner import RunnerDeployment
    from prefect.runner.storage import LocalStorage
    from prefect.settings import PREFECT_API_URL, temporary_settings

    # This process's Prefect settings may predate the stack's environment: name the server.
    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        RunnerDeployment.from_storage(storage=LocalStorage(str(REPO)), entrypoint=entrypoint,
                                      name=name, work_pool_name=pool).apply()


def start_workers(count: int, env: dict[str, str], log_dir: Path, pin_cores: bool = False,
                  pool: str = "breadth-cpu", first_index: int = 0,
                  query_s: float = 2.0) -> list[subprocess.Popen]:
    """`count` process workers on `pool`, each running one flow run at a time (`--limit 1`,
    one cell per accelerator) with one torch thread; with `pin_cores`, worker i and the runs
    it starts are held to core i (`taskset`). Workers are numbered from `first_index` (their
    names and logs), so that workers started by separate calls stay distinct. Each asks the
    pool for runs every `query_s` seconds (Prefect's default is 10): a run waits less for a
    worker to take it, and each poll costs the Prefect server CPU (one worker polling every
    2 s about 1.7 CPU s a minute, every 5 s about 0.75; loaded 2-core machine)."""
    # As `breadth worker` runs them: heartbeats every 30 s, as the dead-worker automation (which
    # a grid creates) expects. Without, Prefect's 180 s default let it mark a cell Crashed 90 s
    # after its first heartbeat, alive, and the grid ran the cell twice.
    from breadth_tasks.dead_runs import heartbeat_env

    workers = []
    for index in range(first_index, first_index + count):
        command = [PREFECT, "worker", "start", "--pool", pool, "--limit", "1",
                   "--name", f"grid-worker-{index}"]
        if pin_cores:
            command = ["taskset", "-c", str(index % (os.cpu_count() or 1)), *command]
        log = (log_dir / f"worker-{index}.log").open("w")
        workers.append(subprocess.Popen(
            command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**heartbeat_env(), **os.environ, **env, "OMP_NUM_THREADS": "1",
                 "PREFECT_WORKER_QUERY_SECONDS": f"{query_s:g}"},
        ))
    return workers


def stop_workers(workers: list[subprocess.Popen], grace_s: float = 10.0) -> None:
    """Stop each worker (its process group), killing what has not exited `grace_s` after the
    SIGTERM (one deadline for all). Call it once the grid has waited for its cells: a flow run
    the worker started may live in a session of its own. A Prefect worker that has run cells
    may not exit on SIGTERM (its log ends at "Sending SIGINT to the process worker"); its
    cells are over, so nothing is lost by killing it after the grace."""
    for worker in workers:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for worker in workers:
        try:
            worker.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
