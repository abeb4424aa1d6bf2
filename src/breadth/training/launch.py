"""Launch the training processes of one GRPO run and follow them (rl.num_processes > 1, or an
rl.accelerate_config).

`run_grpo_processes` writes a job file (config and folders), starts the workers
(`breadth.training.grpo_worker`) through `torch.distributed.run` (gloo on CPU, NCCL on GPUs),
or `accelerate launch --config_file rl.accelerate_config` (e.g. DeepSpeed ZeRO-2), and
forwards what process 0 reports in an events file (metrics, finished checkpoints) to the
caller's callbacks, in the caller's process: MLflow logging and S3 uploads stay where they are
in a single-process run. The workers' output (their progress bars included) goes to this
process's stderr as it comes, and to `grpo_processes.log` in the output folder.
If the caller is interrupted or the workers fail, the whole process group is stopped.
"""

from __future__ import annotations

import codecs
import json
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from breadth.config import PipelineConfig, RLConfig
from breadth.stack.processes import stop_process_group
from breadth.training.distributed import launched_world_size

WORKER_MODULE = "breadth.training.grpo_worker"
JOB_FILENAME = "grpo_job.json"
CONFIG_FILENAME = "grpo_config.pickle"
EVENTS_FILENAME = "grpo_events.jsonl"
LOG_FILENAME = "grpo_processes.log"
STOP_GRACE_S = 10.0
# argv: the launching pid, then the command. PR_SET_PDEATHSIG is 1 (linux/prctl.h); a parent
# that died before the prctl is caught by the getppid check.
_PARENT_DEATH_PRELUDE = (
    "import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGTERM); "
    "os.getppid() == int(sys.argv[1]) or sys.exit(1); os.execv(sys.argv[2], sys.argv[2:])"
)


def free_local_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous of the processes binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def launch_command(rl: RLConfig, job_file: Path, port: int, worker_module: str) -> list[str]:
    """The command that starts `rl.num_processes` workers on this machine.

    >>> from breadth.config import RLConfig
    >>> launch_command(RLConfig(num_processes=2), Path("job.json"), 29500, WORKER_MODULE)[1:5]
    ['-m', 'torch.distributed.run', '--nnodes=1', '--nproc-per-node=2']
    """
    if rl.accelerate_config:
        config_file = Path(rl.accelerate_config).expanduser()
        if not config_file.is_file():
            raise ValueError(
                f"rl.accelerate_config={rl.accelerate_config!r} is not a file; give the path of "
                "an accelerate config (e.g. infra/accelerate/deepspeed-zero2.yaml from the "
                "breadth repository) or leave it empty to launch with torch.distributed"
            )
        return [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                str(config_file), "--num_processes", str(rl.num_processes), "--num_machines",
                "1", "--main_process_ip", "127.0.0.1", "--main_process_port", str(port),
                "--module", worker_module, str(job_file)]
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes=1",
            f"--nproc-per-node={rl.num_processes}", "--master-addr=127.0.0.1",
            f"--master-port={port}", "-m", worker_module, str(job_file)]


class EventWriter:
    """Process 0's reports to the launching process, one JSON line each, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _write(self, event: dict[str, Any]) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps(event) + "\n")

    def metric(self, name: str, value: float, step: int) -> None:
        self._write({"metric": name, "value": value, "step": step})

    def checkpoint(self, folder: Path, step: int) -> None:
        self._write({"checkpoint": str(folder), "step": step})


class EventForwarder:
    """Reads the events file as it grows and calls the callbacks for each whole new line."""

    def __init__(
        self,
        path: Path,
        log_metric: Callable[[str, float, int], None] | None,
        on_checkpoint: Callable[[Path, int], None] | None,
    ) -> None:
        self.path, self.offset = Path(path), 0
        self.log_metric, self.on_checkpoint = log_metric, on_checkpoint

    def forward(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        self.offset += len(whole)
        for line in whole.decode().splitlines():
            event = json.loads(line)
            if "metric" in event and self.log_metric is not None:
                self.log_metric(event["metric"], float(event["value"]), int(event["step"]))
            elif "checkpoint" in event and self.on_checkpoint is not None:
                self.on_checkpoint(Path(event["checkpoint"]), int(event["step"]))


def write_job(
    config: PipelineConfig, dataset_dir: Path, policy_dir: Path, out_dir: Path,
    resume_from: Path | None,
) -> Path:
    """The job file the workers read: the folders as JSON, and the validated config pickled
    beside it (`read_job_config`), its reward plan included: a worker neither validates the
    config again nor parses the reward spec."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config_file = out_dir / CONFIG_FILENAME
    config_file.write_bytes(pickle.dumps(config))
    job = {
        "config_file": str(config_file),
        "dataset_dir": str(dataset_dir), "policy_dir": str(policy_dir), "out_dir": str(out_dir),
        "resume_from": str(resume_from) if resume_from else None,
        "events": str(out_dir / EVENTS_FILENAME),
    }
    path = out_dir / JOB_FILENAME
    path.write_text(json.dumps(job, indent=1))
    return path


def read_job_config(job: dict[str, Any]) -> PipelineConfig:
    """The config `write_job` pickled for the workers (written by the launching process)."""
    return pickle.loads(Path(job["config_file"]).read_bytes())


def run_grpo_processes(
    config: PipelineConfig,
    dataset_dir: Path,
    policy_dir: Path,
    out_dir: Path,
    *,
    log_metric: Callable[[str, float, int], None] | None = None,
    on_checkpoint: Callable[[Path, int], None] | None = None,
    resume_from: Path | None = None,
    worker_module: str | None = None,
    timeout_s: float | None = None,
) -> None:
    """Run GRPO in `config.rl.num_processes` processes; returns when they all finished.

    `worker_module` replaces `WORKER_MODULE` (a module run with `-m`, given the job file).

    Raises RuntimeError (with the end of the workers' log) when they fail or outlive
    `timeout_s`. The process group is stopped however this returns, and (on Linux) gets
    SIGTERM if this process dies first, so no worker outlives the stage.
    """
    if launched_world_size() > 1:
        raise RuntimeError(
            "the rl stage is itself running under a launcher (WORLD_SIZE > 1) and would start "
            f"{config.rl.num_processes} processes per process; run breadth without "
            "`accelerate launch`/torchrun and let rl.num_processes start the processes"
        )
    job_file = write_job(config, dataset_dir, policy_dir, out_dir, resume_from)
    events, log_path = out_dir / EVENTS_FILENAME, out_dir / LOG_FILENAME
    events.unlink(missing_ok=True)
    command = launch_command(config.rl, job_file, free_local_port(), worker_module or WORKER_MODULE)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    if not config.rl.accelerate_config:
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # one machine: gloo talks over loopback
    forwarder = EventForwarder(events, log_metric, on_checkpoint)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    process = subprocess.Popen(stopped_with_parent(command), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env, start_new_session=True)
    copier = OutputCopier(process.stdout, log_path)
    copier.start()
    timed_out = False
    try:
        while process.poll() is None:
            forwarder.forward()
            if deadline is not None and time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.5)
        forwarder.forward()
    finally:
        # Also after a clean exit: a worker that outlived its launcher would be left behind.
        stop_process_group(process.pid, STOP_GRACE_S)
        process.wait(timeout=STOP_GRACE_S)
        copier.join(timeout=STOP_GRACE_S)
    if timed_out:
        raise RuntimeError(
            f"GRPO processes still running after {timeout_s:.0f} s; stopped them. The end of "
            f"their output ({log_path}):\n{_tail(log_path)}"
        )
    if process.returncode != 0:
        raise RuntimeError(
            f"GRPO training processes failed (exit status {process.returncode}; command: "
            f"{' '.join(command)}). The end of their output ({log_path}):\n{_tail(log_path)}"
        )


class OutputCopier(threading.Thread):
    """Copies the workers' output, as it comes, to a log file and to this process's stderr."""

    def __init__(self, pipe: Any, log_path: Path) -> None:
        super().__init__(name="grpo-output", daemon=True)
        self.pipe, self.log_path = pipe, log_path

    def run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with self.log_path.open("wb") as log:
            for chunk in iter(lambda: os.read(self.pipe.fileno(), 65536), b""):
                log.write(chunk)
                log.flush()
                try:
                    sys.stderr.write(decoder.decode(chunk))
                    sys.stderr.flush()
                except (OSError, ValueError):  # stderr closed: the log still has everything
                    pass
        self.pipe.close()


def stopped_with_parent(command: list[str]) -> list[str]:
    """`command`, run so that (on Linux) it gets SIGTERM if this process dies first.

    A SIGKILLed stage (a cancelled flow run) runs no cleanup and would leave its workers
    training; torch.distributed.run stops them on SIGTERM. A small Python prelude sets
    PR_SET_PDEATHSIG and execs the command: `preexec_fn` would do it between fork and exec,
    which is unsafe in a multi-threaded process such as a Prefect worker.
    """
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-c", _PARENT_DEATH_PRELUDE, str(os.getpid()), *command]


def _tail(log_path: Path, chars: int = 4000) -> str:
    return log_path.read_text(errors="replace")[-chars:] if log_path.exists() else "(no log)"
