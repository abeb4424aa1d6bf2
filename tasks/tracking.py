"""The parent MLflow run of a pipeline run, tagged so runs can be found and compared."""

from __future__ import annotations

import logging
import os
import platform
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prefect import runtime

from breadth.config import PipelineConfig
from breadth.stack import without_userinfo
from breadth.tracking.provenance import StageOrigin, stage_provenance
from breadth.tracking.reconcile import reconcile_stale_runs
from breadth.tracking.runs import RunHandle, start_run, tracking_uri


def git_sha() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def close_stale_runs() -> None:
    """Close what killed runs left open (RUNNING in MLflow, Running in Prefect); a failure here
    is logged, never a reason not to run."""
    try:
        reconcile_stale_runs(tracking_uri())
    except Exception as error:  # noqa: BLE001
        logging.getLogger("breadth.reconcile").warning("could not reconcile stale runs: %s", error)


def open_parent_run(config: PipelineConfig, extra_tags: dict[str, str] | None = None) -> RunHandle:
    close_stale_runs()
    experiment = config.tracking.experiment or config.preset
    tags = {
        "prefect.flow_run_id": runtime.flow_run.id or "",
        "prefect.flow_run_url": runtime.flow_run.ui_url or "",
        "git.sha": git_sha(),
        "config.hash": config.content_hash(),
        "format": config.data.format,
        "reward": config.rl.reward.spec,
        "model": config.model.name_or_path or "tiny-from-scratch",
        "preset": config.preset,
        "seed": str(config.seed),
        # Where it ran: a study's report states its machine and wall time from these.
        "host.name": platform.node(),
        "host.cpus": str(os.cpu_count()),
        **(extra_tags or {}),
    }
    run = start_run(experiment, run_name(config, extra_tags or {}), tags=tags)
    run.log_params(config.flat())
    return run


def run_name(config: PipelineConfig, extra_tags: dict[str, str]) -> str:
    """What tells runs apart in MLflow's legends: a grid cell by format, objective and seed,
    a lone run by preset and config hash.

    >>> from breadth.config import load_config
    >>> run_name(load_config("default"), {"grid.objective": "correctness+batch"})
    'free_form·correctness+batch·s0'
    >>> run_name(load_config("default"), {})[:8]
    'default·'
    """
    if "grid.objective" in extra_tags:
        return f"{config.data.format}·{extra_tags['grid.objective']}·s{config.seed}"
    return f"{config.preset}·{config.content_hash()[:8]}"


def tag_stage_origins(parent: RunHandle, stage_runs: dict[str, str]) -> None:
    """Say on the parent which stages ran here and which came from the cache, from which runs
    ({stage: producing child run id}; stages without a run, e.g. a model created from scratch,
    are left out)."""
    produced = {stage: run_id for stage, run_id in stage_runs.items() if run_id}
    # Looked up side by side: one round trip's time instead of one per stage.
    with ThreadPoolExecutor(max_workers=8) as pool:
        infos = dict(zip(produced, pool.map(lambda run_id: parent.get_run(run_id),
                                            produced.values())))  # fmt: skip
    origins = {stage: StageOrigin(produced[stage], info.tags.get("mlflow.parentRunId", ""),
                                  info.experiment_id)
               for stage, info in infos.items()}  # fmt: skip

    def url(experiment: str, run: str) -> str:
        return f"{without_userinfo(parent.tracking_uri)}/#/experiments/{experiment}/runs/{run}"

    parent.set_tags(stage_provenance(parent.run_id, origins, url))
