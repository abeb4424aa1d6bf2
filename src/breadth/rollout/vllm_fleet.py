"""Several vLLM servers serving one model, used as one: requests are spread across them, and a
failed server's requests are retried on the others.

Results do not depend on how many servers there are: every request carries its own seed
(`request_seed(seed, problem_id)`), so which server answers it changes the time, not the
samples. Request `i` goes first to server `i mod N` (a fixed spread, no shared queue), then to
the next live one.

A server that fails -- no connection, a dropped connection, a timeout, a 5xx answer -- is taken
out of the fleet for the rest of its life, and the request moves on. An answer that says the
request itself is wrong (4xx: too long for the context, an unknown model) is raised at once:
every server would refuse it alike.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadth.rollout.vllm_server import VLLMServerError, served_models

log = logging.getLogger(__name__)


class ServerFailure(VLLMServerError):
    """The server failed (not the request): another server may answer the same request."""


def post_completion(client: Any, url: str, body: Mapping[str, Any], problem_id: str) -> dict:
    """POST one completions request to one server; an error names the problem and the reason.

    Raises `ServerFailure` when the server is at fault (worth retrying elsewhere) and
    `VLLMServerError` when the request is.
    """
    import httpx

    try:
        response = client.post(f"{url}/v1/completions", json=body)
    except httpx.HTTPError as error:
        raise ServerFailure(
            f"completions request for problem {problem_id} to {url} failed: {error!r}"
        ) from error
    if response.status_code != 200:
        hint = ""
        if "max_model_len" in response.text or "maximum context length" in response.text:
            hint = (" Lower rollout.max_new_tokens, or serve the model with a larger "
                    "--max-model-len.")
        error_type = ServerFailure if response.status_code >= 500 else VLLMServerError
        raise error_type(
            f"vLLM at {url} answered {response.status_code} for problem {problem_id}: "
            f"{response.text[:500]}{hint}"
        )
    return response.json()


def pick_served_model(url: str, policy_dir: str | Path, model_name: str) -> str:
    """The model id to request from the server at `url`: its only model, or the one named
    like the policy folder or `model_name`."""
    models = served_models(url)
    if len(models) == 1:
        return models[0]
    for wanted in (str(policy_dir), str(Path(policy_dir).resolve()), model_name):
        if wanted in models:
            return wanted
    raise VLLMServerError(
        f"the vLLM server at {url} serves {models}; none is {str(policy_dir)!r} or "
        f"{model_name!r}. Serve one model per server, or name the model as it is served."
    )


def first_choices(urls: Sequence[str], index: int) -> list[str]:
    """The order in which request `index` tries the servers: its own first, then the rest.

    >>> first_choices(["a", "b", "c"], 4)
    ['b', 'c', 'a']
    """
    start = index % len(urls)
    return [*urls[start:], *urls[:start]]


@dataclass
class VLLMFleet:
    """The live servers of one model (`connect` builds it) and the ones taken out, with why."""

    served: dict[str, str]
    """Base URL -> the model id that server answers to, in the configured order."""
    failed: dict[str, str] = field(default_factory=dict)
    """Base URL -> why it was taken out."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def connect(cls, urls: Sequence[str], policy_dir: str | Path, model_name: str) -> VLLMFleet:
        """Ask each server what it serves; one that does not answer is left out (logged), and
        none answering is an error naming them all."""
        if not urls:
            raise VLLMServerError("no vLLM server URL: set rollout.vllm_url or BREADTH_VLLM_URL")
        fleet = cls(served={})
        for url in urls:
            try:
                fleet.served[url] = pick_served_model(url, policy_dir, model_name)
            except VLLMServerError as error:
                if len(urls) == 1:
                    raise
                fleet.take_out(url, str(error))
        if not fleet.served:
            raise VLLMServerError(
                f"none of the {len(urls)} vLLM servers answers: "
                + "; ".join(f"{url}: {why}" for url, why in fleet.failed.items())
            )
        return fleet

    def live(self) -> list[str]:
        with self._lock:
            return [url for url in self.served if url not in self.failed]

    def take_out(self, url: str, reason: str) -> None:
        with self._lock:
            if url in self.failed:
                return
            self.failed[url] = reason
            live = [u for u in self.served if u not in self.failed]
        log.warning("vLLM server %s failed and is taken out (%s); %d left: %s",
                    url, reason, len(live), live)

    def post(self, client: Any, body: Mapping[str, Any], problem_id: str, index: int) -> dict:
        """Send one completions request (`index` picks the first server) and return the
        answer; a failed server is taken out and the next live one tried."""
        for url in first_choices(list(self.served), index):
            if url in self.failed:
                continue
            try:
                return post_completion(client, url, {**body, "model": self.served[url]},
                                       problem_id)
            except ServerFailure as error:
                self.take_out(url, str(error))
        raise VLLMServerError(
            f"every vLLM server failed; problem {problem_id} got no answer. "
            + "; ".join(f"{url}: {why}" for url, why in self.failed.items())
            + " Check the servers' logs, restart them, and run again (cached stages are kept)."
        )
