"""A deployment run (the Prefect UI, a schedule) checks its local files before it opens an MLflow
run: the CLI's check does not run there."""

from __future__ import annotations

import breadth_flows.pipeline
import pytest

from breadth.config import ConfigError, load_config


def test_a_missing_data_file_fails_the_run_before_its_mlflow_run_opens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    opened = []
    monkeypatch.setattr(breadth_flows.pipeline, "open_parent_run",
                        lambda config, tags: opened.append(config))
    config = load_config("default", ["data.source=jsonl:nowhere.jsonl"])
    with pytest.raises(ConfigError, match="data.source=jsonl:nowhere.jsonl.*does not exist"):
        breadth_flows.pipeline.run_pipeline(config)
    assert opened == []


def test_rows_that_do_not_fit_fail_the_run_before_its_mlflow_run_opens(monkeypatch):
    """A deployment run (no CLI check) of data that does not fit the model is refused too."""
    opened = []
    monkeypatch.setattr(breadth_flows.pipeline, "open_parent_run",
                        lambda config, tags: opened.append(config))
    config = load_config("default", ["data.reasoning=true", "data.num_train=50"])
    with pytest.raises(ConfigError, match=r"rl\.max_completion_length=8"):
        breadth_flows.pipeline.run_pipeline(config)
    assert opened == []
