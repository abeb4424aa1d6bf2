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


def reward_plan(spec: str, **overrides: Any) -> Any:
    """The plan of the real breadth RewardConfig (pydantic) with the given spec and field
    overrides, resolved as the config resolves it (group sizes are the adapter's to check)."""
    from breadth.config import RewardConfig
    from breadth.rewards.plan import resolve_plan

    config = RewardConfig(spec=spec, **overrides)
    return resolve_plan(config.spec, config.parsed_spec, config)


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
    """The term's values for `batch`, wherever they are placed: what TRL receives for a
    reward-placed term, what waits for the advantage for an advantage-placed one."""
    prompts, completions, kwargs = batch
    to_trl = func(prompts=prompts, completions=completions, completion_ids=None, **kwargs)
    pending = func.take_pending_advantage()
    if func.placement == "advantage":
        assert to_trl == [0.0] * len(completions), "advantage-placed terms give TRL zeros"
        return [float(v) for v in pending]
    assert pending is None
    return to_trl


def combined(setup: Any, batch: tuple[list, list, dict]) -> list[float]:
    """sum_f weight_f * f(batch): the shaped signal per completion, whichever the placement."""
    outputs = [call(func, batch) for func in setup.reward_funcs]
    return [
        sum(w * out[i] for w, out in zip(setup.reward_weights, outputs))
        for i in range(len(batch[1]))
    ]
