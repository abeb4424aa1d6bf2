"""The cache key of every stage of a pipeline run, from its config alone: what the pipeline
flow gives each task, and what `breadth grid --dry-run` looks up in the result storage."""

from __future__ import annotations

from breadth_tasks.common import content_key
from breadth_tasks.search import search_key

from breadth.config import PipelineConfig


def stage_keys(config: PipelineConfig) -> dict[str, str]:
    """{stage: cache key} in run order: prepare, init, sft and rl (when enabled), then per
    model `rollout-<model>` and `search-<model>` (when evaluation.search_budget > 0), evaluate.

    Each key hashes the code version, the stage's config slice and its inputs' keys, so a
    stage reruns exactly when something it reads changed.
    """
    seed = str(config.seed)
    data = content_key("prepare", config.content_hash("data"), seed)
    keys = {"prepare": data, "init": content_key("init", config.content_hash("model"), seed)}
    policy = keys["init"]
    models = {}
    if config.sft.enabled:
        policy = keys["sft"] = content_key("sft", policy, data, config.content_hash("sft"))
        models["sft"] = policy
    else:
        models["base"] = policy
    if config.rl.enabled:
        models["rl"] = keys["rl"] = content_key("rl", policy, data, config.content_hash("rl"))
    rollout_hash = config.content_hash("rollout")
    for name, model in models.items():
        keys[f"rollout-{name}"] = content_key("rollout", model, data, rollout_hash, seed)
    if config.evaluation.search_budget > 0:
        for name, model in models.items():
            keys[f"search-{name}"] = search_key(config, model, data)
    inputs = [key for stage, key in keys.items() if stage.startswith(("rollout-", "search-"))]
    keys["evaluate"] = content_key("evaluate", *inputs, config.content_hash("evaluation"), seed)
    return keys
