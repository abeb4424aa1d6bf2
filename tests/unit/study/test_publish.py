"""`publish_claims`: the one load -> evaluate -> write sequence behind both the CLI's
`compare --grid` and the grid flow's claims task, with MLflow faked."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import breadth_tasks.claims
import pytest

import breadth.study.publish
from breadth.cli.runs import _write_claims
from breadth.study.curves import DISTINCT_OUTCOMES, ENTROPY
from breadth.study.grid_design import GridConfig
from breadth.study.grid_settings import ClaimSettings
from tests.unit.study.test_claims import _cells

SETTINGS = ClaimSettings(num_resamples=20)
FRAME = _cells([8, 0] * 20, seeds=(0, 1, 2))
# FRAME's cells' RL training histories: distinct outcomes fall by 0.1 per step in seed 0,
# 0.2 in seed 1, 0.3 in seed 2.
HISTORIES = {
    ("correctness", "free_form", seed): {
        DISTINCT_OUTCOMES: [(step, 6.0 - slope * step) for step in (1, 2, 3)],
        ENTROPY: [(step, 1.0) for step in (1, 2, 3)],
    }
    for seed, slope in ((0, 0.1), (1, 0.2), (2, 0.3))
}
TRAINING_FILES = {"training_distinct_outcomes_per_group.png", "training_entropy.png",
                  "training_curves.csv", "collapse_rates.csv"}


class _Client:
    """An MLflow client that copies what is logged into `into/<artifact path>`."""

    def __init__(self, into: Path):
        self.into = into

    def log_artifact(self, run_id, local, artifact_path=None):
        target = self.into / (artifact_path or "")
        if Path(local).is_dir():
            shutil.copytree(local, target, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(local, target)

    def get_run(self, run_id):
        return SimpleNamespace(tags={})

    def set_tag(self, run_id, key, value):
        pass


def _without_figures(monkeypatch) -> None:
    """publish_claims without drawing its PNGs (each figure closed, its path returned): where
    a test publishes a frame it has published already, the figures took most of its CPU."""
    import matplotlib.pyplot as plt

    def closed(figure, axes, path):
        plt.close(figure)
        return path

    monkeypatch.setattr("breadth.study.report.save_figure", closed)
    monkeypatch.setattr("breadth.study.curves_report.save_figure", closed)


@pytest.fixture
def calls(monkeypatch):
    """The grid's MLflow reads faked; -> the calls of `publish_claims` (its keyword args)."""
    seen = []
    real = breadth.study.publish.publish_claims

    def spy(uri, grid_id, out_dir, settings, **kwargs):
        seen.append(kwargs)
        return real(uri, grid_id, out_dir, settings, **kwargs)

    monkeypatch.setattr(breadth.study.publish, "publish_claims", spy)
    monkeypatch.setattr("breadth.study.frame.load_study_frame", lambda uri, grid_id: FRAME)
    monkeypatch.setattr("breadth.study.frame.load_training_histories",
                        lambda uri, frame: HISTORIES)
    monkeypatch.setattr("breadth.study.frame.grid_provenance", lambda uri, grid_id: {})
    monkeypatch.setattr("breadth.study.frame.provenance_header",
                        lambda provenance, command="": f"# claims of g{command and ' by '}{command}")
    return seen


def test_the_cli_and_the_prefect_task_publish_the_same_report(calls, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["breadth", "compare", "--grid", "g"])
    folder, why = _write_claims("http://127.0.0.1:9", "g", tmp_path / "cli", "", SETTINGS)
    assert (folder, why) == (tmp_path / "cli", "")

    logged, artifacts = tmp_path / "mlflow", []
    monkeypatch.setattr(breadth_tasks.claims, "tracking_uri", lambda: "http://127.0.0.1:9")
    monkeypatch.setattr(breadth_tasks.claims, "tracking_client", lambda uri: _Client(logged))
    monkeypatch.setattr(breadth_tasks.claims, "claim_settings", lambda study: SETTINGS)
    monkeypatch.setattr(breadth_tasks.claims, "create_markdown_artifact",
                        lambda **kwargs: artifacts.append(kwargs))
    result = breadth_tasks.claims.publish_claims.fn(GridConfig(), "g", "summary-run")

    # Both went through the one sequence: the CLI names its command line, the task none.
    assert calls == [{"command": "breadth compare --grid g", "note": "", "pilot": None,
                      "reference": None},
                     {"pilot": None, "reference": None}]
    cli, task = tmp_path / "cli", logged / "claims"
    names = {"claims.md", "claims.json", "pass_at_k_by_objective.png",
             "pass_at_k_by_objective.csv", *TRAINING_FILES}
    assert {p.name for p in cli.iterdir()} == names
    assert {p.name for p in task.iterdir()} == names | {"claims_table.json"}
    for name in ("claims.json", "pass_at_k_by_objective.csv", "collapse_rates.csv"):
        assert (cli / name).read_text() == (task / name).read_text()
    cli_md, task_md = (cli / "claims.md").read_text(), (task / "claims.md").read_text()
    assert cli_md.startswith("# claims of g by breadth compare --grid g\n")
    assert task_md.startswith("# claims of g\n")
    assert cli_md.partition("\n")[2] == task_md.partition("\n")[2]
    assert result["markdown"] == task_md == artifacts[0]["markdown"]
    assert [row["claim"] for row in result["claims"]][:2] == ["sharpening", "sharpening"]


def test_the_cli_says_why_a_grid_has_no_claims(calls, monkeypatch, tmp_path):
    def no_tables(uri, grid_id):
        raise FileNotFoundError("run r0 (cell) has no report/ artifacts")

    monkeypatch.setattr("breadth.study.frame.load_study_frame", no_tables)
    folder, why = _write_claims("http://127.0.0.1:9", "g", tmp_path, "a note", SETTINGS)
    assert folder is None and why == "run r0 (cell) has no report/ artifacts"
    assert not (tmp_path / "claims.md").exists()


def test_a_note_follows_the_provenance_header(calls, tmp_path):
    published = breadth.study.publish.publish_claims("uri", "g", tmp_path, SETTINGS,
                                                     note="  why this grid ran\n")
    assert published.markdown == tmp_path / "claims.md"
    assert published.markdown.read_text().startswith("# claims of g\n\nwhy this grid ran\n")
    assert published.paths[1].name == "claims.json" and len(published.claims) > 10


def test_the_report_carries_the_collapse_over_training_steps(calls, tmp_path):
    published = breadth.study.publish.publish_claims("uri", "g", tmp_path, SETTINGS)
    assert {p.name for p in published.paths} >= TRAINING_FILES
    markdown = published.markdown.read_text()
    section = markdown[markdown.index("## Collapse over training steps"):]
    # Slopes -0.1, -0.2, -0.3: mean -0.2, t interval -0.2 ± 4.3027 * 0.1 / sqrt(3).
    assert "| free_form | correctness | -0.2 | [-0.448, +0.0484] | 3 | 3 |" in section
    assert "![training_entropy](training_entropy.png)" in section
    # FRAME has one format: the format comparison says why it is not shown.
    assert "Not shown: it needs correctness curves in both formats" in section


def test_a_grid_without_training_histories_says_so(calls, monkeypatch, tmp_path):
    monkeypatch.setattr("breadth.study.frame.load_training_histories",
                        lambda uri, frame: {("correctness", "free_form", 0): {}})
    published = breadth.study.publish.publish_claims("uri", "g", tmp_path, SETTINGS)
    assert not {p.name for p in tmp_path.iterdir()} & TRAINING_FILES
    assert len(published.paths) == 4
    assert "## Collapse over training steps\n\nNo training histories: no RL run of this grid " \
           "logged" in published.markdown.read_text()


def test_a_pilot_given_to_the_cli_reaches_the_report(calls, monkeypatch, tmp_path):
    from breadth.study.power import read_pilot_sizing

    pilot_json = tmp_path / "pilot.json"
    pilot_json.write_text('{"seeds": [{"Δ pass@1": 0.01}, {"Δ pass@1": 0.03}], "times": []}')
    monkeypatch.setattr(sys, "argv", ["breadth", "compare", "--grid", "g"])
    folder, _ = _write_claims("http://127.0.0.1:9", "g", tmp_path / "cli", "", SETTINGS,
                              read_pilot_sizing(pilot_json))
    rows = json.loads((folder / "claims.json").read_text())
    pass1 = next(r for r in rows if r["measure"].startswith("Δ pass@1, RL"))
    # The pilot's sd of (0.01, 0.03) is 0.01414; FRAME's seeds agree exactly (sd 0).
    assert pass1["power"]["pilot_sd"] == pytest.approx(0.02 / 2 ** 0.5)
    assert pass1["power"]["seed_sd"] == 0.0 and pass1["power"]["pilot_seeds"] == 2
    assert "(pilot: " in (folder / "claims.md").read_text()


def test_inconclusive_rows_price_their_seeds_at_the_grids_stage_work(calls, monkeypatch,
                                                                     tmp_path):
    from tests.unit.study.test_claims_power import _frame

    # Per-seed Δ pass@1 of 0, 0.025, 0.05 (sd 0.025): an inconclusive row, of the correctness
    # arm alone. The grid's stage split: a warm start of 20 min a seed, 40 min an objective's
    # own stages: 60 min a seed of that arm, on the settings' 2 workers.
    monkeypatch.setattr("breadth.study.frame.load_study_frame",
                        lambda uri, grid_id: _frame([0, 8, 16]))
    monkeypatch.setattr("breadth.study.frame.grid_provenance",
                        lambda uri, grid_id: {"compute_minutes": {"free_form": 180.0},
                                              "format_cells": {"free_form": [3, 1]},
                                              "stage_split": {"free_form": [20.0, 40.0]}})
    published = breadth.study.publish.publish_claims("uri", "g", tmp_path, SETTINGS)
    pass1 = next(c for c in published.claims if c.measure.startswith("Δ pass@1, RL"))
    assert pass1.verdict == "inconclusive" and pass1.power.price.seed_minutes == 60.0
    assert "a nightly of its arms (free_form: correctness), at 60 min of stage work a seed on 2 " \
           "workers" in pass1.detail
    assert "a nightly of its own arms" in published.markdown.read_text()
    # Its 35 seeds for a verdict take 35 x 60 / 2 = 1,050 min, 17.5 h: the table ends with no
    # nightly of 3 h; a nightly of 18 h is that one row's.
    assert ("**No nightly of 3 h decides any of these rows**: each needs more seeds of its arms "
            "than the hours hold.") in published.markdown.read_text()
    assert pass1.power.price.seeds == 35
    # The same frame's figures again: drawn above; here the pricing in claims.md is the point.
    _without_figures(monkeypatch)
    long_night = dataclasses.replace(SETTINGS, nightly_hours=18.0)
    published = breadth.study.publish.publish_claims("uri", "g", tmp_path / "18h", long_night)
    assert ("**The nightly that decides the most of these rows in 18 h**: free_form: "
            "correctness; 35 seeds, 17.5 h of stage work on 2 workers. It decides 1 of 1: "
            "sharpening (free_form, Δ pass@1).") in published.markdown.read_text()
    # A grid published before the split: priced at its full seed, 180 min over 3 cells.
    monkeypatch.setattr("breadth.study.frame.grid_provenance",
                        lambda uri, grid_id: {"compute_minutes": {"free_form": 180.0},
                                              "format_cells": {"free_form": [3, 1]}})
    published = breadth.study.publish.publish_claims("uri", "g", tmp_path / "old", SETTINGS)
    pass1 = next(c for c in published.claims if c.measure.startswith("Δ pass@1, RL"))
    assert "at 60 min of stage work a seed, a full seed of the grid's cells (its stage work is " \
           "not split by stage) on 2 workers" in pass1.detail
