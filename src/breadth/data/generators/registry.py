"""The task registry: each task name -> its `Task` (generator, problem key, renderings, verifier,
outcome key, graded score, properties).

Everything that knows task names reads this one table: `synthetic:<task>` sources, the
renderers (`breadth.data.formats`), the verifier (`breadth.data.generators.verify`) and the
guide's task table. Adding a task means one module with a `Task` subclass plus one line in
`BUILTIN_TASKS`; `register` adds one from outside. The built-in tasks are registered when this
module is first imported, whoever imports it first, so no import order matters.
"""

from __future__ import annotations

from breadth.data.generators.arithmetic import Arithmetic
from breadth.data.generators.base import Task
from breadth.data.generators.chain import Chain
from breadth.data.generators.countdown import Countdown
from breadth.data.generators.pairs import Pairs
from breadth.data.records import Record

TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Add `task` under its name; a name already taken is refused (no silent replacement)."""
    if task.name in TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    if not task.name.isidentifier():
        raise ValueError(f"task name {task.name!r} must be an identifier (it names a source, "
                         "synthetic:<task>)")
    TASKS[task.name] = task
    return task


def get_task(name: str | None) -> Task:
    """The task called `name` (None or "": the generic task of file sources).

    >>> get_task("arithmetic").name
    'arithmetic'
    >>> get_task("sudoku")
    Traceback (most recent call last):
    ValueError: unknown task 'sudoku'; known: arithmetic, chain, countdown, generic, pairs
    """
    task = TASKS.get(name or "generic")
    if task is None:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}")
    return task


def problem_key(record: Record) -> str:
    """The canonical key of what `record` asks, by its task (`Task.problem_key`): records with
    equal keys are one problem, kept on one side of every split. Per task: arithmetic, the
    expression with + and * operands sorted; chain, the numbers as a multiset; countdown, the
    numbers as a multiset and the target; pairs, the numbers as a set and the target; a file or
    hub source (task "generic"), the normalised question text.

    >>> def record(task, question, **meta):
    ...     return Record.create(source=f"synthetic:{task}", split="train", question=question,
    ...                          answer="0", task=task, meta=meta)
    >>> problem_key(record("arithmetic", "98+87")) == problem_key(record("arithmetic", "87+98"))
    True
    >>> problem_key(record("arithmetic", "9-4")) == problem_key(record("arithmetic", "4-9"))
    False
    >>> problem_key(record("chain", "7+5+3", numbers=[7, 5, 3]))
    '3+5+7'
    >>> problem_key(record("countdown", "Reach 22 with 7 3 5", numbers=[7, 3, 5], target=22))
    '[3, 5, 7]->22'
    >>> problem_key(record("pairs", "Sum to 12 with two of 9 3 5 7 4", numbers=[9, 3, 5, 7, 4],
    ...                    target=12))
    '[3, 4, 5, 7, 9]->12'
    >>> problem_key(record("generic", "  What is 2+2? "))
    'what is 2+2'
    """
    return get_task(record.task).problem_key(record)


def synthetic_task_names() -> tuple[str, ...]:
    """Tasks a `synthetic:<task>` source can generate (those with difficulty levels)."""
    return tuple(name for name, task in TASKS.items() if task.levels)


def task_table_markdown() -> str:
    """The guide's task table (docs/guide/tasks.md), generated from the registry."""
    lines = [("| task | what it asks | levels | one problem (split key) | right answers "
              "| outcome key | graded score | trace |"), "|---|---|---|---|---|---|---|---|"]
    for task in TASKS.values():
        props = task.properties
        levels = "<br>".join(f"{level}: {text}" for level, text in task.level_help.items())
        lines.append(f"| `{task.name}` | {task.summary} | {levels or 'from the source'} | "
                     f"{task.same_problem} | {props.answers} | {props.outcome} | "
                     f"{'yes' if props.graded else 'no'} | "
                     f"{props.trace or 'the source rationale'} |")
    return "\n".join(lines)


BUILTIN_TASKS: tuple[Task, ...] = (Task(), Arithmetic(), Countdown(), Chain(), Pairs())
for _task in BUILTIN_TASKS:
    register(_task)
