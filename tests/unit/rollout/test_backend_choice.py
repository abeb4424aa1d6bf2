"""rollout.backend=auto: the rule by device, model size and vLLM availability."""

from __future__ import annotations

import json
import struct

import pytest

from breadth.config import RolloutConfig, load_config
from breadth.rollout.backend_choice import (
    VLLM_ON_GPU_MIN_PARAMETERS,
    choose_backend,
    parameter_count,
)


def write_safetensors(path, shapes: dict[str, list[int]]) -> None:
    header = {name: {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}
              for name, shape in shapes.items()}
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


@pytest.fixture
def large_model(tmp_path):
    (tmp_path / "large").mkdir()
    shapes = {"embed": [150_000, 896], "lm": [896, 10]}
    write_safetensors(tmp_path / "large" / "model.safetensors", shapes)
    return tmp_path / "large"


@pytest.fixture
def small_model(tmp_path):
    (tmp_path / "small").mkdir()
    write_safetensors(tmp_path / "small" / "model.safetensors", {"w": [128, 128]})
    return tmp_path / "small"


def test_parameter_count_reads_safetensors_headers(large_model):
    assert parameter_count(large_model) == 150_000 * 896 + 896 * 10


def test_parameter_count_falls_back_to_bin_size(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 4000)
    assert parameter_count(tmp_path) == 1000


@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_an_explicit_backend_is_kept(backend, large_model):
    choice = choose_backend(RolloutConfig(backend=backend), large_model, cuda=True)
    assert choice.backend == backend


def test_auto_on_cpu_is_transformers_at_any_size(large_model, monkeypatch):
    monkeypatch.delenv("BREADTH_VLLM_URL", raising=False)
    choice = choose_backend(RolloutConfig(backend="auto"), large_model, cuda=False,
                            vllm_available=True)
    assert choice.backend == "transformers" and "CUDA" in choice.reason


def test_auto_on_cpu_uses_a_running_server_when_one_is_configured(small_model, monkeypatch):
    monkeypatch.delenv("BREADTH_VLLM_URL", raising=False)
    config = RolloutConfig(backend="auto", vllm_url="http://127.0.0.1:9/v1")
    choice = choose_backend(config, small_model, cuda=False)
    assert choice.backend == "vllm" and "no server start" in choice.reason


def test_auto_on_gpu_picks_vllm_for_large_models_only(large_model, small_model):
    auto = RolloutConfig(backend="auto")
    assert parameter_count(large_model) >= VLLM_ON_GPU_MIN_PARAMETERS
    assert choose_backend(auto, large_model, cuda=True, vllm_available=True).backend == "vllm"
    small = choose_backend(auto, small_model, cuda=True, vllm_available=True)
    assert small.backend == "transformers" and "below" in small.reason


def test_auto_on_gpu_without_vllm_says_how_to_get_it(large_model):
    choice = choose_backend(RolloutConfig(backend="auto"), large_model, cuda=True,
                            vllm_available=False)
    assert choice.backend == "transformers" and "make vllm-env" in choice.reason


def test_a_configured_server_url_counts_as_vllm_available(large_model, monkeypatch):
    monkeypatch.delenv("BREADTH_VLLM_URL", raising=False)
    config = RolloutConfig(backend="auto", vllm_url="http://127.0.0.1:9/v1")
    assert choose_backend(config, large_model, cuda=True).backend == "vllm"


def test_auto_is_a_valid_config_value():
    assert load_config("default", ["rollout.backend=auto"]).rollout.backend == "auto"


def test_resolve_backend_replaces_auto_and_keeps_the_rest(large_model, monkeypatch):
    from breadth.rollout import backend_choice

    monkeypatch.setattr(backend_choice, "_cuda_available", lambda: False)
    auto = RolloutConfig(backend="auto", num_samples=3)
    resolved = backend_choice.resolve_backend(auto, large_model)
    assert resolved.backend == "transformers" and resolved.num_samples == 3
    explicit = RolloutConfig(backend="vllm")
    assert backend_choice.resolve_backend(explicit, large_model) is explicit
