"""The grid flow and its alarm task, with MLflow and Prefect's artifact API replaced by fakes:
`.fn` runs the task or flow body itself."""

from __future__ import annotations

import pandas as pd
import pytest

import flows.grid
import tasks.grid
from breadth.config import GridConfig

STUDY = GridConfig(formats=["mcq"], rewards=["correctness", "darling"], seeds=[0, 1])


def _summary(value: float) -> pd.DataFrame:
    return pd.DataFrame({"format": ["mcq"], "reward": ["correctness"], "k": [8],
                         "pass_at_kmax": [value], "pass_at_kmax_ci_low": [value - 0.05],
                         "pass_at_kmax_ci_high": [value + 0.05]})  # fmt: skip


@pytest.fixture()
def artifacts(monkeypatch):
    published = []
    monkeypatch.setattr(tasks.grid, "create_markdown_artifact",
                        lambda **kwargs: published.append(kwargs))  # fmt: skip
    monkeypatch.setattr(tasks.grid, "tracking_uri", lambda: "http://127.0.0.1:1")
    monkeypatch.setattr(tasks.grid, "load_experiment_name", lambda study: "study")
    return published


def test_alarm_without_an_earlier_grid_publishes_nothing_to_compare(artifacts, monkeypatch):
    monkeypatch.setattr(tasks.grid, "previous_grid_id", lambda *args: None)
    verdict = tasks.grid.alarm_against_previous.fn(STUDY, "g2", {"summary": []})
    assert verdict["fired"] is False and verdict["previous_grid"] is None
    assert artifacts[0]["description"] == "no collapse"


def test_alarm_compares_with_the_previous_grid_and_fails_the_run_on_a_collapse(
    artifacts, monkeypatch
):
    asked = []
    monkeypatch.setattr(tasks.grid, "previous_grid_id",
                        lambda uri, experiment, study_hash, grid_id: asked.append(
                            (experiment, study_hash, grid_id)) or "g1")  # fmt: skip
    monkeypatch.setattr(tasks.grid, "fetch_runs", lambda uri, grid_id: grid_id)
    monkeypatch.setattr(tasks.grid, "grid_summary", lambda runs: _summary(0.8))
    steady = {"summary": _summary(0.78).to_dict(orient="records")}
    assert tasks.grid.alarm_against_previous.fn(STUDY, "g2", steady)["fired"] is False
    assert asked == [("study", STUDY.content_hash(), "g2")]
    collapsed = {"summary": _summary(0.3).to_dict(orient="records")}
    with pytest.raises(RuntimeError, match="collapse alarm: grid g2 vs g1"):
        tasks.grid.alarm_against_previous.fn(STUDY, "g2", collapsed)
    assert artifacts[-1]["description"] == "COLLAPSE ALARM"  # published before failing


def test_grid_flow_runs_every_cell_with_its_tags_then_summary_and_alarm(monkeypatch):
    ran = []

    class FakePipeline:
        def with_options(self, flow_run_name):
            def run(config, tags):
                ran.append((flow_run_name, config.data.format, config.rl.reward.spec,
                            config.seed, tags))  # fmt: skip
                return {"mlflow_run_id": f"run{len(ran)}"}

            return run

    monkeypatch.setattr(flows.grid, "pipeline", FakePipeline())
    monkeypatch.setattr(flows.grid, "summarise_grid", lambda study, grid_id: {"run_id": "sum"})
    monkeypatch.setattr(flows.grid, "alarm_against_previous",
                        lambda study, grid_id, summary: {"fired": False})  # fmt: skip
    claimed = []
    monkeypatch.setattr(flows.grid, "publish_claims", lambda study, grid_id, run_id: (
        claimed.append((grid_id, run_id)) or {"markdown": "| claims |"}))  # fmt: skip
    study = STUDY.model_copy(update={"grid_id": "night-1"})
    result = flows.grid.grid.fn(study)
    assert result == {"grid_id": "night-1", "cells": 4, "summary_run": "sum",
                      "claims": "| claims |", "alarm": {"fired": False}}  # fmt: skip
    assert claimed == [("night-1", "sum")]  # the claims go on the summary run
    assert [(r[1], r[2], r[3]) for r in ran] == [
        ("mcq", "correctness", 0), ("mcq", "correctness", 1), ("mcq", "darling", 0),
        ("mcq", "darling", 1),
    ]  # fmt: skip
    assert ran[0][0] == "night-1-mcq-correctness-s0"
    assert ran[3][4] == {"grid.id": "night-1", "grid.cell": "mcq/darling/seed1",
                         "grid.objective": "darling", "grid.config_hash": study.content_hash()}


def test_grid_flow_validates_every_cell_before_running_any(monkeypatch):
    monkeypatch.setattr(flows.grid, "pipeline", None)  # would fail if a cell started
    with pytest.raises(ValueError, match="Did you mean"):
        flows.grid.grid.fn(GridConfig(rewards=["correctness", "darlin"], seeds=[0]))
