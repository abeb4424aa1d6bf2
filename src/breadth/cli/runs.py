"""Running and reading runs: `breadth run`, `breadth grid`, `breadth compare` and
`breadth runs`."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Column, Table

from breadth.cli import stack
from breadth.cli.config import complete_preset, load_or_fail
from breadth.cli.output import console, fail, print_json
from breadth.config import ConfigError, PipelineConfig

if TYPE_CHECKING:  # the CLI imports the study modules on use, to start fast
    from breadth.study.power import PilotSizing
    from breadth.study.reference import ReferenceTable

app = typer.Typer()
PILOT_HELP = ("A power pilot's JSON (scripts/results/pilot.py, e.g. docs/results/pilot.json): the "
              "claims it sized cite its seed sd and seeds needed beside the grid's own.")
REFERENCE_HELP = ("A fuller grid's claims.json (`breadth compare --grid ID --claims-out DIR`, e.g. "
                  "docs/results/grids/full-grid-6abeba80/claims.json): the rows of formats this "
                  "grid left out are listed as not run, each citing what that grid measured and priced.")


@app.command()
def run(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.",
                                        autocompletion=complete_preset)] = "default",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="key=value override, e.g. rl.max_steps=4.")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help=(
        "Print the work (samples and steps per stage) and its time at this machine's measured "
        "pace, with the cached stages, and stop."))] = False,
) -> None:
    """Run the whole pipeline locally (brings the stack up first when it is not running)."""
    config = load_or_fail(preset, set_)  # validated before any service starts or compute happens
    _fail_on_missing_paths(config)
    _fail_on_unfit_data(config)
    if dry_run:
        # Imported on use: the plan loads the stages' modules, which a real run loads later.
        from breadth.cli.costs import print_run_plan

        print_run_plan(config)
        return
    env = stack.bring_up_stack(reconcile=False)
    # Imported on use: flows/ and tasks/ load Prefect, which other commands do not need.
    from breadth_flows.in_process import in_process_run
    from breadth_flows.pipeline import pipeline  # after the environment points Prefect at the stack

    started = time.monotonic()
    try:
        with in_process_run():
            result = pipeline(config=config)
    except Exception as error:  # noqa: BLE001 - reported in one paragraph; traceback in the log
        fail(
            f"the pipeline failed: {type(error).__name__}: {error}\nThe failing task's log and "
            f"traceback are above and in the Prefect UI ({env['PREFECT_UI_URL']}/runs); the "
            "MLflow parent run is marked FAILED. Stages that finished are cached: fix the cause "
            "and run the same command again."
        )
    elapsed = time.monotonic() - started
    console.print(f"\n[bold green]pipeline finished[/] in {elapsed:.1f}s", highlight=False)
    console.print(f"  MLflow run:  {result['mlflow_run_url']}", highlight=False)
    prefect_url = result.get("prefect_flow_run_url") or f"{env['PREFECT_UI_URL']}/runs"
    console.print(f"  Prefect run: {prefect_url}", highlight=False)
    console.print(
        f"  S3 prefix:   s3://{env['BREADTH_S3_BUCKET']}/runs/{result['mlflow_run_id']}/ "
        f"(endpoint {env['BREADTH_S3_ENDPOINT']})", highlight=False,
    )
    _print_cached_stage_files(result.get("cached_stage_files", {}))
    console.print(f"  Report:      {result['report']}", highlight=False)
    _print_paired(Path(result["report"]).with_name("paired.json"))


def _print_paired(path: Path) -> None:
    """Each model against its base, paired by problem, as the report states it: the run's
    answer in the terminal, not only behind a link."""
    if not path.is_file():
        return
    for name, entry in json.loads(path.read_text(encoding="utf-8")).items():
        console.print(f"  {name} − {entry['base']}, paired over problems (95% CI):", highlight=False)
        for d in entry["differences"]:
            console.print(f"    {d['measure']:<18} {d['estimate']:+.3f} [{d['low']:+.3f}, "
                          f"{d['high']:+.3f}]  {d['direction']}", highlight=False)


def _print_cached_stage_files(files: dict[str, str]) -> None:
    """Where the stages served from the cache keep their files: under the runs that produced
    them, not this run's S3 prefix (empty after a fully cached re-run; the report is also on
    this run's MLflow artifacts)."""
    if not files:
        return
    console.print("  Cached stages' files stay where the runs that produced them wrote them:",
                  highlight=False)
    width = max(map(len, files))
    for stage, uri in files.items():
        console.print(f"    {stage:<{width}}  {uri}", highlight=False)


# GridConfig field -> the `breadth grid` option that sets it, for errors that name the option.
GRID_OPTIONS = {"preset": "--preset", "formats": "--format", "rewards": "--reward",
                "seeds": "--seed", "overrides": "--set", "grid_id": "--grid-id",
                "format_rewards": "--format-reward",
                "cell_runner": "--cell-runner", "cell_deployment": "--cell-deployment",
                "pilot": "--pilot", "reference": "--reference"}


@app.command()
def grid(
    preset: Annotated[str | None, typer.Option(
        help="Preset every cell starts from (default: the nightly's, reasoning).",
        autocompletion=complete_preset)] = None,
    format_: Annotated[list[str] | None, typer.Option("--format", help="Formats (repeat).")] = None,
    reward: Annotated[list[str] | None, typer.Option(help="Reward specs (repeat).")] = None,
    seed: Annotated[list[int] | None, typer.Option(help="Seeds (repeat).")] = None,
    format_reward: Annotated[list[str] | None, typer.Option(
        help="FORMAT=REWARD (repeat): that format runs only the rewards named for it, e.g. "
        "mcq=correctness; formats not named run every --reward.",
    )] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override for every cell.")] = None,
    grid_id: Annotated[str | None, typer.Option(help="Grid id tag (default: derived).")] = None,
    dry_run: Annotated[bool, typer.Option(help="List the cells (validated) and stop.")] = False,
    cell_runner: Annotated[str, typer.Option(
        help="in_process: cells one after another here; deployment: each cell a run of the "
        "`adhoc` deployment, taken by the workers of its pool (`breadth deploy` first).",
    )] = "in_process",
    cell_deployment: Annotated[str, typer.Option(
        help="With --cell-runner deployment: the pipeline deployment whose runs are the cells.",
    )] = "breadth-pipeline/adhoc",
    pilot: Annotated[Path | None, typer.Option(help=PILOT_HELP)] = None,
    reference: Annotated[Path | None, typer.Option(help=REFERENCE_HELP)] = None,
) -> None:
    """Run a format x reward x seed grid, then its summary, claims and collapse alarm."""
    from pydantic import ValidationError

    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.config import describe_options
    from breadth.study.grid_design import GridConfig

    values: dict = {"overrides": set_ or [], "grid_id": grid_id, "cell_runner": cell_runner,
                    "cell_deployment": cell_deployment,
                    "pilot": str(pilot.resolve()) if pilot else None,
                    "reference": str(reference) if reference else None}
    if preset:
        values["preset"] = preset
    for key, given in (("formats", format_), ("rewards", reward), ("seeds", seed)):
        if given:
            values[key] = given
    for text in format_reward or []:
        fmt, sep, objective = text.partition("=")
        if not sep or not fmt.strip() or not objective.strip():
            fail(f"--format-reward {text!r}: give FORMAT=REWARD, e.g. --format-reward "
                 "mcq=correctness")
        values.setdefault("format_rewards", {}).setdefault(fmt.strip(), []).append(
            objective.strip())
    try:
        study = GridConfig.model_validate(values)
    except ValidationError as error:
        fail(describe_options(error, GRID_OPTIONS) + "\nSee `breadth grid --help`.")
    try:
        cells = study.cells()
    except (ConfigError, ValueError) as error:
        fail(str(error))
    if pilot is not None:
        _read_pilot(pilot)  # read again by the flow; refused here before the stack starts
    if reference is not None:
        _read_reference(reference)  # as the pilot
    if study.cell_runner == "in_process":  # deployment cells run on their workers' files
        _fail_on_missing_paths(cells[0][3])  # the cells share their data and model
        from breadth.preflight.checks import unique_fit_configs

        # Cells differ in format and seed (other rows) and rewards may change the limits:
        # each distinct combination is checked once.
        for config in unique_fit_configs([cell[3] for cell in cells]):
            _fail_on_unfit_data(config)
    console.print(f"grid of {len(cells)} cells", highlight=False)
    if dry_run:
        _print_cells(cells)
        return
    stack.bring_up_stack(reconcile=False)
    # Imported on use: flows/ and tasks/ load Prefect, which other commands do not need.
    from breadth_flows.grid_flow import grid as grid_flow
    from breadth_flows.in_process import in_process_run

    started = time.monotonic()
    try:
        with in_process_run():
            result = grid_flow(study=study)
    except Exception as error:  # noqa: BLE001 - reported in one paragraph
        fail(f"the grid failed: {type(error).__name__}: {error}")
    console.print(f"grid {result['grid_id']} finished in {time.monotonic() - started:.0f}s; "
                  f"compare with: breadth compare --grid {result['grid_id']}", highlight=False)


def _read_pilot(pilot: Path) -> PilotSizing:
    """`--pilot`'s power pilot, read, or the CLI's error naming the option."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.study.power import read_pilot_sizing

    try:
        return read_pilot_sizing(pilot)
    except ValueError as error:
        fail(f"--pilot: {error}")


def _read_reference(reference: Path) -> ReferenceTable:
    """`--reference`'s table, read, or the CLI's error naming the option."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.study.reference import read_reference

    try:
        return read_reference(reference)
    except ValueError as error:
        fail(f"--reference: {error}")


def _fail_on_missing_paths(config: PipelineConfig) -> None:
    """A data file or model folder missing on this machine, named before anything starts."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.preflight.checks import check_local_paths

    try:
        check_local_paths(config)
    except ConfigError as error:
        fail(str(error))


def _fail_on_unfit_data(config: PipelineConfig) -> None:
    """Rows that do not fit the model's context or the completion budgets, refused with the
    keys, the longest row and the values that fit, before anything starts; the characters
    the model's tokenizer maps or does not know, said (docs/guide/data-fit.md)."""
    # Imported on use, to keep the CLI's start fast (breadth --help loads every command module).
    from breadth.preflight.checks import check_fit

    try:
        report = check_fit(config, offline=True)
    except ConfigError as error:
        fail(str(error))
    except (ValueError, OSError) as error:  # the data itself: bad rows, an empty split
        fail(f"preparing the data failed (checked before anything starts): {error}")
    if report.skipped:
        console.print(f"[yellow]note:[/] the data's token lengths were not checked here: "
                      f"{report.skipped}; the run checks them once it has the model.",
                      highlight=False)
    for key, line in (report.characters.summary() if report.characters else {}).items():
        said = ("characters the model's tokenizer reads as their ASCII spelling"
                if key == "data.chars_mapped" else
                "characters the model's tokenizer does not know (each becomes its unknown "
                "token; the run's MLflow tag data.chars_unknown lists them too)")
        console.print(f"[yellow]note:[/] {said}: {line}", highlight=False)


def _print_cells(cells: list) -> None:
    """The grid's cells, each with the samples it will generate and their time at this
    machine's measured pace, and the stages whose results this machine's Prefect result
    storage already holds (those a run serves from the cache, at no cost); then the totals
    and the evaluation warning of the cells."""
    # Imported on use: flows/ and tasks/ load Prefect, which other commands do not need.
    from breadth_tasks.stage_keys import stage_keys

    from breadth.cli.costs import cached_stages, cost_rows, print_totals, problem_counts
    from breadth.display.grid_progress import duration
    from breadth.preflight.costs import eval_heavy_warning, measured_rates
    from breadth.stack.local import StackSettings

    storage = StackSettings().result_storage
    rates, counts, everything, warnings = measured_rates(), {}, [], {}
    table = Table("format", "objective", "seed", "config hash", "to generate", "time",
                  "cached stages")
    computed: set[str] = set()  # stage keys an earlier cell computes: a later one reuses them
    for fmt, objective, cell_seed, config in cells:
        keys = stage_keys(config)
        cached = cached_stages(keys)
        free = cached | {stage for stage, key in keys.items() if key in computed}
        rows = cost_rows(config, keys, free, problem_counts(config, keys["prepare"], counts),
                         rates)
        computed.update(keys.values())
        everything += rows
        if warning := eval_heavy_warning(config, [work for work, _, _ in rows]):
            warnings.setdefault(warning, []).append(f"{fmt}/{objective}/seed{cell_seed}")
        todo = [(work, seconds) for work, seconds, held in rows if not held]
        generated = sum(work.samples for work, _ in todo if work.kind != "sft")
        known = sum(seconds for _, seconds in todo if seconds is not None)
        time = ("-" if not todo else duration(known) if all(s is not None for _, s in todo)
                else f"≥ {duration(known)}" if known else "?")
        held = [stage for stage in keys if stage in cached]
        shown = "all" if len(held) == len(keys) else ", ".join(held) or "none"
        table.add_row(fmt, objective, str(cell_seed), config.content_hash()[:12],
                      f"{generated:,}", time, f"{len(held)}/{len(keys)}: {shown}")
    Console(width=max(console.width, 160)).print(table)
    console.print(f"cache: {storage} (this machine's Prefect result storage)", highlight=False)
    print_totals(everything)
    for warning, where in warnings.items():
        cells_text = "every cell" if len(where) == len(cells) else ", ".join(where)
        console.print(f"[bold yellow]warning[/] ({cells_text}): {warning}", highlight=False)


@app.command()
def compare(
    run_ids: Annotated[list[str] | None, typer.Argument(help="MLflow parent run ids.")] = None,
    grid_id: Annotated[str | None, typer.Option("--grid", help="Compare a grid's cells.")] = None,
    out: Annotated[Path | None, typer.Option(help=(
        "Folder for the PNG plots (default: compare/<grid id>, or compare/<first run id[:8]>, "
        "with a hash of the ids for several runs)."))] = None,
    model: Annotated[str, typer.Option(help="Trained model to compare.")] = "rl",
    claims_out: Annotated[Path | None, typer.Option(
        help="Folder for a grid's claims report (default: OUT/claims).")] = None,
    note: Annotated[Path | None, typer.Option(
        help="Markdown placed under the claims report's header, e.g. how the grid was run.")] = None,
    pilot: Annotated[Path | None, typer.Option(help=PILOT_HELP)] = None,
    reference: Annotated[Path | None, typer.Option(help=REFERENCE_HELP)] = None,
    json_: Annotated[bool, typer.Option("--json", help=(
        "Print the cells, runs, plot paths and a grid's claims as JSON (files are still "
        "written)."))] = False,
) -> None:
    """Side-by-side table (terminal) and plots (PNG) of pipeline runs or a grid, from MLflow."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stack.local import StackSettings
    from breadth.study.grid_report import plot_grid, render_table
    from breadth.study.grid_statistics import claim_settings_of_runs, grid_summary
    from breadth.tracking.fetch import CompareError, fetch_runs, is_curve_column
    from breadth.tracking.runs import TrackingError, check_tracking_server

    if not run_ids and not grid_id:
        fail("give run ids (breadth compare RUN_ID ...) or a grid (breadth compare --grid ID)")
    if note is not None and not note.is_file():
        fail(f"--note {note} is not a file")
    pilot_sizing = _read_pilot(pilot) if pilot is not None else None
    reference_table = _read_reference(reference) if reference is not None else None
    try:
        uri = StackSettings().mlflow_url  # MLFLOW_TRACKING_URI, else the local stack's server
        check_tracking_server(uri)
        runs = fetch_runs(uri, run_ids=run_ids or None, grid_id=grid_id)
    except (CompareError, TrackingError) as error:
        fail(str(error))
    try:
        # The transfer split the runs were evaluated with (as the grid flow's summary uses its
        # cells'), not the defaults: a run evaluated at another split_k has other base-unsolved
        # problems.
        settings = claim_settings_of_runs(runs)
    except ValueError as error:
        fail(str(error))
    try:
        summary = grid_summary(runs, _per_problem_tables(uri, runs), model=model,
                               settings=settings)
    except ValueError as error:  # e.g. --model naming a model the runs were not evaluated on
        fail(f"--model {model}: {error}")
    # One folder per comparison: with one shared `compare/`, a grid's compare replaced a run
    # compare's plots without a word.
    out = out or _default_out(grid_id, run_ids or [])
    claims_dir = claims_out or out / "claims"
    earlier = {path for folder in (out, claims_dir) if folder.is_dir() for path in folder.iterdir()}
    plots = plot_grid(runs, summary, out)
    claims, claims_note = None, ""
    if grid_id:
        claims, claims_note = _write_claims(uri, grid_id, claims_dir,
                                            note.read_text() if note else "", settings,
                                            pilot_sizing, reference_table)
    if json_:
        print_json({
            "model": model, "k": summary.attrs.get("k"), "cells": _records(summary),
            "runs": _records(runs.drop(columns=[c for c in runs if is_curve_column(c)])),
            "plots": [str(path) for path in plots],
            "claims": json.loads((claims / "claims.json").read_text()) if claims else None,
            "claims_note": claims_note or None,
            "split_cells": summary.attrs["split_cells"],
            "keys_beyond_the_rows": summary.attrs["keys_beyond_the_rows"],
        })
        return
    # The table is wide: never squeeze it into a pipe's default 80 columns. A config column
    # (runs of a cell with unlike configs) widens it past 220: room for it, not a cropped row.
    table = render_table(summary)
    width = 220
    if summary.attrs["split_cells"]:
        width = max(width, min(Console(width=1000).measure(table).maximum, 400))
    Console(width=max(console.width, width)).print(table)
    for cell, keys in summary.attrs["split_cells"].items():
        console.print(
            f"[yellow]not pooled:[/] runs of {cell} differ in config beyond the seed "
            f"({', '.join(keys) or 'config not logged on every run'}): one row per config, "
            "its `seeds` counting only runs of that config. To pool seeds, compare runs that "
            "share every other key.", highlight=False)
    if beyond := summary.attrs["keys_beyond_the_rows"]:
        console.print(
            f"[yellow]not one factor:[/] the rows differ in more than their format and reward "
            f"({', '.join(beyond)}), so a difference between them is not the reward's alone. "
            "Compare runs that share every other key, or a grid (`breadth grid`).",
            highlight=False)
    replaced = " (replaced the earlier file)"
    for path in plots:
        console.print(f"wrote {path}{replaced if path in earlier else ''}", highlight=False)
    if claims is not None:
        # A table, not claims.md itself: its markdown (a provenance header, image links,
        # `| **claim** |` rows) is for a renderer, not a terminal.
        _print_claims(json.loads((claims / "claims.json").read_text()))
        console.print(f"wrote {claims / 'claims.md'} (the claims with their details, how the "
                      "grid ran, pass@k per objective) and claims.json beside it"
                      + (" (replacing an earlier report)" if claims / "claims.md" in earlier
                         else ""), highlight=False)
    elif claims_note:
        console.print(f"no claims: {claims_note}", highlight=False)


# Verdict colours of the terminal's claims table; "not run" is dim: nothing was measured.
_VERDICT_STYLES = {"reproduced": "green", "refuted": "red", "no effect": "cyan",
                   "smaller than δ, but not zero": "blue", "inconclusive": "yellow",
                   "not run": "dim"}


def _print_claims(rows: list[dict]) -> None:
    """The claims (claims.json's rows) as a terminal table, and how many got each verdict."""
    from rich.text import Text

    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.study.claims import VERDICTS, Claim, effect_text, unadjusted_text

    claims = [Claim(**row) for row in rows]
    # Only the measure wraps: an interval or a verdict cut in two misreads.
    table = Table(Column("claim", no_wrap=True), Column("format", no_wrap=True),
                  Column("measure", min_width=30), Column("δ", no_wrap=True),
                  Column("value [Holm-adjusted CI]", no_wrap=True),
                  Column("unadjusted 95%", no_wrap=True), Column("verdict", no_wrap=True),
                  title="claims", title_justify="left")
    for c in claims:
        # Text, not markup: measures and intervals hold brackets.
        delta = "" if c.delta is None else f"±{c.delta:.3g}"
        table.add_row(Text(c.claim), Text(c.format), Text(c.measure), Text(delta),
                      Text(effect_text(c)), Text(unadjusted_text(c)),
                      Text(c.verdict, style=_VERDICT_STYLES.get(c.verdict, "")))
    # Room for a measure on a line or two beside δ and two intervals, as the summary table
    # above gets its width (a pipe's default 80 columns leave the measure 4 characters a line).
    Console(width=max(console.width, 170)).print(table)
    counts = [f"{sum(c.verdict == v for c in claims)} {v}" for v in VERDICTS]
    console.print(f"verdicts: {', '.join(counts)}", highlight=False)


def _default_out(grid_id: str | None, run_ids: list[str]) -> Path:
    """compare/<grid id>; compare/<run id[:8]> for one run; for several, the first's id and
    a hash of them all, so two comparisons never share a folder (the same one re-run does).

    >>> str(_default_out("study-20261123", [])), str(_default_out(None, ["0123456789abcdef"]))
    ('compare/study-20261123', 'compare/01234567')
    >>> str(_default_out(None, ["0123456789abcdef", "fedcba9876543210"]))
    'compare/01234567-and-1-more-e3b3c90d'
    """
    import hashlib
    import re

    if grid_id:
        name = grid_id
    else:
        ids = sorted(set(run_ids))  # `compare A B` and `compare B A` are one comparison
        name = ids[0][:8]
        if len(ids) > 1:
            digest = hashlib.sha256(" ".join(ids).encode()).hexdigest()[:8]
            name += f"-and-{len(ids) - 1}-more-{digest}"
    # A tag's value may hold a path separator: one folder under compare/, never elsewhere.
    return Path("compare") / (re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "_")


def _per_problem_tables(uri: str, runs):
    """The runs' per-problem tables, which the summary's intervals resample; None for runs
    logged without them (the summary's `ci` column then says there are no intervals)."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.study.frame import study_frame_of_runs

    try:
        return study_frame_of_runs(uri, runs)
    except FileNotFoundError:
        return None


def _records(frame) -> list[dict]:
    """A frame as JSON rows, NaN as null (strict JSON parsers refuse NaN)."""
    return json.loads(frame.to_json(orient="records"))


def _write_claims(
    uri: str, grid_id: str, folder: Path, note: str, settings, pilot=None, reference=None
) -> tuple[Path | None, str]:
    """The grid's claims report (each literature claim with its effect, CI and verdict) in
    `folder`; or None and why there is none."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.study.publish import publish_claims

    # The report names the command that wrote it, so a committed copy says how to redo it.
    command = shlex.join(["breadth", *sys.argv[1:]])
    try:
        publish_claims(uri, grid_id, folder, settings, command=command, note=note, pilot=pilot,
                       reference=reference)
    except FileNotFoundError as error:  # cells without their per-problem tables
        return None, str(error)
    return folder, ""


@app.command("runs")
def list_runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs.")] = 20,
    experiment: Annotated[str | None, typer.Option(help="Only this MLflow experiment.")] = None,
    grid_id: Annotated[str | None, typer.Option("--grid", help="Only this grid's cells.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """The newest pipeline runs: name, status, headline metrics and links to MLflow and Prefect."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stack.local import StackSettings
    from breadth.tracking.recent import RunListError, recent_runs
    from breadth.tracking.rest import MlflowRequestError
    from breadth.tracking.runs import TrackingError, check_tracking_server

    try:
        uri = StackSettings().mlflow_url  # MLFLOW_TRACKING_URI, else the local stack's server
        check_tracking_server(uri)
        rows = recent_runs(uri, limit=limit, experiment=experiment, grid_id=grid_id)
    # An answer MLflow refused (e.g. credentials, 401/403) names the endpoint and the fix.
    except (RunListError, TrackingError, MlflowRequestError) as error:
        fail(str(error))
    if json_:
        print_json(rows)
        return
    if not rows:
        console.print(_no_runs_message(uri, experiment, grid_id), highlight=False)
        return
    # pass@1, pass@k by k, then the rest: runs that measured different k share the table.
    names = sorted({name for row in rows for name in row["headline"]},
                   key=lambda name: (0, int(name[5:])) if name.startswith("pass@") else (1, 0))
    table = _runs_table(rows, names)
    # Links are never cropped: a fixed 260 columns cut remote MLflow and Prefect links to
    # `http://…`, which lead nowhere. A pipe gets the whole table however wide. A terminal too
    # narrow for it (its box lines wrapped into a mess) gets a table without the link columns
    # and each run's links whole on lines of their own below it; one too narrow for that (a
    # 32-character id and the figures), one block of lines per run.
    width = Console(width=100_000).measure(table).maximum
    room = _terminal_width()
    if room is None or width <= room:
        Console(width=max(console.width, width)).print(table)
        return
    compact = _compact_table(rows, names, room)
    if compact is None:
        _print_blocks(rows, names)
        return
    console.print(compact, soft_wrap=False)
    linked = [row for row in rows if row["mlflow_url"] or row["prefect_url"]]
    if linked:
        console.print("\nLinks:", highlight=False)
    for row in linked:
        # The name may be cut to the width; the run id, which identifies the row, comes first.
        console.print(f"  {row['run_id']}  {row['name']}", highlight=False, markup=False,
                      soft_wrap=False, no_wrap=True, overflow="ellipsis")
        _print_links(row, "    ")


def _terminal_width() -> int | None:
    """The width to fit `breadth runs` into: the terminal's (or COLUMNS), None for a pipe."""
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console.width
    return None


# The columns every listing shows after the run's id and name (`_facts`).
FACT_COLUMNS = ("status", "started (UTC)", "experiment", "cached", "model")


def _runs_table(rows: list[dict], names: list[str]) -> Table:
    """One row per run, with its id: `breadth compare` takes whole run ids, and runs of one
    config share the start of their name (a fully cached re-run ends in `·cached`)."""
    table = Table("run id", "run", *FACT_COLUMNS, *names, "MLflow", "Prefect")
    for row in rows:
        table.add_row(row["run_id"], row["name"], *_facts(row, names),
                      row["mlflow_url"] or "-", row["prefect_url"] or "-")
    return table


def _facts(row: dict, names: list[str]) -> list[str]:
    """Status, start, experiment, how much came from the cache, model and the headline
    figures, as the table shows them."""
    return [row["status"], row["started"][:16].replace("T", " "), row["experiment"],
            row.get("cached") or "-", row["model"] or "-",
            *(_figure(row["headline"].get(name)) for name in names)]


def _compact_table(rows: list[dict], names: list[str], room: int) -> Table | None:
    """The table without links in `room` columns, or None when it cannot fit. Widths are set
    here: rich, short of room, cut whole columns off (figures gone without a sign). Each
    column gets at least its longest word (so only whole words wrap); the id, 32 characters,
    goes on its name's first line (names fold under it), and room left widens the rest."""
    headers = ["run id / run", *FACT_COLUMNS, *names]
    body = [[f"{row['run_id']}\n{row['name']}", *_facts(row, names)] for row in rows]
    columns = list(zip(headers, *body, strict=True))
    natural = [max(len(line) for text in column for line in text.splitlines())
               for column in columns]
    least = [max(len(word) for text in column for word in text.split()) for column in columns]
    least[0] = max(len(row["run_id"]) for row in rows)
    # SIMPLE_HEAD without an edge: each column one space of padding and one of separator.
    spare = room - (sum(least) + 2 * len(columns) - 1)
    if spare < 0:
        return None
    widths = list(least)
    for i in [*range(1, len(columns)), 0]:  # short columns whole first, then the names
        widths[i] += min(spare, natural[i] - least[i])
        spare -= widths[i] - least[i]
    table = Table(*(Column(header, width=width, overflow="fold")
                    for header, width in zip(headers, widths, strict=True)),
                  box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))
    for cells in body:
        table.add_row(*cells)
    return table


def _print_blocks(rows: list[dict], names: list[str]) -> None:
    """Each run as a few lines (for a terminal too narrow for any table): id, status and
    start; name; model and figures; links."""
    for row in rows:
        status, started, experiment, cached, model, *figures = _facts(row, names)
        shown = "  ".join(f"{name} {value}" for name, value in zip(names, figures, strict=True)
                          if row["headline"].get(name) is not None)
        for line in (f"{row['run_id']}  {status}  {started} UTC",
                     f"  {row['name']}  (experiment {experiment}, cached {cached})",
                     f"  {model}: {shown or 'no figures'}"):
            console.print(line, highlight=False, markup=False, soft_wrap=False, overflow="fold")
        _print_links(row, "  ")


def _print_links(row: dict, indent: str) -> None:
    # Whole, however long: the terminal wraps a long URL, and copying it gives it back whole.
    for label, url in (("MLflow ", row["mlflow_url"]), ("Prefect", row["prefect_url"])):
        if url:
            console.print(f"{indent}{label} {url}", highlight=False, markup=False)


def _no_runs_message(uri: str, experiment: str | None, grid_id: str | None) -> str:
    """What an empty listing means: with a filter, that nothing matched it (not that MLflow is
    empty)."""
    where = "".join([f" of grid {grid_id!r}" if grid_id else "",
                     f" in experiment {experiment!r}" if experiment else ""])
    if not where:
        return f"no pipeline runs in MLflow at {uri} (start one with `breadth run`)"
    hint = " (a grid's id is the grid.id tag of its runs; `breadth runs --json` lists them)"
    return f"no pipeline runs{where} in MLflow at {uri}{hint if grid_id else ''}"


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
