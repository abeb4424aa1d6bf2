"""A grid's cells, read back from what the pipeline logged, as the study frame of its claims.

Each cell's parent run carries the evaluation report as artifacts under `report/`
(`per_problem_<model>.parquet` and, when search ran, `search.json`). The study frame has one
row per (format, objective, seed, model, problem_id); see `breadth.study.claims`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from breadth.study.budget import WARM_START_STAGES
from breadth.study.curves import TRAINING_METRICS, CellKey
from breadth.tracking.clients import tracking_client
from breadth.tracking.fetch import fetch_runs
from breadth.tracking.rest import quoted

__all__ = ["grid_provenance", "load_study_frame", "load_training_histories", "provenance_header",
           "study_frame_from_reports", "study_frame_of_runs"]

MODELS = ("sft", "rl")


def study_frame_from_reports(cells: Iterable[tuple[str, str, int, Path]]) -> pd.DataFrame:
    """(format, objective, seed, report folder) per cell -> the study frame.

    A cell whose folder lacks a model's per-problem table is an error that names the folder:
    a claim must not silently lose an arm.
    """
    frames = []
    for fmt, objective, seed, folder in cells:
        folder = Path(folder)
        searches = _search_outcomes(folder / "search.json")
        for model in MODELS:
            path = folder / f"per_problem_{model}.parquet"
            if not path.exists():
                raise FileNotFoundError(
                    f"cell {fmt}/{objective}/seed{seed}: {path} is missing; the cell's "
                    "evaluation predates per-problem tables, re-run it to include it in the claims"
                )
            table = pd.read_parquet(path)
            table["problem_id"] = table["problem_id"].astype(str)
            for method, solved in searches.get(model, {}).items():
                table[f"search_{method}"] = table["problem_id"].map(solved).astype(float)
            frames.append(table.assign(format=fmt, objective=objective, seed=int(seed),
                                       model=model))
    if not frames:
        raise ValueError("no cells to build a study frame from")
    return pd.concat(frames, ignore_index=True)


def _search_outcomes(path: Path) -> dict[str, dict[str, dict[str, int]]]:
    """model -> method -> {problem_id: 1 if solved within the budget else 0}."""
    if not path.exists():
        return {}
    searches = json.loads(path.read_text())
    return {
        model: {
            method: {str(pid): int(first is not None)
                     for pid, first in zip(result["problem_ids"], result["first_success"])}
            for method, result in comparison.items()
        }
        for model, comparison in searches.items()
    }


def load_study_frame(tracking_uri: str, grid_id: str) -> pd.DataFrame:
    """Download every finished cell's `report/` artifacts of grid `grid_id` -> study frame."""
    return study_frame_of_runs(tracking_uri, fetch_runs(tracking_uri, grid_id=grid_id))


def study_frame_of_runs(tracking_uri: str, runs: pd.DataFrame) -> pd.DataFrame:
    """The study frame of the parent runs `fetch_runs` returned (their `report/` artifacts),
    each row with its `run_id`: runs of one cell and seed may differ in config."""
    client = tracking_client(tracking_uri)
    with tempfile.TemporaryDirectory() as scratch:
        frames = []
        for row in runs.itertuples():
            if not client.list_artifacts(row.run_id, "report"):
                raise FileNotFoundError(
                    f"run {row.run_id} ({row.run_name}) has no report/ artifacts: it did not "
                    "finish its evaluation, or predates them; re-run it to include it"
                )
            local = client.download_artifacts(row.run_id, "report", Path(scratch) / row.run_id)
            cell = (row.format, row.reward, int(row.seed), local)
            frames.append(study_frame_from_reports([cell]).assign(run_id=row.run_id))
        if not frames:
            raise ValueError("no cells to build a study frame from")
        return pd.concat(frames, ignore_index=True)


def load_training_histories(
    tracking_uri: str, frame: pd.DataFrame, metrics: Iterable[str] = tuple(TRAINING_METRICS),
) -> dict[CellKey, dict[str, list[tuple[int, float]]]]:
    """Each cell's RL training histories of `metrics`, for `breadth.study.curves`:
    {(objective, format, seed): {metric: [(step, value), ...]}}, from the study frame's cells
    (`format`, `objective`, `seed`, `run_id`: their parent runs).

    The RL stage run is the one the parent's `stage_run.rl` tag names (a cached stage's run
    belongs to an earlier pipeline run), else the parent's child run of stage `rl`. A metric
    that run did not log, or a cell without an RL run, is left out of its dict: the curves say
    "not logged" for it. A step logged twice (a resumed run replays its history) keeps its
    latest value.
    """
    client = tracking_client(tracking_uri)
    cells = frame[["objective", "format", "seed", "run_id"]].drop_duplicates()
    histories: dict[CellKey, dict[str, list[tuple[int, float]]]] = {}
    for objective, fmt, seed, run_id in cells.itertuples(index=False):
        rl_run = _rl_stage_run(client, run_id)
        logged: dict[str, list[tuple[int, float]]] = {}
        for metric in metrics if rl_run else ():
            points = sorted(client.metric_history(rl_run, metric), key=lambda m: m.timestamp)
            latest = {int(m.step): float(m.value) for m in points}
            if latest:
                logged[metric] = sorted(latest.items())
        histories[(str(objective), str(fmt), int(seed))] = logged
    return histories


def _rl_stage_run(client, parent_id: str) -> str | None:
    """The id of the run that trained a cell's RL policy, or None when it has none."""
    parent = client.get_run(parent_id)
    if parent.tags.get("stage_run.rl"):
        return parent.tags["stage_run.rl"]
    children = client.search_runs(
        [parent.experiment_id],
        f"tags.`mlflow.parentRunId` = {quoted(parent_id, 'run id')} AND "
        "tags.`breadth.stage` = 'rl'",
    )
    return max(children, key=lambda r: r.start_time or 0).run_id if children else None


def grid_provenance(tracking_uri: str, grid_id: str) -> dict:
    """Cells, seeds, machines and wall time (first cell start to last cell end) of a grid."""
    runs = fetch_runs(tracking_uri, grid_id=grid_id)
    client = tracking_client(tracking_uri)
    infos = [client.get_run(run_id) for run_id in runs["run_id"]]
    starts = [r.start_time for r in infos if r.start_time]
    ends = [r.end_time for r in infos if r.end_time]
    # Each machine with its GPUs as its runs recorded them (runs from before `host.gpus`
    # was tagged say so instead of claiming none).
    hosts = sorted({f"{r.tags.get('host.name', '?')} ({r.tags.get('host.cpus', '?')} "
                    f"CPU cores; GPU: {_gpus(r.tags.get('host.gpus'))})" for r in infos})
    shas = sorted({r.tags.get("git.sha", "?")[:12] for r in infos})
    # HEAD alone does not say what ran: uncommitted edits change the code (and the cache keys,
    # `code.version`), so cells of one grid may have run different code under one sha.
    code_versions = sorted({r.tags.get("code.version", "not recorded") for r in infos})
    dirty = sum(r.tags.get("git.dirty") == "true" for r in infos)
    unrecorded = sum(r.tags.get("git.dirty", "unknown") == "unknown" for r in infos)
    work = _stage_work(client, runs["format"], infos)
    groups = list(runs.groupby("format"))
    minutes: dict[str, list[float]] = {}
    for fmt, info in zip(runs["format"], infos):
        if info.start_time and info.end_time:
            minutes.setdefault(fmt, []).append((info.end_time - info.start_time) / 60000)
    return {
        "grid_id": grid_id, "cells": len(infos), "seeds": int(runs["seed"].nunique()),
        "formats": sorted(runs["format"].unique()), "objectives": sorted(runs["reward"].unique()),
        "hosts": hosts, "git_sha": shas, "code_versions": code_versions,
        "dirty_runs": dirty, "dirty_unknown_runs": unrecorded,
        "wall_minutes": round((max(ends) - min(starts)) / 60000, 1) if starts and ends else None,
        "cell_minutes": {fmt: (round(min(v), 1), round(float(np.median(v)), 1), round(max(v), 1),
                               round(sum(v), 1)) for fmt, v in minutes.items()},
        "compute_minutes": {fmt: round(warm + own, 1) for fmt, (warm, own) in work.items()},
        # Per format: its cells, and the most cells one seed ran (a full seed, where some
        # seeds were thinned), so that stage work can be priced per full seed.
        "format_cells": {fmt: [len(group), int(group.groupby("seed").size().max())]
                         for fmt, group in groups},
        # Per format: a seed's warm start and one objective's own stages, in minutes, so that
        # a nightly of any arms can be priced (`breadth.study.budget`).
        "stage_split": {fmt: [round(work[fmt][0] / group["seed"].nunique(), 2),
                              round(work[fmt][1] / len(group), 2)]
                        for fmt, group in groups if sum(work.get(fmt, ())) > 0},
    }


def _stage_work(client, formats: Iterable[str], parents: list) -> dict[str, tuple[float, float]]:
    """Minutes of stage work per format, (warm starts, objectives' own stages), each stage run
    once wherever and whenever it ran: a cell's `stage_run.<stage>` tags name the run that
    computed each stage, also when this cell took it from the cache. A grid resumed from the
    cache (its cells' parent runs take seconds) or sharing SFT starts between objectives is
    then still priced at its work. A stage is a warm start's where its cache key does not read
    the RL config (`breadth.study.budget.WARM_START_STAGES`)."""
    stage_runs: dict[str, dict[str, str]] = {}
    for fmt, parent in zip(formats, parents):
        stage_runs.setdefault(fmt, {}).update(
            (run_id, key.removeprefix("stage_run.")) for key, run_id in parent.tags.items()
            if key.startswith("stage_run."))
    work = {}
    for fmt, stages in stage_runs.items():
        warm = own = 0.0
        for run_id, stage in sorted(stages.items()):
            run = client.get_run(run_id)
            if run.start_time and run.end_time:
                minutes = (run.end_time - run.start_time) / 60000
                if stage in WARM_START_STAGES:
                    warm += minutes
                else:
                    own += minutes
        work[fmt] = (warm, own)
    return work


def provenance_header(provenance: dict, command: str = "") -> str:
    """The lines a claims report opens with: what ran, where, how long, with how many seeds."""
    lines = [f"# Claims of grid {provenance['grid_id']}", ""]
    if command:
        lines += ["```", command, "```", ""]
    lines += [
        f"- seeds: {provenance['seeds']}",
        (f"- cells: {provenance['cells']} ({', '.join(provenance['formats'])} x "
         f"{len(provenance['objectives'])} objectives: {', '.join(provenance['objectives'])})"),
        f"- machine: {', '.join(provenance['hosts'])}",
        f"- wall time (first cell start to last cell end): {provenance['wall_minutes']} min",
        _code_line(provenance),
    ]
    lines += [f"- minutes per {fmt} cell (parent run start to end; min / median / max, sum): "
              f"{low} / {mid} / {high}, {total}"
              for fmt, (low, mid, high, total) in provenance.get("cell_minutes", {}).items()]
    compute = provenance.get("compute_minutes") or {}
    if compute:
        lines.append("- minutes of stage work (each stage's run once, wherever and whenever it "
                     "ran: a stage from the cache counts where it was computed): "
                     + ", ".join(f"{fmt} {value}" for fmt, value in compute.items())
                     + f"; {round(sum(compute.values()), 1)} in all")
    cells = provenance.get("format_cells") or {}
    if cells:
        lines.append("- cells per format (in all / a full seed): "
                     + ", ".join(f"{fmt} {n} / {full}" for fmt, (n, full) in cells.items()))
    split = provenance.get("stage_split") or {}
    if split:
        lines.append("- minutes of stage work of a seed's warm start / of one objective's own "
                     "stages: " + ", ".join(f"{fmt} {warm} / {own}"
                                           for fmt, (warm, own) in split.items()))
    return "\n".join(lines)


def _gpus(tag: str | None) -> str:
    """A run's `host.gpus` tag as the header says it."""
    if tag is None:
        return "not recorded"
    return {"0": "none", "unknown": "unknown (nvidia-smi did not answer)"}.get(tag, tag)


def _code_line(provenance: dict) -> str:
    """What code the cells ran: HEAD's commit, the code version of the cache keys (HEAD plus
    uncommitted edits) and how many cells ran uncommitted changes."""
    line = (f"- code: git {', '.join(provenance['git_sha'])} (the checkout's HEAD at each "
            "cell's start)")
    if "code_versions" not in provenance:
        return line
    versions = provenance["code_versions"]
    line += (f"; code version{'s' if len(versions) > 1 else ''} {', '.join(versions)} (HEAD's "
             "src/, tasks/, flows/ with uncommitted edits: the cache keys' code)")
    dirty, unknown = provenance.get("dirty_runs", 0), provenance.get("dirty_unknown_runs", 0)
    line += f"; uncommitted changes in {dirty} of {provenance['cells']} runs"
    if unknown:
        line += f" ({unknown} not recorded or not a git checkout)"
    return line
