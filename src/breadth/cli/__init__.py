"""The `breadth` command: one Typer app whose commands live by group in this package (stack,
runs, config, data). Commands import flows/ and heavy libraries lazily, so `--help` and shell
completion stay instant."""

from __future__ import annotations

from typing import Annotated

import typer

from breadth.cli import config, data, runs, stack
from breadth.cli.output import console

app = typer.Typer(
    no_args_is_help=True,
    help="breadth: data in two formats, diversity-aware GRPO, rollouts and search-style "
    "evaluation, tracked in MLflow and S3, orchestrated by Prefect.",
)
app.add_typer(stack.stack_app, name="stack")
for group in (runs.app, config.app, data.app, stack.app):
    app.add_typer(group)  # no name: the group's commands are top-level commands


@app.callback(invoke_without_command=True)
def _version(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        from importlib.metadata import version as installed

        console.print(f"breadth {installed('breadth')}", highlight=False)
        raise typer.Exit()


def main() -> None:  # pragma: no cover - console entry
    app()


__all__ = ["app", "main"]
