"""Model stages: the base policy, the SFT warm start and GRPO, each logged as an MLflow model."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from breadth.config import PipelineConfig
from breadth.stages import init_model_stage, rl_stage, sft_stage
from breadth.tracking.objects import ObjectStore
from breadth.tracking.runs import MetricBuffer, RunHandle, log_transformers_model
from tasks.common import StageResult, child_run, stage_cache_key, work_dir


@task(name="init-model", retries=1, cache_key_fn=stage_cache_key, persist_result=True)
def init_model(config: PipelineConfig, key: str) -> StageResult:
    out = init_model_stage(config, work_dir(key) / "model")
    return StageResult("init-model", key, str(out), "", "", {})


def _finish_model_stage(
    stage: str, config: PipelineConfig, key: str, run: RunHandle, parent: RunHandle,
    model_dir: Path,
) -> StageResult:  # fmt: skip
    store = ObjectStore.from_env()
    prefix = f"runs/{parent.run_id}/models/{stage}"
    store.upload_dir(model_dir, prefix)
    uri = store.uri(prefix)
    model_uri = log_transformers_model(run, model_dir) if config.tracking.log_models else ""
    run.set_tags({"model.s3_uri": uri, "model.mlflow_uri": model_uri})
    run.finish()
    return StageResult(stage, key, str(model_dir), uri, run.run_id, {"model_uri": model_uri})


@task(name="sft", retries=0, cache_key_fn=stage_cache_key, persist_result=True)
def sft(
    config: PipelineConfig, key: str, parent: RunHandle, dataset: StageResult, base: StageResult
) -> StageResult:
    run = child_run(parent, "sft", key)
    run.log_params({f"sft.{k}": v for k, v in config.sft.model_dump().items()})
    metrics = MetricBuffer(run)
    model_dir = sft_stage(config, dataset.ensure_local(), base.ensure_local(), work_dir(key),
                          log_metric=metrics)  # fmt: skip
    metrics.flush()
    return _finish_model_stage("sft", config, key, run, parent, model_dir)


@task(name="rl", retries=0, cache_key_fn=stage_cache_key, persist_result=True)
def rl(
    config: PipelineConfig, key: str, parent: RunHandle, dataset: StageResult,
    policy: StageResult,
) -> StageResult:  # fmt: skip
    run = child_run(parent, "rl", key)
    run.log_params(
        {k: v for k, v in config.flat().items() if k.startswith("rl.")}
    )
    store = ObjectStore.from_env()

    def upload_checkpoint(folder: Path, step: int) -> None:
        store.upload_dir(folder, f"runs/{parent.run_id}/checkpoints/rl/step-{step}")

    metrics = MetricBuffer(run)
    model_dir = rl_stage(config, dataset.ensure_local(), policy.ensure_local(), work_dir(key),
                         log_metric=metrics, on_checkpoint=upload_checkpoint)  # fmt: skip
    metrics.flush()
    return _finish_model_stage("rl", config, key, run, parent, model_dir)
