"""Model stages: the base policy, the SFT warm start and GRPO, each logged as an MLflow model."""

from __future__ import annotations

from pathlib import Path

from breadth_tasks.common import (
    StageResult,
    child_run,
    exclusive_work_dir,
    log_model,
    retry_if_transient,
    stage_cache_key,
    upload_stage_output,
)
from prefect import get_run_logger, task

from breadth.config import PipelineConfig
from breadth.models.gguf import source_tags
from breadth.preflight.costs import measured
from breadth.stages import init_model_stage, rl_stage, sft_stage
from breadth.tracking.objects import ObjectStore, ObjectStoreError
from breadth.tracking.runs import MetricBuffer, RunHandle
from breadth.tracking.uploads import BackgroundLane, with_retries
from breadth.training.checkpointing import (
    OUTPUT_COMPLETE,
    checkpoint_folders,
    checkpoint_step,
    damage,
    fetch_newest_checkpoint,
    is_complete_output,
    logged_history,
    marker_files,
    newest_whole_checkpoint,
    remote_checkpoints,
    write_marker,
)
from breadth.training.learning_signal import WATCHED, no_learning_signal


@task(name="init-model", retries=1, retry_condition_fn=retry_if_transient,
      cache_key_fn=stage_cache_key, persist_result=True)
def init_model(config: PipelineConfig, key: str) -> StageResult:
    with exclusive_work_dir(key) as folder:
        out = init_model_stage(config, folder / "model")
        # Its S3 copy lets a cache hit on a fresh worker fetch it (it has no MLflow run).
        uri = upload_stage_output(config, out, f"stages/{key}/model")
    # This stage has no MLflow run: the flow tags the parent with the weights' source.
    return StageResult("init-model", key, str(out), uri, "", {"tags": source_tags(out)})


def _finish_model_stage(
    stage: str, config: PipelineConfig, key: str, run: RunHandle, parent: RunHandle,
    model_dir: Path,
) -> StageResult:
    uri = upload_stage_output(config, model_dir, f"runs/{parent.run_id}/models/{stage}")
    run.set_tags({"model.s3_uri": uri})
    # In the flow the MLflow model is logged while the next stage runs ("" here, then).
    model_uri = log_model(run, model_dir) if config.tracking.log_models else ""
    return StageResult(stage, key, str(model_dir), uri, run.run_id, {"model_uri": model_uri})


@task(name="sft", retries=0, cache_key_fn=stage_cache_key, persist_result=True)
def sft(
    config: PipelineConfig, key: str, parent: RunHandle, dataset: StageResult, base: StageResult
) -> StageResult:
    with exclusive_work_dir(key) as folder, child_run(parent, "sft", key) as run:
        run.log_params({f"sft.{k}": v for k, v in config.sft.model_dump().items()})
        model_dir = folder / "final"
        if is_complete_output(model_dir):  # a run of the same config finished it meanwhile
            run.set_tags({"breadth.reused_output": str(model_dir)})
        else:
            # Metrics go to MLflow from a background lane, as GRPO's do: a flush never holds
            # up a training step; the lane is joined before the output is marked complete.
            with BackgroundLane("MLflow metrics", config.tracking.upload_retry_s) as writes:
                metrics = MetricBuffer(run, lane=writes)
                with measured(config, "sft", dataset.ensure_local()):  # this machine's pace
                    sft_stage(config, dataset.ensure_local(), base.ensure_local(), folder,
                              log_metric=metrics)
                metrics.flush()
            write_marker(model_dir, OUTPUT_COMPLETE)
        return _finish_model_stage("sft", config, key, run, parent, model_dir)


def _resume_point(store: ObjectStore, prefix: str, folder: Path, run: RunHandle) -> Path | None:
    """The newest whole local checkpoint, else the newest whole one in S3; each fallback is
    said in the log and on the run."""
    resume_from, notes = newest_whole_checkpoint(folder)
    if resume_from is None:
        fetched, fetch_notes = fetch_newest_checkpoint(store, prefix, folder)
        resume_from, notes = fetched, notes + fetch_notes
    # S3 copies newer than the resume point are superseded: training writes them again.
    resumed_step = checkpoint_step(resume_from) if resume_from is not None else 0
    for name in remote_checkpoints(store, prefix):
        if (checkpoint_step(Path(name)) or 0) > resumed_step:
            store.delete_folder(f"{prefix}/{name}")
            notes.append(f"deleted the S3 copy of {name}: training from step {resumed_step} "
                         "writes it again")
    for note in notes:
        get_run_logger().warning(note)
    if notes:
        run.set_tags({"checkpoint.notes": " | ".join(notes)[:5000]})
    if resume_from is not None:
        run.set_tags({"checkpoint.resumed_from": resume_from.name})
    return resume_from


def _verify_checkpoints_in_s3(store: ObjectStore, prefix: str, folder: Path, config: PipelineConfig) -> int:
    """Every whole local checkpoint is in S3 with the same size and sha256 (uploading what is
    missing, e.g. what a killed run never sent); returns how many were checked."""
    checkpoints = [path for path in checkpoint_folders(folder) if damage(path) is None]
    for checkpoint in checkpoints:
        target = f"{prefix}/{checkpoint.name}"

        def upload_and_verify(checkpoint: Path = checkpoint, target: str = target) -> None:
            # The marker's hashes were just re-checked against the files (damage() above).
            known = marker_files(checkpoint)
            if not store.missing_or_different(checkpoint, target, known):
                return
            store.upload_dir(checkpoint, target)
            wrong = store.missing_or_different(checkpoint, target, known)
            if wrong:
                raise ObjectStoreError(f"{store.uri(target)} does not match {checkpoint}: {wrong}")

        with_retries(f"verification of {target}", upload_and_verify,
                     give_up_after_s=config.tracking.upload_retry_s)
    return len(checkpoints)


@task(name="rl", retries=0, cache_key_fn=stage_cache_key, persist_result=True)
def rl(
    config: PipelineConfig, key: str, parent: RunHandle, dataset: StageResult,
    policy: StageResult,
) -> StageResult:
    store = ObjectStore.from_env()
    # One prefix per training (its content key): a resumed run adds to the same checkpoints.
    prefix = f"checkpoints/{key}"
    with exclusive_work_dir(key) as folder, child_run(parent, "rl", key) as run:
        run.log_params({k: v for k, v in config.flat().items() if k.startswith("rl.")})
        run.set_tags({"checkpoint.s3_prefix": store.uri(prefix)})
        model_dir = folder / "final"
        if is_complete_output(model_dir):  # a run of the same config finished it meanwhile
            run.set_tags({"breadth.reused_output": str(model_dir)})
        else:
            retry_s = config.tracking.upload_retry_s
            with BackgroundLane("S3 upload", retry_s) as uploads, \
                    BackgroundLane("MLflow metrics", retry_s) as writes:
                metrics = MetricBuffer(run, lane=writes)
                watched: dict[str, list[float]] = {name: [] for name in WATCHED}

                def log_metric(name: str, value: float, step: int) -> None:
                    if name in watched:  # for the learning-signal check at the end
                        watched[name].append(value)
                    metrics(name, value, step)

                resume_from = _resume_point(store, prefix, folder, run)
                if resume_from is not None:
                    # The killed run's metrics may not all have reached MLflow: this run carries
                    # the whole history, step 1 to the end.
                    for name, value, step in logged_history(resume_from):
                        log_metric(name, value, step)

                def on_checkpoint(checkpoint: Path, step: int) -> None:
                    # The run shows its progress at every checkpoint (a resumed run replays the
                    # history anyway); the upload queues, training goes on.
                    metrics.flush()
                    uploads.submit(f"upload of {checkpoint.name} to {prefix}",
                                   lambda: store.upload_dir(checkpoint, f"{prefix}/{checkpoint.name}"))

                # A resumed training's time covers part of its steps: not a pace.
                with measured(config, "rl", dataset.ensure_local(), record=resume_from is None):
                    rl_stage(config, dataset.ensure_local(), policy.ensure_local(), folder,
                             log_metric=log_metric, on_checkpoint=on_checkpoint,
                             resume_from=resume_from)
                metrics.flush()
                if warning := no_learning_signal(watched):
                    # The run finishes (its model is valid), but says so where users look.
                    get_run_logger().warning(warning)
                    run.set_tags({"rl.learning_signal": "none", "breadth.warning": warning})
            write_marker(model_dir, OUTPUT_COMPLETE)
        checked = _verify_checkpoints_in_s3(store, prefix, folder, config)
        run.set_tags({"checkpoint.verified_in_s3": checked})
        return _finish_model_stage("rl", config, key, run, parent, model_dir)
