"""A stand-in verifier and batch builder for the adapter tests (module-level: picklable)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any


@dataclass(frozen=True)
class FakeVerification:
    correct: bool
    score: float
    extracted: str | None
    outcome: str | None
    reason: str = ""


def fake_verify(completion: str, row: dict[str, Any]) -> FakeVerification:
    """The stripped text is the answer; '' or '?' extracts nothing (outcome None).

    A gold answer "4|8" accepts either outcome (tasks with several valid solutions).
    """
    text = completion.strip()
    outcome = None if text in ("", "?") else text
    correct = outcome is not None and outcome in row["answer"].split("|")
    return FakeVerification(correct, 1.0 if correct else 0.0, outcome, outcome)


class CountingVerify:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, completion: str, row: dict[str, Any]) -> FakeVerification:
        self.calls += 1
        return fake_verify(completion, row)


def reward_config(spec: str, **overrides: Any) -> Any:
    """The real breadth RewardConfig (pydantic) with the given spec and field overrides."""
    from breadth.config import RewardConfig

    return RewardConfig(spec=spec, **overrides)


def make_batch(groups: list[tuple[str, str, list[str]]], split: str = "train", **extra: Any):
    """(problem_id, gold answer, completions) per group -> (prompts, completions, kwargs)."""
    prompts, completions = [], []
    columns: dict[str, list[Any]] = {
        key: []
        for key in ("problem_id", "answer", "format", "task", "options", "letter", "meta", "split")
    }
    for problem_id, answer, texts in groups:
        for text in texts:
            prompts.append(f"Q{problem_id}=")
            completions.append(text)
            columns["problem_id"].append(problem_id)
            columns["answer"].append(answer)
            columns["format"].append("free_form")
            columns["task"].append("arithmetic")
            columns["options"].append([])
            columns["letter"].append("")
            columns["meta"].append("{}")
            columns["split"].append(split)
    state = SimpleNamespace(global_step=extra.pop("global_step", 0))
    kwargs = {**columns, "trainer_state": state, **extra}
    return prompts, completions, kwargs


def call(func: Any, batch: tuple[list, list, dict]) -> list[float]:
    prompts, completions, kwargs = batch
    return func(prompts=prompts, completions=completions, completion_ids=None, **kwargs)


def combined(setup: Any, batch: tuple[list, list, dict]) -> list[float]:
    """What TRL sums: sum_f weight_f * f(batch)."""
    outputs = [call(func, batch) for func in setup.reward_funcs]
    return [
        sum(w * out[i] for w, out in zip(setup.reward_weights, outputs))
        for i in range(len(batch[1]))
    ]
