"""chain: a sum of three or four numbers, worked step by step on a scratchpad; any order of work
is valid.

    free_form  "12+7+5="                          target "12+7=19, 19+5=24. Answer: 24"
    mcq        "12+7+5=? A)24 B)23 C)25 D)26"
               target "12+7=19, 19+5=24. A)24 yes; B)23 no; C)25 no; D)26 no. Answer: A"

The trace adds two of the numbers, then each other number to that sum; which pair comes first
and the order of the rest are drawn per problem (seeded), so the training targets hold every
order and the model's samples can differ in their work as well as in their answers. The verifier accepts every order: each step
`x+y=z` must add two numbers still on the pad (a given number or an earlier sum, each used
once) correctly, the work must use every given number, and the answer line must be its sum.

- outcome key: the answer line's number;
- natural rendering (data.rendering=natural: "What is 12 + 7 + 5?", target "12 + 7 + 5 = 24.\\n
  The answer is 24.", with a trace its steps in words): the final answer is read as a number
  is (`verify_free_form`) and the work is not checked, as the prompt does not ask for the
  scratchpad; a row says it is natural in its meta;
- reasoning path (`reasoning_path`): the order of the steps, each pair written smaller first
  ("5+7,3+12" for 5+7=12 then 12+3=15).

Levels: 1: three numbers 1-9; 2: four numbers 1-9; 3: three numbers 1-29, one of them 10 or
more. No problem is at two levels. A problem is its numbers as a multiset (`problem_key`:
"3+5+7" and "7+5+3" ask one thing, so they are never on both sides of a split); level 1 holds
165 such problems, level 2 495, level 3 4,330. Several orders of one training multiset may
train; an eval set holds each multiset once.

A first design (three numbers 1-19 / 10-49 / 10-99) was measured at SFT pass@1 0.000 on the
study model (64 eval problems x 64 samples; 192 SFT steps): the model wrote the work's shape
but did not copy two-digit numbers from the prompt (scripts/results/tasks.py; see
docs/guide/tasks.md). These levels ask for single-digit copying first.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from breadth.data.distractors import numeric_distractors
from breadth.data.expressions import parse_expression
from breadth.data.extraction import (
    MAX_TAIL_CHARS,
    answer_marker,
    extract_number,
    format_number,
    parse_number,
)
from breadth.data.generators.base import TaskProperties, WorkedExpression
from breadth.data.generators.countdown import row_meta
from breadth.data.generators.natural import NATURAL_META_KEY
from breadth.data.records import Record, RenderError
from breadth.data.verifiers import Verification, verify_free_form

# (how many numbers, smallest, largest, the largest number at least): the last keeps level 3
# apart from level 1 (both three numbers); level 2 has four.
_LEVELS = {1: (3, 1, 9, 1), 2: (4, 1, 9, 1), 3: (3, 1, 29, 10)}
_STEP = re.compile(r"(\d{1,9})\s*\+\s*(\d{1,9})\s*=\s*(\d{1,10})")
_MARKER = re.compile(r"answer\s*:", re.IGNORECASE)


class Chain(WorkedExpression):
    name: ClassVar[str] = "chain"
    summary: ClassVar[str] = ("A sum of three or four numbers worked on a scratchpad, in any "
                              "order (12+7=19, 19+5=24. Answer: 24).")
    levels: ClassVar[tuple[int, ...]] = tuple(_LEVELS)
    level_help: ClassVar[dict[int, str]] = {
        1: "three numbers 1-9 (two steps)", 2: "four numbers 1-9 (three steps)",
        3: "three numbers 1-29, one of them 10 or more (two-digit operands)",
    }
    properties: ClassVar[TaskProperties] = TaskProperties(
        answers="one number, reached by 3 orders of work (four numbers: 18)",
        outcome="the answer line's number",
        reasoning_path=True,
        trace="two of the numbers added, then each other one (12+7=19, 19+5=24)")
    same_problem: ClassVar[str] = "the numbers as a multiset (3+5+7 and 7+5+3 are one)"

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None:
        count, low, high, least_largest = _LEVELS[level]
        numbers = [rng.randint(low, high) for _ in range(count)]
        if max(numbers) < least_largest:
            return None  # a problem of level 1
        first, second = sorted(rng.sample(range(count), 2))
        rest = [n for i, n in enumerate(numbers) if i not in (first, second)]
        rng.shuffle(rest)
        return Record.create(
            source="synthetic:chain", split=split, question="+".join(map(str, numbers)),
            answer=str(sum(numbers)), solution=_work(numbers[first], numbers[second], rest),
            difficulty=level, task=self.name, meta={"numbers": numbers},
        )

    def problem_key(self, record: Record) -> str:
        """The numbers as a multiset, written as their sum in ascending order.

        >>> key = Chain().problem_key
        >>> [key(Record.create(source="synthetic:chain", split="train", question=q, answer="15",
        ...                    task="chain", meta={"numbers": [int(n) for n in q.split("+")]}))
        ...  for q in ("3+5+7", "7+5+3", "7+7+1")]
        ['3+5+7', '3+5+7', '1+7+7']
        """
        return "+".join(map(str, sorted(_numbers({"meta": record.meta}))))

    def mcq_options(self, record: Record, num_options: int, rng: random.Random
                    ) -> tuple[str, list[str]]:
        wrong = numeric_distractors(record.answer, num_options - 1, rng,
                                    expression=parse_expression(record.question))
        return record.answer, [record.answer, *wrong]

    def worked(self, record: Record) -> str:
        """The record's solution: chain's work cannot be recomputed from the question, as the
        order of its steps was drawn."""
        if not record.solution:
            raise RenderError(record, "chain needs its work as the solution (12+7=19, 19+5=24)")
        return record.solution

    def verify(self, completion: object, row: Mapping[str, Any]) -> Verification:
        numbers = _numbers(row)
        total = sum(numbers)
        if _natural(row):
            # Asked in words ("What is 3 + 5 + 7?"), the model is not asked for the scratchpad:
            # its final answer is read as any number's is, and the work is not checked.
            return verify_free_form(completion, str(total))
        text = completion[-MAX_TAIL_CHARS:] if isinstance(completion, str) else ""
        marker = None
        for marker in _MARKER.finditer(text):
            pass
        if marker is None:
            return Verification(False, 0.0, None, None, "no answer line (Answer: N)")
        token = extract_number(text)
        value = parse_number(token) if token else None
        if token is None or value is None:
            return Verification(False, 0.0, token, None, "no number on the answer line")
        outcome = format_number(value)
        problem = check_work(_STEP.findall(text[:marker.start()]), numbers, value)
        if problem:
            return Verification(False, 0.0, token, outcome, problem)
        correct = value == total
        return Verification(correct, float(correct), token, outcome,
                            "correct" if correct else "wrong answer")

    def reasoning_path(self, completion: object, row: Mapping[str, Any]) -> str | None:
        if not isinstance(completion, str):
            return None
        text = completion[-MAX_TAIL_CHARS:]
        if _natural(row):
            # In words the work is optional and free: a path only where its steps are a valid
            # summing to the answer ("3 + 5 + 7 = 15" is one line, not a step 5+7=15).
            marker = answer_marker(text)
            steps = _STEP.findall(text[:marker] if marker is not None else text)
            value = parse_number(extract_number(text) or "")
            if value is None or check_work(steps, _numbers(row), value):
                return None
            return _path(steps)
        marker = None
        for marker in _MARKER.finditer(text):
            pass
        steps = _STEP.findall(text[:marker.start()] if marker else text)
        return _path(steps) if steps else None

    def valid_answers(self, record: Record) -> list[str]:
        return [record.answer]


def check_work(steps: list[tuple[str, str, str]], numbers: list[int], answer: float) -> str:
    """Why the scratchpad's steps are not a valid summing of `numbers` to `answer` ("" if they
    are): each step adds two numbers on the pad (given, or an earlier sum; each used once),
    correctly, and the pad ends holding the answer alone.

    >>> check_work([("7", "5", "12"), ("12", "3", "15")], [3, 5, 7], 15)
    ''
    >>> check_work([("3", "3", "6"), ("6", "7", "13")], [3, 5, 7], 13)
    'step 3+3=6 uses 3, which is not on the pad'
    """
    if not steps:
        return "no work before the answer line"
    pad = Counter(numbers)
    for a_text, b_text, c_text in steps:
        a, b, c = int(a_text), int(b_text), int(c_text)
        step = f"{a}+{b}={c}"
        if a + b != c:
            return f"step {step} is wrong ({a}+{b}={a + b})"
        for used in (a, b):
            if pad[used] <= 0:
                return f"step {step} uses {used}, which is not on the pad"
            pad[used] -= 1
        pad[c] += 1
    left = sorted((+pad).elements())
    if left != [answer]:
        return f"the work leaves {' '.join(map(str, left))} on the pad, not the answer alone"
    return ""


def _path(steps: list[tuple[str, str, str]]) -> str:
    """The steps as a path key, each pair smaller first."""
    return ",".join(f"{min(int(a), int(b))}+{max(int(a), int(b))}" for a, b, _ in steps)


def _natural(row: Mapping[str, Any]) -> bool:
    return row_meta(row).get(NATURAL_META_KEY) == "natural"


def _work(a: int, b: int, rest: list[int]) -> str:
    steps, total = [f"{a}+{b}={a + b}"], a + b
    for number in rest:
        steps.append(f"{total}+{number}={total + number}")
        total += number
    return ", ".join(steps)


def _numbers(row: Mapping[str, Any]) -> list[int]:
    meta = row_meta(row)
    try:
        return [int(n) for n in meta["numbers"]]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"chain row needs meta {{'numbers': [int, ...]}}, got {meta!r}") from None
