"""Both backends offer the one protocol the stages use; the vLLM sampler without a server."""

from __future__ import annotations

import contextlib
import inspect

import pytest

from breadth.config import RolloutConfig
from breadth.rollout import vllm_backend, vllm_fleet
from breadth.rollout.backends import RolloutBackend, rollout_backend
from breadth.rollout.rows import request_seed
from breadth.rollout.transformers_backend import TransformersBackend
from breadth.rollout.vllm_backend import VLLMBackend


@pytest.mark.parametrize(("name", "cls"), [("transformers", TransformersBackend),
                                           ("vllm", VLLMBackend)])
def test_config_picks_the_backend_and_it_has_the_protocol_signatures(name, cls):
    backend = rollout_backend(RolloutConfig(backend=name))
    assert type(backend) is cls
    for method in ("rollout", "sampler"):
        expected = inspect.signature(getattr(RolloutBackend, method))
        assert inspect.signature(getattr(cls, method)).parameters.keys() == expected.parameters.keys()


def test_vllm_sampler_sends_one_seeded_request_per_prompt_and_keeps_choice_order(monkeypatch):
    bodies = []

    @contextlib.contextmanager
    def endpoints(policy_dir, config, *, seed):
        yield ["http://127.0.0.1:1"]

    def post(client, url, body, problem_id):
        bodies.append(body)
        # Choices arrive out of order; the sampler must sort them by index.
        return {"choices": [{"index": i, "text": f"{body['prompt']}#{i}"}
                            for i in reversed(range(body["n"]))]}

    monkeypatch.setattr(vllm_backend, "vllm_endpoints", endpoints)
    monkeypatch.setattr(vllm_fleet, "pick_served_model", lambda url, policy_dir, name: "served")
    monkeypatch.setattr(vllm_backend, "_local_tokenizer", lambda policy_dir: None)
    monkeypatch.setattr(vllm_fleet, "post_completion", post)
    config = RolloutConfig(backend="vllm", num_samples=16, max_new_tokens=5)
    with VLLMBackend().sampler("policy", config, seed=0, chunk=4) as sample:
        texts = sample(["a=", "b="], 3, 7)
    assert texts == [["a=#0", "a=#1", "a=#2"], ["b=#0", "b=#1", "b=#2"]]
    assert sorted(b["prompt"] for b in bodies) == ["a=", "b="]
    assert {b["n"] for b in bodies} == {3} and {b["max_tokens"] for b in bodies} == {5}
    assert {b["model"] for b in bodies} == {"served"}
    assert sorted(b["seed"] for b in bodies) == sorted(
        request_seed(7, f"prompt-{i}") for i in range(2)
    )


def test_vllm_gets_temperature_zero_for_greedy_with_one_sample():
    """vLLM decodes greedily at exactly 0 (it samples at 0.01 for anything in (0, 0.01), and
    refuses n > 1 when greedy): the request carries the config's 0 and n = 1."""
    from breadth.rollout.vllm_backend import completion_request

    greedy = RolloutConfig(backend="vllm", temperature=0, num_samples=1, max_new_tokens=5)
    body = completion_request({"problem_id": "p1", "prompt": "1+2="}, greedy, model="m", seed=0)
    assert (body["temperature"], body["n"], body["max_tokens"]) == (0.0, 1, 5)
    sampled = completion_request({"problem_id": "p1", "prompt": "1+2="},
                                 RolloutConfig(temperature=0.7, num_samples=4), model="m", seed=0)
    assert (sampled["temperature"], sampled["n"]) == (0.7, 4)
