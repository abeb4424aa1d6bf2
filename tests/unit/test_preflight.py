"""Local files a config names are checked before anything starts (breadth.preflight)."""

from __future__ import annotations

import pytest

from breadth.config import ConfigError, load_config
from breadth.preflight import check_local_paths, missing_local_paths


def _config(*overrides: str):
    return load_config("default", list(overrides))


def test_files_and_folders_that_are_there_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.jsonl").write_text("{}\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "hub-copy").mkdir()
    config = _config("data.source=jsonl:train.jsonl", "data.eval_source=hf:./hub-copy",
                     "model.name_or_path=./model", "sft.enabled=false", "rl.enabled=false")  # fmt: skip
    assert missing_local_paths(config) == []
    # Hub ids are not paths: whether the cache holds them is the loader's to say.
    assert missing_local_paths(_config("data.source=hf:openai/gsm8k:main",
                                       "model.name_or_path=Qwen/Qwen3-0.6B")) == []  # fmt: skip


def test_every_missing_path_is_named_with_its_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty-model").mkdir()
    config = _config("data.source=parquet:gone.parquet", "data.eval_source=hf:/no/such/dir",
                     "model.name_or_path=./empty-model", "sft.enabled=false",
                     "rl.enabled=false")  # fmt: skip
    problems = missing_local_paths(config)
    assert len(problems) == 3
    assert problems[0].startswith("data.source=parquet:gone.parquet:") and "does not exist" in problems[0]
    assert problems[1].startswith("data.eval_source=hf:/no/such/dir:")
    assert "model.name_or_path=./empty-model" in problems[2] and "has no config.json" in problems[2]
    with pytest.raises(ConfigError, match="gone.parquet.*no/such/dir.*empty-model"):
        check_local_paths(config)


def test_a_tilde_path_is_checked_as_the_loaders_read_it(tmp_path, monkeypatch):
    """The loaders do not expand ~: the check must not either, or it passes a path that then
    fails inside the prepare task, after the stack started."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.jsonl").write_text("{}\n")
    problems = missing_local_paths(_config("data.source=jsonl:~/train.jsonl"))
    assert len(problems) == 1 and "does not exist" in problems[0]
