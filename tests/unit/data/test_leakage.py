"""No eval problem is a training problem in other words (#52): each task's data set at the sizes
its presets ask, prepared as a run prepares it, shares no problem key between eval and train or
GRPO's pool, and its manifest says so.

The keys here are written out per task, apart from the tasks' own `problem_key`, so a key that
is too fine (one that tells 3+5+7 from 7+5+3) fails here even where the splits agree with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from breadth import stages
from breadth.cli import app
from breadth.config import load_config
from breadth.data.expressions import canonical, parse_expression
from breadth.data.prepare import SYNTHETIC_NUM_EVAL, Manifest, read_rows
from breadth.training.grpo import grpo_rows
from tests.unit.data.synthetic_presets import SYNTHETIC_PRESETS


def reference_key(row: dict) -> str:
    """What a rendered row asks, up to the order its operands are written in."""
    meta = json.loads(row["meta"]) if row["meta"] else {}
    if row["task"] == "arithmetic":
        return canonical(parse_expression(row["question"]))
    if row["task"] == "chain":
        return repr(sorted(meta["numbers"]))
    return f"{sorted(meta['numbers'])}->{meta['target']}"  # countdown, pairs


@pytest.mark.parametrize("name", SYNTHETIC_PRESETS)
def test_no_eval_problem_is_in_train_or_grpo_pool(name, tmp_path) -> None:
    preset, overrides = SYNTHETIC_PRESETS[name]
    config = load_config(preset, overrides)
    manifest = stages.prepare_stage(config, tmp_path)
    train, evaluation = (read_rows(tmp_path / f"{split}.parquet") for split in ("train", "eval"))
    pool = grpo_rows(config.rl, Path(tmp_path))
    assert len(evaluation) == (config.data.num_eval or SYNTHETIC_NUM_EVAL)
    eval_keys = [reference_key(row) for row in evaluation]
    assert len(set(eval_keys)) == len(eval_keys), "an eval problem is there twice"
    assert set(eval_keys).isdisjoint(reference_key(row) for row in train)
    assert set(eval_keys).isdisjoint(reference_key(row) for row in pool)
    assert manifest.leakage == {"train": 0.0, "grpo_pool": 0.0}
    assert manifest.problems == {"train": len({reference_key(row) for row in train}),
                                 "eval": len(evaluation)}
    assert Manifest.read(tmp_path).leakage == manifest.leakage


def test_the_cli_prints_the_leakage_shares(tmp_path) -> None:
    result = CliRunner().invoke(app, ["prepare", "--out", str(tmp_path), "--source",
                                      "synthetic:chain", "--num-train", "300", "--num-eval", "30",
                                      "--difficulty", "2"])
    assert result.exit_code == 0, result.output
    assert ("300 train rows ask" in result.output
            and "30 eval rows 30; eval problems also in train: 0.000, in GRPO's pool: 0.000"
            in " ".join(result.output.split()))


def test_a_split_larger_than_the_key_space_is_refused_before_training(tmp_path) -> None:
    # Chain at difficulty 2 has 495 multisets of four digits; a fifth of them evaluate.
    config = load_config("study", ["data.source=synthetic:chain", "data.difficulty=2"])
    with pytest.raises(ValueError, match=r"chain at difficulty 2 holds only \d+ distinct "
                                         r"problems in the 'eval' split, and data.num_eval=128 "
                                         r"asks for more: lower data.num_eval .*multiset"):
        stages.prepare_stage(config, tmp_path)
