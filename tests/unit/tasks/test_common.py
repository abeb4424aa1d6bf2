"""Cache keys: content-addressed, stable for the same code and inputs, different otherwise."""

from __future__ import annotations

import subprocess

import pytest
from breadth_tasks.common import StageResult, code_version, content_key


def test_content_key_is_deterministic_and_sensitive_to_every_part():
    key = content_key("sft", "base-1", "data-1", "cfg-1")
    assert key == content_key("sft", "base-1", "data-1", "cfg-1")
    assert key.startswith("sft-")
    others = {content_key("sft", "base-2", "data-1", "cfg-1"),
              content_key("sft", "base-1", "data-2", "cfg-1"),
              content_key("rl", "base-1", "data-1", "cfg-1")}
    assert key not in others and len(others) == 3


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _version_after(repo, path: str, text: str, commit: bool = False) -> str:
    (repo / path).write_text(text)
    if commit:
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"change {path}")
    code_version.cache_clear()
    return code_version(repo)


def test_code_version_follows_pipeline_code_and_ignores_docs_and_tests(tmp_path):
    for folder in ("src", "tasks", "flows", "docs", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.name", "t")
    _git(tmp_path, "config", "user.email", "t@t")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "start")
    try:
        start = _version_after(tmp_path, "docs/a.py", "x = 1\n")
        assert _version_after(tmp_path, "docs/a.py", "x = 2\n") == start
        assert _version_after(tmp_path, "tests/a.py", "x = 2\n", commit=True) == start
        edited = _version_after(tmp_path, "src/a.py", "x = 2\n")  # uncommitted
        committed = _version_after(tmp_path, "flows/a.py", "x = 2\n", commit=True)
        # A module git does not track yet counts, and so do its edits (`git diff` skips it).
        added = _version_after(tmp_path, "tasks/new.py", "y = 1\n")
        edited_new = _version_after(tmp_path, "tasks/new.py", "y = 2\n")
        assert _version_after(tmp_path, "docs/new.py", "z = 1\n") == edited_new
        assert len({start, edited, committed, added, edited_new}) == 5
    finally:
        code_version.cache_clear()


def test_code_version_runs_git_once_per_process(monkeypatch):
    code_version.cache_clear()
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    first = code_version()
    assert code_version() == first and content_key("x") == content_key("x")
    assert len(calls) == 3  # rev-parse, diff and the untracked files, on first use only


def test_ensure_local_keeps_an_existing_copy(tmp_path):
    (tmp_path / "model").mkdir()
    result = StageResult("sft", "k", str(tmp_path / "model"), "s3://nowhere/x", "run")
    assert result.ensure_local() == tmp_path / "model"  # no S3 configured: not touched


def test_ensure_local_fetches_a_folder_and_a_parquet_file_back_from_s3(s3, tmp_path):
    source = tmp_path / "made-elsewhere"
    (source / "model").mkdir(parents=True)
    (source / "model" / "weights.bin").write_bytes(b"w")
    (source / "rollouts").mkdir()
    (source / "rollouts" / "rl.parquet").write_bytes(b"p")
    s3.upload_dir(source / "model", "runs/r1/models/sft")
    uri = s3.upload_file(source / "rollouts" / "rl.parquet", "runs/r1/rollouts/rl.parquet")
    here = tmp_path / "wiped"
    folder = StageResult("sft", "k", str(here / "sft"), "s3://breadth-test/runs/r1/models/sft", "r")
    assert (folder.ensure_local() / "weights.bin").read_bytes() == b"w"
    parquet = StageResult("rollout-rl", "k", str(here / "roll" / "rl.parquet"), uri, "r")
    assert parquet.ensure_local().read_bytes() == b"p"


def test_a_stage_with_no_s3_copy_says_so_instead_of_fetching_the_bucket(tmp_path, monkeypatch):
    from breadth_tasks.common import StageOutputMissing

    monkeypatch.setenv("BREADTH_WORK_DIR", str(tmp_path / "here"))
    result = StageResult("evaluate", "evaluate-abc", str(tmp_path / "gone" / "evaluate-abc" / "report"),
                         "", "run-1")
    with pytest.raises(StageOutputMissing, match="evaluate.*has no S3 copy"):
        result.ensure_local()


def test_a_cached_output_is_looked_for_under_this_workers_work_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BREADTH_WORK_DIR", str(tmp_path / "here"))
    elsewhere = "/other/worker/work/rl-abc/final"
    result = StageResult("rl", "rl-abc", elsewhere, "s3://b/runs/1/models/rl", "run-1")
    assert result.local_path_here() == tmp_path / "here" / "rl-abc" / "final"
    (tmp_path / "here" / "rl-abc" / "final").mkdir(parents=True)
    assert result.ensure_local() == tmp_path / "here" / "rl-abc" / "final"


class _Run:
    """What log_model needs of a RunHandle: an id and set_tags."""

    run_id = "run-1"

    def __init__(self):
        self.tags: dict[str, str] = {}

    def set_tags(self, tags):
        self.tags.update(tags)


def test_models_are_logged_in_the_background_and_waited_for_at_the_end(monkeypatch, tmp_path):
    import threading

    from breadth_tasks import common

    from breadth.config import PipelineConfig

    release, logged_in = threading.Event(), []

    def slow_log(run, model_dir):
        release.wait(5)
        logged_in.append(threading.current_thread().name)
        return f"models:/{model_dir.name}"

    monkeypatch.setattr(common, "log_transformers_model", slow_log)
    run = _Run()
    with common.models_logged_in_background(PipelineConfig()):
        assert common.log_model(run, tmp_path / "sft") == ""  # queued: the stage goes on
        assert run.tags == {}
        release.set()
    assert run.tags == {"model.mlflow_uri": "models:/sft"}
    assert logged_in and logged_in[0] != threading.current_thread().name
    # Outside the block the model is logged at once and its URI returned.
    assert common.log_model(_Run(), tmp_path / "rl") == "models:/rl"


def test_a_model_that_cannot_be_logged_fails_the_run_saying_how_to_log_it(monkeypatch, tmp_path):
    from breadth_tasks import common

    from breadth.config import PipelineConfig
    from breadth.tracking.uploads import UploadsFailed

    def refused(run, model_dir):
        raise ValueError("MLflow refused the model")  # permanent: no retries

    monkeypatch.setattr(common, "log_transformers_model", refused)
    background = common.models_logged_in_background(PipelineConfig())
    with pytest.raises(UploadsFailed, match="PREFECT_TASKS_REFRESH_CACHE"), background:
        common.log_model(_Run(), tmp_path / "sft")


def test_tasks_retry_only_what_a_second_try_can_fix():
    """A bad input or missing file failed, waited, and failed again with a second traceback."""
    import breadth_tasks.claims
    import breadth_tasks.evaluate
    import breadth_tasks.grid_tasks
    import breadth_tasks.prepare
    import breadth_tasks.rollout
    import breadth_tasks.search
    import breadth_tasks.train
    from breadth_tasks.common import retry_if_transient
    from prefect.states import Failed

    retried = [breadth_tasks.prepare.prepare, breadth_tasks.train.init_model, breadth_tasks.rollout.rollout,
               breadth_tasks.search.search, breadth_tasks.evaluate.evaluate, breadth_tasks.grid_tasks.summarise_grid,
               breadth_tasks.grid_tasks.alarm_against_previous, breadth_tasks.claims.publish_claims]
    assert all(t.retries == 1 and t.retry_condition_fn is retry_if_transient for t in retried)
    for permanent in (ValueError("bad row"), FileNotFoundError("x.jsonl"), TypeError("arg")):
        assert retry_if_transient(None, None, Failed(data=permanent)) is False
    for transient in (ConnectionError("refused"), TimeoutError(), OSError("reset")):
        assert retry_if_transient(None, None, Failed(data=transient)) is True


def test_a_deployment_runs_stage_waits_for_a_restarting_mlflow_as_its_parent_does(monkeypatch):
    """A worker's stage that starts inside an MLflow restart waits for it (a cell failed on
    one); from the terminal it fails at once with the fix."""
    from breadth_tasks import common

    from breadth.tracking.runs import DEPLOYMENT_SERVER_WAIT_S

    waits = []
    monkeypatch.setattr(common, "start_child_run",
                        lambda parent, stage, *, tags, wait_s: waits.append((stage, wait_s)))
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    common.child_run(object(), "sft", "key")
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "a-deployment")
    common.child_run(object(), "rl", "key")
    assert waits == [("sft", 0.0), ("rl", DEPLOYMENT_SERVER_WAIT_S)]
