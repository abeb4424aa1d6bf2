"""A small real grid on the live stack: cells run, the claims are read back from what the
pipeline logged (writer and reader meet here), and `breadth compare --grid` prints them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from breadth.study.claim_table import VERDICTS
from tests.integration.helpers import SMALL_PIPELINE, run_cli, run_cli_reporting_imports, set_args

pytestmark = pytest.mark.integration

# The default preset keeps the grid small; the grid still checks that cells are fair. No
# MLflow models: the claims read metrics, curves and tables, never a model, and logging the
# cells' models cost the grid's process about 3 CPU s (test_pipeline_on_stack.py loads a
# logged model back).
GRID = ["grid", "--preset", "default", "--format", "free_form", "--reward", "correctness",
        "--reward", "correctness+batch", "--seed", "3",
        *set_args([*SMALL_PIPELINE, "tracking.experiment=grid-claims-test",
                   "evaluation.search_budget=4", "tracking.log_models=false"])]


@pytest.fixture(scope="module")
def grid_run(live_stack):
    code, output, _ = run_cli(GRID, live_stack)
    assert code == 0, output[-4000:]
    match = re.search(r"grid (grid-\S+) finished", output)
    assert match, output[-2000:]
    return match.group(1)


def test_the_summary_run_carries_the_claims_table(grid_run, live_stack):
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    summary = client.search_runs(
        [client.get_experiment_by_name("grid-claims-test").experiment_id],
        f"tags.`grid.id` = '{grid_run}' and tags.`breadth.kind` = 'grid-summary'",
    )[0]
    names = {f.path for f in client.list_artifacts(summary.info.run_id, "claims")}
    assert {"claims/claims.md", "claims/claims.json", "claims/pass_at_k_by_objective.png",
            "claims/claims_table.json"} <= names
    # The training curves, read back from each cell's RL stage run (what GRPO logged).
    assert {"claims/training_distinct_outcomes_per_group.png", "claims/training_entropy.png",
            "claims/training_curves.csv", "claims/collapse_rates.csv"} <= names
    local = client.download_artifacts(summary.info.run_id, "claims/claims.json")
    claims = {c["claim"]: c for c in json.loads(Path(local).read_text())}
    # Both arms ran, so the sharpening row carries an estimate; with one seed it has no
    # interval (no run-to-run spread: the seed t interval needs two) and says so. The batch row
    # reads distinct *correct* outcomes, which the one-answer arithmetic task cannot vary, so
    # it is "not run" with that reason; arms the grid lacks (ucb, darling, ...) are "not run",
    # never a number nor a null result.
    assert claims["sharpening"]["estimate"] is not None and claims["sharpening"]["low"] is None
    assert "one seed" in claims["sharpening"]["detail"]
    assert claims["batch"]["verdict"] == "not run" and "single-answer" in claims["batch"]["detail"]
    assert claims["historical"]["verdict"] == "not run"
    assert claims["historical"]["estimate"] is None
    assert all(c["verdict"] in VERDICTS and c["wording"].startswith(c["verdict"])
               for c in claims.values())


def test_compare_prints_the_claims(grid_run, live_stack, tmp_path):
    """`breadth compare --grid` prints the claims and writes their report, reading the runs,
    curves and per-problem tables over MLflow's REST API: `import mlflow` (0.8-1.7 s) was a
    third of the command's time."""
    note = tmp_path / "note.md"
    note.write_text("Ran by the integration test.\n")
    code, output, stderr, loaded = run_cli_reporting_imports(
        ["compare", "--grid", grid_run, "--out", str(tmp_path), "--claims-out",
         str(tmp_path / "report"), "--note", str(note)], live_stack)
    assert code == 0, (output + stderr)[-3000:]
    assert "mlflow" not in loaded
    # The terminal gets a table of the claims, not claims.md's markdown.
    assert re.search(r"sharpening\s+\S\s+free_form\s+\S", output), output[-3000:]  # a row
    assert "| **" not in output and "verdicts: " in output
    report = (tmp_path / "report" / "claims.md").read_text()
    assert f"wrote {tmp_path / 'report' / 'claims.md'}" in " ".join(output.split())
    # The report opens with where and how the grid ran.
    for line in ("- seeds: 1", "- cells: 2 (free_form x 2 objectives", "CPU cores", "wall time"):
        assert line in report
    assert "| **sharpening** | free_form |" in report
    # Each objective's collapse rate over its RL steps; one seed: a mean, no interval.
    assert "## Collapse over training steps" in report
    assert re.search(r"\| free_form \| correctness \| [-+][\d.e-]+ \| no interval \(one seed\) "
                     r"\| 1 \| \d+ \|", report), report[report.index("## Collapse"):]
    # The committed copy says which command wrote it, and carries the note.
    assert f"breadth compare --grid {grid_run}" in report
    assert "Ran by the integration test." in report
    assert "minutes per free_form cell" in report
