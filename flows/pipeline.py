"""The pipeline flow: prepare -> SFT -> GRPO -> rollouts and search (SFT and RL) -> evaluation
-> report.

Each stage is a cached Prefect task keyed on content (its config slice and its inputs' keys),
so a re-run with nothing changed is served from the cache; each is a child MLflow run of one
parent run per flow run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from breadth_flows.flow_run_display import breadth_logs_in_run_log, label_flow_run
from breadth_tasks.common import StageResult, models_logged_in_background
from breadth_tasks.evaluate import evaluate, publish_report
from breadth_tasks.prepare import prepare
from breadth_tasks.rollout import rollout
from breadth_tasks.search import search
from breadth_tasks.stage_keys import stage_keys
from breadth_tasks.tracking import open_parent_run, run_name, tag_stage_origins
from breadth_tasks.train import init_model, rl, sft
from prefect import flow, get_run_logger, runtime
from prefect.exceptions import MissingContextError
from prefect.logging import get_logger

from breadth.config import PipelineConfig, available_presets
from breadth.config.run_form import PipelineConfigForm, config_from_form
from breadth.preflight.checks import check_fit, check_local_paths
from breadth.preflight.costs import log_plan
from breadth.rollout.vllm_pool import kept_vllm_servers
from breadth.tracking.datasets import dataset_inputs
from breadth.tracking.names import CACHED_MARK, run_tags
from breadth.tracking.run_log import StageLog, config_summary, log

# The form's preset picker: a drop-down of the presets shipped with the package.
PresetName = Literal[tuple(available_presets())]  # type: ignore[valid-type]


@flow(name="breadth-pipeline", validate_parameters=True)
def pipeline(
    preset: PresetName = "default",  # type: ignore[valid-type]
    config: PipelineConfigForm = PipelineConfigForm(),  # type: ignore[valid-type]  # noqa: B008 - the UI form's defaults
    tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the whole pipeline for one config (the Prefect UI renders it as a form).

    Args:
        preset: Start from this preset: every `config` field you fill in overrides it,
            whatever its value; a field left empty (None) takes the preset's.
        config: Every setting of every stage, each empty by default: the preset's value.
        tags: Extra MLflow tags for the parent run (the grid flow marks its cells with them).
    """
    with breadth_logs_in_run_log():
        return run_pipeline(config_from_form(preset, config), tags)


def _warn(message: str) -> None:
    """To the flow run's log (the Prefect UI), or this module's outside a flow run."""
    try:
        logger = get_run_logger()
    except MissingContextError:
        logger = get_logger(__name__)
    logger.warning(message)


def run_pipeline(config: PipelineConfig, extra_tags: dict[str, str] | None = None) -> dict[str, Any]:
    check_local_paths(config)  # a deployment run's files, before an MLflow run opens
    # Rows that do not fit the model or the completion budgets, refused before anything runs
    # (the CLI checked already; a deployment run has not); what it found tags the run.
    fit = check_fit(config)
    for key, line in (fit.characters.summary() if fit.characters else {}).items():
        _warn(f"{key}: {line}")
    parent = open_parent_run(config, extra_tags)
    name = run_name(config, extra_tags or {})
    log.info("%s", config_summary(config, name))
    # A grid cell keeps the name its grid gave it; a lone run takes its MLflow parent's.
    grid_cell = "grid.id" in (extra_tags or {})
    label_flow_run(None if grid_cell else name, run_tags(config))
    stage_log = StageLog(parent)
    # FINISHED, or FAILED / KILLED with the error, on every path (after the queued MLflow
    # models are logged); a vLLM server started for a model serves its rollouts and its
    # search, and stops with the run.
    with parent, kept_vllm_servers(), models_logged_in_background(config):
        parent.set_tags(fit.tags())
        keys = stage_keys(config)

        def done(result: StageResult) -> StageResult:
            stage_log.finished(result.stage, result.mlflow_run_id, result.key)
            return result

        dataset = done(prepare(config, keys["prepare"], parent))
        parent.set_tags({"dataset.hash": dataset.info["content_hash"]})
        # The work ahead, and a warning, before training; from the data set here only: a
        # fresh worker on a cache hit does not download it for a log line.
        here = [path for path in (Path(dataset.local_path), dataset.local_path_here())
                if (path / "manifest.json").exists()]
        if here:
            log_plan(config, here[0])
        # The parent's Datasets: the train and eval files, on a cache hit too.
        parent.log_inputs(dataset_inputs(config.data.source, config.data.eval_source,
                                         dataset.info.get("files", {}), dataset.s3_uri,
                                         dataset.info["content_hash"]))

        policy = base = init_model(config, keys["init"])
        if base.info.get("tags"):  # a GGUF source: its file, hash, package and licence
            parent.set_tags(base.info["tags"])
        models = {}
        if config.sft.enabled:
            policy = done(sft(config, keys["sft"], parent, dataset, base))
            models["sft"] = policy
        else:
            models["base"] = base
        base_name = next(iter(models))
        if config.rl.enabled:
            models["rl"] = done(rl(config, keys["rl"], parent, dataset, policy))

        rollouts = {name: done(rollout(config, keys[f"rollout-{name}"], parent, dataset, model,
                                       name))
                    for name, model in models.items()}
        searches = {}
        if config.evaluation.search_budget > 0:
            searches = {name: done(search(config, keys[f"search-{name}"], parent, dataset, model,
                                          name))
                        for name, model in models.items()}
        evaluation = done(evaluate(config, keys["evaluate"], parent, rollouts, base_name,
                                   searches))
        report = publish_report(parent, evaluation)
        stages = [dataset, *models.values(), *rollouts.values(), *searches.values(), evaluation]
        # Which child run produced each stage: on a cache hit it is an earlier run's.
        cached, final_name = tag_stage_origins(parent, {r.stage: r.mlflow_run_id for r in stages},
                                               name, stage_log.records)
        stage_log.results(evaluation.info["metrics"], len(cached),
                          sum(1 for r in stages if r.mlflow_run_id))
    if final_name != name:  # every stage from the cache: the flow run says so too
        label_flow_run(None if grid_cell else final_name, [CACHED_MARK])
    # A cached stage's files stay under the run that produced it: `breadth run` says where.
    cached_files = {r.stage: r.s3_uri for r in stages if r.stage in cached and r.s3_uri}
    return {
        "mlflow_run_id": parent.run_id,
        "mlflow_run_url": parent.url(),
        "mlflow_run_name": final_name,
        "prefect_flow_run_url": runtime.flow_run.ui_url or "",
        "report": report,
        "metrics": evaluation.info["metrics"],
        "cached_stage_files": cached_files,
        # Empty when every stage came from the cache: a grid's ETA does not extrapolate from
        # such a cell (seconds, where a computing one takes minutes).
        "computed_stages": [r.stage for r in stages if r.mlflow_run_id and r.stage not in cached],
    }
