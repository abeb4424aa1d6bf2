"""Tasks: one module per task, one registry (`breadth.data.generators.registry`), and what reads a
row through its task: `verify` and `reasoning_path` (mcq by its letter, free-form by the row's
task), and the arithmetic and countdown generators by name. They live here, above the task
modules, because the tasks build on `breadth.data.verifiers` and `breadth.data.synthetic`.

>>> from breadth.data.generators import get_task
>>> get_task("countdown").levels
(1, 2, 3)
"""

from collections.abc import Mapping
from typing import Any

from breadth.data.generators.base import Task, TaskProperties
from breadth.data.generators.registry import (
    TASKS,
    get_task,
    problem_key,
    register,
    synthetic_task_names,
)
from breadth.data.records import FORMATS, Record
from breadth.data.verifiers import Verification, as_list, verify_mcq

__all__ = ["TASKS", "Task", "TaskProperties", "generate_arithmetic", "generate_countdown",
           "get_task", "problem_key", "reasoning_path", "register", "synthetic_task_names",
           "verify"]


def verify(completion: object, row: Mapping[str, Any]) -> Verification:
    """Verify a completion against a rendered row (uses format, task, answer, options, letter, meta):
    mcq by its letter, free-form by the row's task (`breadth.data.generators`).

    >>> verify("Answer: 33", {"format": "free_form", "task": "arithmetic", "answer": "33"}).correct
    True
    >>> verify("B", {"format": "mcq", "options": ["31", "33"], "letter": "B"}).outcome
    '33'
    """
    fmt = row.get("format")
    if fmt == "mcq":
        return verify_mcq(completion, as_list(row.get("options"), "options"), str(row["letter"]))
    if fmt != "free_form":
        raise ValueError(f"row field 'format' must be one of {FORMATS}, got {fmt!r}")
    try:
        task = get_task(row.get("task"))
    except ValueError as error:
        raise ValueError(f"row field 'task': {error}") from None
    return task.verify(completion, row)


def reasoning_path(completion: object, row: Mapping[str, Any]) -> str | None:
    """The order of work a free-form completion followed, as a key, for diversity of reasoning
    (the row's task reads it; None when the task has no such notion or none can be read).

    >>> reasoning_path("5+7=12, 12+3=15. Answer: 15", {"task": "chain", "meta": {"numbers": [3, 5, 7]}})
    '5+7,3+12'
    """
    return get_task(row.get("task")).reasoning_path(completion, row)



def generate_arithmetic(num: int, *, seed: int, difficulty: int | None, split: str) -> list[Record]:
    """`num` distinct arithmetic problems of one difficulty (None: levels 1-3 mixed).

    >>> records = generate_arithmetic(3, seed=0, difficulty=3, split="train")
    >>> [r.task for r in records], records == generate_arithmetic(3, seed=0, difficulty=3,
    ...                                                             split="train")
    (['arithmetic', 'arithmetic', 'arithmetic'], True)
    """
    return get_task("arithmetic").generate(num, seed=seed, difficulty=difficulty, split=split)


def generate_countdown(num: int, *, seed: int, difficulty: int | None, split: str) -> list[Record]:
    """`num` distinct countdown problems of one difficulty (None: levels 1-3 mixed).

    >>> record = generate_countdown(1, seed=0, difficulty=1, split="train")[0]
    >>> record.task, sorted(record.meta), record.answer == str(record.meta["target"])
    ('countdown', ['numbers', 'target'], True)
    """
    return get_task("countdown").generate(num, seed=seed, difficulty=difficulty, split=split)
