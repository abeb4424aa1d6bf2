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
                                     "sft.epochs=1"])  # fmt: skip
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
