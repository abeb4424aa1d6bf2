"""The offline commands on good input: `prepare` writes a dataset, `evaluate` a report."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from breadth.cli import app

runner = CliRunner()


def test_prepare_writes_train_eval_and_manifest(tmp_path):
    out = tmp_path / "data"
    result = runner.invoke(app, ["prepare", "--source", "synthetic:arithmetic", "--format", "mcq",
                                 "--out", str(out), "--num-train", "12", "--num-eval", "4"])  # fmt: skip
    assert result.exit_code == 0, result.output
    train, evaluation = (pd.read_parquet(out / f"{split}.parquet") for split in ("train", "eval"))
    assert (len(train), len(evaluation)) == (12, 4)
    assert set(train["format"]) == {"mcq"} and set(evaluation["split"]) == {"eval"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["content_hash"] in result.output


def _rollouts(problems: pd.DataFrame, right_per_problem: int, n: int = 4) -> pd.DataFrame:
    rows = [
        {**problem, "sample_index": i, "model": "whatever", "text": problem["answer"],
         "token_ids": [1], "logprobs": [-0.1], "entropy": [0.5], "finish_reason": "stop",
         "extracted": problem["answer"] if i < right_per_problem else f"x{i}",
         "outcome": problem["answer"] if i < right_per_problem else f"x{i}",
         "correct": i < right_per_problem, "score": float(i < right_per_problem), "seed": 0,
         "backend": "transformers"}
        for problem in problems.to_dict(orient="records") for i in range(n)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_evaluate_writes_the_report_naming_base_and_trained(tmp_path):
    assert runner.invoke(app, ["prepare", "--source", "synthetic:arithmetic", "--format",
                               "free_form", "--out", str(tmp_path / "data"), "--num-train", "4",
                               "--num-eval", "6"]).exit_code == 0  # fmt: skip
    problems = pd.read_parquet(tmp_path / "data" / "eval.parquet")
    _rollouts(problems, right_per_problem=1).to_parquet(tmp_path / "base.parquet")
    _rollouts(problems, right_per_problem=3).to_parquet(tmp_path / "rl.parquet")
    out = tmp_path / "report"
    result = runner.invoke(app, ["evaluate", "--rollouts", str(tmp_path / "rl.parquet"),
                                 "--base", str(tmp_path / "base.parquet"), "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "report.md").exists() and f"wrote {out / 'report.md'}" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert sorted(metrics) == ["base", "trained"]
    pass_at_1 = {name: metrics[name]["metrics"]["eval/pass_at_1"] for name in metrics}
    assert pass_at_1 == {"base": 0.25, "trained": 0.75}  # 1 and 3 of 4 samples right
