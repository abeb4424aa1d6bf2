"""Rollouts: n samples per evaluation problem from one policy -> parquet in S3 and MLflow."""

from __future__ import annotations

from breadth_tasks.common import (
    StageResult,
    child_run,
    exclusive_work_dir,
    retry_if_transient,
    stage_cache_key,
)
from prefect import task

from breadth.config import PipelineConfig
from breadth.preflight.costs import measured
from breadth.rollout.sample_table import rollout_samples
from breadth.stages import rollout_stage
from breadth.tracking.objects import ObjectStore
from breadth.tracking.runs import RunHandle
from breadth.tracking.tables import log_table


@task(name="rollout", retries=1, retry_condition_fn=retry_if_transient,
      cache_key_fn=stage_cache_key, persist_result=True, task_run_name="rollout-{model_name}")
def rollout(
    config: PipelineConfig, key: str, parent: RunHandle, dataset: StageResult,
    policy: StageResult, model_name: str,
) -> StageResult:
    with child_run(parent, f"rollout-{model_name}", key) as run, exclusive_work_dir(key) as out:
        run.log_params({f"rollout.{k}": v for k, v in config.rollout.model_dump().items()})
        with measured(config, f"rollout-{model_name}", dataset.ensure_local()):
            path = rollout_stage(config, dataset.ensure_local(), policy.ensure_local(),
                                 model_name, out / f"{model_name}.parquet")
        uri = ObjectStore.from_env().upload_file(path, f"runs/{parent.run_id}/rollouts/{path.name}")
        run.log_artifact(path, "rollouts")
        # What the model wrote, readable in MLflow's UI beside the metrics, and how its
        # prompts were rendered (chat template and its hash, or raw).
        samples = rollout_samples(path, policy.ensure_local(), config.model, seed=config.seed)
        log_table(run.tracking, run.run_id, samples.rows, f"samples/rollout-{model_name}.json")
        run.set_tags({"rollouts.s3_uri": uri, **samples.chat})
        return StageResult(f"rollout-{model_name}", key, str(path), uri, run.run_id,
                           {"model_name": model_name})
