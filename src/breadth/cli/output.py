"""How every `breadth` command writes: one rich console, one error form, one JSON form."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

console = Console(soft_wrap=True)  # URLs must stay on one line for copy-paste


def fail(message: str) -> NoReturn:
    """Print a one-paragraph error and exit with code 2 (bad input or a service that is down)."""
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def print_json(value: Any) -> None:
    """`--json` output: plain JSON on stdout, no colour or wrapping, so it parses as printed."""
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")
