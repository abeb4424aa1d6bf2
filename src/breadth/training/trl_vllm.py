"""GRPO generation with vLLM: TRL's server and colocate modes, configured from `rl.vllm_mode`.

- **server** (`rl.vllm_server_url`): the completions GRPO trains on come from a
  `trl vllm-serve` process on GPUs of its own, and the trainer is its client: it sends
  prompts over HTTP and, after every optimisation step, the new weights over NCCL. The server
  may start from the base model: the trainer sends its own weights before the first
  generation, so what the server loaded only fixes the architecture and the tokenizer.
- **colocate**: each training process runs its own vLLM engine on its own GPU, beside the
  policy (`rl.vllm_gpu_memory_utilization` of that GPU's memory; `rl.vllm_tensor_parallel`
  processes share one engine), and loads the new weights into it in memory after each step.

Both need a CUDA device in the training process (NCCL, or vLLM's GPU engine) and vLLM
importable there: TRL's client imports vLLM's NCCL code even in server mode. breadth's own
environment cannot hold vLLM beside Prefect (docs/design/versions.md), and breadth's tests run
on CPU: neither mode has been run. `trl_vllm_refusal` says why a machine cannot run a mode; the
preflight (`breadth.preflight.checks`) asks it before anything starts, and `build_grpo_config`
again, for callers that skip the preflight.

    CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model Qwen/Qwen2.5-1.5B \\
        --tensor-parallel-size 1 --data-parallel-size 2 --gpu-memory-utilization 0.9
    CUDA_VISIBLE_DEVICES=2 breadth run --set rl.vllm_server_url=http://127.0.0.1:8000
    breadth run --set rl.vllm_mode=colocate --set rl.vllm_gpu_memory_utilization=0.3
"""

from __future__ import annotations

import importlib.util
from typing import Any

from breadth.config import RLConfig


class TRLVLLMModeError(RuntimeError):
    """A TRL vLLM mode (`rl.vllm_mode`) is configured where it cannot run."""


def trl_vllm_arguments(config: RLConfig) -> dict[str, Any]:
    """`trl.GRPOConfig` arguments for `rl.vllm_mode`; none when it is empty (the trainer
    generates with transformers). Machine checks are `trl_vllm_refusal`'s.

    >>> trl_vllm_arguments(RLConfig())
    {}
    >>> arguments = trl_vllm_arguments(RLConfig(vllm_server_url="http://gpu-0:8000/"))
    >>> arguments["vllm_mode"], arguments["vllm_server_base_url"]
    ('server', 'http://gpu-0:8000')
    >>> arguments = trl_vllm_arguments(RLConfig(vllm_mode="colocate"))
    >>> arguments["vllm_mode"], arguments["vllm_gpu_memory_utilization"]
    ('colocate', 0.3)
    """
    if config.vllm_mode is None:
        return {}
    arguments: dict[str, Any] = {
        "use_vllm": True,
        "vllm_mode": config.vllm_mode,
        # Samples come from vLLM's kernels, the loss from the trainer's: TRL corrects the
        # mismatch between the two log-probs by importance sampling (its default, set here
        # so that a TRL release changing it does not change the experiment).
        "vllm_importance_sampling_correction": True,
    }
    if config.vllm_mode == "server":
        arguments |= {
            "vllm_server_base_url": str(config.vllm_server_url).rstrip("/"),
            "vllm_server_timeout": config.vllm_server_timeout_s,
        }
    else:
        arguments |= {
            "vllm_gpu_memory_utilization": config.vllm_gpu_memory_utilization,
            "vllm_tensor_parallel_size": config.vllm_tensor_parallel,
            # Stated, not inherited (TRL's default): sleeping frees the engine's memory during
            # the optimizer step at the cost of reloading the weights before each generation.
            "vllm_enable_sleep_mode": False,
        }
    return arguments


def trl_vllm_refusal(config: RLConfig, *, cuda_available: bool,
                     vllm_importable: bool) -> str | None:
    """Why `rl.vllm_mode` cannot run in a training process with (or without) CUDA and vLLM,
    naming the key and the fix; None when it can (or no mode is set).

    >>> print(trl_vllm_refusal(RLConfig(), cuda_available=False, vllm_importable=False))
    None
    >>> trl_vllm_refusal(RLConfig(vllm_mode="colocate"), cuda_available=False,
    ...                  vllm_importable=True).split(";")[0]
    'rl.vllm_mode=colocate needs a CUDA GPU in the training process'
    """
    mode = config.vllm_mode
    if mode is None:
        return None
    if mode == "server":
        what = (f"rl.vllm_mode=server (rl.vllm_server_url={config.vllm_server_url!r}) needs "
                "a CUDA GPU in the training process")
        why = "the trainer sends the policy's weights to the server over NCCL after every step"
    else:
        what = "rl.vllm_mode=colocate needs a CUDA GPU in the training process"
        why = "it runs a vLLM engine there, on the training GPU"
    off = ("unset rl.vllm_mode" + (" and rl.vllm_server_url" if mode == "server" else "")
           + " to generate with transformers inside the trainer")
    if not cuda_available:
        return (f"{what}; this machine has none ({why}). Fix: {off}, or run on a GPU worker "
                "whose training environment has a CUDA build of vLLM. The rollouts' vLLM "
                "(rollout.backend=vllm) runs on CPU and is separate from GRPO's.")
    if not vllm_importable:
        return (f"rl.vllm_mode={mode} needs vLLM importable in the training process (TRL "
                "imports it there, in server mode too), and this Python environment has none; "
                "breadth's own environment cannot hold vLLM beside Prefect (docs/design/"
                f"versions.md). Fix: {off}, or train in an environment with TRL and "
                "vLLM 0.31 (the `vllm` extra) installed together.")
    return None


def trl_vllm_refusal_here(config: RLConfig) -> str | None:
    """`trl_vllm_refusal` for this process: torch's view of CUDA, and whether vLLM is
    importable (looked up, not imported: importing it takes seconds)."""
    if config.vllm_mode is None:  # torch stays unimported for the common case
        return None
    import torch

    return trl_vllm_refusal(config, cuda_available=torch.cuda.is_available(),
                            vllm_importable=importlib.util.find_spec("vllm") is not None)
