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
    stat = Path(f"/proc/{pid}/stat")
    try:
        return ") Z " not in stat.read_text()
    except OSError:
        return False


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
