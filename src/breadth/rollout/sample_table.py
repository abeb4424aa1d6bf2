"""A rollout's sample table: what the model wrote, next to its metrics in MLflow's UI.

A seeded selection of rollout rows (64 by default), each with the prompt as the model saw it
(rendered through the chat template where one applies: `breadth.models.chat`), the completion,
the extracted answer and a verdict that keeps "no answer extracted" apart from "wrong". The
Prefect rollout task logs it with `breadth.tracking.tables.log_table` (the file and tag
`MlflowClient.log_table` writes), with the run's prompting as tags (`chat_record`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from breadth.config import ModelConfig
from breadth.models.chat import chat_record, render_prompts

SAMPLE_TABLE_ROWS = 64
"""Rows of a rollout's sample table: enough to read what a model writes, small to load."""


def verdict(row: Mapping[str, Any]) -> str:
    """"correct", "wrong", or "no answer extracted" (nothing the verifier could read).

    >>> [verdict(r) for r in ({"correct": True, "extracted": "4"},
    ...                       {"correct": False, "extracted": "5"},
    ...                       {"correct": False, "extracted": None})]
    ['correct', 'wrong', 'no answer extracted']
    """
    if bool(row.get("correct")):
        return "correct"
    extracted = row.get("extracted")
    missing = extracted is None or (isinstance(extracted, float) and math.isnan(extracted))
    return "no answer extracted" if missing or str(extracted).strip() == "" else "wrong"


def sample_table(rows: Sequence[Mapping[str, Any]],
                 render: Callable[[list[str]], list[str]], *, seed: int,
                 size: int = SAMPLE_TABLE_ROWS) -> list[dict[str, Any]]:
    """`size` rollout rows drawn without replacement, seeded by `seed` (all of them when there
    are fewer), in their rollout order; `render` turns their prompts into what the model saw.

    >>> rows = [{"problem_id": f"p{i}", "sample_index": 0, "prompt": f"{i}+1=",
    ...          "text": str(i + 1), "extracted": str(i + 1), "correct": True} for i in range(5)]
    >>> table = sample_table(rows, lambda prompts: prompts, seed=0, size=2)
    >>> [(r["problem_id"], r["prompt"], r["verdict"]) for r in table]
    [('p3', '3+1=', 'correct'), ('p4', '4+1=', 'correct')]
    """
    chosen = sorted(random.Random(seed).sample(range(len(rows)), min(size, len(rows))))
    picked = [rows[index] for index in chosen]
    prompts = render([str(row["prompt"]) for row in picked])
    return [{"problem_id": str(row["problem_id"]), "sample_index": int(row["sample_index"]),
             "prompt": prompt, "completion": str(row["text"]),
             "extracted": None if verdict(row) == "no answer extracted" else str(row["extracted"]),
             "verdict": verdict(row)}
            for row, prompt in zip(picked, prompts, strict=True)]


@dataclass(frozen=True)
class RolloutSamples:
    """A rollout's sample table and how its prompts reached the model."""

    rows: list[dict[str, Any]]
    chat: dict[str, str]
    """`breadth.models.chat.chat_record` of the policy: template applied or raw, its hash,
    one rendered prompt."""


def rollout_samples(rollouts: Path, policy_dir: Path, chat: ModelConfig | None, *, seed: int,
                    size: int = SAMPLE_TABLE_ROWS) -> RolloutSamples:
    """The sample table of a rollouts parquet, its prompts rendered with the policy's own
    tokenizer as the backends rendered them."""
    import pandas as pd
    from transformers import AutoTokenizer

    rows = pd.read_parquet(rollouts).to_dict("records")
    tokenizer = AutoTokenizer.from_pretrained(str(policy_dir))
    table = sample_table(rows, lambda prompts: render_prompts(tokenizer, prompts, chat),
                         seed=seed, size=size)
    first = str(rows[0]["prompt"]) if rows else ""
    return RolloutSamples(table, chat_record(tokenizer, chat, first))
