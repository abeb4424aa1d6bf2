"""breadth.stack.processes: what /proc says of a process."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from breadth.stack.processes import ancestry, pid_alive, proc_stat


@pytest.fixture
def odd_name(tmp_path):
    """A running process whose command holds ") Z (": the kernel writes it into its stat line."""
    program = tmp_path / "a) Z (b"
    shutil.copy(shutil.which("sleep"), program)
    process = subprocess.Popen([str(program), "30"])
    yield process
    process.kill()
    process.wait()


def test_proc_stat_reads_the_fields_after_the_command_whatever_it_holds(odd_name):
    fields = proc_stat(odd_name.pid)
    # A live child runs, sleeps, or waits on the disk (D: seen while a clean clone installed).
    assert fields is not None and fields[0] in {"S", "R", "D"} and int(fields[1]) == os.getpid()


def test_a_process_named_like_a_zombie_line_is_alive(odd_name):
    """pid_alive looked for ") Z " anywhere in the line: this command made a live process dead."""
    assert pid_alive(odd_name.pid)


def test_ancestry_climbs_from_a_child_to_this_process(odd_name):
    assert ancestry(odd_name.pid)[:2] == [odd_name.pid, os.getpid()]


def test_a_gone_process_has_no_stat():
    process = subprocess.Popen(["true"])
    process.wait()
    assert proc_stat(process.pid) is None and not pid_alive(process.pid)
