"""A night of faults on a pool: a grid of 4 tiny cells on a worker meets, while one cell runs
and another waits in the queue, a Prefect server restart; then a second worker joins, and under
the cells running on the two an MLflow server restart and a worker killed outright mid-cell
(SIGKILL to the worker and the flow-run process it started, as a lost host), after which a
replacement host with an empty work dir joins.

At the end every cell finished or is named in the grid's summary as failed with its reason,
no MLflow run and no Prefect flow run is left RUNNING, the claims were computed from the
finished cells, and no finished cell lost a metric. The test's wall time and the time from the
worker's death to its flow run being marked Crashed are printed (run with -s to see them)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.faults.helpers import (
    descendants,
    kill_tree,
    start_service,
    stop_service,
    wait_until,
)
from tests.integration.helpers import (
    BREADTH,
    REPO,
    create_process_pool,
    register_deployment,
    set_args,
    start_workers,
    stop_workers,
)

pytestmark = [pytest.mark.faults, pytest.mark.integration]

POOL = "night-of-faults"
DEPLOYMENT = "breadth-pipeline/night-of-faults"
EXPERIMENT = "night-of-faults-test"
GRID_ID = "night-of-faults"
OBJECTIVES = ("correctness", "correctness+batch")
# Two seeds of two objectives: the grid submits each seed's first cell at once (its second
# waits on that cell's SFT). One worker runs alone until the Prefect restart, so the other
# first cell is still Scheduled in Prefect when the server restarts (the test waits for that);
# the second worker starts after it. When a worker is killed, a seed's second cell is still to
# start or the dead cell's second run follows (or both), for the replacement host beside the
# survivor. More seeds only lengthen the workers' finishing of the grid after the faults, and
# each cell is a flow-run process that imports the training stack: three seeds with two
# workers from the start ran 7 flow runs (215 CPU s of 483 in all), two seeds 5 (152-164).
SEEDS = (1, 2)
CELLS = [f"free_form/{objective}/seed{seed}" for objective in OBJECTIVES for seed in SEEDS]
MAX_STEPS = 2
# The cells of tests/integration/test_grid_on_workers.py. SFT stays on: the claims compare the
# SFT start with the RL policy (without it they are refused); a seed's second cell waits on its
# first cell's SFT.
TINY_CELL = [
    "data.num_train=48", "data.num_eval=8", "sft.epochs=1", f"rl.max_steps={MAX_STEPS}",
    "rl.save_steps=2", "rl.num_generations=4", "rl.prompts_per_step=2", "rollout.num_samples=4",
    "evaluation.bootstrap_samples=20", "evaluation.search_budget=0",
    "tracking.log_models=false", f"tracking.experiment={EXPERIMENT}",
]
GRID = ["grid", "--preset", "default", "--format", "free_form",
        *(a for o in OBJECTIVES for a in ("--reward", o)),
        *(a for s in SEEDS for a in ("--seed", str(s))),
        "--cell-runner", "deployment", "--cell-deployment", DEPLOYMENT, "--grid-id", GRID_ID,
        *set_args(TINY_CELL)]
GRID_TIMEOUT_S = 1500
# The workers ask the pool for runs every 5 s, not start_workers' 2: a poll costs the Prefect
# server CPU (one worker every 2 s about 1.7 CPU s a minute, every 5 s 0.75), and a cell waiting
# a few seconds more to be taken changes nothing the night checks or times.
WORKER_QUERY_S = 5.0
# How long the cell whose worker is killed has been Running (below, step 3).
CELL_AGE_AT_KILL_S = 6
# The evaluation of proactive triggers and the state change on top of the bound itself, as in
# test_dead_worker.py.
SLACK_S = 60.0
OPEN_STATES = ("RUNNING", "PENDING", "CANCELLING")


class Night:
    """The grid's process, its workers and what happened when (for the messages)."""

    def __init__(self, api: str, grid: subprocess.Popen, grid_log: Path,
                 workers: list[subprocess.Popen], start_host: Callable[[int], Path]):
        self.api, self.grid, self.grid_log, self.workers = api, grid, grid_log, workers
        # Starts host i (a worker with a work dir of its own, added to `workers`) and gives
        # its work dir.
        self.start_host = start_host
        self.started = time.monotonic()
        self.timeline: list[str] = []

    def note(self, what: str) -> None:
        self.timeline.append(f"{time.monotonic() - self.started:5.0f}s  {what}")

    def story(self) -> str:
        return "\n".join(self.timeline) + "\n--- grid log:\n" + self.grid_log.read_text()[-4000:]

    def cell_runs(self) -> list[dict[str, Any]]:
        """The grid's cell flow runs; [] while the server does not answer (it restarts)."""
        import httpx

        try:
            return httpx.post(self.api + "/flow_runs/filter", timeout=10, json={
                "flow_runs": {"tags": {"all_": ["grid-cell"]}, "name": {"like_": GRID_ID}},
            }).json()
        except (httpx.HTTPError, json.JSONDecodeError):
            return []

    def states(self) -> str:
        counts: dict[str, int] = {}
        for run in self.cell_runs():
            counts[run["state_type"]] = counts.get(run["state_type"], 0) + 1
        return ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no answer"

    def running(self, for_at_least_s: float = 0.0) -> list[dict[str, Any]]:
        now = datetime.now(UTC)
        return [r for r in self.cell_runs() if r["state_type"] == "RUNNING" and r["start_time"]
                and (now - datetime.fromisoformat(r["start_time"])).total_seconds()
                >= for_at_least_s]

    def wait_for(self, condition, what: str, timeout_s: float = 900) -> None:
        def check() -> bool:
            assert self.grid.poll() is None, f"the grid ended before {what}:\n{self.story()}"
            return bool(condition())

        wait_until(check, timeout_s, what)

    def scheduled(self) -> list[dict[str, Any]]:
        return [r for r in self.cell_runs() if r["state_type"] == "SCHEDULED"]

    def restart(self, service: str, and_scheduled: bool = False) -> None:
        """Stop `service` as a crash would and start it again with the stack's own start; with
        `and_scheduled`, once a cell is running and another is queued in Prefect."""
        self.wait_for(lambda: self.running() and (not and_scheduled or self.scheduled()),
                      f"a cell running{' and one scheduled' * and_scheduled} before the "
                      f"{service} restart")
        self.note(f"{service} stopped (cells: {self.states()})")
        began = time.monotonic()
        stop_service(service)
        start_service(service)
        self.note(f"{service} answers again after {time.monotonic() - began:.0f}s")

    def worker_of(self, flow_run_id: str) -> subprocess.Popen | None:
        """The worker whose flow-run process runs `flow_run_id` (its environment names it)."""
        for worker in self.workers:
            for pid in descendants(worker.pid):
                try:
                    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                except OSError:
                    continue
                if f"PREFECT__FLOW_RUN_ID={flow_run_id}".encode() in environ:
                    return worker
        return None


@pytest.fixture
def night(live_stack, tmp_path):
    env = {**live_stack, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    full = {**os.environ, **env}
    create_process_pool(live_stack["PREFECT_API_URL"], POOL)
    # As `prefect deploy flows/pipeline.py:pipeline` would, without the CLI's process.
    register_deployment(live_stack["PREFECT_API_URL"], "flows/pipeline.py:pipeline",
                        DEPLOYMENT.split("/")[1], POOL)
    # Hosts: each worker its own work dir, so the killed one's files are lost with it.
    workers: list[subprocess.Popen] = []

    def start_host(index: int) -> Path:
        (tmp_path / f"host-{index}").mkdir()
        work = tmp_path / f"host-{index}/work"
        # start_workers gives them the heartbeats of `breadth worker` (tasks/dead_runs.py).
        workers.extend(start_workers(1, {**env, "BREADTH_WORK_DIR": str(work)},
                                     tmp_path / f"host-{index}", pool=POOL, first_index=index,
                                     query_s=WORKER_QUERY_S))
        return work

    start_host(0)  # the second host joins after the Prefect restart (the test, step 1)
    grid_log = tmp_path / "grid.log"
    with grid_log.open("w") as log:
        grid = subprocess.Popen([BREADTH, *GRID], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                env={**full, "BREADTH_WORK_DIR": str(tmp_path / "grid-work")})
    try:
        yield Night(live_stack["PREFECT_API_URL"], grid, grid_log, workers, start_host)
    finally:
        if grid.poll() is None:
            grid.kill()
            grid.wait(timeout=30)
        stop_workers(workers)


@pytest.mark.timeout(GRID_TIMEOUT_S + 300)
def test_a_grid_through_a_night_of_faults(night, live_stack):
    from breadth_tasks.dead_runs import HEARTBEAT_S, MISSED_AFTER_S

    # 1. The Prefect server restarts while the first worker runs a cell and another cell waits
    #    in its queue; then a second host joins and takes queued cells.
    night.restart("prefect", and_scheduled=True)
    night.start_host(1)
    night.note("a second host's worker started")
    # 2. Then MLflow, under the cells running then.
    night.restart("mlflow")
    # 3. Then a worker dies mid-cell: one whose cell has run long enough to have sent its
    #    first heartbeat (as it turns Running) and be into its stages. Not much longer: on a
    #    quiet machine a cell runs 13-18 s, and the grid must still have cells to run.
    #    The run and its worker are kept as found (a second query could miss a cell that
    #    finished in between), and the youngest such cell is taken: it has the most left to run.
    found: list[tuple[dict[str, Any], subprocess.Popen]] = []

    def a_cell_on_a_worker() -> bool:
        youngest_first = sorted(night.running(CELL_AGE_AT_KILL_S), key=lambda r: r["start_time"],
                                reverse=True)
        found[:] = [(r, w) for r in youngest_first if (w := night.worker_of(r["id"]))][:1]
        return bool(found)

    night.wait_for(a_cell_on_a_worker, f"a cell running for {CELL_AGE_AT_KILL_S} s on a worker")
    [(victim_run, victim)] = found
    night.note(f"SIGKILL to the worker running {victim_run['name']} (cells: {night.states()})")
    killed_at = time.monotonic()
    kill_tree(victim.pid)
    victim.wait(timeout=30)
    # 4. A replacement host joins, with an empty work dir: it takes queued cells (their stages
    #    from S3 and the cache), as a fresh machine would, beside the surviving worker.
    replacement = night.start_host(2)
    night.note("a replacement host's worker started")

    def victim_now() -> dict[str, Any]:
        return next((r for r in night.cell_runs() if r["id"] == victim_run["id"]), {})

    bound = HEARTBEAT_S + MISSED_AFTER_S + SLACK_S
    night.wait_for(lambda: victim_now().get("state_type") == "CRASHED",
                   "the dead worker's run to be Crashed", timeout_s=bound + 120)
    to_crashed = time.monotonic() - killed_at
    # Who found it: the heartbeat automation, or (the workers share this host) a pipeline
    # run's reconciliation, which sees the dead process is gone.
    night.note(f"its flow run marked Crashed {to_crashed:.0f}s after the kill: "
               f"{(victim_now().get('state') or {}).get('message')}")

    try:
        code = night.grid.wait(timeout=GRID_TIMEOUT_S - (time.monotonic() - night.started))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the grid did not end in {GRID_TIMEOUT_S}s:\n{night.story()}") from None
    wall = time.monotonic() - night.started
    night.note(f"the grid ended (exit {code}); cells: {night.states()}")
    print(f"\nnight of faults: wall time {wall:.0f}s; the dead worker's run was marked Crashed "
          f"{to_crashed:.0f}s after its SIGKILL (heartbeat {HEARTBEAT_S}s, window "
          f"{MISSED_AFTER_S}s)\n" + "\n".join(night.timeline))
    assert to_crashed <= bound, f"Crashed {to_crashed:.0f}s after the kill, over {bound:.0f}s"
    assert replacement.is_dir() and any(replacement.iterdir()), \
        f"the replacement host ran no cell (its work dir is empty)\n{night.story()}"
    _check_the_morning_after(night, live_stack, code)


def _check_the_morning_after(night: Night, live_stack: dict[str, str], code: int) -> None:
    import httpx
    from mlflow import MlflowClient

    output = night.grid_log.read_text()
    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    runs = client.search_runs([experiment], max_results=5000)
    running = [f"{r.info.run_name} ({r.info.run_id})" for r in runs if r.info.status == "RUNNING"]
    assert not running, f"MLflow runs left RUNNING: {running}\n{night.story()}"
    open_flow_runs = [
        f"{r['name']} {r['state_type']}" for r in httpx.post(
            night.api + "/flow_runs/filter", timeout=30,
            json={"flow_runs": {"state": {"type": {"any_": list(OPEN_STATES)}}}}).json()
    ]
    assert not open_flow_runs, f"Prefect flow runs left open: {open_flow_runs}\n{night.story()}"

    # Every cell FINISHED (its newest parent run), or named as failed with its reason.
    parents = sorted((r for r in runs if r.data.tags.get("grid.id") == GRID_ID
                      and "grid.cell" in r.data.tags), key=lambda r: r.info.start_time)
    finished = {r.data.tags["grid.cell"]: r for r in parents if r.info.status == "FINISHED"}
    [summary] = client.search_runs([experiment], f"tags.`grid.id` = '{GRID_ID}' and "
                                                 "tags.`breadth.kind` = 'grid-summary'")
    named = set(filter(None, summary.data.tags.get("grid.failed_cells", "").split(",")))
    markdown = Path(client.download_artifacts(summary.info.run_id, "grid/summary.md")).read_text()
    for cell in CELLS:
        if cell in finished:
            continue
        assert cell in named, f"cell {cell} neither finished nor named as failed\n{night.story()}"
        [row] = [line for line in markdown.splitlines() if line.startswith(f"| {cell} |")]
        assert row.rstrip(" |").split("|")[-1].strip(), f"no reason given for {cell}: {row}"
    assert (code == 0) == (not named), f"exit {code} with failed cells {named}\n{night.story()}"
    # Faults may cost a cell (named above), not the night: with most cells lost, the checks
    # below would pass on almost nothing. (Every cell finished in each run so far.)
    assert len(finished) >= len(CELLS) // 2, f"only {sorted(finished)} finished\n{night.story()}"
    if code == 0:
        assert f"grid {GRID_ID} finished" in output, night.story()

    # The claims were computed from the finished cells, and only from them.
    claims = Path(client.download_artifacts(summary.info.run_id, "claims/claims.md")).read_text()
    seeds = {cell.rsplit("seed", 1)[1] for cell in finished}
    assert f"- seeds: {len(seeds)}\n" in claims, claims[:1500]
    assert f"- cells: {len(finished)} (free_form x " in claims, claims[:1500]

    # No finished cell lost a metric: each has what the cells of its objective logged (a cell
    # that met no fault among them), its evaluation's metrics, and every RL step's.
    keys = {cell: set(run.data.metrics) for cell, run in finished.items()}
    for objective in OBJECTIVES:
        mine = {c: k for c, k in keys.items() if f"/{objective}/" in c}
        every = set().union(*mine.values())
        lost = {c: sorted(every - k) for c, k in mine.items() if every - k}
        assert not lost, f"metrics missing from finished cells: {lost}\n{night.story()}"
    for cell, cell_keys in keys.items():
        # Each model's headline metrics and pass@k curve, as publish-report logs them.
        for model in ("sft", "rl"):
            for metric in ("eval/pass_at_1", "eval/pass_at_k", "eval/distinct_outcomes"):
                assert f"{model}/{metric}" in cell_keys, (cell, model, metric, sorted(cell_keys))
        rl_run = _rl_run(client, finished[cell])
        for metric in ("train/reward", "train/loss"):
            steps = sorted({p.step for p in client.get_metric_history(rl_run, metric)})
            assert steps == list(range(1, MAX_STEPS + 1)), (cell, metric, steps)


def _rl_run(client: Any, parent: Any) -> str:
    """The run that trained the cell's policy: the parent's `stage_run.rl` (a cached stage's
    run belongs to an earlier pipeline run), else its child of stage rl."""
    if parent.data.tags.get("stage_run.rl"):
        return parent.data.tags["stage_run.rl"]
    [child] = client.search_runs([parent.info.experiment_id],
                                 f"tags.`mlflow.parentRunId` = '{parent.info.run_id}' and "
                                 "tags.`breadth.stage` = 'rl'")
    return child.info.run_id
