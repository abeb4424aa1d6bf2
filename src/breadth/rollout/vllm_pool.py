"""vLLM servers kept alive for a block of work, so that the stages sampling one model (its
rollouts, then its search) start its server once instead of once per stage.

Inside `kept_vllm_servers()` (the pipeline flow opens one per run), a stage that needs a server
for a policy gets the kept one, started on first use; every kept server stops when the block
ends, however it ends. Outside such a block each stage starts its own server and stops it.

Servers are kept while their memory shares (`--gpu-memory-utilization`: of the GPU, or of host
RAM with the CPU build) add up to at most `MAX_KEPT_SHARE`; starting one more first stops the
least recently used. With the GPU default of 0.5 that keeps one server at a time; set
`rollout.vllm_gpu_memory_utilization` to 0.45 or less to keep two models' servers side by side.
Stages are expected to run one after another (as the flow runs them), not concurrently.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from breadth.config import RolloutConfig
from breadth.rollout.vllm_server import VLLMServer

log = logging.getLogger(__name__)

MAX_KEPT_SHARE = 0.9

ServerKey = tuple[str, int, float | None]


def start_server(policy_dir: Path, config: RolloutConfig, seed: int) -> VLLMServer:
    """A started server for `policy_dir` with the configured parallelism and memory share."""
    return VLLMServer(
        Path(policy_dir), seed=seed, tensor_parallel=config.vllm_tensor_parallel,
        gpu_memory_utilization=config.vllm_gpu_memory_utilization,
    ).start()


@dataclass
class KeptServers:
    """The servers kept in one `kept_vllm_servers()` block, least recently used first."""

    servers: OrderedDict[ServerKey, VLLMServer] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def server_for(self, policy_dir: Path, config: RolloutConfig, seed: int) -> VLLMServer:
        """The kept server of this policy and settings, started (or restarted) if needed."""
        key: ServerKey = (str(Path(policy_dir).resolve()), config.vllm_tensor_parallel,
                          config.vllm_gpu_memory_utilization)
        with self._lock:
            kept = self.servers.pop(key, None)
            if kept is not None and kept.healthy():
                self.servers[key] = kept  # now the most recently used
                return kept
            if kept is not None:
                log.warning("the kept vLLM server for %s stopped answering; restarting it", key[0])
                kept.stop(grace_s=5)
            share = VLLMServer(Path(policy_dir),
                               gpu_memory_utilization=key[2]).memory_share()
            while self.servers and self.total_share() + share > MAX_KEPT_SHARE:
                _, oldest = self.servers.popitem(last=False)
                log.info("stopping the vLLM server for %s to make room", oldest.model_dir)
                oldest.stop()
            self.servers[key] = start_server(Path(policy_dir), config, seed)
            return self.servers[key]

    def total_share(self) -> float:
        return sum(server.memory_share() for server in self.servers.values())

    def stop_all(self) -> None:
        with self._lock:
            while self.servers:
                _, server = self.servers.popitem(last=False)
                server.stop()


_kept: KeptServers | None = None


@contextlib.contextmanager
def kept_vllm_servers() -> Iterator[KeptServers]:
    """Keep vLLM servers alive until the block ends (a nested block shares the outer one)."""
    global _kept
    if _kept is not None:
        yield _kept
        return
    _kept = KeptServers()
    try:
        yield _kept
    finally:
        kept, _kept = _kept, None
        kept.stop_all()


@contextlib.contextmanager
def policy_server_url(policy_dir: Path, config: RolloutConfig, *, seed: int) -> Iterator[str]:
    """The URL of a server for `policy_dir`: the kept one inside `kept_vllm_servers()`, else
    one started here and stopped when this block ends."""
    if _kept is not None:
        yield _kept.server_for(Path(policy_dir), config, seed).url
        return
    server = start_server(Path(policy_dir), config, seed)
    try:
        yield server.url
    finally:
        server.stop()
