"""Every pipeline run's report lies under its own S3 prefix, `runs/<run>/report/` (README's
layout), also when the evaluation came from the cache of an earlier run."""

from __future__ import annotations

import pytest

from breadth.config import load_config
from tasks.common import StageResult


@pytest.fixture()
def s3(monkeypatch):
    moto = pytest.importorskip("moto")
    from breadth.tracking.objects import ObjectStore

    with moto.mock_aws():
        store = ObjectStore("https://s3.amazonaws.com", "breadth-test", "key", "secret")
        store.endpoint = None  # moto intercepts the default AWS endpoint
        store.ensure_bucket()
        monkeypatch.setattr(ObjectStore, "from_env", classmethod(lambda cls, env=None: store))
        yield store


class _Parent:
    def __init__(self, run_id):
        self.run_id = run_id
        self.artifacts = []

    def log_artifact(self, path, artifact_path=None):
        self.artifacts.append(artifact_path)

    def url(self):
        return f"http://mlflow/#/experiments/1/runs/{self.run_id}"


@pytest.fixture()
def report(tmp_path, s3, monkeypatch):
    """A report folder, uploaded under the run `first` that evaluated it."""
    import tasks.evaluate

    monkeypatch.setattr(tasks.evaluate, "log_curves", lambda *args: None)
    monkeypatch.setattr(tasks.evaluate, "create_markdown_artifact", lambda **kwargs: None)
    folder = tmp_path / "evaluate-k" / "report"
    (folder / "plots").mkdir(parents=True)
    (folder / "report.md").write_text("# report\n")
    (folder / "plots" / "pass_at_k.png").write_bytes(b"png")
    s3.upload_dir(folder, "runs/first/report")
    return StageResult("evaluate", "evaluate-k", str(folder), "s3://breadth-test/runs/first/report",
                       "child", {"metrics": {}, "curves": {}, "report_markdown": "# report"})


def test_a_cached_evaluation_s_report_is_copied_under_the_re_run_s_prefix(report, s3):
    from tasks.evaluate import publish_report

    parent = _Parent("second")
    publish_report.fn(load_config("default"), parent, report)
    assert s3.list("runs/second/") == ["runs/second/report/plots/pass_at_k.png",
                                       "runs/second/report/report.md"]  # fmt: skip
    assert parent.artifacts == ["report"]
    assert len(s3.list("runs/first/")) == 2  # the producing run's copy is left as it was


def test_a_report_evaluated_in_this_run_is_not_uploaded_twice(report, s3, monkeypatch):
    import tasks.evaluate

    uploads = []
    monkeypatch.setattr(tasks.evaluate, "upload_stage_output", lambda *args: uploads.append(args))
    tasks.evaluate.publish_report.fn(load_config("default"), _Parent("first"), report)
    assert uploads == []
