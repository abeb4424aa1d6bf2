"""Rollouts from a vLLM server: the client of its OpenAI-compatible completions endpoint.

One request per problem with `n` samples and the problem's own seed (`request_seed`): one seed
shared by several prompts correlates their samples (docs/design/versions.md). Requests go out concurrently
so the server batches them. Per token we keep the sampled token's id and log-prob; the log-prob
is of the distribution sampled from (the server runs with `--logprobs-mode processed_logprobs`,
temperature and top-p applied), as in the transformers backend.

`entropy` is left empty: the API returns log-probs of the top tokens only, and an entropy from
a truncated distribution would understate the real one. Use the transformers backend for
per-token entropy.

Token ids come from the server (`return_token_ids`, vLLM >= 0.10); the stop token (eos) is
dropped from `token_ids` but its log-prob kept, the layout the transformers backend uses.
A server that returns no ids (another OpenAI-compatible server) gets the text re-tokenized
with the model's tokenizer.

Prompts go to the completions endpoint, not the chat one: breadth renders them with the
policy's own tokenizer (`breadth.models.chat`), so the server receives the very text the
transformers backend tokenizes, and SFT and GRPO trained on.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from breadth.config import ModelConfig, RolloutConfig
from breadth.display.progress import StageBar
from breadth.models.chat import check_chat_template, render_prompts
from breadth.rollout.rows import Sample, request_seed, rollout_rows
from breadth.rollout.vllm_fleet import VLLMFleet
from breadth.rollout.vllm_pool import policy_server_url
from breadth.rollout.vllm_server import VLLMServerError, resolve_vllm_urls
from breadth.stack.auth import bearer_headers

# More requests in flight than this gains nothing on one server and only queues.
MAX_IN_FLIGHT = 64
REQUEST_TIMEOUT_S = 900.0
# A server that cannot be reached is known in seconds (and its requests go to the others); one
# that is reached may take long to answer a large request.
CONNECT_TIMEOUT_S = 10.0


def completion_request(
    problem: Mapping[str, Any], config: RolloutConfig, *, model: str, seed: int,
    stop_token_ids: Sequence[int] = (),
) -> dict[str, Any]:
    """The JSON body of one completions request: all n samples of one problem, its own seed.

    >>> body = completion_request({"problem_id": "p1", "prompt": "1+2="}, RolloutConfig(),
    ...                           model="m", seed=0)
    >>> body["n"], body["logprobs"], body["seed"] == request_seed(0, "p1")
    (16, 1, True)
    """
    body: dict[str, Any] = {
        "model": model,
        "prompt": problem["prompt"],
        "n": config.num_samples,
        "seed": request_seed(seed, str(problem["problem_id"])),
        # 0 is vLLM's greedy decoding (top_p then ignored), with n = 1: the config refuses
        # more, and so would vLLM.
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_new_tokens,
        "logprobs": 1,
        "return_token_ids": True,
        # The prompt is exactly what the model was trained on; the transformers backend
        # tokenizes it the same way.
        "add_special_tokens": False,
        "skip_special_tokens": True,
    }
    if stop_token_ids:
        body["stop_token_ids"] = list(stop_token_ids)
    return body


def samples_from_choices(
    choices: Sequence[Mapping[str, Any]], *, tokenize: Any = None
) -> list[Sample]:
    """Samples (in choice order) from a completions response's `choices`.

    A choice that stopped on a stop token (eos: `finish_reason == "stop"`, no stop string)
    carries that token last in `token_ids`: it is dropped there, its log-prob kept.

    >>> choice = {"index": 0, "text": "3", "token_ids": [7, 1], "finish_reason": "stop",
    ...           "stop_reason": None, "logprobs": {"token_logprobs": [-0.1, -0.2]}}
    >>> samples_from_choices([choice])[0].token_ids
    [7]
    """
    samples = []
    for choice in sorted(choices, key=lambda c: c["index"]):
        logprobs = [float(lp) for lp in (choice.get("logprobs") or {}).get("token_logprobs") or []]
        finish_reason = choice.get("finish_reason") or "length"
        token_ids = choice.get("token_ids")
        if token_ids is None:
            if tokenize is None:
                raise VLLMServerError(
                    "the server returned no token_ids and no tokenizer is available to "
                    "re-tokenize the text: use vLLM >= 0.10 or pass a local policy_dir"
                )
            token_ids = tokenize(choice["text"])
        else:
            token_ids = list(token_ids)
            stopped_on_token = finish_reason == "stop" and not isinstance(
                choice.get("stop_reason"), str
            )
            if stopped_on_token and token_ids:
                token_ids = token_ids[:-1]
        samples.append(
            Sample(
                text=choice["text"], token_ids=token_ids, logprobs=logprobs, entropy=[],
                finish_reason=finish_reason,
            )
        )
    return samples


@functools.lru_cache(maxsize=4)
def _local_tokenizer(policy_dir: str | Path) -> Any:
    """The policy's tokenizer when it can be loaded here (for eos and re-tokenizing), else None.
    Kept per folder: loading SmolLM2's takes about a second, most of what breadth's backend
    cost over raw vLLM requests (docs/results/real_lm_backends.md). A policy folder is written
    once under its content key, so a kept tokenizer is never stale."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(policy_dir))
    except Exception:  # noqa: BLE001 - a remote-only model: the server's own eos still applies
        return None


def request_timeout() -> Any:
    import httpx

    return httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)


@contextlib.contextmanager
def vllm_endpoints(
    policy_dir: str | Path, config: RolloutConfig, *, seed: int
) -> Iterator[list[str]]:
    """The base URLs to send requests to: the configured servers, or a server for `policy_dir`
    started here (kept for later stages inside `kept_vllm_servers()`)."""
    urls = resolve_vllm_urls(config.vllm_url)
    if urls:
        yield urls
        return
    with policy_server_url(Path(policy_dir), config, seed=seed) as url:
        yield [url]


def rollout_vllm(
    policy_dir: str | Path,
    problems: Sequence[Mapping[str, Any]],
    config: RolloutConfig,
    *,
    model_name: str,
    seed: int,
    progress: bool = True,
    chat: ModelConfig | None = None,
) -> list[dict[str, Any]]:
    """n samples for every problem from a vLLM server -> rollout rows (problem order kept).
    Each prompt is rendered by `chat` with the policy's tokenizer (`breadth.models.chat`);
    the rows keep the problem's own.

    Starts a server for `policy_dir` unless `config.vllm_url` / `$BREADTH_VLLM_URL` names
    servers; several are used as one fleet (`breadth.rollout.vllm_fleet`). Deterministic for a
    given seed, whatever the number of servers: each problem's request carries
    `request_seed(seed, id)`.
    """
    import httpx

    tokenizer = _local_tokenizer(policy_dir)
    tokenize = None
    stop_ids: list[int] = []
    if tokenizer is not None:
        # Stop at the tokenizer's eos even where the model's generation config names another.
        stop_ids = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []

        def tokenize(text: str) -> list[int]:
            return tokenizer(text, add_special_tokens=False)["input_ids"]

    check_chat_template(tokenizer, chat, model=str(policy_dir))  # named, before a server starts
    prompts = render_prompts(tokenizer, [problem["prompt"] for problem in problems], chat)
    per_server = max(1, min(MAX_IN_FLIGHT, config.batch_size // config.num_samples))
    groups: list[list[Sample] | None] = [None] * len(problems)
    with vllm_endpoints(policy_dir, config, seed=seed) as urls:
        fleet = VLLMFleet.connect(urls, policy_dir, model_name)
        in_flight = per_server * len(fleet.live())
        limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
        with (
            httpx.Client(timeout=request_timeout(), limits=limits,
                         headers=bearer_headers()) as client,
            ThreadPoolExecutor(max_workers=in_flight) as pool,
            StageBar(f"rollout {model_name} (vllm)", len(problems), "problem",
                     show=progress) as bar,
        ):
            futures = {
                pool.submit(
                    fleet.post, client,
                    completion_request({**problem, "prompt": prompt}, config,
                                       model=model_name, seed=seed, stop_token_ids=stop_ids),
                    str(problem["problem_id"]), index,
                ): index
                for index, (problem, prompt) in enumerate(zip(problems, prompts, strict=True))
            }
            try:
                for future in as_completed(futures):
                    groups[futures[future]] = samples_from_choices(
                        future.result()["choices"], tokenize=tokenize
                    )
                    bar.update(1)
            except BaseException:
                for future in futures:  # fail fast: do not wait for the queued requests
                    future.cancel()
                raise
    rows: list[dict[str, Any]] = []
    for problem, samples in zip(problems, groups, strict=True):
        assert samples is not None
        rows.extend(rollout_rows(problem, samples, model=model_name, backend="vllm", seed=seed))
    return rows


class VLLMBackend:
    """`breadth.rollout.backends.RolloutBackend` over a vLLM server (configured or started)."""

    def rollout(
        self, policy_dir: Path, problems: Sequence[Mapping[str, Any]], config: RolloutConfig,
        *, model_name: str, seed: int, progress: bool = True, chat: ModelConfig | None = None,
    ) -> list[dict[str, Any]]:
        return rollout_vllm(policy_dir, problems, config, model_name=model_name, seed=seed,
                            progress=progress, chat=chat)

    @contextlib.contextmanager
    def sampler(
        self, policy_dir: Path, config: RolloutConfig, *, seed: int, chunk: int,
        on_samples: Callable[[int], None] | None = None, chat: ModelConfig | None = None,
    ) -> Iterator[Any]:
        """The same servers for the whole search; each call sends one request per prompt (the
        servers batch them), at most `chunk` in flight per server, rendered by `chat`."""
        import httpx

        tokenizer = _local_tokenizer(policy_dir)
        eos = getattr(tokenizer, "eos_token_id", None)
        check_chat_template(tokenizer, chat, model=str(policy_dir))  # before a server starts
        with vllm_endpoints(policy_dir, config, seed=seed) as urls:
            fleet = VLLMFleet.connect(urls, policy_dir, "search")
            in_flight = max(1, min(MAX_IN_FLIGHT, chunk)) * len(fleet.live())
            with (
                httpx.Client(timeout=request_timeout(), headers=bearer_headers()) as client,
                ThreadPoolExecutor(max_workers=in_flight) as pool,
            ):
                yield _fleet_sampler(fleet, client, pool, config, eos, on_samples,
                                     render=functools.partial(render_prompts, tokenizer,
                                                              settings=chat))


def _fleet_sampler(fleet: VLLMFleet, client: Any, pool: ThreadPoolExecutor,
                   config: RolloutConfig, eos: int | None,
                   on_samples: Callable[[int], None] | None = None,
                   render: Callable[[list[str]], list[str]] | None = None) -> Any:
    """search's Sampler over a fleet: (prompts, n, seed) -> n texts per prompt, in order;
    `on_samples(n)` hears of each prompt's n samples as its answer is read (progress);
    `render` turns the prompts into the text sent (`breadth.models.chat.render_prompts`)."""

    def sample(prompts: list[str], n: int, call_seed: int) -> list[list[str]]:
        prompts = render(prompts) if render is not None else prompts
        request = config.model_copy(update={"num_samples": n})
        bodies = [
            completion_request({"problem_id": f"prompt-{i}", "prompt": prompt}, request,
                               model="search", seed=call_seed,
                               stop_token_ids=[eos] if eos is not None else [])
            for i, prompt in enumerate(prompts)
        ]
        answers = pool.map(lambda ib: fleet.post(client, ib[1], f"prompt-{ib[0]}", ib[0]),
                           enumerate(bodies))
        texts = []
        for answer in answers:  # in prompt order, as each arrives
            texts.append([c["text"] for c in sorted(answer["choices"], key=lambda c: c["index"])])
            if on_samples is not None:
                on_samples(n)
        return texts

    return sample
