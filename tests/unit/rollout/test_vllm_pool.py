"""Kept vLLM servers without vLLM: a stand-in server records starts and stops."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from breadth.config import RolloutConfig
from breadth.rollout import vllm_pool
from breadth.rollout.vllm_pool import kept_vllm_servers, policy_server_url


@dataclass
class StandInServer:
    model_dir: Path
    share: float
    url: str
    alive: bool = True

    def healthy(self) -> bool:
        return self.alive

    def memory_share(self) -> float:
        return self.share

    def stop(self, grace_s: float = 30.0) -> None:
        self.alive = False


@pytest.fixture
def started(monkeypatch) -> list[StandInServer]:
    servers: list[StandInServer] = []

    def start(policy_dir, config, seed):
        server = StandInServer(Path(policy_dir), config.vllm_gpu_memory_utilization,
                               f"http://127.0.0.1:{9000 + len(servers)}")
        servers.append(server)
        return server

    monkeypatch.setattr(vllm_pool, "start_server", start)
    return servers


def config(share: float) -> RolloutConfig:
    return RolloutConfig(backend="vllm", vllm_gpu_memory_utilization=share)


def urls(policy: str, share: float, times: int) -> list[str]:
    found = []
    for _ in range(times):
        with policy_server_url(Path(policy), config(share), seed=0) as url:
            found.append(url)
    return found


def test_outside_a_block_every_stage_starts_and_stops_its_own_server(started):
    assert len(set(urls("sft", 0.3, 2))) == 2
    assert len(started) == 2 and not any(server.alive for server in started)


def test_inside_a_block_a_model_s_server_is_started_once_and_stopped_at_the_end(started):
    with kept_vllm_servers():
        first = urls("sft", 0.3, 1) + urls("rl", 0.3, 1) + urls("sft", 0.3, 1) + urls("rl", 0.3, 1)
        assert first[0] == first[2] and first[1] == first[3] and first[0] != first[1]
        assert len(started) == 2 and all(server.alive for server in started)
    assert not any(server.alive for server in started), "the block's end stops every server"


def test_a_block_ending_in_an_error_still_stops_its_servers(started):
    with pytest.raises(RuntimeError, match="stage failed"), kept_vllm_servers():
        urls("sft", 0.3, 1)
        raise RuntimeError("stage failed")
    assert len(started) == 1 and not started[0].alive


def test_a_server_that_died_is_restarted(started):
    with kept_vllm_servers():
        urls("sft", 0.3, 1)
        started[0].alive = False
        urls("sft", 0.3, 1)
    assert len(started) == 2


def test_servers_that_would_not_fit_together_are_not_kept_together(started):
    """0.5 + 0.5 exceeds the kept share: the older server stops before the next starts."""
    with kept_vllm_servers() as kept:
        urls("sft", 0.5, 1)
        urls("rl", 0.5, 1)
        assert [server.alive for server in started] == [False, True]
        assert kept.total_share() == pytest.approx(0.5)
        urls("sft", 0.5, 1)
        assert [server.alive for server in started] == [False, False, True]


def test_a_nested_block_shares_the_outer_one(started):
    with kept_vllm_servers() as outer:
        with kept_vllm_servers() as inner:
            urls("sft", 0.3, 1)
        assert inner is outer and started[0].alive, "the inner block's end stops nothing"
    assert not started[0].alive


def test_a_started_server_gets_the_configured_parallelism_and_memory_share(tmp_path, monkeypatch):
    from breadth.rollout.vllm_server import VLLMServer

    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").touch()
    (env / ".installed-test").touch()
    monkeypatch.setenv("BREADTH_VLLM_ENV", str(env))
    monkeypatch.setattr(VLLMServer, "start", lambda self: self)
    rollout = RolloutConfig(backend="vllm", vllm_tensor_parallel=4, vllm_gpu_memory_utilization=0.8)
    server = vllm_pool.start_server(tmp_path / "policy", rollout, seed=0)
    server.port = 8000
    command = server.command()
    assert command[command.index("--tensor-parallel-size") + 1] == "4"
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.8"
