"""The `breadth` command: one Typer app whose commands live by group in this package (stack,
runs, config, data). Commands import flows/ and heavy libraries lazily, so `--help` and shell
completion stay instant."""

from __future__ import annotations

from typing import Annotated, Any

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from breadth.cli import config, data, runs, stack
from breadth.cli.output import console, console_pipe_closed, end_on_closed_pipe


class _Commands(TyperGroup):
    """The command group. A reader that closes the pipe early (`breadth config --keys | head`)
    ends a command with exit 0 and no traceback, whatever wrote: a plain write (JSON,
    `typer.echo`) raises BrokenPipeError here, where click would exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            end_on_closed_pipe()


class _Breadth(typer.Typer):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Every rich console of the process, typer's help included, ends on a closed pipe as
        # the commands do; set when the CLI runs, not when a test imports it.
        Console.on_broken_pipe = console_pipe_closed  # rich's documented hook
        return super().__call__(*args, **kwargs)


app = _Breadth(
    cls=_Commands,
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
