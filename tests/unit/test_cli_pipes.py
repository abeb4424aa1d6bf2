"""A reader that stops reading (`breadth config --keys | head -1`) ends the command with exit 0
and no traceback: click and rich both exit 1 on a closed pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BREADTH = str(Path(sys.executable).parent / "breadth")  # the console script users run


def _run_into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """Run a command whose stdout is a pipe nobody reads from any more: its first write
    fails, every time (a real `| head` closes only after a line or two, which is a race)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(args, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=120, check=False)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [
    ["config", "--keys"],  # rich's console, line by line
    ["config"],  # one YAML block
    ["presets"],
    ["--help"],  # typer's own rich console
    ["config", "--rewards", "--markdown"],
])
def test_a_closed_pipe_ends_a_command_with_exit_0_and_no_traceback(args):
    done = _run_into_closed_pipe([BREADTH, *args])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_plain_write_into_a_closed_pipe_ends_with_exit_0():
    # JSON output and typer.echo write to sys.stdout directly, not through rich.
    script = (
        "import sys, typer\n"
        "from breadth.cli import _Breadth, _Commands\n"
        "app = _Breadth(cls=_Commands)\n"
        "@app.command()\n"
        "def dump() -> None:\n"
        "    sys.stdout.write('x' * 100_000)\n"
        "    sys.stdout.flush()\n"
        "@app.command()\n"
        "def other() -> None: ...\n"
        "app()\n"
    )
    done = _run_into_closed_pipe([sys.executable, "-c", script, "dump"])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_head_of_the_keys_exits_0_under_pipefail():
    done = subprocess.run(["bash", "-o", "pipefail", "-c", f"'{BREADTH}' config --keys | head -1"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("preset = ")
    assert "Traceback" not in done.stderr
