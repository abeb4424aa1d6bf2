"""What the fault tests share: a small pipeline run through `faulty_cli.py`, services stopped
and started under a running pipeline, and MLflow / Prefect / S3 queries."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FAULTY_CLI = Path(__file__).with_name("faulty_cli.py")
MAX_STEPS, SAVE_STEPS = 8, 2
# Small enough for a 2-core CI machine, with checkpoints every two GRPO steps to lose or damage.
# No SFT and no MLflow model logging: neither is under test here, and both cost time.
FAULT_PIPELINE = [
    "data.num_train=40", "data.num_eval=4", "sft.enabled=false",
    f"rl.max_steps={MAX_STEPS}", f"rl.save_steps={SAVE_STEPS}", "rl.num_generations=4",
    "rl.prompts_per_step=2", "rollout.num_samples=4", "evaluation.bootstrap_samples=20",
    "evaluation.search_budget=0", "tracking.log_models=false",
]
TIMEOUT_S = 600


def overrides(name: str, seed: int) -> list[str]:
    """Each test its own experiment and seed, so no test's cached stages stand in for another's."""
    return [*FAULT_PIPELINE, f"tracking.experiment=faults-{name}", f"seed={seed}"]


def command(values: list[str]) -> list[str]:
    return [sys.executable, str(FAULTY_CLI), "run", *(a for v in values for a in ("--set", v))]


def environment(stack_env: dict[str, str], work: Path, **faults: Any) -> dict[str, str]:
    env = {**os.environ, **stack_env, "BREADTH_WORK_DIR": str(work), "CUDA_VISIBLE_DEVICES": "",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": os.pathsep.join(sys.path)}
    env.update({f"BREADTH_FAULT_{name.upper()}": str(value) for name, value in faults.items()})
    return env


def start(values: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen(command(values), env=env, cwd=REPO, stdout=handle,
                            stderr=subprocess.STDOUT)


def finish(process: subprocess.Popen, log: Path) -> tuple[int, str]:
    try:
        code = process.wait(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
    return code, log.read_text()


def run(values: list[str], env: dict[str, str], log: Path) -> tuple[int, str]:
    return finish(start(values, env, log), log)


def wait_for(condition: Callable[[], bool], process: subprocess.Popen, log: Path,
             what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert process.poll() is None, f"the run ended before {what}:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"{what} did not happen within {TIMEOUT_S}s"
        time.sleep(0.1)


def _stack() -> Any:
    from breadth.stack.local import LocalStack, StackSettings

    return LocalStack(StackSettings(home=Path(os.environ["BREADTH_HOME"])))


def stop_service(name: str) -> None:
    """Stop one service of the test stack as a crash would (its data stays on disk)."""
    from breadth.stack.local import services
    from breadth.stack.processes import stop_process_group

    stack = _stack()
    service = next(s for s in services(stack.settings) if s.name == name)
    pid = stack._read_pid(service)
    assert pid is not None, f"{name} is not running"
    stop_process_group(pid, grace_s=1.0)
    stack._pid_file(service).unlink(missing_ok=True)


def start_service(name: str) -> None:
    """Start it again on its port. The test session exports the service's URL, which makes
    the stack treat it as external: hidden here so that the stack starts its own again."""
    from breadth.stack.local import services

    stack = _stack()
    service = next(s for s in services(stack.settings) if s.name == name)
    saved = os.environ.pop(service.external_env, None)
    try:
        stack.up(only=[name])
    finally:
        if saved is not None:
            os.environ[service.external_env] = saved


def parent_run_id(output: str) -> str:
    match = re.search(r"MLflow run:\s*\S*runs/([0-9a-f]{32})", output.replace("\n", ""))
    assert match, f"no MLflow run id printed in:\n{output[-3000:]}"
    return match.group(1)


def experiment_runs(stack_env: dict[str, str], name: str) -> list[Any]:
    from mlflow import MlflowClient

    client = MlflowClient(stack_env["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name(f"faults-{name}")
    assert experiment is not None, f"no MLflow experiment faults-{name}"
    return client.search_runs([experiment.experiment_id], max_results=1000)


def metric_steps(stack_env: dict[str, str], run_id: str, metric: str) -> list[int]:
    from mlflow import MlflowClient

    history = MlflowClient(stack_env["MLFLOW_TRACKING_URI"]).get_metric_history(run_id, metric)
    return sorted(point.step for point in history)


def stage_dir(work: Path, stage: str) -> Path:
    found = sorted(work.glob(f"{stage}-*"))
    assert len(found) == 1, f"expected one {stage} work dir in {work}, found {found}"
    return found[0]


def flow_run_state(stack_env: dict[str, str], flow_run_id: str) -> str | None:
    from breadth_tasks.dead_runs import PrefectFlowRuns

    return PrefectFlowRuns(stack_env["PREFECT_API_URL"]).state(flow_run_id)


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (children first found, then theirs), e.g. the flow-run
    processes a worker started, which may live in sessions of their own."""
    found = []
    for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, check=False,
                                text=True).stdout.split():
        found += [int(child), *descendants(int(child))]
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL `pid` and everything under it at once, as a lost host would."""
    for each in [*descendants(pid), pid]:
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(1.0)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
