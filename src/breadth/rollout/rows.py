"""Build rollout rows (one per sample) in the schema every backend shares."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from breadth.data.generators import verify

# The rendered-row columns a rollout keeps so it can be re-verified offline.
PROBLEM_COLUMNS = ("problem_id", "format", "prompt", "answer", "task", "options", "letter", "meta")


@dataclass
class Sample:
    """One generated completion as a backend returns it."""

    text: str
    token_ids: list[int]
    logprobs: list[float]
    entropy: list[float] = field(default_factory=list)
    finish_reason: str = "stop"


def request_seed(run_seed: int, problem_id: str, sample_index: int = 0) -> int:
    """A per-request seed from the run seed and the problem id.

    One seed shared by all prompts of a request correlates their samples (docs/design/versions.md); this
    gives every problem its own stream, reproducibly.

    >>> request_seed(0, "abc") == request_seed(0, "abc") != request_seed(1, "abc")
    True
    """
    digest = hashlib.sha256(f"{run_seed}:{problem_id}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def rollout_rows(
    problem: Mapping[str, Any],
    samples: Sequence[Sample],
    *,
    model: str,
    backend: str,
    seed: int,
) -> list[dict[str, Any]]:
    """Verify each sample against the problem's gold and lay it out as rollout rows."""
    rows = []
    for index, sample in enumerate(samples):
        verdict = verify(sample.text, problem)
        rows.append(
            {
                **{column: problem[column] for column in PROBLEM_COLUMNS},
                "sample_index": index,
                "model": model,
                "text": sample.text,
                "token_ids": list(sample.token_ids),
                "logprobs": list(sample.logprobs),
                "entropy": list(sample.entropy),
                "finish_reason": sample.finish_reason,
                "extracted": verdict.extracted,
                "outcome": verdict.outcome,
                "correct": bool(verdict.correct),
                "score": float(verdict.score),
                "seed": seed,
                "backend": backend,
            }
        )
    return rows
