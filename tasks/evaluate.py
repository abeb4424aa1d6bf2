"""Evaluate: rollouts of every model -> one child run per model, the report on the parent run,
and a Prefect markdown artifact that links the MLflow run."""

from __future__ import annotations

from pathlib import Path

from breadth_tasks.common import (
    StageResult,
    child_run,
    retry_if_transient,
    stage_cache_key,
    upload_stage_output,
    work_dir,
)
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from breadth.config import PipelineConfig
from breadth.evaluation.result import headline_metrics
from breadth.stages import evaluate_stage
from breadth.tracking.runs import RunHandle, log_curves


@task(name="evaluate", retries=1, retry_condition_fn=retry_if_transient,
      cache_key_fn=stage_cache_key, persist_result=True)
def evaluate(
    config: PipelineConfig, key: str, parent: RunHandle, rollouts: dict[str, StageResult],
    base_model: str, searches: dict[str, StageResult],
) -> StageResult:
    out = work_dir(key)
    paths = {name: result.ensure_local() for name, result in rollouts.items()}
    comparisons = {name: search.info["comparison"] for name, search in searches.items()}
    results, written = evaluate_stage(config, paths, out / "report", base_model=base_model,
                                      searches=comparisons)
    metrics, curves, run_ids = {}, {}, {}
    for name, result in results.items():
        with child_run(parent, f"evaluate-{name}", key) as run:
            run.set_tags({"model.role": name})
            search_metrics = comparisons[name].metrics() if name in comparisons else {}
            metrics[name] = {**result.metrics(), **search_metrics}
            curves[name] = result.curves()
            log_curves(run, curves[name], metrics[name])
        run_ids[name] = run.run_id
    report_md = (out / "report" / "report.md").read_text()
    # Its S3 copy is what `publish_report` fetches on a cache hit on a fresh worker.
    report_uri = upload_stage_output(config, out / "report", f"runs/{parent.run_id}/report")
    return StageResult("evaluate", key, str(out / "report"), report_uri, run_ids[base_model],
                       {"metrics": metrics, "curves": curves, "run_ids": run_ids,
                        "report_markdown": report_md,
                        "files": [str(p) for p in written]})


@task(name="publish-report", cache_policy=NO_CACHE)
def publish_report(parent: RunHandle, evaluation: StageResult) -> str:
    """Attach the report to this run's parent (also on cache hits) and publish it in Prefect.

    A cached evaluation's S3 copy stays under the run that produced it, like every cached
    stage's files (`breadth run` lists where): copying it here would load boto3 in every
    cached re-run (~0.3 s of its ~3 s) for files this run's MLflow artifacts already hold."""
    folder = evaluation.ensure_local()
    parent.log_artifact(folder, "report")
    # Each model's headline metrics on the parent (`rl/eval/pass_at_16`, its bounds as
    # `rl/eval_ci/low/pass_at_16`): the runs table and compare view stay readable; the
    # evaluate child runs hold every metric and curve. Also on cache hits, so a re-run's
    # parent is never empty.
    # One request for every model's metrics and curves (each request is a round trip).
    models = evaluation.info["metrics"]
    headlines = {f"{name}/{key}": value for name, metrics in models.items()
                 for key, value in headline_metrics(metrics).items()}
    # ... and the pass@k and pass^k curves, so the chart view overlays rl/eval/pass_at_k and
    # rl/eval/pass_hat_k across runs (a cached evaluation from before pass^k has none).
    pass_curves = {f"{name}/{curve}": evaluation.info["curves"][name][curve]
                   for name in models for curve in ("eval/pass_at_k", "eval/pass_hat_k")
                   if curve in evaluation.info["curves"][name]}
    log_curves(parent, pass_curves, headlines)
    create_markdown_artifact(
        key="breadth-report",
        markdown=f"[MLflow run]({parent.url()})\n\n" + evaluation.info["report_markdown"],
        description="breadth evaluation report",
    )
    return str(Path(folder) / "report.md")
