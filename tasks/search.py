"""Search: evolutionary search vs independent sampling for one policy, its own cached stage."""

from __future__ import annotations

import json

from breadth_tasks.common import (
    StageResult,
    child_run,
    content_key,
    exclusive_work_dir,
    retry_if_transient,
    stage_cache_key,
)
from prefect import task

from breadth.config import PipelineConfig
from breadth.preflight.costs import measured
from breadth.stages import search_stage
from breadth.tracking.runs import RunHandle


def search_key(config: PipelineConfig, policy_key: str, data_key: str) -> str:
    """What search reads: the policy, the data, the sampling settings and the search settings
    (not the bootstrap settings of the evaluation, which search does not use)."""
    settings = {name: value for name, value in config.evaluation.model_dump().items()
                if name.startswith("search_")}
    return content_key("search", policy_key, data_key, config.content_hash("rollout"),
                       json.dumps(settings, sort_keys=True), str(config.seed))


@task(name="search", retries=1, retry_condition_fn=retry_if_transient,
      cache_key_fn=stage_cache_key, persist_result=True, task_run_name="search-{model_name}")
def search(
    config: PipelineConfig, key: str, parent: RunHandle, dataset: StageResult,
    policy: StageResult, model_name: str,
) -> StageResult:
    with child_run(parent, f"search-{model_name}", key) as run, exclusive_work_dir(key) as out:
        with measured(config, f"search-{model_name}", dataset.ensure_local()) as drawn:
            comparison = search_stage(config, dataset.ensure_local(), policy.ensure_local(),
                                      model_name)
            drawn["samples"] = sum(comparison.evolutionary.samples_spent
                                   + comparison.independent.samples_spent)
        path = out / "search.json"
        path.write_text(json.dumps(comparison.to_dict(), indent=1))
        run.log_metrics(comparison.metrics())
    # No S3 copy: what later stages read travels in `info` (the result Prefect caches).
    return StageResult(f"search-{model_name}", key, str(path), "", run.run_id,
                       {"model_name": model_name, "comparison": comparison})
