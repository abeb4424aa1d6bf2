"""publish_report on a cached evaluation: the report goes on this run's MLflow artifacts, and
nothing goes to S3 (its files stay under the run that produced them, and a cached re-run does
not load boto3 for a copy)."""

from __future__ import annotations

from breadth_tasks.common import StageResult


class _Parent:
    def __init__(self, run_id):
        self.run_id = run_id
        self.artifacts = []
        self.metrics = []

    def log_artifact(self, path, artifact_path=None):
        self.artifacts.append(artifact_path)

    def log_metrics(self, metrics, step=None):
        self.metrics.append(metrics)

    def url(self):
        return f"http://mlflow/#/experiments/1/runs/{self.run_id}"


def test_a_cached_evaluation_s_report_goes_on_the_re_run_s_mlflow_run_only(tmp_path, monkeypatch):
    import breadth_tasks.evaluate

    uploads = []
    monkeypatch.setattr(breadth_tasks.evaluate, "upload_stage_output", lambda *args: uploads.append(args))
    monkeypatch.setattr(breadth_tasks.evaluate, "log_curves", lambda *args: None)
    monkeypatch.setattr(breadth_tasks.evaluate, "create_markdown_artifact", lambda **kwargs: None)
    folder = tmp_path / "evaluate-k" / "report"
    folder.mkdir(parents=True)
    (folder / "report.md").write_text("# report\n")
    cached = StageResult("evaluate", "evaluate-k", str(folder), "s3://breadth/runs/first/report",
                         "child", {"metrics": {}, "curves": {}, "report_markdown": "# report"})
    parent = _Parent("second")
    report = breadth_tasks.evaluate.publish_report.fn(parent, cached)
    assert report == str(folder / "report.md")
    assert parent.artifacts == ["report"]
    assert uploads == []  # a copy to S3 here would load boto3 in every cached re-run
