"""Prepare: problems -> rendered train/eval parquet, content-addressed in S3, logged to MLflow."""

from __future__ import annotations

import json

from prefect import task

from breadth.config import PipelineConfig
from breadth.stages import prepare_stage
from breadth.tracking.mlflow_sdk import log_dataset_input
from breadth.tracking.objects import ObjectStore
from breadth.tracking.runs import RunHandle
from tasks.common import (
    StageResult,
    child_run,
    exclusive_work_dir,
    retry_if_transient,
    stage_cache_key,
)


@task(name="prepare", retries=1, retry_condition_fn=retry_if_transient,
      cache_key_fn=stage_cache_key, persist_result=True)
def prepare(config: PipelineConfig, key: str, parent: RunHandle) -> StageResult:
    with child_run(parent, "prepare", key) as run, exclusive_work_dir(key) as out:
        manifest = prepare_stage(config, out)
        content_hash = manifest.content_hash
        store = ObjectStore.from_env()
        store.upload_dir(out, f"datasets/{content_hash}")
        run.log_params({f"data.{k}": v for k, v in config.data.model_dump().items()})
        counts = json.loads((out / "manifest.json").read_text())
        run.log_metrics({name: value for name, value in counts.items()
                         if isinstance(value, (int, float)) and not isinstance(value, bool)})
        run.log_artifact(out / "manifest.json")
        log_dataset_input(run, out / "train.parquet", name=f"train-{content_hash[:12]}",
                          source=store.uri(f"datasets/{content_hash}/train.parquet"))
        run.set_tags({"dataset.hash": content_hash})
        return StageResult("prepare", key, str(out), store.uri(f"datasets/{content_hash}"),
                           run.run_id, {"content_hash": content_hash})
