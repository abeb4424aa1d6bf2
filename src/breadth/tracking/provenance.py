"""Where a pipeline run's stages came from: run here, or served from the cache by another run.

A re-run with nothing changed is served from Prefect's cache: its parent run opens no stage
child runs of its own. Without a word on the parent it looks like an empty, failed-looking
run. `stage_provenance` turns "which run produced each stage" into the parent's tags and the
note MLflow shows on the run's page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["StageOrigin", "stage_provenance"]

# The MLflow tag whose markdown the UI shows as the run's description.
NOTE_TAG = "mlflow.note.content"


@dataclass(frozen=True)
class StageOrigin:
    """The child run that produced a stage's output, and the pipeline run it belongs to."""

    stage_run_id: str
    pipeline_run_id: str
    """The producing child run's parent: this run's id unless the stage was a cache hit."""
    experiment_id: str
    """Both runs' experiment (cache keys ignore the experiment: it may not be this run's)."""


def stage_provenance(
    run_id: str, origins: Mapping[str, StageOrigin], run_url: Callable[[str, str], str]
) -> dict[str, str]:
    """The parent run's provenance tags: `stage_run.<stage>` (the producing child run, as
    before), `breadth.cached_stages` (the stages served from the cache, in pipeline order, or
    `none`), `breadth.cached_from` (the pipeline runs that produced them) and a note listing
    them with links (`run_url(experiment_id, run_id)`).

    >>> origins = {"prepare": StageOrigin("c1", "p0", "1"), "evaluate": StageOrigin("c2", "me", "1")}
    >>> tags = stage_provenance("me", origins, lambda e, r: f"#/experiments/{e}/runs/{r}")
    >>> tags["breadth.cached_stages"], tags["breadth.cached_from"]
    ('prepare', 'p0')
    >>> print(tags["mlflow.note.content"].splitlines()[0])
    1 of 2 stages came from the cache (reused, not recomputed):
    """
    cached = {stage: o for stage, o in origins.items() if o.pipeline_run_id != run_id}
    tags = {f"stage_run.{stage}": o.stage_run_id for stage, o in origins.items()}
    tags["breadth.cached_stages"] = ",".join(cached) or "none"
    tags["breadth.cached_from"] = ",".join(dict.fromkeys(o.pipeline_run_id for o in cached.values()))
    if not cached:
        tags[NOTE_TAG] = f"Every stage ({len(origins)}) ran in this run: no cache hit."
        return tags
    lines = [f"{len(cached)} of {len(origins)} stages came from the cache (reused, not recomputed):",
             ""]
    for stage, origin in cached.items():
        stage_url = run_url(origin.experiment_id, origin.stage_run_id)
        pipeline_url = run_url(origin.experiment_id, origin.pipeline_run_id)
        lines.append(f"- **{stage}**: [stage run]({stage_url}) of "
                     f"[pipeline run {origin.pipeline_run_id[:8]}]({pipeline_url})")
    ran = [stage for stage in origins if stage not in cached]
    if ran:
        lines += ["", f"Ran here: {', '.join(ran)}."]
    if "evaluate" in cached:
        lines += ["", ("The headline metrics and the report on this run are copies of the "
                       "cached evaluation's; the full curves are on its evaluate runs.")]
    tags[NOTE_TAG] = "\n".join(lines)
    return tags
