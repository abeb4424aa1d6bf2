"""A grid on a work pool: the same 4-cell grid with 1 worker, then with 2, each worker (and the
cells it runs) held to one core by `taskset` with one torch thread. Cells are runs of the
`adhoc` deployment (`breadth grid --cell-runner deployment`); the ratio 2 workers / 1 worker
should approach 0.5.

    .venv/bin/python benchmarks/bench_grid_workers.py [--pairs 3] [--set key=value ...]

It starts its own stack (S3, MLflow, Prefect) on free ports under a temporary home, registers
the deployments (`breadth deploy`), and stops it all at the end. Each grid gets seeds of its
own, so no cell is served from another grid's cache. The grid is 1 format x 2 objectives x 2
seeds: the two cells of a seed share an SFT start, and since seeds vary fastest in the order
cells are submitted, 2 workers start with one SFT each. Timed per grid: the cells (from the
grid's start to the last "cell 4/4" line it prints) and the whole command (with its start-up,
summary and claims, which one worker or two run alike). Arms alternate 1, 2, 1, 2 ... (no
warm-up round: every grid starts cold); the report gives min/median/max and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path

from side_by_side import compare

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.helpers import run_cli, set_args, start_workers, stop_workers

# Tiny cells: a few minutes for the whole benchmark on 2 cores.
TINY_CELL = [
    "data.num_train=64", "data.num_eval=8", "sft.epochs=1", "rl.max_steps=4", "rl.save_steps=4",
    "rl.num_generations=4", "rl.prompts_per_step=2", "rollout.num_samples=4",
    "evaluation.bootstrap_samples=20", "evaluation.search_budget=0",
    "tracking.log_models=false", "tracking.experiment=bench-grid-workers",
]
PORTS = ("BREADTH_S3_PORT", "BREADTH_MLFLOW_PORT", "BREADTH_PREFECT_PORT",
         "BREADTH_WEED_MASTER_PORT", "BREADTH_WEED_VOLUME_PORT", "BREADTH_WEED_FILER_PORT")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GridOnWorkers:
    """Runs one grid with N pinned workers; returns the seconds its cells took."""

    def __init__(self, env: dict[str, str], home: Path, overrides: list[str]):
        self.env, self.home, self.overrides = env, home, overrides
        self.grids = 0
        self.whole: dict[int, list[float]] = {1: [], 2: []}

    def __call__(self, workers: int) -> float:
        self.grids += 1
        logs = self.home / f"grid-{self.grids}"
        logs.mkdir()
        env = {**self.env, "BREADTH_WORK_DIR": str(logs / "work"), "CUDA_VISIBLE_DEVICES": ""}
        running = start_workers(workers, env, logs, pin_cores=True)
        try:
            _wait_started(logs, workers)
            seeds = [100 + 2 * self.grids, 101 + 2 * self.grids]
            command = ["grid", "--preset", "default", "--format", "free_form",
                       "--reward", "correctness", "--reward", "correctness+batch",
                       *(a for s in seeds for a in ("--seed", str(s))),
                       "--cell-runner", "deployment", "--grid-id", f"bench-{self.grids}",
                       *set_args([*TINY_CELL, *self.overrides])]
            code, output, seconds = run_cli(command, env, timeout=1800)
        finally:
            stop_workers(running)
        if code != 0:
            raise SystemExit(f"the grid with {workers} worker(s) failed:\n{output[-4000:]}")
        self.whole[workers].append(seconds)
        last = re.search(r"cell 4/4 \S+ COMPLETED after (\d+)m(\d+)s|cell 4/4 \S+ COMPLETED "
                         r"after (\d+)s", output)
        if last is None:
            raise SystemExit(f"no 'cell 4/4' line in the grid's output:\n{output[-3000:]}")
        minutes, secs, only_secs = last.groups()
        return int(only_secs) if only_secs else int(minutes) * 60 + int(secs)


def _wait_started(logs: Path, workers: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    for index in range(workers):
        log = logs / f"worker-{index}.log"
        while "started!" not in (log.read_text() if log.exists() else ""):
            if time.monotonic() > deadline:
                raise SystemExit(f"worker {index} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("this benchmark pins two workers to two cores; this machine has one")

    from breadth.stack.local import LocalStack, StackSettings

    with tempfile.TemporaryDirectory(prefix="bench-grid-") as scratch:
        home = Path(scratch)
        for name in PORTS:
            os.environ[name] = str(free_port())
        for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT"):
            os.environ.pop(name, None)
        os.environ["BREADTH_HOME"] = str(home)
        stack = LocalStack(StackSettings(home=home))
        try:
            stack.up()
            env = stack.settings.client_env()
            code, output, _ = run_cli(["deploy"], env, timeout=300)
            if code != 0:
                raise SystemExit(f"breadth deploy failed:\n{output[-3000:]}")
            grid = GridOnWorkers(env, home, args.overrides)
            result = compare(("1 worker", lambda: grid(1)), ("2 workers", lambda: grid(2)),
                             pairs=args.pairs, warm_up=False, self_timed=True)
        finally:
            stack.down(grace_s=5)
    print("4 cells (free_form x correctness, correctness+batch x 2 seeds), each worker on one "
          f"core with OMP_NUM_THREADS=1; cell overrides: {' '.join(TINY_CELL + args.overrides)}")
    print(result.report("cells of the grid, seconds (grid start to the 4th cell's end)"))
    for workers, times in grid.whole.items():
        print(f"  whole `breadth grid` command, {workers} worker(s): "
              f"{', '.join(f'{t:.0f}s' for t in times)}")
    print(f"2 workers / 1 worker, cells (median pair): {result.median_ratio():.3f}  "
          "(ideal 0.5)")


if __name__ == "__main__":
    main()
