"""The one interface every rollout backend offers, and the table that picks one by config.

A backend samples from one policy folder in two shapes: rollout rows for evaluation (n
samples per problem, verified, in the shared row schema) and a `Sampler` for search (prompts
-> texts, called many times while the policy stays loaded or served). `breadth.stages` reads
`rollout.backend` once through `rollout_backend` and never branches on it.

Both render each prompt the same way before it is tokenized or sent
(`breadth.models.chat.render_prompts`, with the run's `model` section as `chat`), so the
two backends, SFT and GRPO see the identical text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from breadth.config import ModelConfig, RolloutConfig

Sampler = Any  # breadth.evaluation.search.Sampler: (prompts, n, seed) -> n texts per prompt


class RolloutBackend(Protocol):
    """What the stages need from a backend (transformers `generate`, a vLLM server)."""

    def rollout(
        self, policy_dir: Path, problems: Sequence[Mapping[str, Any]], config: RolloutConfig,
        *, model_name: str, seed: int, progress: bool = True, chat: ModelConfig | None = None,
    ) -> list[dict[str, Any]]:
        """n samples for every problem -> rollout rows, deterministic for a given seed; each
        prompt rendered by `chat` (the run's `model` section; None: its defaults)."""
        ...

    def sampler(
        self, policy_dir: Path, config: RolloutConfig, *, seed: int, chunk: int,
        on_samples: Callable[[int], None] | None = None, chat: ModelConfig | None = None,
    ) -> AbstractContextManager[Sampler]:
        """A Sampler over this policy, valid inside the `with` block (the policy stays loaded
        or served between calls); `chunk` bounds the prompts sent in one generation call;
        `on_samples(count)` hears of samples as they are drawn, within a call (progress);
        every prompt (search's child prompts too) is rendered by `chat` as in `rollout`."""
        ...


def rollout_backend(config: RolloutConfig) -> RolloutBackend:
    """The backend `config.backend` names."""
    # Imported on use: a run loads only the backend it uses.
    from breadth.rollout.transformers_backend import TransformersBackend
    from breadth.rollout.vllm_backend import VLLMBackend

    backends: dict[str, type[RolloutBackend]] = {
        "transformers": TransformersBackend, "vllm": VLLMBackend,
    }
    return backends[config.backend]()
