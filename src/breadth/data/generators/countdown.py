"""countdown: reach a target from given numbers, each used at most once.

Many expressions are valid; the record's `solution` holds one. 1: three numbers 1-9, target
from two of them; 2: three numbers 1-12, target from all three; 3: four numbers 1-15, target
from three or four of them, division allowed.

    free_form  "Reach 22 with 3 5 7:"                                 target "3*5+7"
    mcq        "Reach 22 with 3 5 7? A)3*5+7 B)... Answer:"           target "A"

With a trace: free_form "3*5=15, 15+7=22. Answer: 3*5+7"; mcq evaluates every option
("A)3*5+7=22 yes; B)3*7+5=26 no; ... Answer: A").

Natural (data.rendering=natural): "Write an expression equal to 22 using some of the numbers
3, 5 and 7, each at most once, with +, -, * and /." and the request for an answer line; target
"3 * 5 + 7 = 22.\\nThe answer is 3 * 5 + 7." (with a trace, its steps in words).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any, ClassVar

from breadth.data.distractors import expression_distractors
from breadth.data.expressions import (
    BinOp,
    Node,
    Num,
    evaluate,
    format_fraction,
    parse_expression,
    render,
    steps,
)
from breadth.data.extraction import LETTERS
from breadth.data.generators.base import Task, TaskProperties, inline_mcq_prompt
from breadth.data.generators.natural import (
    in_words,
    instruction,
    listed_numbers,
    mcq_prompt,
    natural_target,
    spaced,
)
from breadth.data.records import Record, RenderError
from breadth.data.synthetic import int_apply
from breadth.data.verifiers import Verification, verify_countdown

# (how many numbers are given, largest number, how many the target uses, ops, largest target)
_LEVELS = {
    1: (3, 9, (2,), "+-*", 100),
    2: (3, 12, (3,), "+-*", 200),
    3: (4, 15, (3, 4), "+-*/", 500),
}


class Countdown(Task):
    name: ClassVar[str] = "countdown"
    summary: ClassVar[str] = ("Reach a target from given numbers, each used at most once "
                              "(answer: an expression).")
    levels: ClassVar[tuple[int, ...]] = (1, 2, 3)
    level_help: ClassVar[dict[int, str]] = {
        1: "three numbers 1-9, target from two of them",
        2: "three numbers 1-12, target from all three",
        3: "four numbers 1-15, target from three or four of them, division allowed",
    }
    properties: ClassVar[TaskProperties] = TaskProperties(
        answers="one or more (every expression that reaches the target)",
        outcome="the canonicalised expression (3*5+7 and 7+5*3 are one outcome)",
        trace="the expression's steps (3*5=15, 15+7=22)")
    same_problem: ClassVar[str] = ("the numbers as a multiset and the target (3 5 7 -> 22 and "
                                   "7 3 5 -> 22 are one)")

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None:
        count, largest, uses, ops, max_target = _LEVELS[level]
        numbers = [rng.randint(1, largest) for _ in range(count)]
        chosen = rng.sample(numbers, rng.choice(uses))
        built = _random_tree(rng, chosen, ops)
        if built is None:
            return None
        tree, value = built
        if not 2 <= value <= max_target or value in numbers:
            return None  # out of range, or trivially "use that number"
        return Record.create(
            source="synthetic:countdown", split=split,
            question=f"Reach {value} with {' '.join(map(str, numbers))}",
            answer=str(value), solution=render(tree), difficulty=level, task="countdown",
            meta={"numbers": numbers, "target": value},
        )

    def problem_key(self, record: Record) -> str:
        """The given numbers as a multiset and the target: the expressions that reach the
        target do not depend on the order the numbers are given in.

        >>> key = Countdown().problem_key
        >>> [key(Record.create(source="synthetic:countdown", split="train", answer="22",
        ...                    question=f"Reach 22 with {n}", task="countdown",
        ...                    meta={"numbers": [int(x) for x in n.split()], "target": 22}))
        ...  for n in ("3 5 7", "7 3 5")]
        ['[3, 5, 7]->22', '[3, 5, 7]->22']
        """
        numbers, target = numbers_and_target(record.meta)
        return f"{sorted(numbers)}->{target}"

    def free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        solution = _solution(record)
        if reasoning:
            return (f"{record.question}:",
                    f"{', '.join(steps(parse_expression(solution)))}. Answer: {solution}")
        return f"{record.question}:", solution

    def mcq_options(self, record: Record, num_options: int, rng: random.Random
                    ) -> tuple[str, list[str]]:
        if record.choices:
            return super().mcq_options(record, num_options, rng)
        solution = _solution(record)
        numbers = [int(n) for n in record.meta["numbers"]]
        wrong = expression_distractors(parse_expression(solution), numbers,
                                       int(record.meta["target"]), num_options - 1, rng)
        return solution, [solution, *wrong]

    def mcq_prompt(self, record: Record, options: list[str], reasoning: bool) -> str:
        return inline_mcq_prompt(f"{record.question}?", options, reasoning)

    def mcq_trace(self, record: Record, options: list[str], letter: str,
                  moved: dict[str, str]) -> str:
        weighed = []
        for index, option in enumerate(options):
            value = format_fraction(evaluate(parse_expression(option)))
            verdict = "yes" if LETTERS[index] == letter else "no"
            weighed.append(f"{LETTERS[index]}){option}={value} {verdict}")
        return f"{'; '.join(weighed)}. Answer: {letter}"

    def natural_free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        solution = _solution(record)
        numbers, target = numbers_and_target(record.meta)
        question = (f"Write an expression equal to {target} using some of the numbers "
                    f"{listed_numbers(numbers)}, each at most once, with +, -, * and /.")
        work = (in_words(steps(parse_expression(solution))) if reasoning
                else f"{spaced(solution)} = {target}.")
        return (f"{question}\n{instruction('the expression')}",
                natural_target(work, spaced(solution)))

    def natural_mcq_prompt(self, record: Record, options: list[str]) -> str:
        numbers, target = numbers_and_target(record.meta)
        return mcq_prompt(f"Which expression equals {target}, using some of the numbers "
                          f"{listed_numbers(numbers)}, each at most once?", options)

    def natural_mcq_trace(self, record: Record, options: list[str], letter: str,
                          moved: dict[str, str]) -> str:
        _, target = numbers_and_target(record.meta)
        values = [format_fraction(evaluate(parse_expression(option))) for option in options]
        work = " ".join(f"{LETTERS[i]}) {spaced(option)} = {value}."
                        for i, (option, value) in enumerate(zip(options, values, strict=True)))
        return natural_target(f"{work} Only option {letter} makes {target}.", letter)

    def verify(self, completion: object, row: Mapping[str, Any]) -> Verification:
        numbers, target = numbers_and_target(row_meta(row))
        return verify_countdown(completion, numbers, target)


def numbers_and_target(meta: Mapping[str, Any], task: str = "countdown") -> tuple[list[int], int]:
    """A countdown or pairs problem's given numbers and target, from its meta; a meta without
    them is an error naming the row's task and the shape it needs."""
    try:
        return [int(n) for n in meta["numbers"]], int(meta["target"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{task} row needs meta {{'numbers': [int, ...], 'target': int}}, "
                         f"got {dict(meta)!r}") from None


def row_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    """A rendered row's meta (a JSON string in parquet, a dict in memory)."""
    value = row.get("meta")
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


def _solution(record: Record) -> str:
    if not record.solution:
        raise RenderError(record, "countdown needs a solution expression")
    return record.solution


def _random_tree(rng: random.Random, numbers: list[int], ops: str) -> tuple[Node, int] | None:
    """A random expression over all of `numbers` whose every intermediate value is a positive
    whole number (the countdown convention), with its value."""
    if len(numbers) == 1:
        return Num(numbers[0]), numbers[0]
    cut = rng.randint(1, len(numbers) - 1)
    left, right = _random_tree(rng, numbers[:cut], ops), _random_tree(rng, numbers[cut:], ops)
    if left is None or right is None:
        return None
    (left_node, a), (right_node, b) = left, right
    op = rng.choice(ops)
    if op == "-" and a < b:
        (left_node, a), (right_node, b) = (right_node, b), (left_node, a)
    if op == "/" and (b <= 1 or a % b):
        op = rng.choice("+*")
    value = int_apply(op, a, b)
    if value <= 0:
        return None
    return BinOp(op, left_node, right_node), value
