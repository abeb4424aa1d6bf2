"""Where a machine's CPU goes while a command runs, by kind of process: the servers and
subprocesses that `scripts/tools/test_cpu_report.py` cannot count (it sees only the children pytest
waited for), and how busy the cores were, minute by minute.

    python3 scripts/tools/process_cpu_profile.py sample --until /tmp/x.done --out /tmp/profile.json &
    ( make test; touch /tmp/x.done )
    python3 scripts/tools/process_cpu_profile.py report /tmp/profile.json

`sample` reads /proc every `--interval` seconds until the file `--until` exists: each process's
CPU (user + system) at its last sighting, less what it had used when sampling began, and the
share of the cores busy in each interval. A process that starts and ends between two samples
is missed, so the sums are a lower bound. Linux only; no dependencies beyond the standard
library, so it can run beside an install that has not finished.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# (kind, pattern on the command line), first match wins: the stack's servers before the
# Python processes that run them.
KINDS = (
    ("install (uv, pip, bytecode)", r"\buv\b|pip_compileall|\bpip\b"),
    ("Prefect server", r"prefect server start"),
    ("Prefect flow run (worker's subprocess)", r"prefect\.runner|_workspace_supervisor"),
    ("Prefect worker", r"prefect worker|breadth worker"),
    ("MLflow server", r"mlflow|uvicorn"),
    ("SeaweedFS (weed)", r"\bweed\b"),
    ("vLLM server", r"vllm|VLLM::"),
    ("postgres", r"postgres"),
    ("pytest (main and xdist workers)", r"pytest|exec\(eval\(sys\.stdin"),
    ("breadth CLI and test CLIs", r"\bbreadth\b|faulty_cli|benchmarks/|scripts/"),
    ("other python", r"python"),
)


def kind_of(command: str) -> str:
    """The kind of a process from its command line.

    >>> kind_of("/x/.venv/bin/python /x/.venv/bin/prefect server start --port 4200")
    'Prefect server'
    >>> kind_of("/x/.venv/bin/python -m uvicorn --log-config /x/mlflow/server/log.yaml")
    'MLflow server'
    >>> kind_of("bash -c sleep 3")
    'other'
    """
    for kind, pattern in KINDS:
        if re.search(pattern, command):
            return kind
    return "other"


def _cpu_and_command(pid: str) -> tuple[str, float, str] | None:
    """(identity, CPU seconds so far, command line) of a process, or None once it is gone.
    The identity adds the start time to the pid, so a reused pid is a new process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    # After the command name: utime and stime are fields 14 and 15 of stat, starttime 22.
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    name = stat[stat.find("(") + 1:stat.rfind(")")]
    return f"{pid}@{fields[19]}", cpu, command or f"[{name}]"


def _busy_ticks() -> tuple[int, int]:
    """(all ticks, idle + iowait ticks) of every core since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(values), values[3] + values[4]


def sample(until: Path, out: Path, interval_s: float) -> None:
    baseline: dict[str, float] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if (seen := _cpu_and_command(pid)) is not None:
            baseline[seen[0]] = seen[1]
    processes: dict[str, dict] = {}
    busy: list[tuple[float, float]] = []
    started = time.monotonic()
    previous = _busy_ticks()
    while not until.exists():
        time.sleep(interval_s)
        now = time.monotonic() - started
        for pid in filter(str.isdigit, os.listdir("/proc")):
            if (seen := _cpu_and_command(pid)) is None:
                continue
            identity, cpu, command = seen
            row = processes.setdefault(identity, {"pid": int(pid), "command": command[:300],
                                                  "first_s": now})
            row["cpu_s"] = round(cpu - baseline.get(identity, 0.0), 2)
            row["last_s"] = now
        current = _busy_ticks()
        total, idle = current[0] - previous[0], current[1] - previous[1]
        busy.append((round(now, 1), round(1 - idle / total, 3) if total else 0.0))
        previous = current
    out.write_text(json.dumps({"interval_s": interval_s, "busy": busy,
                               "processes": list(processes.values())}))


def busy_by_minute(busy: list[list[float]]) -> list[tuple[int, float]]:
    """The mean busy share of each minute's samples.

    >>> busy_by_minute([[10, 1.0], [50, 0.5], [70, 0.2]])
    [(0, 0.75), (1, 0.2)]
    """
    minutes: dict[int, list[float]] = defaultdict(list)
    for at_s, share in busy:
        minutes[int(at_s // 60)].append(share)
    return [(minute, round(sum(v) / len(v), 3)) for minute, v in sorted(minutes.items())]


def cpu_by_kind(processes: list[dict]) -> list[tuple[str, int, float]]:
    """(kind, processes, CPU seconds), most CPU first.

    >>> cpu_by_kind([{"command": "weed mini", "cpu_s": 2.0}, {"command": "weed mini",
    ...              "cpu_s": 1.0}, {"command": "prefect server start", "cpu_s": 5.0}])
    [('Prefect server', 1, 5.0), ('SeaweedFS (weed)', 2, 3.0)]
    """
    counts: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for row in processes:
        kind = kind_of(row["command"])
        counts[kind] += 1
        seconds[kind] += row["cpu_s"]
    return sorted(((k, counts[k], round(seconds[k], 1)) for k in seconds), key=lambda r: -r[2])


def report(profile: dict, top: int) -> list[str]:
    busy = profile["busy"]
    mean = sum(share for _, share in busy) / len(busy) if busy else 0.0
    lines = [f"cores busy: {mean:.0%} on average over {len(busy)} samples; by minute:",
             "  " + " ".join(f"{m}:{s:.2f}" for m, s in busy_by_minute(busy)), "",
             f"{'CPU s':>8} {'procs':>6}  kind"]
    kinds = cpu_by_kind(profile["processes"])
    lines += [f"{cpu:8.1f} {count:6d}  {kind}" for kind, count, cpu in kinds]
    lines.append(f"{sum(cpu for *_, cpu in kinds):8.1f} CPU s seen in all")
    lines += ["", f"the {top} processes with the most CPU:"]
    ranked = sorted(profile["processes"], key=lambda row: -row["cpu_s"])[:top]
    lines += [f"{row['cpu_s']:8.1f}  {row['first_s']:6.0f}-{row['last_s']:<6.0f} "
              f"{row['command'][:140]}" for row in ranked]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sampling = commands.add_parser("sample", help="sample /proc until a file exists")
    sampling.add_argument("--until", type=Path, required=True, help="stop once this file exists")
    sampling.add_argument("--out", type=Path, required=True, help="where to write the profile")
    sampling.add_argument("--interval", type=float, default=3.0, help="seconds between samples")
    reporting = commands.add_parser("report", help="print a profile by kind of process")
    reporting.add_argument("profile", type=Path)
    reporting.add_argument("--top", type=int, default=20, help="processes to list")
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.until, args.out, args.interval)
    else:
        print("\n".join(report(json.loads(args.profile.read_text()), args.top)))


if __name__ == "__main__":
    main()
