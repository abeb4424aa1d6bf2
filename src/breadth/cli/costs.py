"""`breadth run --dry-run` and the cost columns of `breadth grid --dry-run`: what a run will
compute (samples per stage, training steps), its time at this machine's measured pace, and
the evaluation warning, before anything starts."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from breadth.cli.output import console, fail
from breadth.config import PipelineConfig
from breadth.display.grid_progress import duration
from breadth.preflight.costs import (
    StageWork,
    estimate_seconds,
    eval_heavy_warning,
    measured_rates,
    plan,
    rate_text,
    rates_path,
)


def problem_counts(
    config: PipelineConfig, prepare_key: str, known: dict | None = None
) -> tuple[int, int]:
    """(training, evaluation) problems the run will use: from the data set an earlier run
    prepared (its manifest in the work dir), else by preparing it in a temporary folder (a
    few seconds; what the run's first stage does anyway, so a bad source fails here, before
    anything starts). `known` caches the counts by prepare key (a grid's cells share data)."""
    # Imported on use: tasks/ loads Prefect, and the CLI starts without it.
    from breadth_tasks.common import work_root

    from breadth.preflight.costs import dataset_counts
    from breadth.stages import prepare_stage

    known = {} if known is None else known
    if prepare_key not in known:
        prepared = work_root() / prepare_key
        if (prepared / "manifest.json").is_file():
            known[prepare_key] = dataset_counts(prepared)
        else:
            with tempfile.TemporaryDirectory(prefix="breadth-dry-run-") as folder:
                try:
                    prepare_stage(config, Path(folder))
                except (ValueError, OSError) as error:
                    fail(f"the data cannot be prepared ({config.data.source}): {error}")
                known[prepare_key] = dataset_counts(Path(folder))
    return known[prepare_key]


def cached_stages(keys: dict[str, str]) -> set[str]:
    """The stages whose results this machine's Prefect result storage holds (a run serves
    them from the cache)."""
    # Imported on use, to keep the CLI's start fast (breadth --help loads every command module).
    from breadth.stack.local import StackSettings

    storage = StackSettings().result_storage
    return {stage for stage, key in keys.items() if (storage / key).is_file()}


def cost_rows(config: PipelineConfig, keys: dict[str, str], cached: set[str],
              counts: tuple[int, int],
              rates: dict) -> list[tuple[StageWork, float | None, bool]]:
    """Each computing stage's work, its estimated seconds (None: no measured rate), and
    whether the cache holds it (then it costs nothing)."""
    return [(work, estimate_seconds(config, work, rates), work.stage in cached)
            for work in plan(config, *counts) if work.stage in keys]


def samples_text(work: StageWork) -> str:
    return ("≤ " if work.at_most else "") + f"{work.samples:,}"


def print_run_plan(config: PipelineConfig) -> None:
    """The dry run of one pipeline run: a table of its stages' work and time, the totals,
    and the evaluation warning."""
    # Imported on use: tasks/ loads Prefect, and the CLI starts without it.
    from breadth_tasks.stage_keys import stage_keys

    keys = stage_keys(config)
    cached = cached_stages(keys)
    num_train, num_eval = counts = problem_counts(config, keys["prepare"])
    console.print(f"data: {num_train:,} training and {num_eval:,} evaluation problems "
                  f"({config.data.source})", highlight=False, markup=False)
    rates = measured_rates()
    table = Table("stage", "work", "samples", "steps", "time", "from")
    rows = cost_rows(config, keys, cached, counts, rates)
    for work, seconds, held in rows:
        time = "cached" if held else "?" if seconds is None else duration(seconds)
        source = "the cache holds it" if held else rate_text(config, work, rates)
        table.add_row(work.stage, work.what, samples_text(work),
                      f"{work.steps:,}" if work.steps else "-", time, source)
    Console(width=max(console.width, 150)).print(table)  # a pipe's 80 columns fold each row
    print_totals(rows)
    if warning := eval_heavy_warning(config, [work for work, _, _ in rows]):
        console.print(f"[bold yellow]warning:[/] {warning}", highlight=False)


def print_totals(rows: list[tuple[StageWork, float | None, bool]]) -> None:
    """What the stages to compute add up to, and the estimate with what it leaves out."""
    todo = [(work, seconds) for work, seconds, held in rows if not held]
    trained = sum(w.samples for w, _ in todo if w.kind == "sft")
    completions = sum(w.samples for w, _ in todo if w.kind == "rl")
    evaluated = sum(w.samples for w, _ in todo if w.kind in ("rollout", "search"))
    steps = sum(w.steps or 0 for w, _ in todo)
    bound = "up to " if any(w.at_most for w, _ in todo) else ""
    console.print(f"to compute: {steps:,} training steps ({trained:,} SFT examples, "
                  f"{completions:,} GRPO completions), {bound}{evaluated:,} evaluation samples",
                  highlight=False)
    known = sum(seconds for _, seconds in todo if seconds is not None)
    unknown = list(dict.fromkeys(w.stage for w, seconds in todo if seconds is None))
    if not todo:
        console.print("estimate: every stage is cached", highlight=False)
    elif not unknown:
        console.print(f"estimate: about {duration(known)} (prepare, model init and the "
                      "evaluation's analysis not counted)", highlight=False)
    else:
        head = f"at least {duration(known)}; " if known else ""
        console.print(f"estimate: {head}no measured rate for {', '.join(unknown)} (each stage "
                      f"that computes records its pace in {rates_path()})", highlight=False)
