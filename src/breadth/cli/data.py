"""`breadth prepare` and `breadth evaluate`: the data and evaluation stages offline, from
files, without the stack."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from breadth.cli.config import complete_preset, load_or_fail
from breadth.cli.output import console, fail
from breadth.config import ConfigError

if TYPE_CHECKING:
    from breadth.data.prepare import Manifest

app = typer.Typer()


def _data_help(key: str) -> str:
    """A prepare option's help: the config field's own description, so the CLI and the config
    document (and default) the same thing once."""
    # Imported on use: `breadth --help` and the other commands do not load it.
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
    rendering: Annotated[str | None, typer.Option(help=_data_help("rendering"))] = None,
    seed: Annotated[int, typer.Option(help="Seed for synthetic problems and samples.")] = 0,
) -> None:
    """Write train.parquet, eval.parquet and manifest.json for one source and format.

    Every option left out takes the config's default (`breadth config --keys`)."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.config import validated

    given = {"source": source, "format": format, "eval_source": eval_source,
             "eval_fraction": eval_fraction, "schema_name": schema, "on_bad_rows": on_bad_rows,
             "num_train": num_train, "num_eval": num_eval, "rendering": rendering}
    data = {key: value for key, value in given.items() if value is not None}
    data.update(eval_only=eval_only, reasoning=reasoning)
    if difficulty is not None:
        data["difficulty"] = int(difficulty) if difficulty.isdigit() else difficulty
    # prepare trains nothing, so an eval-only data set needs no training switched off by hand.
    training = {"enabled": not eval_only}
    try:
        config = validated({"seed": seed, "data": data, "sft": training, "rl": training})
    except ConfigError as error:
        fail(f"{error} (prepare's --NAME options set the config keys data.NAME)")
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stages import prepare_stage

    try:
        manifest = prepare_stage(config, out)
    except (ValueError, OSError) as error:
        fail(str(error))
    counts = ", ".join(f"{manifest.counts[name]} {name}" for name in ("train", "eval"))
    console.print(f"wrote {out}: {counts} rows (content hash {manifest.content_hash})",
                  highlight=False)
    console.print(f"  {leakage_line(manifest)}", highlight=False)
    for line in _what_was_left_out(manifest):
        console.print(f"  {line}", highlight=False)
    if manifest.characters:
        listed = ", ".join(f"{char!r} x{count}" for char, count in manifest.characters.items())
        console.print(f"  characters outside printable ASCII, kept as written (a run says which "
                      f"its model does not read; docs/guide/data-fit.md): {listed}",
                      highlight=False)


def leakage_line(manifest: Manifest) -> str:
    """The data set's problems counted by key, and the share of eval problems that are also
    training problems (in train, and in the rows GRPO draws from): 0 by construction.

    >>> from types import SimpleNamespace
    >>> print(leakage_line(SimpleNamespace(counts={"train": 9000, "eval": 256},
    ...     problems={"train": 6472, "eval": 256}, leakage={"train": 0.0, "grpo_pool": 0.0})))
    9000 train rows ask 6472 distinct problems, 256 eval rows 256; eval problems also in train: 0.000, in GRPO's pool: 0.000
    """
    problems, shares = manifest.problems, manifest.leakage
    return (f"{manifest.counts['train']} train rows ask {problems['train']} distinct problems, "
            f"{manifest.counts['eval']} eval rows {problems['eval']}; eval problems also in "
            f"train: {shares['train']:.3f}, in GRPO's pool: {shares['grpo_pool']:.3f}")


def _what_was_left_out(manifest: Manifest) -> list[str]:
    """Every row the data set does not hold, said where the user looks (the manifest lists
    them too): skipped bad rows, repeats, limits, and limits the source could not fill."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.data.records import BadRow

    lines = []
    if manifest.bad_rows_count:
        first = "; ".join(str(BadRow.from_dict(row)) for row in manifest.bad_rows[:3])
        lines.append(f"skipped {manifest.bad_rows_count} bad row(s) (--on-bad-rows skip), "
                     f"listed in manifest.json; first: {first}")
    if manifest.duplicates_dropped:
        lines.append(f"dropped {manifest.duplicates_dropped} exact repeat(s) of a problem")
    limited = {name: n for name, n in manifest.available.items() if n > manifest.counts[name]}
    if limited:
        lines.append("limited from " + ", ".join(f"{n} {name}" for name, n in limited.items())
                     + " rows by --num-train / --num-eval")
    short = {name: wanted for name, wanted in manifest.limits.items()
             if wanted is not None and wanted > manifest.counts[name]}
    lines += [f"asked for {wanted} {name} rows, the source has only {manifest.counts[name]}"
              for name, wanted in short.items()]
    lines += [f"left out {n} record(s): {reason}" for reason, n in manifest.left_out.items() if n]
    return lines


@app.command()
def evaluate(
    rollouts: Annotated[Path, typer.Option(help="Rollouts parquet of the model to judge.")],
    out: Annotated[Path, typer.Option(help="Output folder for the report.")],
    base: Annotated[Path | None, typer.Option(help="Rollouts parquet of the base model.")] = None,
    preset: Annotated[str, typer.Option(help="Preset name or YAML path (its evaluation.* "
                                        "settings and seed apply).",
                                        autocompletion=complete_preset)] = "default",
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="key=value override, e.g. evaluation.transfer_split_k=1.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the bootstrap resampling (the "
                                             "same as --set seed=N).")] = None,
) -> None:
    """Metrics, transfer analysis and the report from rollout files, offline.

    evaluation.* keys (bootstrap, transfer split) come from --preset and --set, as in run."""
    import warnings

    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.evaluation.samples import UnevenSamplesWarning
    from breadth.evaluation.summary import SplitBudgetError
    from breadth.stages import evaluate_stage

    overrides = list(set_ or [])
    if seed is not None:
        # Two seeds would leave one silently unused: --seed is a short form of --set seed=N.
        if any(text.split("=", 1)[0].strip() == "seed" for text in overrides):
            fail("the seed is given twice (--seed and --set seed=...): give it once")
        overrides.append(f"seed={seed}")
    config = load_or_fail(preset, overrides)
    for path in [rollouts, base]:
        if path is not None and not path.is_file():
            state = "is a folder" if path.is_dir() else "does not exist"
            fail(f"rollouts file {path} {state}: give the parquet file written by the "
                  "rollout stage (rollouts/<model>.parquet)")
    if out.exists() and not out.is_dir():
        fail(f"output folder {out} is a file: give a folder path (it is created if missing)")
    paths = {"base": base, "trained": rollouts} if base else {"trained": rollouts}
    against = f" against {base}" if base else ""
    try:
        with warnings.catch_warnings():
            # Said below as the command's own warning line, not as a Python warning with a
            # source line, from the result that also puts it in report.md.
            warnings.simplefilter("ignore", UnevenSamplesWarning)
            results, written = evaluate_stage(config, paths, out, base_model=next(iter(paths)))
    except SplitBudgetError as error:
        # The library names the config key; here the key is set with --set.
        fail(f"cannot evaluate {rollouts}{against}: {error} (here: add --set "
             f"evaluation.transfer_split_k={error.fewest})")
    except (ValueError, KeyError, OSError) as error:  # pyarrow's ArrowInvalid is a ValueError
        message = " ".join(str(error).split())
        fail(f"cannot evaluate {rollouts}{against}: {message}")
    for path in written:
        console.print(f"wrote {path}", highlight=False)
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.evaluation.report import comparability_notes, stale_report_files

    # A reused --out folder kept an earlier run's per_problem_base.parquet beside this run's
    # report. Removed, not refused: re-running into the same folder is the usual case and
    # every other report file is overwritten anyway; only the report's own file names are
    # touched, after this report is written (a failed run leaves the earlier report whole).
    for path in stale_report_files(out, written):
        path.unlink()
        console.print(f"removed {path} (an earlier report's, not this evaluation's)",
                      highlight=False)

    # Said here too: a reader of the command's output alone must not take the numbers in
    # report.md for a paired, like-for-like comparison.
    for note in comparability_notes(results):
        console.print(f"[bold yellow]warning:[/] {note}", highlight=False)
    for name, result in results.items():
        if result.uneven_samples is not None:
            console.print(f"[bold yellow]warning:[/] {name}: {result.uneven_samples.describe()}; "
                          "no sample is dropped. Re-run the short problems' rollouts, or drop "
                          "them, to get the full curve.", highlight=False)
