"""What every stage task shares: its result record, content-keyed caching and its child run."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import runtime
from prefect.context import TaskRunContext

import breadth
from breadth.tracking.mlflow_sdk import log_transformers_model
from breadth.tracking.objects import ObjectStore
from breadth.tracking.runs import DEPLOYMENT_SERVER_WAIT_S, RunHandle, start_child_run
from breadth.tracking.uploads import BackgroundLane, UploadsFailed, is_permanent, with_retries
from breadth.training.checkpointing import hold_lock

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def retry_if_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's `retry_condition_fn`: a task's retry is for what may pass on a second try (a
    service that blinked), not bad input or a missing file, whose retry only doubled the wait
    and the traceback. Prefect hands an exception raised by the task in `state.data`."""
    return not (isinstance(state.data, BaseException) and is_permanent(state.data))


# The folders whose code the stages run: their changes, committed or not, change the cache keys.
CODE_FOLDERS = ("src", "tasks", "flows")


@functools.cache
def code_version(repo: Path = PROJECT_ROOT) -> str:
    """The pipeline code a stage ran: git's tree ids of src/, tasks/ and flows/ at HEAD plus a
    hash of their uncommitted changes, new untracked files included.

    Part of every cache key, so a nightly run after a code change recomputes (a regression
    must not hide behind yesterday's cached results), while a re-run of the same code — or
    after a commit that touched only docs or tests — reuses. Outside a git checkout (an
    installed package) it is the package version. Computed on first use, once per process.
    """
    folders = list(CODE_FOLDERS)
    try:
        trees = subprocess.run(["git", "rev-parse", *(f"HEAD:{f}" for f in folders)], cwd=repo,
                               capture_output=True, text=True, check=True,
                               timeout=10).stdout.split()
        diff = subprocess.run(["git", "diff", "HEAD", "--", *folders], cwd=repo,
                              capture_output=True, check=True, timeout=10).stdout
        # `git diff` leaves out files git does not track yet: a new module, edited, kept the
        # old keys and served stale stages. Their paths and contents count too.
        untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z",
                                    "--", *folders], cwd=repo, capture_output=True, check=True,
                                   timeout=10).stdout.split(b"\0")
    except (OSError, subprocess.SubprocessError):
        return breadth.__version__
    digest = hashlib.sha256("|".join(trees).encode() + diff)
    for name in sorted(filter(None, untracked)):
        digest.update(b"\0" + name + b"\0")
        try:
            digest.update((repo / name.decode()).read_bytes())
        except OSError:  # removed since git listed it, or unreadable: its name still counts
            pass
    return digest.hexdigest()[:24]


@dataclass(frozen=True)
class StageResult:
    """What a stage leaves behind: a local copy, the S3 copy and the MLflow child run."""

    stage: str
    key: str  # content key: hash of the config slice and the inputs' keys
    local_path: str
    s3_uri: str
    mlflow_run_id: str
    info: dict[str, Any] = field(default_factory=dict)

    def ensure_local(self) -> Path:
        """The local copy, fetched back from S3 (only this stage's objects) when another
        machine or a wipe removed it."""
        path = Path(self.local_path)
        if path.exists():
            return path
        path = self.local_path_here()
        if path.exists():
            return path
        if not self.s3_uri:
            raise StageOutputMissing(
                f"stage {self.stage} ({self.key}) has no S3 copy, and its local output {path} is "
                "gone (another worker, or a wiped work dir). Run it again here: delete its Prefect "
                "cache entry, or change BREADTH_WORK_DIR back to the folder that holds it."
            )
        store = ObjectStore.from_env()
        key = self.s3_uri.removeprefix(f"s3://{store.bucket}/")
        if key.endswith(".parquet"):
            store.download_file(key, path)
        else:
            store.download_dir(key, path)
        return path


    def local_path_here(self) -> Path:
        """Where this worker keeps the output: the same place under its own work dir (the path
        in a cached result is the producing worker's)."""
        parts = Path(self.local_path).parts
        if self.key not in parts:
            return Path(self.local_path)
        return work_root() / Path(*parts[parts.index(self.key) :])


class StageOutputMissing(RuntimeError):
    """A cached stage's output is neither local nor in S3; the message says how to re-run."""


def content_key(stage: str, *parts: str) -> str:
    digest = hashlib.sha256("|".join((code_version(), stage, *parts)).encode()).hexdigest()
    return f"{stage}-{digest[:24]}"


def stage_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """Prefect cache key: the `key` parameter, computed by the flow from content hashes.

    Prefect's default policy includes the flow run id, so nothing would be reused across
    runs; the key here depends only on what the stage reads.
    """
    return parameters["key"]


def work_dir(key: str) -> Path:
    """Local outputs of a stage, keyed by content (so an interrupted stage resumes there)."""
    path = work_root() / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def work_root() -> Path:
    default = Path(os.environ.get("BREADTH_HOME", ".breadth")) / "work"
    return Path(os.environ.get("BREADTH_WORK_DIR", default)).resolve()


def server_wait_s() -> float:
    """How long a run's start (the parent's, and each stage's) waits for an MLflow server that
    does not answer: a deployment run (a worker's, nobody at its terminal) waits out a restart;
    a run from the terminal fails in seconds with the fix."""
    return DEPLOYMENT_SERVER_WAIT_S if runtime.deployment.id else 0.0


def child_run(parent: RunHandle, stage: str, key: str) -> RunHandle:
    """The stage's MLflow run; use it as `with child_run(...) as run:` so that it is closed
    (FINISHED, FAILED or KILLED) on every path. A stage that starts while MLflow restarts
    waits for it as the parent run's start does (`server_wait_s`), so a worker's cell outlives
    a restart between its stages."""
    return start_child_run(parent, stage, tags={"breadth.stage": stage, "breadth.stage_key": key},
                           wait_s=server_wait_s())


@contextmanager
def exclusive_work_dir(key: str) -> Iterator[Path]:
    """The stage's work dir, held against a second run of the same stage at the same time (the
    lock file lives beside it, so it is never uploaded with the stage's output)."""
    folder = work_dir(key)
    with hold_lock(folder.parent / ".locks" / f"{key}.lock"):
        yield folder


def upload_stage_output(config: Any, folder: Path, prefix: str) -> str:
    """Upload a stage's output folder (verified), retrying through an S3 outage."""
    store = ObjectStore.from_env()
    with_retries(f"upload of {folder} to {prefix}", lambda: store.upload_dir(folder, prefix),
                 give_up_after_s=config.tracking.upload_retry_s)
    return store.uri(prefix)


# The flow's lane for MLflow model logging (None outside `models_logged_in_background`).
_model_logs: BackgroundLane | None = None


@contextmanager
def models_logged_in_background(config: Any) -> Iterator[None]:
    """Inside this block a model stage queues its MLflow model logging instead of waiting for it:
    MLflow saves, checks and uploads the model again (seconds per model), and the next stage
    need not wait for that. Leaving the block waits for every queued model; one that could not
    be logged fails the run, naming it."""
    global _model_logs
    lane = _model_logs = BackgroundLane("MLflow model logging", config.tracking.upload_retry_s)
    body_failed = True
    try:
        with lane:
            yield
            body_failed = False
    except UploadsFailed as error:
        if body_failed:  # the run's own error, not the lane's
            raise
        raise UploadsFailed(
            f"{error}\nThe stage itself finished and is cached, so a plain re-run skips it: "
            "re-run with PREFECT_TASKS_REFRESH_CACHE=true to log the model again."
        ) from error
    finally:
        _model_logs = None


def log_model(run: RunHandle, model_dir: Path) -> str:
    """Log a stage's model as an MLflow model and tag the run with its URI (`model.mlflow_uri`):
    queued inside `models_logged_in_background` (the tag comes when it is done; "" is returned),
    done now outside it (its URI is returned)."""

    def job() -> str:
        uri = log_transformers_model(run, model_dir)
        run.set_tags({"model.mlflow_uri": uri})
        return uri

    if _model_logs is None:
        return job()
    _model_logs.submit(f"MLflow model of {model_dir} (run {run.run_id})", job)
    return ""
