"""How every `breadth` command writes: one rich console, one error form, one JSON form."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console


def end_on_closed_pipe() -> NoReturn:
    """A reader that stopped reading (`breadth config --keys | head`) ends the command with
    exit 0, as it asked for no more: what is left to print goes to /dev/null (so nothing
    fails again when Python flushes stdout at exit), and no traceback is shown."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise typer.Exit(0)


def console_pipe_closed(console: Console) -> NoReturn:
    """`rich.console.Console.on_broken_pipe` for the CLI's process: rich's own exits with
    status 1, which `set -o pipefail` reads as a failure."""
    console.quiet = True
    end_on_closed_pipe()


console = Console(soft_wrap=True)  # URLs must stay on one line for copy-paste


def fail(message: str) -> NoReturn:
    """Print a one-paragraph error and exit with code 2 (bad input or a service that is down)."""
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def print_json(value: Any) -> None:
    """`--json` output: plain JSON on stdout, no colour or wrapping, so it parses as printed."""
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")
