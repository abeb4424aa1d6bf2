"""What `breadth run` prints when the pipeline finished: where to look, including where the
files of the stages served from the cache are (not under this run's S3 prefix)."""

from __future__ import annotations

import json
from contextlib import nullcontext

from typer.testing import CliRunner

from breadth.cli import app

ENV = {"PREFECT_UI_URL": "http://127.0.0.1:4200", "BREADTH_S3_BUCKET": "breadth",
       "BREADTH_S3_ENDPOINT": "http://127.0.0.1:8333"}


def _run(monkeypatch, cached_files, report="r.md"):
    import breadth_flows.in_process
    import breadth_flows.pipeline

    result = {"mlflow_run_id": "second", "mlflow_run_url": "http://mlflow/#/runs/second",
              "prefect_flow_run_url": "http://prefect/flow-runs/flow-run/1", "report": str(report),
              "metrics": {}, "cached_stage_files": cached_files}
    monkeypatch.setattr("breadth.cli.stack.bring_up_stack", lambda reconcile: ENV)
    monkeypatch.setattr(breadth_flows.in_process, "in_process_run", nullcontext)
    monkeypatch.setattr(breadth_flows.pipeline, "pipeline", lambda config: result)
    outcome = CliRunner().invoke(app, ["run"])
    assert outcome.exit_code == 0, outcome.output
    return outcome.output


def test_a_cached_re_run_says_where_the_cached_stages_files_are(monkeypatch):
    output = _run(monkeypatch, {
        "prepare": "s3://breadth/datasets/abc",
        "sft": "s3://breadth/runs/first/models/sft",
        "rollout-rl": "s3://breadth/runs/first/rollouts/rl.parquet",
        "evaluate": "s3://breadth/runs/first/report",
    })
    assert "S3 prefix:   s3://breadth/runs/second/ (endpoint http://127.0.0.1:8333)" in output
    assert "Cached stages' files stay where the runs that produced them wrote them:" in output
    assert "    rollout-rl  s3://breadth/runs/first/rollouts/rl.parquet" in output
    assert "    sft         s3://breadth/runs/first/models/sft" in output
    assert "    prepare     s3://breadth/datasets/abc" in output
    assert "    evaluate    s3://breadth/runs/first/report" in output  # the report too


def test_a_run_that_computed_every_stage_lists_none(monkeypatch):
    output = _run(monkeypatch, {})
    assert "S3 prefix:   s3://breadth/runs/second/" in output and "Cached" not in output


def test_the_run_prints_each_model_against_its_base_paired(monkeypatch, tmp_path):
    (tmp_path / "paired.json").write_text(json.dumps({"rl": {"base": "sft", "differences": [
        {"measure": "pass@1", "num_problems": 256, "direction": "up", "estimate": 0.0132,
         "low": 0.0021, "high": 0.0254},
        {"measure": "distinct outcomes", "num_problems": 256, "direction": "down",
         "estimate": -0.285, "low": -0.379, "high": -0.199}]}}))
    output = _run(monkeypatch, {}, report=tmp_path / "report.md")
    assert "rl − sft, paired over problems (95% CI):" in output
    assert "pass@1             +0.013 [+0.002, +0.025]  up" in output
    assert "distinct outcomes  -0.285 [-0.379, -0.199]  down" in output


def test_a_report_without_a_base_prints_no_paired_lines(monkeypatch, tmp_path):
    output = _run(monkeypatch, {}, report=tmp_path / "report.md")
    assert "paired" not in output
