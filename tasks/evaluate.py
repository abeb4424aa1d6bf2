"""Evaluate: rollouts of every model -> metrics, curves, report; logged to MLflow and Prefect."""

from __future__ import annotations

from prefect import task

from breadth.config import PipelineConfig
from breadth.stages import evaluate_stage
from breadth.tracking.runs import RunHandle
from tasks.common import StageResult, child_run, stage_cache_key, work_dir


@task(name="evaluate", retries=1, cache_key_fn=stage_cache_key, persist_result=True)
def evaluate(
    config: PipelineConfig, key: str, parent: RunHandle, rollouts: dict[str, StageResult],
    base_model: str,
) -> StageResult:  # fmt: skip
    run = child_run(parent, "evaluate", key)
    out = work_dir(key)
    paths = {name: result.ensure_local() for name, result in rollouts.items()}
    evaluation = evaluate_stage(config, paths, out, base_model=base_model)
    for model_name, metrics in evaluation.metrics.items():
        run.log_metrics({f"{model_name}/{name}": value for name, value in metrics.items()})
        for k, value in evaluation.curves[model_name]:
            run.log_metric(f"{model_name}/eval/pass_at_k", value, step=k)
    run.log_artifact(out / "report", "report")
    run.finish()
    return StageResult("evaluate", key, str(out / "report"), "", run.run_id,
                       {"metrics": evaluation.metrics, "curves": evaluation.curves,
                        "report_markdown": evaluation.report_markdown})
