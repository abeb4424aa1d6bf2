"""Progress of long stages: a bar with an ETA, and log lines at every tenth of the work (what a
Prefect flow run's log shows), search included."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from breadth import stages
from breadth.config import load_config
from breadth.data.formats import render_free_form
from breadth.data.generators import generate_arithmetic
from breadth.display.progress import StageBar
from tests.unit.test_stages import ScriptedBackend


def test_a_bar_logs_each_tenth_with_an_eta_and_the_end(caplog):
    caplog.set_level(logging.INFO, logger="breadth.display.progress")
    with StageBar("rollout sft", total=200, unit="sample") as bar:
        for _ in range(40):
            bar.update(5)
    lines = [r.getMessage() for r in caplog.records if r.name == "breadth.display.progress"]
    assert len(lines) == 11, lines
    assert lines[0].startswith("rollout sft: 20/200 samples (10%), ")
    assert "ETA" in lines[0]
    assert lines[-2].startswith("rollout sft: 200/200 samples (100%)")
    assert lines[-1].startswith("rollout sft: finished, 200 samples in ")


def test_a_quiet_bar_logs_nothing(caplog):
    caplog.set_level(logging.INFO, logger="breadth.display.progress")
    with StageBar("x", total=10, unit="sample", show=False) as bar:
        bar.update(10)
    assert not caplog.records


def test_search_reports_its_progress_in_samples(tmp_path, monkeypatch, caplog):
    rows = [render_free_form(r) for r in generate_arithmetic(6, seed=0, difficulty=1, split="eval")]
    pd.DataFrame(rows).to_parquet(tmp_path / "eval.parquet", index=False)
    # Wrong answers only: no problem stops early, so every sample of the budget is drawn.
    backend = ScriptedBackend({})
    monkeypatch.setattr("breadth.rollout.backends.rollout_backend", lambda config: backend)
    caplog.set_level(logging.INFO, logger="breadth.display.progress")
    config = load_config("default", ["evaluation.search_budget=8"])
    stages.search_stage(config, tmp_path, Path("policy"), "sft")
    lines = [r.getMessage() for r in caplog.records if r.name == "breadth.display.progress"]
    # Evolution and independent sampling: 8 samples per problem each, 96 in all.
    assert any(line.startswith("search sft: 96/96 samples (100%)") for line in lines), lines
    assert lines[-1].startswith("search sft: finished, 96 samples in ")
    assert len(lines) >= 5  # several steps along the way, not only the end
