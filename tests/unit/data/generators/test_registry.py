"""The task registry: lookups instead of task branches, refusals that name the fix, and a new
task added by one module plus one registration."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from breadth.data.formats import render
from breadth.data.generators import (
    TASKS,
    Task,
    TaskProperties,
    get_task,
    register,
    synthetic_task_names,
    verify,
)
from breadth.data.records import FORMATS, Record
from breadth.data.sources import load_records, parse_source_spec


def test_builtin_tasks_and_which_are_generated() -> None:
    assert set(TASKS) >= {"generic", "arithmetic", "countdown", "chain", "pairs"}
    assert "generic" not in synthetic_task_names()
    assert FORMATS == ("free_form", "mcq")


def test_an_unknown_task_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown synthetic task 'sudoku'.*'chain'"):
        parse_source_spec("synthetic:sudoku")
    with pytest.raises(ValueError, match="row field 'task': unknown task 'sudoku'"):
        verify("3", {"format": "free_form", "task": "sudoku", "answer": "3"})
    with pytest.raises(ValueError, match="generic.*not generated"):
        get_task("generic").generate(1, seed=0, difficulty=1, split="train")


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(get_task("chain"))


def test_registration_does_not_depend_on_import_order() -> None:
    # Whichever module comes first, every built-in task is there.
    for first in ("breadth.data.verifiers", "breadth.data.sources", "breadth.data.synthetic",
                  "breadth.data.generators.chain", "breadth.config"):
        code = (f"import {first}\nfrom breadth.data.generators import TASKS\n"
                "print(sorted(TASKS))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        assert out.strip() == "['arithmetic', 'chain', 'countdown', 'generic', 'pairs']", first


class Parity(Task):
    """A task defined outside the package: is the number even?"""

    name = "parity_test_task"
    levels = (1,)
    properties = TaskProperties(answers="one", outcome="yes or no")

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None:
        n = rng.randint(0, 999)
        return Record.create(source="synthetic:parity_test_task", split=split,
                             question=f"{n} even?", answer="yes" if n % 2 == 0 else "no",
                             difficulty=level, task=self.name)


def test_a_registered_task_is_a_source_renders_and_verifies() -> None:
    if "parity_test_task" not in TASKS:
        register(Parity())
    try:
        records = load_records("synthetic:parity_test_task", num=5, seed=0, difficulty=1).records
        row = render(records[0], "free_form")
        assert verify(row["answer"], row).correct
    finally:
        TASKS.pop("parity_test_task")


def test_the_guide_shows_the_registry_table() -> None:
    from pathlib import Path

    from breadth.data.generators.registry import task_table_markdown

    guide = Path(__file__).parents[4] / "docs" / "guide" / "tasks.md"
    assert task_table_markdown() in guide.read_text(encoding="utf-8"), (
        "docs/guide/tasks.md's task table is stale: paste task_table_markdown()'s output")
