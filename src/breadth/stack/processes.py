"""Process helpers for the services breadth starts (the local stack, vLLM servers), on psutil:
what a process is (alive, its parent, its working directory, when it started), which
processes listen on a port, and stopping a process group.

psutil reads each platform's own tables (/proc on Linux, sysctl on macOS), so the stack can
tell its own servers apart wherever it runs. Another user's process may be hidden from some
of these (its working directory, its sockets): each function says what it returns then.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil

__all__ = ["ancestry", "listening_pids", "pid_alive", "start_time", "stop_process_group",
           "working_directory"]


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped) counts as dead, and another
    user's process that this user may not inspect counts as alive."""
    if pid <= 0:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # ZombieProcess is one: some platforms raise it for zombies
        return False
    except psutil.AccessDenied:
        return True


def start_time(pid: int) -> str:
    """When `pid` started, in seconds since boot to 0.01 s ('' where it is gone). With the pid
    it names one process: a reused pid starts later. Since boot rather than since the epoch:
    setting the clock moves both the start and the boot time, so the difference stays put."""
    try:
        return f"{psutil.Process(pid).create_time() - psutil.boot_time():.2f}"
    except psutil.Error:
        return ""


def listening_pids(port: int) -> set[int]:
    """The processes holding a TCP socket that listens on `port` (any address), as far as this
    user may see them (its own processes at least); an empty set where none is seen."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:  # macOS: the system-wide table needs root; ask each process
        return {process.pid for process in psutil.process_iter() if _listens(process, port)}
    return {c.pid for c in connections
            if c.pid and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}


def _listens(process: psutil.Process, port: int) -> bool:
    try:
        connections = process.net_connections(kind="tcp")
    except psutil.Error:  # gone, or another user's
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
               for c in connections)


def ancestry(pid: int) -> list[int]:
    """`pid`, its parent, and so on up to the first process (as far as they can be read)."""
    chain = []
    while pid > 0 and pid not in chain:
        chain.append(pid)
        try:
            pid = psutil.Process(pid).ppid()
        except psutil.Error:
            break
    return chain


def working_directory(pid: int) -> Path | None:
    """Where `pid` runs (its cwd), or None when that cannot be read (gone, another user's)."""
    try:
        cwd = psutil.Process(pid).cwd()
    except psutil.Error:
        return None
    return Path(cwd) if cwd else None


def stop_process_group(pid: int, grace_s: float) -> None:
    """SIGTERM the group led by `pid` (started with start_new_session=True), SIGKILL it after
    `grace_s`, and kill whatever of the group outlives its leader (forked workers)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
