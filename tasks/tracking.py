"""The parent MLflow run of a pipeline run, tagged so runs can be found and compared."""

from __future__ import annotations

import logging
import os
import platform
import subprocess
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from breadth_tasks.common import CODE_FOLDERS, PROJECT_ROOT, code_version, server_wait_s
from breadth_tasks.dead_runs import PrefectFlowRuns
from prefect import runtime

from breadth.config import PipelineConfig
from breadth.tracking.names import cached_label, cached_name, lone_run_name
from breadth.tracking.provenance import StageOrigin, stage_provenance
from breadth.tracking.reconcile import reconcile_stale_runs
from breadth.tracking.rest import RunRecord
from breadth.tracking.runs import (
    RunHandle,
    mlflow_ui_url,
    start_run,
    tracking_uri,
)


def git_sha() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# Untracked files count only in the code folders (code_version's): other untracked files (a
# work dir, a .venv symlink in a worktree, notes) change nothing that runs.
_CODE_PREFIXES = tuple(f"{folder}/" for folder in CODE_FOLDERS)


def git_dirty(repo: Path = PROJECT_ROOT) -> str:
    """Whether the checkout differs from HEAD: "true" (tracked files changed, or new untracked
    files in the code folders), "false" (clean) or "unknown" (not a git checkout).

    `git.sha` alone names HEAD: a run of uncommitted edits would claim a commit whose code it
    did not run (and its cache keys, from `code_version`, differ from that commit's). One
    `git status`, so it costs a cached re-run a few milliseconds.
    """
    try:
        status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                                text=True, check=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    # Porcelain paths are relative to the repository's root: "XY path" per line.
    changed = [line for line in status.splitlines()
               if not line.startswith("??") or line[3:].startswith(_CODE_PREFIXES)]
    return "true" if changed else "false"


def gpu_description(timeout_s: float = 5.0) -> str:
    """The GPUs this process may use, e.g. "1 x NVIDIA H100 80GB HBM3"; "0" without an NVIDIA
    driver; "unknown" when `nvidia-smi` is there but does not answer.

    Asked of `nvidia-smi`, not torch: the parent of a cached re-run never imports torch (over
    a second), and torch's CUDA query in the parent would initialise CUDA before the training
    processes are forked. `nvidia-smi` lists every GPU of the machine, so the list is
    narrowed to CUDA_VISIBLE_DEVICES (indices or UUIDs) when that is set.
    """
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"],
            capture_output=True, text=True, check=True, timeout=timeout_s,
        ).stdout
    except FileNotFoundError:
        return "0"
    except subprocess.CalledProcessError as error:  # a driver without devices exits non-zero
        return "0" if "No devices were found" in f"{error.stdout}{error.stderr}" else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    gpus = [[part.strip() for part in line.split(",", 2)] for line in listing.splitlines()
            if line.count(",") >= 2]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        wanted = [entry.strip() for entry in visible.split(",") if entry.strip()]
        if not wanted or wanted[0] == "-1":  # CUDA's "no device"
            return "0"
        # An index, or a UUID (CUDA accepts a unique prefix of one).
        chosen = [gpu for gpu in gpus
                  if any(gpu[0] == w or (w.startswith("GPU-") and gpu[1].startswith(w))
                         for w in wanted)]
        if not chosen:
            # MIG UUIDs, which --query-gpu does not list, or an order other than nvidia-smi's
            # (CUDA_DEVICE_ORDER): there is a GPU, but which is not known here.
            return "unknown" if gpus else "0"
        gpus = chosen
    if not gpus:
        return "0"
    return ", ".join(f"{count} x {name}" for name, count in Counter(g[2] for g in gpus).items())


def close_stale_runs() -> None:
    """Close what killed runs left open (RUNNING in MLflow, Running in Prefect); a failure here
    is logged, never a reason not to run."""
    try:
        reconcile_stale_runs(tracking_uri(), flow_runs=PrefectFlowRuns)
    except Exception as error:  # noqa: BLE001
        logging.getLogger("breadth.reconcile").warning("could not reconcile stale runs: %s", error)


def open_parent_run(config: PipelineConfig, extra_tags: dict[str, str] | None = None) -> RunHandle:
    close_stale_runs()
    experiment = config.tracking.experiment or config.preset
    tags = {
        "prefect.flow_run_id": runtime.flow_run.id or "",
        "prefect.flow_run_url": runtime.flow_run.ui_url or "",
        "git.sha": git_sha(),
        # What the cache keys hold: HEAD's code folders plus uncommitted edits to them.
        "code.version": code_version(),
        "git.dirty": git_dirty(),
        "config.hash": config.content_hash(),
        "format": config.data.format,
        "reward": config.rl.reward.spec,
        "model": config.model.name_or_path or "tiny-from-scratch",
        "preset": config.preset,
        "seed": str(config.seed),
        "data.source": config.data.source,
        **({"data.eval_source": config.data.eval_source} if config.data.eval_source else {}),
        # Where it ran: a study's report states its machine and wall time from these.
        "host.name": platform.node(),
        "host.cpus": str(os.cpu_count()),
        "host.gpus": gpu_description(),
        **(extra_tags or {}),
    }
    run = start_run(experiment, run_name(config, extra_tags or {}), tags=tags,
                    wait_s=server_wait_s())
    run.log_params(config.flat())
    return run


def run_name(config: PipelineConfig, extra_tags: dict[str, str]) -> str:
    """What tells runs apart in MLflow's legends: a grid cell by format, objective and seed,
    a lone run by its preset, data source and other differences from the preset, and its
    config hash (`breadth.tracking.names.lone_run_name`).

    >>> from breadth.config import load_config
    >>> run_name(load_config("default"), {"grid.objective": "correctness+batch"})
    'free_form·correctness+batch·s0'
    >>> run_name(load_config("default"), {})[:8]
    'default·'
    """
    if "grid.objective" in extra_tags:
        return f"{config.data.format}·{extra_tags['grid.objective']}·s{config.seed}"
    return lone_run_name(config)


def tag_stage_origins(
    parent: RunHandle, stage_runs: dict[str, str], name: str,
    records: Mapping[str, RunRecord] | None = None,
) -> tuple[dict[str, str], str]:
    """Say on the parent which stages ran here and which came from the cache, from which runs
    ({stage: producing child run id}; stages without a run, e.g. a model created from scratch,
    are left out), and how much (`breadth.cached`: all, none or 3/9). A run whose every stage
    came from the cache is renamed `<name>·cached`. Stage runs already read (`records`, by
    stage) are not read again. Returns the cached stages ({stage: the pipeline run that
    produced it}) and the run's name."""
    produced = {stage: run_id for stage, run_id in stage_runs.items() if run_id}
    known = {stage: records[stage] for stage in produced if records and stage in records}
    missing = [stage for stage in produced if stage not in known]
    # Looked up side by side: one round trip's time instead of one per stage.
    with ThreadPoolExecutor(max_workers=8) as pool:
        infos = {**known, **dict(zip(missing, pool.map(lambda stage: parent.get_run(produced[stage]),
                                                       missing)))}
    origins = {stage: StageOrigin(produced[stage], infos[stage].tags.get("mlflow.parentRunId", ""),
                                  infos[stage].experiment_id)
               for stage in produced}

    cached = {stage: origin.pipeline_run_id for stage, origin in origins.items()
              if origin.pipeline_run_id != parent.run_id}
    tags = stage_provenance(parent.run_id, origins,
                            lambda experiment, run: mlflow_ui_url(parent.tracking_uri, experiment, run))
    tags["breadth.cached"] = cached_label(len(cached), len(origins))
    if origins and len(cached) == len(origins):
        # Six re-runs of the demo were six identical rows; MLflow renames a run whose
        # mlflow.runName tag is set.
        name = tags["mlflow.runName"] = cached_name(name)
    parent.set_tags(tags)
    return cached, name
