"""GPU checks: run on a CUDA machine (`pytest -m gpu`); skipped elsewhere."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


# The CUDA check runs when a test does, not at import: importing torch here cost about 2.4 CPU s
# in every xdist worker's collection of the suite, GPU or not.
@pytest.fixture(autouse=True)
def _cuda_device() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")


def test_transformers_rollouts_run_on_cuda():
    from breadth.config import ModelConfig, RolloutConfig
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model
    from breadth.rollout.transformers_backend import generate_samples

    tokenizer = build_char_tokenizer()
    model = build_tiny_model(ModelConfig(), tokenizer, seed=0).to("cuda")
    config = RolloutConfig(num_samples=4, max_new_tokens=6)
    groups = generate_samples(model, tokenizer, ["12+7=", "3+4="], num_samples=config.num_samples,
                              temperature=1.0, top_p=1.0, max_new_tokens=6, seed=0)
    assert [len(group) for group in groups] == [4, 4]
    assert all(len(s.logprobs) == len(s.entropy) > 0 for group in groups for s in group)


def test_device_arguments_enable_bf16_on_cuda():
    import torch

    from breadth.training.trainer_setup import device_arguments

    arguments = device_arguments()
    assert arguments["use_cpu"] is False
    # bf16 exactly where the device supports it (TRL would default it on everywhere).
    assert arguments["bf16"] == torch.cuda.is_bf16_supported()
    assert arguments["fp16"] is False
    # TRL defaults it on; device_arguments turns it off on every device, CUDA included.
    assert arguments["gradient_checkpointing"] is False
