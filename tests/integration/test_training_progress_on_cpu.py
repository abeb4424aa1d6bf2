"""A real SFT run of the tiny model shows one progress bar and no per-step log dicts; every
step's log is in the stage's work dir (train_log.jsonl)."""

from __future__ import annotations

import json

import pytest

from breadth.config import load_config

pytestmark = pytest.mark.integration


def test_sft_prints_one_bar_and_logs_every_step_to_the_work_dir(tmp_path, capfd):
    from breadth.models.tiny import load_policy
    from breadth.stages import init_model_stage, prepare_stage, read_rows
    from breadth.training.sft import train_sft
    from breadth.training.trainer_setup import TRAIN_LOG

    config = load_config("default", ["data.num_train=12", "data.num_eval=2", "sft.batch_size=4",
                                     "sft.epochs=1"])
    prepare_stage(config, tmp_path / "data")
    init_model_stage(config, tmp_path / "base")
    model, tokenizer = load_policy(tmp_path / "base")
    rows = read_rows(tmp_path / "data" / "train.parquet")
    capfd.readouterr()
    train_sft(model, tokenizer, rows, config.sft, output_dir=tmp_path / "sft", seed=0)
    printed = "".join(capfd.readouterr())
    logged = [json.loads(line) for line in (tmp_path / "sft" / TRAIN_LOG).read_text().splitlines()]
    steps = len(rows) // 4
    assert [entry["step"] for entry in logged if "loss" in entry] == list(range(1, steps + 1))
    assert "train_runtime" in logged[-1]  # the trainer's closing summary is in the file too
    assert "sft: 100%" in printed and f"{steps}/{steps}" in printed and "loss=" in printed
    assert "'loss'" not in printed and "grad_norm" not in printed and "train_runtime" not in printed


def test_sft_takes_the_steps_the_dry_run_plans_and_logs_its_progress(tmp_path, caplog):
    """A short last batch and a fractional epoch count: 10 problems in batches of 4 for 1.5
    epochs is ceil(3 x 1.5) = 5 steps, as `breadth run --dry-run` says."""
    import logging

    from breadth.models.tiny import load_policy
    from breadth.preflight.costs import plan
    from breadth.stages import init_model_stage, prepare_stage, read_rows
    from breadth.training.sft import train_sft
    from breadth.training.trainer_setup import TRAIN_LOG

    config = load_config("default", ["data.num_train=10", "data.num_eval=2", "sft.batch_size=4",
                                     "sft.epochs=1.5"])
    prepare_stage(config, tmp_path / "data")
    init_model_stage(config, tmp_path / "base")
    model, tokenizer = load_policy(tmp_path / "base")
    rows = read_rows(tmp_path / "data" / "train.parquet")
    caplog.set_level(logging.INFO, logger="breadth.display.progress")
    train_sft(model, tokenizer, rows, config.sft, output_dir=tmp_path / "sft", seed=0)
    logged = [json.loads(line) for line in (tmp_path / "sft" / TRAIN_LOG).read_text().splitlines()]
    trained = max(entry["step"] for entry in logged)
    assert trained == plan(config, num_train=len(rows), num_eval=2)[0].steps == 5
    lines = [r.getMessage() for r in caplog.records if r.name == "breadth.display.progress"]
    assert any(line.startswith("sft: 5/5 steps (100%)") for line in lines), lines
