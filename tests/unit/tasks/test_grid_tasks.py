"""The grid flow and its alarm task, with MLflow and Prefect's artifact API replaced by fakes:
`.fn` runs the task or flow body itself."""

from __future__ import annotations

import json
import logging

import breadth_flows.grid_cells
import breadth_flows.grid_flow
import breadth_tasks.grid_tasks
import pandas as pd
import pytest
from prefect.states import Completed, Failed

from breadth.study.grid_design import GridConfig

STUDY = GridConfig(formats=["mcq"], rewards=["correctness", "darling"], seeds=[0, 1])


def _summary(value: float) -> pd.DataFrame:
    return pd.DataFrame({"format": ["mcq"], "reward": ["correctness"], "k": [8],
                         "pass_at_kmax": [value], "pass_at_kmax_ci_low": [value - 0.05],
                         "pass_at_kmax_ci_high": [value + 0.05]})


@pytest.fixture()
def artifacts(monkeypatch):
    published = []
    monkeypatch.setattr(breadth_tasks.grid_tasks, "create_markdown_artifact",
                        lambda **kwargs: published.append(kwargs))
    monkeypatch.setattr(breadth_tasks.grid_tasks, "tracking_uri", lambda: "http://127.0.0.1:1")
    monkeypatch.setattr(breadth_tasks.grid_tasks, "load_experiment_name", lambda study: "study")
    return published


def test_alarm_without_an_earlier_grid_publishes_nothing_to_compare(artifacts, monkeypatch):
    monkeypatch.setattr(breadth_tasks.grid_tasks, "previous_grid_id", lambda *args: None)
    verdict = breadth_tasks.grid_tasks.alarm_against_previous.fn(STUDY, "g2", {"summary": []})
    assert verdict["fired"] is False and verdict["previous_grid"] is None
    assert artifacts[0]["description"] == "no collapse"


def test_alarm_compares_with_the_previous_grid_and_fails_the_run_on_a_collapse(
    artifacts, monkeypatch
):
    asked = []
    monkeypatch.setattr(breadth_tasks.grid_tasks, "previous_grid_id",
                        lambda uri, experiment, study_hash, grid_id: asked.append(
                            (experiment, study_hash, grid_id)) or "g1")
    monkeypatch.setattr(breadth_tasks.grid_tasks, "fetch_runs", lambda uri, grid_id: grid_id)
    monkeypatch.setattr(breadth_tasks.grid_tasks, "summary_of", lambda runs, study: _summary(0.8))
    steady = {"summary": _summary(0.78).to_dict(orient="records")}
    assert breadth_tasks.grid_tasks.alarm_against_previous.fn(STUDY, "g2", steady)["fired"] is False
    assert asked == [("study", STUDY.content_hash(), "g2")]
    collapsed = {"summary": _summary(0.3).to_dict(orient="records")}
    with pytest.raises(RuntimeError, match="collapse alarm: grid g2 vs g1"):
        breadth_tasks.grid_tasks.alarm_against_previous.fn(STUDY, "g2", collapsed)
    assert artifacts[-1]["description"] == "COLLAPSE ALARM"  # published before failing


class FakePipeline:
    """The pipeline subflow, answering with a real Prefect state; cells named in `failing` fail."""

    def __init__(self, failing: tuple[str, ...] = (), cached: tuple[str, ...] = ()):
        self.ran: list[tuple] = []
        self.failing = failing
        self.cached = cached  # cells whose every stage comes from the cache

    def with_options(self, flow_run_name):
        def run(config, tags, return_state):
            assert return_state  # a failed cell must come back as a state, not raise
            self.ran.append((flow_run_name, config.data.format, config.rl.reward.spec,
                             config.seed, tags))
            if tags["grid.cell"] in self.failing:
                return Failed(message=f"Flow run encountered an exception: RuntimeError: "
                                      f"{tags['grid.cell']} broke")
            if tags["grid.cell"] in self.cached:
                return Completed(data={"computed_stages": []})
            return Completed(data={"computed_stages": ["rl", "rollout-rl", "evaluate"]})

        return run


@pytest.fixture()
def grid_tasks(monkeypatch):
    """The grid's tasks replaced: what they were called with is recorded."""
    calls: dict[str, list] = {"summary": [], "claims": [], "alarm": []}
    monkeypatch.setattr(breadth_flows.grid_flow, "get_run_logger", lambda: logging.getLogger("test-grid"))
    monkeypatch.setattr(breadth_flows.grid_flow, "summarise_grid", lambda study, grid_id, outcomes: (
        calls["summary"].append(outcomes) or {"run_id": "sum"}))
    monkeypatch.setattr(breadth_flows.grid_flow, "alarm_against_previous", lambda study, grid_id, summary: (
        calls["alarm"].append(grid_id) or {"fired": False}))
    monkeypatch.setattr(breadth_flows.grid_flow, "publish_claims",
                        lambda study, grid_id, run_id, pilot, reference: (
                            calls["claims"].append((grid_id, run_id, pilot, reference))
                            or {"markdown": "| claims |"}))
    return calls


def test_grid_flow_runs_every_cell_with_its_tags_then_summary_and_alarm(monkeypatch, grid_tasks,
                                                                        caplog):
    fake = FakePipeline()
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", fake)
    study = STUDY.model_copy(update={"grid_id": "night-1"})
    with caplog.at_level(logging.INFO, logger="test-grid"):
        result = breadth_flows.grid_flow.grid.fn(study)
    assert result == {"grid_id": "night-1", "cells": 4, "summary_run": "sum",
                      "claims": "| claims |", "alarm": {"fired": False}}
    assert grid_tasks["claims"] == [("night-1", "sum", None, None)]  # the claims go on the summary run
    ran = fake.ran
    assert [(r[1], r[2], r[3]) for r in ran] == [
        ("mcq", "correctness", 0), ("mcq", "correctness", 1), ("mcq", "darling", 0),
        ("mcq", "darling", 1),
    ]
    assert ran[0][0] == "night-1-mcq-correctness-s0"
    assert ran[3][4] == {"grid.id": "night-1", "grid.cell": "mcq/darling/seed1",
                         "grid.objective": "darling", "grid.config_hash": study.content_hash()}
    progress = [r.message for r in caplog.records if r.message.startswith("cell ")]
    assert [line.split()[1] for line in progress] == ["1/4", "2/4", "3/4", "4/4"]
    assert "ETA" in progress[0] and progress[-1].endswith("all cells done")


def test_progress_waits_for_a_computed_cell_before_giving_an_eta(monkeypatch, grid_tasks,
                                                                 caplog):
    """A cached first cell took seconds; extrapolated, the ETA promised the rest in seconds."""
    fake = FakePipeline(cached=("mcq/correctness/seed0",))
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", fake)
    with caplog.at_level(logging.INFO, logger="test-grid"):
        breadth_flows.grid_flow.grid.fn(STUDY.model_copy(update={"grid_id": "night-3"}))
    progress = [r.message for r in caplog.records if r.message.startswith("cell ")]
    assert "COMPLETED at " in progress[0] and "all stages cached" in progress[0]
    assert progress[0].endswith("ETA unknown until a cell computes")
    assert "(cell " in progress[1] and "cached" not in progress[1]
    assert "ETA unknown" not in progress[1] and "; ETA " in progress[1]


def test_a_failed_cell_does_not_stop_the_others_and_the_summary_names_it(monkeypatch,
                                                                         grid_tasks):
    fake = FakePipeline(failing=("mcq/correctness/seed1",))
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", fake)
    with pytest.raises(breadth_flows.grid_flow.CellsFailed, match=r"1 of 4 cells .* mcq/correctness/seed1 "
                                                     r"\(FAILED\)"):
        breadth_flows.grid_flow.grid.fn(STUDY.model_copy(update={"grid_id": "night-2"}))
    assert len(fake.ran) == 4  # the cells after the failed one ran
    [outcomes] = grid_tasks["summary"]  # summary, claims and alarm still ran, once
    assert grid_tasks["claims"] == [("night-2", "sum", None, None)] and grid_tasks["alarm"] == ["night-2"]
    failed = [o for o in outcomes if not o.completed]
    assert [(o.cell, o.state) for o in failed] == [("mcq/correctness/seed1", "FAILED")]
    assert "mcq/correctness/seed1 broke" in failed[0].message


def test_a_grid_whose_cells_all_failed_names_them_and_summarises_nothing(monkeypatch,
                                                                         grid_tasks):
    cells = tuple(f"mcq/{r}/seed{s}" for r in ("correctness", "darling") for s in (0, 1))
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", FakePipeline(failing=cells))
    with pytest.raises(breadth_flows.grid_flow.CellsFailed, match="every cell of grid night-3 failed"):
        breadth_flows.grid_flow.grid.fn(STUDY.model_copy(update={"grid_id": "night-3"}))
    assert grid_tasks["summary"] == []


def test_grid_flow_validates_every_cell_before_running_any(monkeypatch):
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", None)  # would fail if a cell started
    with pytest.raises(ValueError, match="Did you mean"):
        breadth_flows.grid_flow.grid.fn(GridConfig(rewards=["correctness", "darlin"], seeds=[0]))


def test_the_studys_pilot_is_read_before_any_cell_and_reaches_the_claims(monkeypatch, grid_tasks,
                                                                        tmp_path):
    pilot = tmp_path / "pilot.json"
    pilot.write_text(json.dumps({"seeds": [{"Δ pass@1": 0.01}, {"Δ pass@1": 0.03}]}))
    fake = FakePipeline()
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", fake)
    breadth_flows.grid_flow.grid.fn(STUDY.model_copy(update={"grid_id": "night-p", "pilot": str(pilot)}))
    ((_, _, sizing, _),) = grid_tasks["claims"]
    assert sizing.source == str(pilot) and sizing.values["Δ pass@1"] == (0.01, 0.03)


def test_a_pilot_that_cannot_be_read_fails_the_grid_before_any_cell(monkeypatch, grid_tasks,
                                                                   tmp_path):
    fake = FakePipeline()
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", fake)
    missing = STUDY.model_copy(update={"grid_id": "night-m", "pilot": str(tmp_path / "no.json")})
    with pytest.raises(ValueError, match=r"study\.pilot: pilot sizing .*no\.json.*scripts/results/pilot\.py"):
        breadth_flows.grid_flow.grid.fn(missing)
    assert fake.ran == [] and grid_tasks["summary"] == []


def test_the_studys_reference_is_read_before_any_cell_and_reaches_the_claims(
        monkeypatch, grid_tasks, tmp_path):
    reference = tmp_path / "claims.json"
    reference.write_text(json.dumps([{"claim": "sharpening", "format": "mcq", "measure": "Δ",
                                      "verdict": "inconclusive", "detail": "underpowered"}]))
    fake = FakePipeline()
    monkeypatch.setattr(breadth_flows.grid_cells, "pipeline", fake)
    breadth_flows.grid_flow.grid.fn(STUDY.model_copy(update={"grid_id": "night-r",
                                                        "reference": str(reference)}))
    ((_, _, _, table),) = grid_tasks["claims"]
    assert table.source == str(reference) and table.rows[0]["detail"] == "underpowered"

    broken = STUDY.model_copy(update={"grid_id": "night-rb", "reference": str(tmp_path / "no")})
    fake.ran.clear()
    with pytest.raises(ValueError, match=r"study\.reference: reference table .*no: .*claims-out"):
        breadth_flows.grid_flow.grid.fn(broken)
    assert fake.ran == []


def test_the_pilot_is_not_part_of_what_the_study_is():
    """The alarm compares a night with the previous one of the same study (content_hash): a
    night that cites a pilot is still that study."""
    assert STUDY.model_copy(update={"pilot": "docs/results/pilot.json"}).content_hash() == (
        STUDY.content_hash())
    # Nor the fuller grid's table its left-out rows cite.
    reference = "docs/results/grids/full-grid-6abeba80/claims.json"
    assert STUDY.model_copy(update={"reference": reference}).content_hash() == (
        STUDY.content_hash())
