"""The newest pipeline runs in MLflow, one summary each: what `breadth runs` lists.

A pipeline run is a parent run (no `mlflow.parentRunId`) tagged `config.hash`; its headline
figures are the final model's metrics that the pipeline copies onto it (`rl/eval/pass_at_1`,
...; the final model is `rl`, else `sft`, else `base`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from breadth.display.suggestions import did_you_mean
from breadth.tracking.clients import tracking_client
from breadth.tracking.names import cached_label
from breadth.tracking.rest import RunRecord, quoted
from breadth.tracking.runs import RunHandle

# The trained models in pipeline order: the last one present is the run's result.
MODEL_ROLES = ("base", "sft", "rl")
PIPELINE_RUNS = "tags.`mlflow.parentRunId` IS NULL AND tags.`config.hash` IS NOT NULL"


class RunListError(LookupError):
    """An experiment that MLflow does not know; the message names it and the fix."""


def headline(metrics: Mapping[str, float]) -> tuple[str | None, dict[str, float]]:
    """The final model and its headline figures: pass@1, pass@k at the largest k it measured,
    and the mean number of distinct outcomes per problem.

    >>> headline({"sft/eval/pass_at_1": 0.2, "rl/eval/pass_at_1": 0.3, "rl/eval/pass_at_8": 0.6,
    ...           "rl/eval/pass_at_16": 0.7, "rl/eval_ci/low/pass_at_16": 0.5,
    ...           "rl/eval/distinct_outcomes": 2.5})
    ('rl', {'pass@1': 0.3, 'pass@16': 0.7, 'distinct outcomes': 2.5})
    >>> headline({})
    (None, {})
    """
    model = next((role for role in reversed(MODEL_ROLES)
                  if any(name.startswith(f"{role}/eval/") for name in metrics)), None)
    if model is None:
        return None, {}
    ks = [int(m.group(1)) for name in metrics
          if (m := re.fullmatch(rf"{model}/eval/pass_at_(\d+)", name))]
    wanted = {"pass@1": f"{model}/eval/pass_at_1"}
    if ks and max(ks) > 1:
        wanted[f"pass@{max(ks)}"] = f"{model}/eval/pass_at_{max(ks)}"
    wanted["distinct outcomes"] = f"{model}/eval/distinct_outcomes"
    return model, {label: metrics[key] for label, key in wanted.items() if key in metrics}


def cached_stages(tags: Mapping[str, str]) -> str | None:
    """How much of a run came from the cache: `all`, `none` or `3/9` stages (its
    `breadth.cached` tag; for a run logged before that tag, counted from the stages it lists);
    None while it runs or when it failed before saying.

    >>> cached_stages({"breadth.cached": "all"})
    'all'
    >>> cached_stages({"breadth.cached_stages": "prepare,sft", "stage_run.prepare": "a",
    ...                "stage_run.sft": "b", "stage_run.rl": "c"})
    '2/3'
    """
    if "breadth.cached" in tags:
        return tags["breadth.cached"]
    listed = tags.get("breadth.cached_stages")
    if listed is None:
        return None
    stages = sum(key.startswith("stage_run.") for key in tags)
    cached = 0 if listed == "none" else len(listed.split(","))
    return cached_label(cached, stages)


def _iso(millis: int | None) -> str:
    if millis is None:
        return ""
    return dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def _summary(run: RunRecord, experiment: str, tracking_uri: str) -> dict[str, Any]:
    tags = run.tags
    model, figures = headline(run.metrics)
    # An MLflow UI link only exists for a server; a local store (sqlite, files) has none.
    url = (RunHandle(run.run_id, run.experiment_id, tracking_uri).url()
           if tracking_uri.startswith("http") else None)
    return {
        "run_id": run.run_id,
        "name": run.run_name,
        "experiment": experiment,
        "status": run.status,
        "started": _iso(run.start_time),
        "duration_s": round((run.end_time - run.start_time) / 1000, 1)
        if run.end_time and run.start_time else None,
        "format": tags.get("format"),
        "reward": tags.get("grid.objective") or tags.get("reward"),
        "seed": tags.get("seed"),
        "preset": tags.get("preset"),
        "grid_id": tags.get("grid.id"),
        "cached": cached_stages(tags),
        "model": model,
        "headline": figures,
        "mlflow_url": url,
        "prefect_url": tags.get("prefect.flow_run_url") or None,
    }


def recent_runs(
    tracking_uri: str, limit: int = 20, experiment: str | None = None, grid_id: str | None = None
) -> list[dict[str, Any]]:
    """The `limit` newest pipeline runs (all experiments, or one), newest first, as JSON-safe
    dicts: identity, status, start time, headline figures and links. A server is read over
    REST (no `import mlflow`, which took most of `breadth runs`' time)."""
    client = tracking_client(tracking_uri)
    experiments = client.experiment_names()
    if experiment is not None:
        ids = [i for i, name in experiments.items() if name == experiment]
        if not ids:
            raise RunListError(
                f"no MLflow experiment named {experiment!r} at {tracking_uri}."
                f"{did_you_mean(experiment, experiments.values())} Experiments: "
                f"{', '.join(sorted(experiments.values())) or 'none'}."
            )
    else:
        ids = list(experiments)
    if not ids:
        return []
    where = PIPELINE_RUNS
    if grid_id is not None:
        where += f" AND tags.`grid.id` = {quoted(grid_id, 'grid id')}"
    runs = client.search_runs(ids, where, max_results=limit,
                              order_by=["attributes.start_time DESC"])
    return [_summary(run, experiments[run.experiment_id], tracking_uri) for run in runs]
