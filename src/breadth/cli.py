"""The `breadth` command. Reaches into flows/ lazily (run, deploy) so `--help` stays instant."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from breadth.config import ConfigError, PipelineConfig, load_config

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="breadth: data in two formats, diversity-aware GRPO, rollouts and search-style "
    "evaluation, tracked in MLflow and S3, orchestrated by Prefect.",
)
stack_app = typer.Typer(no_args_is_help=True, help="The local stack: S3, MLflow and Prefect.")
app.add_typer(stack_app, name="stack")
console = Console(soft_wrap=True)  # URLs must stay on one line for copy-paste
PROJECT_DIR = Path(__file__).resolve().parents[2]


@app.callback(invoke_without_command=True)
def _version(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        from importlib.metadata import version as installed

        console.print(f"breadth {installed('breadth')}", highlight=False)
        raise typer.Exit()


@app.command()
def presets() -> None:
    """The presets, each with the first line of its description."""
    from importlib import resources

    from breadth.config import available_presets

    for name in available_presets():
        text = (resources.files("breadth") / "presets" / f"{name}.yaml").read_text()
        first = next((line.lstrip("# ").strip() for line in text.splitlines()
                      if line.startswith("#")), "")  # fmt: skip
        console.print(f"{name:<12} {first}", highlight=False, markup=False)


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _stack():
    from breadth.stack import LocalStack, StackSettings

    return LocalStack(StackSettings())


def _bring_up_stack() -> dict[str, str]:
    """Start what is not running (or check what is external); export the client environment."""
    from breadth.stack import StackError

    stack = _stack()
    try:
        stack.up()
    except StackError as error:
        _fail(str(error))
    env = stack.settings.client_env()
    os.environ.update(env)
    return env


@stack_app.command("up")
def stack_up() -> None:
    """Start S3, MLflow and Prefect on 127.0.0.1 (reuses what already runs)."""
    env = _bring_up_stack()
    stack_status()
    console.print("\nClient environment (export these to use the stack from another shell):")
    from breadth.stack import without_userinfo

    for key in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT",
                "BREADTH_S3_BUCKET", "AWS_ACCESS_KEY_ID"):  # fmt: skip
        # A URL's user:password (MLFLOW_TRACKING_URI may carry them) is never printed.
        console.print(f"  export {key}={without_userinfo(env[key])}", highlight=False)
    console.print("  export AWS_SECRET_ACCESS_KEY=... (in .breadth/credentials.json)")


@stack_app.command("down")
def stack_down() -> None:
    """Stop the services this stack started (external ones are left alone)."""
    _stack().down()
    stack_status()


@stack_app.command("status")
def stack_status() -> None:
    """Show each service's address and state."""
    table = Table("service", "url", "state")
    for row in _stack().status():
        table.add_row(row["service"], row["url"], row["state"])
    console.print(table)


def _load(preset: str, overrides: list[str] | None) -> PipelineConfig:
    try:
        return load_config(preset, overrides or [])
    except ConfigError as error:
        _fail(str(error))
        raise  # unreachable: keeps type checkers happy


@app.command()
def config(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.")] = "default",
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value override.")] = None,
    keys: Annotated[bool, typer.Option(help="List every config key with its help.")] = False,
    rewards: Annotated[
        bool, typer.Option(help="Print the reward terms and their parameters (markdown).")
    ] = False,
) -> None:
    """Print the resolved config (validated), every key with its description, or the rewards."""
    if rewards:
        from breadth.rewards.registry import reward_table_markdown

        console.print(reward_table_markdown(), highlight=False, markup=False)
        return
    if keys:
        from breadth.config import describe_keys

        for key, description in describe_keys():
            console.print(f"[bold]{key}[/]  {description}", highlight=False)
        return
    import yaml

    console.print(yaml.safe_dump(_load(preset, set_).model_dump(mode="json"), sort_keys=False))


@app.command()
def run(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.")] = "default",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="key=value override, e.g. rl.max_steps=4.")
    ] = None,
) -> None:
    """Run the whole pipeline locally (brings the stack up first when it is not running)."""
    config = _load(preset, set_)  # validated before any service starts or compute happens
    env = _bring_up_stack()
    from flows.pipeline import pipeline  # after the environment points Prefect at the stack

    started = time.monotonic()
    try:
        result = pipeline(config=config)
    except Exception as error:  # noqa: BLE001 - reported in one paragraph; traceback in the log
        _fail(
            f"the pipeline failed: {type(error).__name__}: {error}\nThe failing task's log and "
            f"traceback are above and in the Prefect UI ({env['PREFECT_UI_URL']}/runs); the "
            "MLflow parent run is marked FAILED. Stages that finished are cached: fix the cause "
            "and run the same command again."
        )
    elapsed = time.monotonic() - started
    console.print(f"\n[bold green]pipeline finished[/] in {elapsed:.1f}s", highlight=False)
    console.print(f"  MLflow run:  {result['mlflow_run_url']}", highlight=False)
    console.print(f"  Prefect UI:  {env['PREFECT_UI_URL']}/runs", highlight=False)
    console.print(
        f"  S3 prefix:   s3://{env['BREADTH_S3_BUCKET']}/runs/{result['mlflow_run_id']}/ "
        f"(endpoint {env['BREADTH_S3_ENDPOINT']})", highlight=False,
    )  # fmt: skip
    console.print(f"  Report:      {result['report']}", highlight=False)


@app.command()
def grid(
    preset: Annotated[str, typer.Option(help="Preset every cell starts from.")] = "study",
    format_: Annotated[list[str] | None, typer.Option("--format", help="Formats (repeat).")] = None,
    reward: Annotated[list[str] | None, typer.Option(help="Reward specs (repeat).")] = None,
    seed: Annotated[list[int] | None, typer.Option(help="Seeds (repeat).")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override for every cell.")] = None,
    grid_id: Annotated[str | None, typer.Option(help="Grid id tag (default: derived).")] = None,
    dry_run: Annotated[bool, typer.Option(help="List the cells (validated) and stop.")] = False,
) -> None:
    """Run a format x reward x seed grid locally, then its summary, claims and collapse alarm."""
    from breadth.config import GridConfig

    values: dict = {"preset": preset, "overrides": set_ or [], "grid_id": grid_id}
    for key, given in (("formats", format_), ("rewards", reward), ("seeds", seed)):
        if given:
            values[key] = given
    try:
        study = GridConfig.model_validate(values)
        cells = study.cells()
    except (ConfigError, ValueError) as error:
        _fail(str(error))
    console.print(f"grid of {len(cells)} cells", highlight=False)
    if dry_run:
        table = Table("format", "objective", "seed", "config hash")
        for fmt, objective, cell_seed, config in cells:
            table.add_row(fmt, objective, str(cell_seed), config.content_hash()[:12])
        console.print(table)
        return
    _bring_up_stack()
    from flows.grid import grid as grid_flow

    started = time.monotonic()
    try:
        result = grid_flow(study=study)
    except Exception as error:  # noqa: BLE001 - reported in one paragraph
        _fail(f"the grid failed: {type(error).__name__}: {error}")
    console.print(f"grid {result['grid_id']} finished in {time.monotonic() - started:.0f}s; "
                  f"compare with: breadth compare --grid {result['grid_id']}", highlight=False)


@app.command()
def compare(
    run_ids: Annotated[list[str] | None, typer.Argument(help="MLflow parent run ids.")] = None,
    grid_id: Annotated[str | None, typer.Option("--grid", help="Compare a grid's cells.")] = None,
    out: Annotated[Path, typer.Option(help="Folder for the PNG plots.")] = Path("compare"),
    model: Annotated[str, typer.Option(help="Trained model to compare.")] = "rl",
    claims_out: Annotated[Path | None, typer.Option(
        help="Folder for a grid's claims report (default: OUT/claims).")] = None,
    note: Annotated[Path | None, typer.Option(
        help="Markdown placed under the claims report's header, e.g. how the grid was run.")] = None,
) -> None:
    """Side-by-side table (terminal) and plots (PNG) of pipeline runs or a grid, from MLflow."""
    from breadth.evaluation.grid import grid_summary
    from breadth.evaluation.grid_report import plot_grid, render_table
    from breadth.stack import StackSettings
    from breadth.tracking.fetch import CompareError, fetch_runs
    from breadth.tracking.runs import TrackingError, check_tracking_server

    if not run_ids and not grid_id:
        _fail("give run ids (breadth compare RUN_ID ...) or a grid (breadth compare --grid ID)")
    try:
        uri = StackSettings().mlflow_url  # MLFLOW_TRACKING_URI, else the local stack's server
        check_tracking_server(uri)
        runs = fetch_runs(uri, run_ids=run_ids or None, grid_id=grid_id)
    except (CompareError, TrackingError) as error:
        _fail(str(error))
    summary = grid_summary(runs, model=model)
    # The table is wide: never squeeze it into a pipe's default 80 columns.
    Console(width=max(console.width, 220)).print(render_table(summary))
    for path in plot_grid(runs, summary, out):
        console.print(f"wrote {path}", highlight=False)
    if grid_id:
        if note is not None and not note.is_file():
            _fail(f"--note {note} is not a file")
        _print_claims(uri, grid_id, claims_out or out / "claims",
                      note.read_text() if note else "")  # fmt: skip


def _print_claims(uri: str, grid_id: str, folder: Path, note: str) -> None:
    """The grid's claims: each literature claim with its effect, CI and verdict."""
    from breadth.evaluation.claims import evaluate_claims
    from breadth.evaluation.study_report import write_study_report
    from breadth.tracking.study import grid_provenance, load_study_frame, provenance_header

    try:
        frame = load_study_frame(uri, grid_id)
    except FileNotFoundError as error:
        console.print(f"no claims: {error}", highlight=False)
        return
    # The report names the command that wrote it, so a committed copy says how to redo it.
    command = shlex.join(["breadth", *sys.argv[1:]])
    header = provenance_header(grid_provenance(uri, grid_id), command)
    header += f"\n\n{note.strip()}" if note.strip() else ""
    paths = write_study_report(frame, evaluate_claims(frame), folder, header=header)
    console.print(paths[0].read_text(), highlight=False, markup=False)
    console.print(f"wrote {folder}", highlight=False)


def _data_help(key: str) -> str:
    """A prepare option's help: the config field's own description, so the CLI and the config
    document (and default) the same thing once."""
    from breadth.config import DataConfig

    return f"{DataConfig.model_fields[key].description} [config: data.{key}]"


@app.command()
def prepare(
    out: Annotated[Path, typer.Option(help="Output folder (created if missing).")],
    source: Annotated[str | None, typer.Option(help=_data_help("source"))] = None,
    format: Annotated[str | None, typer.Option(help=_data_help("format"))] = None,
    eval_source: Annotated[str | None, typer.Option(help=_data_help("eval_source"))] = None,
    eval_only: Annotated[bool, typer.Option(help=_data_help("eval_only"))] = False,
    eval_fraction: Annotated[float | None, typer.Option(help=_data_help("eval_fraction"))] = None,
    schema: Annotated[str | None, typer.Option(help=_data_help("schema_name"))] = None,
    on_bad_rows: Annotated[str | None, typer.Option(help=_data_help("on_bad_rows"))] = None,
    num_train: Annotated[int | None, typer.Option(help=_data_help("num_train"))] = None,
    num_eval: Annotated[int | None, typer.Option(help=_data_help("num_eval"))] = None,
    difficulty: Annotated[
        str | None, typer.Option(help="1, 2, 3 or mixed. " + _data_help("difficulty"))
    ] = None,
    reasoning: Annotated[bool, typer.Option(help=_data_help("reasoning"))] = False,
    seed: Annotated[int, typer.Option(help="Seed for synthetic problems and samples.")] = 0,
) -> None:
    """Write train.parquet, eval.parquet and manifest.json for one source and format.

    Every option left out takes the config's default (`breadth config --keys`)."""
    from breadth.config import validated

    given = {"source": source, "format": format, "eval_source": eval_source,
             "eval_fraction": eval_fraction, "schema_name": schema, "on_bad_rows": on_bad_rows,
             "num_train": num_train, "num_eval": num_eval}  # fmt: skip
    data = {key: value for key, value in given.items() if value is not None}
    data.update(eval_only=eval_only, reasoning=reasoning)
    if difficulty is not None:
        data["difficulty"] = int(difficulty) if difficulty.isdigit() else difficulty
    # prepare trains nothing, so an eval-only data set needs no training switched off by hand.
    training = {"enabled": not eval_only}
    try:
        config = validated({"seed": seed, "data": data, "sft": training, "rl": training})
    except ConfigError as error:
        _fail(f"{error} (prepare's --NAME options set the config keys data.NAME)")
    from breadth.stages import prepare_stage

    try:
        manifest = prepare_stage(config, out)
    except (ValueError, OSError) as error:
        _fail(str(error))
    counts = ", ".join(f"{manifest.counts[name]} {name}" for name in ("train", "eval"))
    console.print(f"wrote {out}: {counts} rows (content hash {manifest.content_hash})",
                  highlight=False)  # fmt: skip
    limited = {name: n for name, n in manifest.available.items() if n > manifest.counts[name]}
    if limited:
        console.print("  limited from " + ", ".join(f"{n} {name}" for name, n in limited.items())
                      + " rows by --num-train / --num-eval", highlight=False)  # fmt: skip


@app.command()
def evaluate(
    rollouts: Annotated[Path, typer.Option(help="Rollouts parquet of the model to judge.")],
    out: Annotated[Path, typer.Option(help="Output folder for the report.")],
    base: Annotated[Path | None, typer.Option(help="Rollouts parquet of the base model.")] = None,
    seed: int = 0,
) -> None:
    """Metrics, transfer analysis and the report from rollout files, offline."""
    from breadth.stages import evaluate_stage

    for path in [rollouts, base]:
        if path is not None and not path.is_file():
            state = "is a folder" if path.is_dir() else "does not exist"
            _fail(f"rollouts file {path} {state}: give the parquet file written by the "
                  "rollout stage (rollouts/<model>.parquet)")
    if out.exists() and not out.is_dir():
        _fail(f"output folder {out} is a file: give a folder path (it is created if missing)")
    paths = {"base": base, "trained": rollouts} if base else {"trained": rollouts}
    try:
        _, written = evaluate_stage(PipelineConfig(seed=seed), paths, out,
                                    base_model=next(iter(paths)))
    except (ValueError, KeyError, OSError) as error:  # pyarrow's ArrowInvalid is a ValueError
        message = " ".join(str(error).split())
        _fail(f"cannot evaluate {rollouts}{f' against {base}' if base else ''}: {message}")
    for path in written:
        console.print(f"wrote {path}", highlight=False)


@app.command()
def deploy(
    work_pool: Annotated[str, typer.Option(help="Process work pool to create/use.")] = (
        "breadth-cpu"
    ),
) -> None:
    """Register the deployments in prefect.yaml (nightly, adhoc) and their work pool."""
    env = _bring_up_stack()
    prefect = str(Path(sys.executable).parent / "prefect")
    full_env = {**os.environ, **env}
    inspect = subprocess.run([prefect, "work-pool", "inspect", work_pool], env=full_env,
                             capture_output=True, text=True, check=False)  # fmt: skip
    if inspect.returncode != 0:
        subprocess.run([prefect, "work-pool", "create", work_pool, "--type", "process"],
                       env=full_env, check=True)  # fmt: skip
    deployed = subprocess.run([prefect, "--no-prompt", "deploy", "--all"], cwd=PROJECT_DIR,
                              env=full_env, capture_output=True, text=True, check=False)  # fmt: skip
    if deployed.returncode != 0:
        _fail(f"prefect deploy failed:\n{deployed.stdout[-3000:]}\n{deployed.stderr[-3000:]}")
    console.print(deployed.stdout[-2000:], highlight=False)
    console.print(
        f"Start a worker with: prefect worker start --pool {work_pool}  "
        f"(PREFECT_API_URL={env['PREFECT_API_URL']})", highlight=False,
    )  # fmt: skip


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    app()

