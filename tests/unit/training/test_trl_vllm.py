"""TRL's vLLM server mode from `rl.vllm_server_url`: the arguments reach `trl.GRPOConfig` as
the installed TRL names them, and a machine without CUDA is refused before training."""

from __future__ import annotations

import dataclasses

import pytest

from breadth.config import RLConfig, load_config
from breadth.training.grpo import build_grpo_config
from breadth.training.trl_vllm import TRLServerModeError, trl_vllm_server_arguments

URL = "http://gpu-0:8000"


def test_without_a_server_url_the_trainer_generates_itself(tmp_path):
    grpo = build_grpo_config(RLConfig(), output_dir=tmp_path, seed=0, overrides={})
    assert grpo.use_vllm is False


def test_server_mode_arguments_are_fields_of_the_installed_trl(tmp_path):
    from trl import GRPOConfig

    config = load_config("default", [f"rl.vllm_server_url={URL}/", "rl.vllm_server_timeout_s=600"])
    arguments = trl_vllm_server_arguments(config.rl, cuda_available=True)
    fields = {field.name for field in dataclasses.fields(GRPOConfig)}
    assert set(arguments) <= fields, f"TRL has no field {set(arguments) - fields}"
    grpo = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **arguments)
    assert (grpo.use_vllm, grpo.vllm_mode) == (True, "server")
    assert grpo.vllm_server_base_url == URL and grpo.vllm_server_timeout == 600


def test_server_mode_without_cuda_is_refused_naming_the_key(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal is for machines without it")
    with pytest.raises(TRLServerModeError, match=r"rl\.vllm_server_url=.*needs a CUDA device"):
        build_grpo_config(RLConfig(vllm_server_url=URL), output_dir=tmp_path, seed=0,
                          overrides={})
