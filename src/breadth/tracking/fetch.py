"""Read pipeline runs back from MLflow: one row per pipeline parent run, for comparisons.

Reads what the pipeline logs (README "MLflow layout"): one parent run per pipeline run with
the tags `format`, `reward`, `seed` (and `grid.id` in a grid), the evaluate metrics copied onto
it as `<model>/<name>` (`rl/eval/pass_at_16`, `sft/eval/pass_at_1`, ...; interval bounds as
`<model>/eval_ci/low/<name>`), and one evaluate child per model (`evaluate-sft`, `evaluate-rl`)
holding the curves `eval/pass_at_k` and `eval/pass_hat_k` with step=k. The parent's params are its whole config
(`PipelineConfig.flat()`); the row keeps them, less the seed, as `config`: runs whose `config`
differs are different experiments, not seeds of one.
Everything goes through `tracking_client` (MLflow's REST API for an http(s) server, without
`import mlflow`; `MlflowClient` for local stores) and explicit run ids; every value put into an
MLflow filter string is quoted by `quoted` (which refuses what MLflow cannot escape). The statistics
over these rows live in `breadth.study.grid_statistics`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from breadth.tracking.clients import tracking_client
from breadth.tracking.rest import RunRecord, quoted

_IDENTITY_COLUMNS = ("run_id", "experiment_id", "run_name", "status", "grid_id", "grid_cell",
                     "format", "reward", "seed", "preset", "config_hash", "config")
# The curves a row carries per model, as {k: value} columns `<prefix><model>`: pass@k
# (`curve_rl`) and pass^k (`pass_hat_curve_rl`), which `breadth compare` overlays.
CURVE_COLUMNS = {"eval/pass_at_k": "curve_", "eval/pass_hat_k": "pass_hat_curve_"}
_CURVE_NAMES = ("pass_at_k", "maj_at_k", "best_of_k", "pass_hat_k", "g_pass_at_k",
                "mg_pass_at_k")  # logged with step = k
# Params that are not part of what a run computes, left out of its `config`: the seed (what
# seeds of one experiment differ in), the preset's name (a label; its values are the other
# params) and where the run was logged.
_NOT_CONFIG = ("seed", "preset")
_NOT_CONFIG_SECTIONS = ("tracking.",)
# The kind tag of a grid's summary run (one per grid, beside its cell runs).
GRID_SUMMARY_KIND = "grid-summary"


class CompareError(LookupError):
    """A run id or grid id that MLflow does not know; the message names it and the fix."""


def fetch_runs(
    tracking_uri: str, run_ids: list[str] | None = None, grid_id: str | None = None
) -> pd.DataFrame:
    """One row per pipeline parent run: identity columns, `config` (its logged config less
    the seed, preset name and tracking keys, as {dotted key: value}; {} when it logged none),
    every parent metric, and per model the `eval/pass_at_k` and `eval/pass_hat_k` curves of its
    evaluate child as {k: value} dicts (`curve_sft`, `pass_hat_curve_sft`, ...).

    Give `run_ids` (FINISHED parent runs, any experiment) or `grid_id` (every FINISHED parent run
    tagged `grid.id`; a cell run twice with the same seed keeps its newest run). Metrics an
    evaluate child has but the parent lacks are filled in as `<model>/<name>`. When the
    evaluate stage was served from cache, its child runs belong to an earlier pipeline run;
    they are found through the parent's `stage_run.evaluate` tag.
    """
    if (run_ids is None) == (grid_id is None):
        raise ValueError("give either run_ids or grid_id (e.g. `breadth compare --grid GRID_ID`)")
    client = tracking_client(tracking_uri)
    experiment_ids = list(client.experiment_names())
    if run_ids is not None:
        parents = _parents_by_id(client, experiment_ids, list(run_ids), tracking_uri)
    else:
        parents = _parents_of_grid(client, experiment_ids, str(grid_id), tracking_uri)
    rows = [_row_of(client, run, experiment_ids) for run in parents]
    frame = pd.DataFrame(rows)
    curve_columns = sorted(c for c in frame.columns if is_curve_column(c))
    metric_columns = sorted(set(frame.columns) - {*_IDENTITY_COLUMNS, *curve_columns})
    frame = frame[[*_IDENTITY_COLUMNS, *metric_columns, *curve_columns]]
    for column in curve_columns:  # a run without that evaluate child: an empty curve
        frame[column] = [c if isinstance(c, dict) else {} for c in frame[column]]
    if grid_id is not None:
        frame = frame.sort_values(["format", "reward", "seed"], kind="stable")
    return frame.reset_index(drop=True)


def _search(client, experiment_ids: list[str], filter_string: str) -> list[RunRecord]:
    return client.search_runs(experiment_ids, filter_string, max_results=None)  # every page


def previous_grid_id(
    tracking_uri: str, experiment: str, config_hash: str, grid_id: str
) -> str | None:
    """The newest earlier grid of the same study (same `grid.config_hash`) in `experiment`,
    other than `grid_id`, found through its summary run; None when there is none."""
    client = tracking_client(tracking_uri)
    experiment_id = client.experiment_id(experiment)
    if experiment_id is None:
        return None
    previous = client.search_runs(
        [experiment_id],
        f"tags.`breadth.kind` = {quoted(GRID_SUMMARY_KIND, 'kind')} and "
        f"tags.`grid.config_hash` = {quoted(config_hash, 'grid config hash')} and "
        f"tags.`grid.id` != {quoted(grid_id, 'grid id')}",
        order_by=["attributes.start_time DESC"], max_results=1,
    )
    return previous[0].tags["grid.id"] if previous else None


def _parents_by_id(client, experiment_ids, run_ids: list[str], uri: str) -> list:
    if not run_ids:
        raise ValueError("no run ids given: pass parent run ids, e.g. `breadth compare RUN_ID...`")
    ids = ", ".join(quoted(r, "run id") for r in run_ids)
    found = {r.run_id: r for r in _search(client, experiment_ids, f"attributes.run_id IN ({ids})")}
    missing = [r for r in run_ids if r not in found]
    if missing:
        raise CompareError(
            f"run id(s) {', '.join(missing)} not found in MLflow at {uri} (deleted runs are "
            "not searched). Check that MLFLOW_TRACKING_URI names the server the runs were "
            "logged to, and copy the parent run ids from `breadth runs` or the MLflow UI."
        )
    children = [r for r in run_ids if "mlflow.parentRunId" in found[r].tags]
    if children:
        hints = ", ".join(f"{r} -> {found[r].tags['mlflow.parentRunId']}" for r in children)
        raise CompareError(
            f"run id(s) {', '.join(children)} are stage (child) runs, not pipeline runs; pass "
            f"their parent run ids instead ({hints})."
        )
    unfinished = [found[r] for r in dict.fromkeys(run_ids) if found[r].status != "FINISHED"]
    if unfinished:
        # A failed or running run has no metrics or some: compared, it shows an empty row, or
        # is counted as a seed whose values are missing.
        states = ", ".join(f"{r.run_id} is {r.status or 'of unknown status'}" for r in unfinished)
        raise CompareError(
            f"run(s) not finished: {states}. compare reads FINISHED pipeline runs only. Leave "
            "these ids out, wait for a RUNNING run to end, or re-run a FAILED one (the same "
            "`breadth run` command: finished stages come from the cache); `breadth runs` "
            "lists each run's status."
        )
    parents = [found[r] for r in dict.fromkeys(run_ids)]
    _refuse_repeats(parents)
    return parents


def _refuse_repeats(parents: list[RunRecord]) -> None:
    """Two runs of one config and seed (a re-run) would count as two seeds of one value, and
    their per-problem rows as twice the problems: a narrower interval than the data hold."""
    first: dict[str, str] = {}
    repeats = []
    for run in parents:
        config = _config_of(run)
        if not config:  # nothing logged to tell them apart by: their own rows
            continue
        key = json.dumps([run.tags.get("format"), _objective(run.tags) if "reward" in run.tags
                          else None, run.tags.get("seed"), sorted(config.items())])
        if key in first:
            repeats.append(f"{run.run_id} repeats {first[key]}")
        else:
            first[key] = run.run_id
    if repeats:
        raise CompareError(
            f"run(s) with the same config, format, reward and seed as another given: "
            f"{'; '.join(repeats)}. Pass one run per seed (a re-run of a config adds no seed)."
        )


def _parents_of_grid(client, experiment_ids, grid_id: str, uri: str) -> list:
    runs = _search(client, experiment_ids, f"tags.`grid.id` = {quoted(grid_id, 'grid id')}")
    # The grid's summary run carries the grid id too, but no format/reward: not a cell.
    cells = [
        r for r in runs
        if "mlflow.parentRunId" not in r.tags and {"format", "reward"} <= set(r.tags)
    ]
    finished = [r for r in cells if r.status == "FINISHED"]
    if not finished:
        state = (
            f"{len(cells)} cell run(s) tagged with it, none FINISHED"
            if cells
            else "no run is tagged with it"
        )
        raise CompareError(
            f"grid id {grid_id!r} matches nothing to compare in MLflow at {uri}: {state}. Check "
            "the id (the `grid.id` tag of the grid's runs; the grid flow prints it) and "
            "MLFLOW_TRACKING_URI, or wait for the grid to finish."
        )
    newest: dict[tuple, Any] = {}
    for run in sorted(finished, key=lambda r: r.start_time or 0):
        tags = run.tags
        newest[(tags["format"], _objective(tags), tags.get("seed"))] = run
    return list(newest.values())


def _objective(tags: Mapping[str, str]) -> str:
    # A grid may tag a label that tells apart cells with the same reward spec (the
    # entropy-knob variant trains under `correctness` too).
    return tags.get("grid.objective") or tags["reward"]


def _row_of(client, run: RunRecord, experiment_ids: list[str]) -> dict[str, Any]:
    tags = run.tags
    row: dict[str, Any] = {
        "run_id": run.run_id,
        "experiment_id": run.experiment_id,
        "run_name": tags.get("mlflow.runName", run.run_name),
        "status": run.status,
        "grid_id": tags.get("grid.id"),
        "grid_cell": tags.get("grid.cell"),
        "format": tags.get("format"),
        "reward": _objective(tags) if "reward" in tags else None,
        "seed": _seed(tags.get("seed")),
        "preset": tags.get("preset"),
        "config_hash": tags.get("config.hash"),
        "config": _config_of(run),
        **run.metrics,
    }
    for model, child in _evaluate_children(client, run, experiment_ids).items():
        for name, value in child.metrics.items():
            if name.rsplit("/", 1)[-1] not in _CURVE_NAMES:  # a curve's last point, alone
                row.setdefault(f"{model}/{name}", value)
        for metric, prefix in CURVE_COLUMNS.items():
            row[f"{prefix}{model}"] = _curve_of(client, child.run_id, metric)
    return row


def is_curve_column(column: str) -> bool:
    """Whether a `fetch_runs` column holds a curve ({k: value}) rather than a value.

    >>> is_curve_column("curve_rl"), is_curve_column("pass_hat_curve_sft"), is_curve_column("rl/eval/pass_at_1")
    (True, True, False)
    """
    return column.startswith(tuple(CURVE_COLUMNS.values()))


def _config_of(run: RunRecord) -> dict[str, str]:
    """The run's logged config less what seeds of one experiment may differ in."""
    return {k: v for k, v in run.params.items()
            if k not in _NOT_CONFIG and not k.startswith(_NOT_CONFIG_SECTIONS)}


def _seed(value: str | None) -> int | float:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _evaluate_children(client, parent: RunRecord, experiment_ids: list[str]) -> dict[str, RunRecord]:
    """{model: evaluate child run}: this parent's own, else the cached run's siblings (the
    run that filled the cache may sit in another experiment: cache keys ignore it)."""
    experiment = [parent.experiment_id]
    pid = quoted(parent.run_id, "run id")
    runs = _search(
        client, experiment,
        f"tags.`mlflow.parentRunId` = {pid} AND attributes.run_name LIKE 'evaluate-%'",
    )
    cached = parent.tags.get("stage_run.evaluate")
    if not runs and cached:
        source = _search(client, experiment_ids, f"attributes.run_id = {quoted(cached, 'run id')}")
        if source:
            tags = source[0].tags
            earlier = quoted(tags.get("mlflow.parentRunId", ""), "run id")
            key = quoted(tags.get("breadth.stage_key", ""), "stage key")
            runs = _search(
                client, [source[0].experiment_id],
                f"tags.`mlflow.parentRunId` = {earlier} AND tags.`breadth.stage_key` = {key}",
            )
    out = {}
    for child in sorted(runs, key=lambda r: r.start_time or 0):
        name = child.tags.get("model.role") or child.run_name.removeprefix("evaluate-")
        out[name] = child
    return out


def _curve_of(client, run_id: str, metric: str) -> dict[int, float]:
    # Sorted by time, so a step logged twice keeps its latest value. A run from before the
    # metric was logged (pass^k) has no history: an empty curve.
    points = sorted(client.metric_history(run_id, metric), key=lambda m: m.timestamp)
    return {int(m.step): float(m.value) for m in sorted(points, key=lambda m: m.step)}
