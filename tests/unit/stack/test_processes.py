"""breadth.stack.processes: what psutil says of real child processes (alive, zombie, gone,
their parent, working directory, start time, and the port they listen on)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from breadth.stack import processes
from breadth.stack.processes import (
    ancestry,
    listening_pids,
    pid_alive,
    start_time,
    working_directory,
)


@pytest.fixture
def odd_name(tmp_path):
    """A running process whose command holds ") Z (", started in tmp_path: /proc writes the
    command into its stat line, where a hand parser once read it as a zombie."""
    program = tmp_path / "a) Z (b"
    shutil.copy(shutil.which("sleep"), program)
    process = subprocess.Popen([str(program), "30"], cwd=tmp_path)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def listener():
    """A child that listens on a free TCP port: (process, port)."""
    script = ("import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()\n"
              "print(s.getsockname()[1], flush=True)\ntime.sleep(30)")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    port = int(process.stdout.readline())
    yield process, port
    process.kill()
    process.wait()
    process.stdout.close()


def _gone_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_process_named_like_a_zombie_line_is_alive(odd_name):
    assert pid_alive(odd_name.pid)


def test_ancestry_climbs_from_a_child_to_this_process(odd_name):
    assert ancestry(odd_name.pid)[:2] == [odd_name.pid, os.getpid()]


def test_working_directory_is_where_the_child_was_started(odd_name, tmp_path):
    assert working_directory(odd_name.pid) == tmp_path


def test_start_time_names_one_process(odd_name):
    child = start_time(odd_name.pid)
    assert child and child == start_time(odd_name.pid)  # the same on every read
    assert float(child) > 0 and float(child) >= float(start_time(os.getpid()))


def test_a_gone_process_is_dead_and_has_nothing_to_read():
    pid = _gone_pid()
    assert not pid_alive(pid) and start_time(pid) == "" and working_directory(pid) is None
    assert ancestry(pid) == [pid]


def test_an_exited_unreaped_child_is_dead():
    process = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10
        while psutil.Process(process.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.02)
        assert not pid_alive(process.pid)
    finally:
        process.wait()


def test_no_pid_below_one_is_alive():
    assert not pid_alive(0) and not pid_alive(-1) and ancestry(0) == []


def test_a_process_this_user_may_not_inspect_counts_as_alive(monkeypatch):
    def denied(pid):
        raise psutil.AccessDenied(pid)

    monkeypatch.setattr(processes.psutil, "Process", denied)
    assert pid_alive(12345) and start_time(12345) == "" and working_directory(12345) is None


def test_listening_pids_finds_the_child_on_its_port(listener):
    process, port = listener
    assert process.pid in listening_pids(port)


def test_listening_pids_asks_each_process_where_the_system_table_is_denied(listener,
                                                                          monkeypatch):
    """macOS: psutil.net_connections needs root there."""
    process, port = listener

    def denied(kind):
        raise psutil.AccessDenied()

    monkeypatch.setattr(processes.psutil, "net_connections", denied)
    assert process.pid in listening_pids(port)


def test_no_listener_on_a_closed_port(listener):
    process, port = listener
    process.kill()
    process.wait()
    assert listening_pids(port) == set()
