"""TRL's vLLM modes from `rl.vllm_mode`: server and colocate arguments reach `trl.GRPOConfig`
as the installed TRL names them; a config that cannot mean one mode, and a machine without CUDA
or vLLM in the training process, are refused naming the key and the fix."""

from __future__ import annotations

import dataclasses

import pytest

from breadth.config import ConfigError, RLConfig, load_config
from breadth.training.grpo import build_grpo_config
from breadth.training.trl_vllm import (
    TRLVLLMModeError,
    trl_vllm_arguments,
    trl_vllm_refusal,
    trl_vllm_refusal_here,
)

URL = "http://gpu-0:8000"


def _grpo_config_of(arguments, tmp_path):
    """A `trl.GRPOConfig` built from the arguments, after checking TRL has each field."""
    from trl import GRPOConfig

    fields = {field.name for field in dataclasses.fields(GRPOConfig)}
    assert set(arguments) <= fields, f"TRL has no field {set(arguments) - fields}"
    return GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **arguments)


def test_without_a_mode_the_trainer_generates_itself(tmp_path):
    assert RLConfig().vllm_mode is None and trl_vllm_arguments(RLConfig()) == {}
    grpo = build_grpo_config(RLConfig(), output_dir=tmp_path, seed=0, overrides={})
    assert grpo.use_vllm is False


def test_server_mode_arguments_are_fields_of_the_installed_trl(tmp_path):
    config = load_config("default", [f"rl.vllm_server_url={URL}/", "rl.vllm_server_timeout_s=600"])
    # The URL alone asks for server mode, and the config says so (the logged params).
    assert config.rl.vllm_mode == "server" and config.flat()["rl.vllm_mode"] == "server"
    grpo = _grpo_config_of(trl_vllm_arguments(config.rl), tmp_path)
    assert (grpo.use_vllm, grpo.vllm_mode) == (True, "server")
    assert grpo.vllm_server_base_url == URL and grpo.vllm_server_timeout == 600
    assert grpo.vllm_importance_sampling_correction is True


def test_colocate_mode_arguments_are_fields_of_the_installed_trl(tmp_path):
    config = load_config("default", ["rl.vllm_mode=colocate", "rl.num_processes=2",
                                     "rl.vllm_tensor_parallel=2",
                                     "rl.vllm_gpu_memory_utilization=0.45"])
    arguments = trl_vllm_arguments(config.rl)
    assert "vllm_server_base_url" not in arguments
    grpo = _grpo_config_of(arguments, tmp_path)
    assert (grpo.use_vllm, grpo.vllm_mode) == (True, "colocate")
    assert (grpo.vllm_gpu_memory_utilization, grpo.vllm_tensor_parallel_size) == (0.45, 2)
    assert grpo.vllm_enable_sleep_mode is False
    assert grpo.vllm_importance_sampling_correction is True


@pytest.mark.parametrize(
    ("overrides", "must_mention"),
    [
        (["rl.vllm_mode=server"], ["rl.vllm_mode=server needs rl.vllm_server_url"]),
        (["rl.vllm_mode=colocate", f"rl.vllm_server_url={URL}"],
         ["rl.vllm_mode=colocate with rl.vllm_server_url", "Unset rl.vllm_server_url"]),
        (["rl.vllm_mode=colocate", "rl.num_processes=2", "rl.prompts_per_step=8",
          "rl.vllm_tensor_parallel=4"],
         ["rl.vllm_tensor_parallel=4 does not divide rl.num_processes=2"]),
        (["rl.vllm_gpu_memory_utilization=0.5"],
         ["rl.vllm_gpu_memory_utilization=0.5 applies to rl.vllm_mode=colocate only",
          "rl.vllm_mode is empty"]),
        ([f"rl.vllm_server_url={URL}", "rl.vllm_tensor_parallel=2"],
         ["rl.vllm_tensor_parallel=2 applies to rl.vllm_mode=colocate only",
          "rl.vllm_mode is server"]),
        (["rl.vllm_mode=colocated"], ["rl.vllm_mode", "'server' or 'colocate'"]),
    ],
)
def test_a_config_that_cannot_mean_one_mode_is_refused(overrides, must_mention):
    with pytest.raises(ConfigError) as caught:
        load_config("default", overrides)
    for text in must_mention:
        assert text in str(caught.value)


@pytest.mark.parametrize("mode", ["server", "colocate"])
def test_each_mode_is_refused_without_cuda_or_vllm_naming_the_key_and_the_fix(mode):
    config = RLConfig(vllm_mode=mode, vllm_server_url=URL if mode == "server" else None)
    no_gpu = trl_vllm_refusal(config, cuda_available=False, vllm_importable=True)
    assert no_gpu.startswith(f"rl.vllm_mode={mode}")
    assert "needs a CUDA GPU in the training process; this machine has none" in no_gpu
    assert "Fix: unset rl.vllm_mode" in no_gpu and "run on a GPU worker" in no_gpu
    no_vllm = trl_vllm_refusal(config, cuda_available=True, vllm_importable=False)
    assert no_vllm.startswith(f"rl.vllm_mode={mode} needs vLLM importable in the training")
    assert "Fix: unset rl.vllm_mode" in no_vllm and "vLLM 0.31" in no_vllm
    assert trl_vllm_refusal(config, cuda_available=True, vllm_importable=True) is None


def test_colocate_on_this_machine_is_refused_before_training(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal is for machines without it")
    config = RLConfig(vllm_mode="colocate")
    refusal = trl_vllm_refusal_here(config)
    assert refusal.startswith("rl.vllm_mode=colocate needs a CUDA GPU in the training process")
    # A caller that skipped the preflight still gets it, before any TRL object is built.
    with pytest.raises(TRLVLLMModeError) as caught:
        build_grpo_config(config, output_dir=tmp_path, seed=0, overrides={})
    assert str(caught.value) == refusal
