"""breadth.training.grpo_worker around its training: it leaves its process group once training
is done, and keeps it when training raises (the run's reward plan: test_reward_plan_once.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist

from breadth.config import load_config
from breadth.training import grpo_worker, launch


def _job(tmp_path: Path) -> Path:
    config = load_config("default", ["rl.num_processes=2"])
    return launch.write_job(config, tmp_path / "data", tmp_path / "policy", tmp_path / "out",
                            None)


@pytest.fixture
def worker_without_training(monkeypatch):
    """grpo_worker.main with no model, rows or trainer: what it does around train_grpo."""
    monkeypatch.setattr(grpo_worker, "load_policy", lambda path: (None, None))
    monkeypatch.setattr(grpo_worker, "grpo_rows", lambda rl, folder: [])


def test_a_worker_leaves_its_group_once_training_is_done(group_of_one, tmp_path, monkeypatch,
                                                         worker_without_training):
    trained = []
    monkeypatch.setattr(grpo_worker, "train_grpo",
                        lambda *args, **kwargs: trained.append(dist.is_initialized()))
    grpo_worker.main([str(_job(tmp_path))])
    assert trained == [True]  # the group was there while it trained
    assert not dist.is_initialized()


def test_a_worker_whose_training_fails_keeps_its_group_and_raises(group_of_one, tmp_path,
                                                                  monkeypatch,
                                                                  worker_without_training):
    # Leaving could wait on a peer stuck in a collective; the launcher stops the others instead.
    def fails(*args, **kwargs):
        raise RuntimeError("a step failed")

    monkeypatch.setattr(grpo_worker, "train_grpo", fails)
    with pytest.raises(RuntimeError, match="a step failed"):
        grpo_worker.main([str(_job(tmp_path))])
    assert dist.is_initialized()
