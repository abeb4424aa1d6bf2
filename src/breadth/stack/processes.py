"""Process helpers for the services breadth starts (the local stack, vLLM servers)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = proc_stat(pid)
    return fields is not None and fields[0] != "Z"


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command (state, ppid, ..., start time at index
    19), or None where /proc does not show the process. The command may hold spaces and
    parentheses, so the fields start after its last ')'."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def listening_pids(port: int) -> set[int]:
    """The processes holding a TCP socket that listens on `port` (any address), as far as
    /proc shows them: Linux only, and only processes whose descriptors this user may read
    (its own); an empty set where /proc cannot tell."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            # local address "HEX_IP:HEX_PORT", remote, state (0A: LISTEN), ..., inode (10th)
            fields = row.split()
            listening = len(fields) > 9 and fields[3] == "0A"
            if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    pids = set()
    for name in os.listdir("/proc") if inodes else ():
        if not name.isdigit():
            continue
        try:
            descriptors = os.listdir(f"/proc/{name}/fd")
        except OSError:  # gone, or another user's
            continue
        if any(_link(f"/proc/{name}/fd/{fd}") in inodes for fd in descriptors):
            pids.add(int(name))
    return pids


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:  # the descriptor closed meanwhile
        return ""


def ancestry(pid: int) -> list[int]:
    """`pid`, its parent, and so on up to the first process (as /proc shows them)."""
    chain = []
    while pid > 0 and pid not in chain:
        chain.append(pid)
        fields = proc_stat(pid)
        if fields is None:
            break
        pid = int(fields[1])  # the parent
    return chain


def working_directory(pid: int) -> Path | None:
    """Where `pid` runs (its cwd), or None when /proc does not say (gone, another user's)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


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
