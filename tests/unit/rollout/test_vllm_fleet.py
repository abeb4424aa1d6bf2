"""The vLLM fleet without servers: httpx's mock transport plays the servers, so the real
request path (status codes, transport errors) runs and each server's traffic is counted."""

from __future__ import annotations

import collections
import json
import logging

import httpx
import pytest

from breadth.config import RolloutConfig, load_config
from breadth.rollout import vllm_fleet
from breadth.rollout.vllm_fleet import ServerFailure, VLLMFleet, post_completion
from breadth.rollout.vllm_server import VLLMServerError, resolve_vllm_urls

A, B, C = "http://a:8000", "http://b:8000", "http://c:8000"


def mock_client(behaviour: dict[str, str], calls: collections.Counter) -> httpx.Client:
    """Servers by base URL: "ok" answers with the request's seed, "down" refuses connections,
    "500"/"400" answer that status."""

    def handle(request: httpx.Request) -> httpx.Response:
        server = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        calls[server] += 1
        mode = behaviour[server]
        if mode == "down":
            raise httpx.ConnectError("connection refused", request=request)
        if mode != "ok":
            return httpx.Response(int(mode), text=f"error {mode}")
        seed = json.loads(request.content)["seed"]
        return httpx.Response(200, json={"choices": [{"index": 0, "text": str(seed)}],
                                         "server": server})

    return httpx.Client(transport=httpx.MockTransport(handle))


def fleet_of(*urls: str) -> VLLMFleet:
    return VLLMFleet(served={url: "m" for url in urls})


def test_requests_are_spread_round_robin():
    calls: collections.Counter = collections.Counter()
    fleet = fleet_of(A, B, C)
    with mock_client({A: "ok", B: "ok", C: "ok"}, calls) as client:
        servers = [fleet.post(client, {"seed": i}, f"p{i}", i)["server"] for i in range(6)]
    assert servers == [A, B, C, A, B, C]
    assert calls == {A: 2, B: 2, C: 2}


@pytest.mark.parametrize("failure", ["down", "500", "503"])
def test_a_failed_server_is_taken_out_and_its_requests_answered_elsewhere(failure, caplog):
    calls: collections.Counter = collections.Counter()
    fleet = fleet_of(A, B)
    with caplog.at_level(logging.WARNING), mock_client({A: "ok", B: failure}, calls) as client:
        answers = [fleet.post(client, {"seed": i}, f"p{i}", i) for i in range(6)]
    assert [a["choices"][0]["text"] for a in answers] == [str(i) for i in range(6)]
    assert {a["server"] for a in answers} == {A}
    assert list(fleet.failed) == [B] and fleet.live() == [A]
    assert calls[B] == 1, "a server taken out gets no more requests"
    assert B in caplog.text and "taken out" in caplog.text


def test_a_bad_request_is_not_retried_and_takes_no_server_out():
    calls: collections.Counter = collections.Counter()
    fleet = fleet_of(A, B)
    with mock_client({A: "400", B: "ok"}, calls) as client, pytest.raises(VLLMServerError) as info:
        fleet.post(client, {"seed": 0}, "p0", 0)
    assert not isinstance(info.value, ServerFailure)
    assert "answered 400 for problem p0" in str(info.value)
    assert calls == {A: 1} and fleet.live() == [A, B]


def test_every_server_failing_is_an_error_naming_each():
    calls: collections.Counter = collections.Counter()
    fleet = fleet_of(A, B)
    with mock_client({A: "down", B: "500"}, calls) as client, pytest.raises(VLLMServerError) as info:
        fleet.post(client, {"seed": 0}, "p7", 1)
    message = str(info.value)
    assert "problem p7" in message and A in message and B in message and "restart" in message


def test_post_completion_tells_server_failures_from_bad_requests():
    calls: collections.Counter = collections.Counter()
    with mock_client({A: "down", B: "400"}, calls) as client:
        with pytest.raises(ServerFailure, match="to http://a:8000 failed"):
            post_completion(client, A, {"seed": 0}, "p0")
        with pytest.raises(VLLMServerError, match="answered 400") as info:
            post_completion(client, B, {"seed": 0}, "p0")
        assert not isinstance(info.value, ServerFailure)


def test_each_server_is_asked_for_its_own_model_name(monkeypatch):
    names = {A: "policy-on-a", B: "policy-on-b"}
    monkeypatch.setattr(vllm_fleet, "pick_served_model", lambda url, policy, name: names[url])
    fleet = VLLMFleet.connect([A, B], "policy", "sft")
    sent = []

    def record(client, url, body, problem_id):
        sent.append((url, body["model"]))
        return {}

    monkeypatch.setattr(vllm_fleet, "post_completion", record)
    for index in range(2):
        fleet.post(None, {"model": "sft"}, "p", index)
    assert sent == [(A, "policy-on-a"), (B, "policy-on-b")]


def test_connect_leaves_out_a_server_that_does_not_answer(monkeypatch, caplog):
    def pick(url, policy, name):
        if url == B:
            raise VLLMServerError(f"the vLLM server at {url} does not answer GET /v1/models")
        return "m"

    monkeypatch.setattr(vllm_fleet, "pick_served_model", pick)
    with caplog.at_level(logging.WARNING):
        fleet = VLLMFleet.connect([A, B], "policy", "sft")
    assert fleet.live() == [A] and B in fleet.failed and B in caplog.text
    monkeypatch.setattr(vllm_fleet, "pick_served_model",
                        lambda url, policy, name: pick(B, policy, name))
    with pytest.raises(VLLMServerError, match="none of the 2 vLLM servers answers"):
        VLLMFleet.connect([A, B], "policy", "sft")


def test_urls_come_from_a_list_a_comma_separated_string_or_the_environment(monkeypatch):
    monkeypatch.delenv("BREADTH_VLLM_URL", raising=False)
    assert resolve_vllm_urls(None) == []
    assert resolve_vllm_urls(f"{A}/v1, {B}/") == [A, B]
    assert resolve_vllm_urls([A, B]) == [A, B]
    monkeypatch.setenv("BREADTH_VLLM_URL", f"{A},{C}")
    assert resolve_vllm_urls(None) == [A, C]
    assert resolve_vllm_urls(B) == [B], "the config wins over the environment"
    with pytest.raises(VLLMServerError, match="names a server twice"):
        resolve_vllm_urls([A, f"{A}/v1"])


def test_config_takes_one_url_or_a_list():
    assert RolloutConfig(vllm_url=A).vllm_url == A
    config = load_config("default", [f"rollout.vllm_url=[{A}, {B}]",
                                     "rollout.vllm_tensor_parallel=4",
                                     "rollout.vllm_gpu_memory_utilization=0.85"])
    assert config.rollout.vllm_url == [A, B]
    assert config.rollout.vllm_tensor_parallel == 4
    assert config.rollout.vllm_gpu_memory_utilization == 0.85
