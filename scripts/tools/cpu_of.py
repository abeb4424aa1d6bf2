"""The CPU of one command and of every process under it, the servers it left running included:
a before/after figure for a test that holds on a loaded machine, where wall time does not.

    python3 scripts/tools/cpu_of.py --out /tmp/x.json -- .venv/bin/pytest -q -n 0 tests/faults/test_outages.py

This process makes itself a child subreaper (Linux's prctl PR_SET_CHILD_SUBREAPER), so a
descendant whose parent went away (a server started in a session of its own and never waited
for) is re-parented here and reaped, and its CPU lands in this process's RUSAGE_CHILDREN:
the total counts every process under the command, unlike `/usr/bin/time` or
`BREADTH_TEST_CPU_LOG`, which miss the stack's servers. After the command exits it waits up to
`--linger` seconds for what is still running and names what outlives that (not counted).

Beside the total, /proc is read every second for the processes under it, summed by kind
(scripts/tools/process_cpu_profile.py's kinds, imported from beside this file): a lower bound,
as a process that ends between two readings is missed. Linux only; the standard library only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_cpu_profile import _cpu_and_command, kind_of  # beside this file

PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> list[str]:
    """The pids of every process under `root`, from /proc's parent links."""
    children: dict[str, list[str]] = defaultdict(list)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        children[stat[stat.rfind(")") + 2:].split()[1]].append(pid)
    found, frontier = [], [str(root)]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def _reap(child: int, code: int | None, ended: float) -> tuple[int | None, float]:
    """Reap every exited child (orphans re-parented here included); the command's exit code
    and when it exited, once it has."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code, ended
        if not pid:
            return code, ended
        if pid == child:
            code, ended = os.waitstatus_to_exitcode(status), time.monotonic()


def run(command: list[str], linger_s: float) -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    started = time.monotonic()
    child = os.fork()
    if child == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    seen: dict[str, dict] = {}
    code, ended = None, 0.0
    while True:
        under = descendants(os.getpid())
        for pid in under:
            if (found := _cpu_and_command(pid)) is not None:
                identity, cpu, line = found
                seen.setdefault(identity, {"command": line[:300]})["cpu_s"] = cpu
        code, ended = _reap(child, code, ended)
        if code is not None and (not under or time.monotonic() - ended > linger_s):
            break
        time.sleep(1.0)
    code, ended = _reap(child, code, ended)
    left = [found for pid in descendants(os.getpid()) if (found := _cpu_and_command(pid))]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    kinds: dict[str, float] = defaultdict(float)
    for row in seen.values():
        kinds[kind_of(row["command"])] += row["cpu_s"]
    return {"command": command, "exit": code, "user_s": round(usage.ru_utime, 1),
            "sys_s": round(usage.ru_stime, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "wall_s": round(time.monotonic() - started, 1),
            "by_kind": {k: round(v, 1) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
            "processes": sorted(seen.values(), key=lambda row: -row["cpu_s"]),
            "still_running": [found[2] for found in left if found]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the figures and every process as JSON")
    parser.add_argument("--linger", type=float, default=60.0,
                        help="seconds to wait for processes left after the command exits")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command to run after --")
    result = run(command, args.linger)
    print(f"cpu_of: exit {result['exit']}  user {result['user_s']} s  sys {result['sys_s']} s  "
          f"cpu {result['cpu_s']} s  wall {result['wall_s']} s\ncpu_of: by kind (read every "
          "second, a lower bound): " + ", ".join(f"{k} {v}" for k, v in result["by_kind"].items()),
          file=sys.stderr)
    if result["still_running"]:
        print("cpu_of: still running, not counted: " + "; ".join(result["still_running"]),
              file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    sys.exit(result["exit"] if result["exit"] and result["exit"] > 0 else 0)


if __name__ == "__main__":
    main()
