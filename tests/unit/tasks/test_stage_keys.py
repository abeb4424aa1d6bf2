"""Stage cache keys from the config alone: each stage's key moves exactly when something it
reads changes, and the pipeline flow hands every task the key `stage_keys` gives it."""

from __future__ import annotations

import breadth_flows.pipeline
import pytest
from breadth_tasks.common import StageResult
from breadth_tasks.stage_keys import stage_keys

from breadth.config import load_config

ALL = {"prepare", "init", "sft", "rl", "rollout-sft", "rollout-rl", "search-sft", "search-rl",
       "evaluate"}


@pytest.mark.parametrize(("override", "changed"), [
    ("seed=1", ALL),
    ("rl.max_steps=9", {"rl", "rollout-rl", "search-rl", "evaluate"}),
    # The SFT warm start is shared across the reward specs of a grid.
    ("rl.reward.spec=correctness+ucb", {"rl", "rollout-rl", "search-rl", "evaluate"}),
    ("sft.learning_rate=0.002", ALL - {"prepare", "init"}),
    ("rollout.num_samples=8", {"rollout-sft", "rollout-rl", "search-sft", "search-rl",
                               "evaluate"}),
    ("evaluation.bootstrap_samples=50", {"evaluate"}),
    ("evaluation.search_budget=8", {"search-sft", "search-rl", "evaluate"}),
])
def test_a_change_moves_the_keys_of_exactly_the_stages_that_read_it(override, changed):
    before = stage_keys(load_config("default", ["evaluation.search_budget=16"]))
    after = stage_keys(load_config("default", ["evaluation.search_budget=16", override]))
    assert set(before) == set(after) == ALL
    assert {stage for stage in before if before[stage] != after[stage]} == changed


def test_the_stages_follow_what_is_enabled():
    keys = stage_keys(load_config("default", ["sft.enabled=false", "evaluation.search_budget=0"]))
    assert list(keys) == ["prepare", "init", "rl", "rollout-base", "rollout-rl", "evaluate"]
    assert all(key.startswith(stage.split("-")[0]) for stage, key in keys.items())


class _Parent:
    run_id = "parent"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def set_tags(self, tags):
        pass

    def log_inputs(self, datasets):
        pass

    def url(self):
        return "url"


def test_the_flow_gives_each_task_its_key(monkeypatch):
    config = load_config("default", ["evaluation.search_budget=16"])
    given = {}

    def stage(name):
        def run(config, key, *args):
            stage_name = f"{name}-{args[-1]}" if name in {"rollout", "search"} else name
            given[stage_name] = key
            return StageResult(stage_name, key, "", "", "", {"content_hash": "", "metrics": {}})
        return run

    for name, task in [("prepare", "prepare"), ("init", "init_model"), ("sft", "sft"),
                       ("rl", "rl"), ("rollout", "rollout"), ("search", "search"),
                       ("evaluate", "evaluate")]:
        monkeypatch.setattr(breadth_flows.pipeline, task, stage(name))
    monkeypatch.setattr(breadth_flows.pipeline, "open_parent_run", lambda config, tags: _Parent())
    monkeypatch.setattr(breadth_flows.pipeline, "publish_report", lambda parent, evaluation: "report")
    breadth_flows.pipeline.run_pipeline(config)
    assert given == stage_keys(config)
