"""GRPO generation on a vLLM server: TRL's server mode, configured from `rl.vllm_server_url`.

In server mode the completions GRPO trains on come from a `trl vllm-serve` process on GPUs of
its own, and the trainer is its client: it sends prompts over HTTP and, after every
optimisation step, the new weights over NCCL. That weight transfer needs CUDA on both sides,
so server mode is refused without a CUDA device. It has not been run where breadth's tests
run (CPU only).

The server may start from the base model: the trainer sends its own weights before the first
generation, so what the server loaded only fixes the architecture and the tokenizer.

    CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model Qwen/Qwen2.5-1.5B \\
        --tensor-parallel-size 1 --data-parallel-size 2 --gpu-memory-utilization 0.9
    CUDA_VISIBLE_DEVICES=2 breadth run --set rl.vllm_server_url=http://127.0.0.1:8000
"""

from __future__ import annotations

from typing import Any

from breadth.config import RLConfig


class TRLServerModeError(RuntimeError):
    """TRL's vLLM server mode is configured where it cannot run."""


def trl_vllm_server_arguments(config: RLConfig, *, cuda_available: bool) -> dict[str, Any]:
    """`trl.GRPOConfig` arguments for server mode; none when `rl.vllm_server_url` is empty.

    >>> trl_vllm_server_arguments(RLConfig(), cuda_available=False)
    {}
    >>> arguments = trl_vllm_server_arguments(
    ...     RLConfig(vllm_server_url="http://gpu-0:8000/"), cuda_available=True)
    >>> arguments["vllm_mode"], arguments["vllm_server_base_url"]
    ('server', 'http://gpu-0:8000')
    """
    if not config.vllm_server_url:
        return {}
    if not cuda_available:
        raise TRLServerModeError(
            f"rl.vllm_server_url={config.vllm_server_url!r} asks for TRL's vLLM server mode, "
            "which sends the policy's weights to the server over NCCL after every step and "
            "so needs a CUDA device; torch sees none here. Unset rl.vllm_server_url to "
            "generate inside the trainer, or run on a GPU machine."
        )
    return {
        "use_vllm": True,
        "vllm_mode": "server",
        "vllm_server_base_url": config.vllm_server_url.rstrip("/"),
        "vllm_server_timeout": config.vllm_server_timeout_s,
        # Samples come from vLLM's kernels, the loss from the trainer's: TRL corrects the
        # mismatch between the two log-probs by importance sampling (its default, set here
        # so that a TRL release changing it does not change the experiment).
        "vllm_importance_sampling_correction": True,
    }
