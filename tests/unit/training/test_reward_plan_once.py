"""A run parses its reward spec once: when its config is validated. The trainer, and with
rl.num_processes=2 each extra process (`breadth.training.grpo_worker` reading what
`breadth.training.launch.write_job` wrote), build from the config's resolved reward plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

from breadth.config import load_config
from breadth.rewards import spec as spec_module

SPEC = "correctness+ucb*0.5+batch"


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every spec parsed from now on: the parser is replaced wherever a module bound it."""
    parsed: list[str] = []
    original = spec_module.parse_reward_spec

    def counting(text: str) -> Any:
        parsed.append(text)
        return original(text)

    for module in [m for name, m in sys.modules.items() if name.startswith("breadth")]:
        if getattr(module, "parse_reward_spec", None) is original:
            monkeypatch.setattr(module, "parse_reward_spec", counting)
    return parsed


class _Trainer:
    """GRPOTrainer's place: records what it was given, trains nothing."""

    built: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        _Trainer.built.append(kwargs)
        self.model = None

    def remove_callback(self, callback: Any) -> None: ...
    def add_callback(self, callback: Any) -> None: ...
    def train(self, resume_from_checkpoint: Any = None) -> None: ...
    def save_model(self, path: str) -> None: ...
    def is_world_process_zero(self) -> bool:
        return False


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    row = {"prompt": "1+1=", "problem_id": "p", "answer": "2", "format": "free_form",
           "task": "arithmetic", "options": [], "letter": "", "meta": "{}", "split": "train"}
    pd.DataFrame([row]).to_parquet(folder / "train.parquet")
    return folder


@pytest.mark.parametrize("processes", [1, 2])
def test_a_run_parses_its_reward_spec_once(processes, tmp_path, monkeypatch):
    from breadth.training import grpo, grpo_worker, launch

    parsed = _count_parses(monkeypatch)
    monkeypatch.setattr(grpo, "_trainer_class", lambda advantage_terms: _Trainer)
    monkeypatch.setattr(grpo_worker, "load_policy", lambda path: (None, None))
    # No model here: the length check that reads its context is tested in test_grpo.
    monkeypatch.setattr(grpo, "_check_prompts_fit", lambda *args: None)
    _Trainer.built.clear()
    config = load_config("default", [f"rl.reward.spec={SPEC}", "rl.reward.batch_coef=0.25",
                                     f"rl.num_processes={processes}"])
    dataset = _dataset(tmp_path / "data")
    if processes == 1:
        grpo.train_grpo(None, None, grpo.grpo_rows(config.rl, dataset), config.rl,
                        output_dir=tmp_path / "out", seed=config.seed)
    else:
        # What each extra process runs: the job file the launcher writes, read by the worker.
        # Both run here, one after the other, not under torch.distributed.run: the process
        # count is not checked, and GRPOConfig sets up no process group.
        job = launch.write_job(config, dataset, tmp_path / "policy", tmp_path / "out", None)
        monkeypatch.setattr(grpo, "check_process_count", lambda rl: None)
        for _ in range(processes):
            grpo_worker.main([str(job)])
        assert "config" not in json.loads(job.read_text())  # the config travels pickled only
    assert parsed == [SPEC]
    assert len(_Trainer.built) == processes
    for built in _Trainer.built:
        assert [f.__name__ for f in built["reward_funcs"]] == ["correctness", "ucb", "batch"]
        assert built["args"].reward_weights == [1.0, 0.5, 1.0]
        assert built["reward_funcs"][2].coef == 0.25  # the config field, through the plan


def test_the_grpo_settings_a_reward_needs_come_from_its_plan(tmp_path, monkeypatch):
    from breadth.training import grpo

    monkeypatch.setattr(grpo, "_trainer_class", lambda advantage_terms: _Trainer)
    monkeypatch.setattr(grpo, "_check_prompts_fit", lambda *args: None)  # no model here
    _Trainer.built.clear()
    config = load_config("default", ["rl.reward.spec=passk:k=2"])
    assert config.rl.reward_plan.grpo_settings == {"scale_rewards": "none"}
    assert config.rl.scale_rewards == "none"  # set on the config, so its logged params say so
    grpo.train_grpo(None, None, grpo.grpo_rows(config.rl, _dataset(tmp_path / "data")),
                    config.rl, output_dir=tmp_path / "out", seed=0)
    assert _Trainer.built[0]["args"].scale_rewards == "none"
