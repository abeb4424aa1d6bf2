"""Prepare: problems -> rendered train/eval parquet, content-addressed in S3, logged to MLflow."""

from __future__ import annotations

import json

from breadth_tasks.common import (
    StageResult,
    child_run,
    exclusive_work_dir,
    retry_if_transient,
    stage_cache_key,
)
from prefect import task

from breadth.config import PipelineConfig
from breadth.stages import prepare_stage
from breadth.tracking.datasets import dataset_inputs
from breadth.tracking.objects import ObjectStore
from breadth.tracking.runs import RunHandle


@task(name="prepare", retries=1, retry_condition_fn=retry_if_transient,
      cache_key_fn=stage_cache_key, persist_result=True)
def prepare(config: PipelineConfig, key: str, parent: RunHandle) -> StageResult:
    with child_run(parent, "prepare", key) as run, exclusive_work_dir(key) as out:
        manifest = prepare_stage(config, out)
        content_hash = manifest.content_hash
        store = ObjectStore.from_env()
        store.upload_dir(out, f"datasets/{content_hash}")
        run.log_params({f"data.{k}": v for k, v in config.data.model_dump().items()})
        params, metrics = manifest_params_and_metrics(json.loads((out / "manifest.json").read_text()))
        run.log_params(params)
        run.log_metrics(metrics)
        run.log_artifact(out / "manifest.json")
        folder_uri = store.uri(f"datasets/{content_hash}")
        run.log_inputs(dataset_inputs(config.data.source, config.data.eval_source,
                                      manifest.files, folder_uri, content_hash))
        run.set_tags({"dataset.hash": content_hash})
        # The files' hashes and rows travel with the result: the parent run logs them as its
        # dataset inputs on a cache hit too, without reading the data set.
        return StageResult("prepare", key, str(out), folder_uri, run.run_id,
                           {"content_hash": content_hash, "files": manifest.files})


# Manifest fields that restate settings (the seed, the difficulty and eval share it was made
# with, the manifest's format version): params, not metrics. Logged as metrics they showed
# up as charts of constants, beside the counts.
MANIFEST_PARAMS = ("seed", "difficulty", "eval_fraction", "version", "split_origin")


def manifest_params_and_metrics(manifest: dict) -> tuple[dict[str, str], dict[str, float]]:
    """The prepare run's params (`manifest.<field>`) and metrics (what was counted: rows per
    split written and available, bad rows skipped, duplicates dropped) from its manifest."""
    params = {f"manifest.{name}": str(manifest.get(name)) for name in MANIFEST_PARAMS}
    metrics = {name: float(manifest[name]) for name in ("bad_rows_count", "duplicates_dropped")}
    for group, prefix in (("counts", "rows"), ("available", "available")):
        metrics.update({f"{prefix}/{split}": float(n)
                        for split, n in (manifest.get(group) or {}).items()})
    return params, metrics
