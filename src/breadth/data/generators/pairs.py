"""pairs: pick two of the given numbers that sum to a target; every problem has several right
answers, and a wrong answer is scored by how close its sum comes.

    free_form  "Sum to 12 with two of 3 5 7 9 4:"      target "3+9=12. Answer: 3+9"
    mcq        "Sum to 12 with two of 3 5 7 9 4? A)5+7 B)3+4 C)... "    target "5+7=12. Answer: A"

Natural (data.rendering=natural): "Which two of the numbers 3, 5, 7, 9 and 4 add up to 12?"
and the request for an answer line ("The answer is" and the pair); target "3 + 9 = 12.\\nThe answer is
3 + 9."; mcq lists the pairs one a line.

Every drawn problem has at least two pairs that reach the target (the generator draws the
numbers, then a target among the sums that two or more pairs reach), so a group of samples
can be right in different ways. The record's solution is one right pair, drawn per problem.

- verifier: the answer line is `a+b` with a and b among the given numbers (each number used at
  most as often as given), and a+b is the target;
- outcome key: the pair, smaller first ("3+9" for 9+3);
- graded score (`Verification.score`): 1 when right; for a pair of given numbers that misses,
  1 - |a+b - target| / target (at least 0), so a near miss beats a far one; 0 for anything
  else (numbers not given, not a pair).

Levels: 1: five different numbers 1-20; 2: six different numbers 1-40; 3: seven different
numbers 10-99. A problem is its numbers (as a set) and its target (`problem_key`: the order
they are given in does not change what is asked).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from breadth.data.expressions import BinOp, ExpressionError, Num, parse_expression
from breadth.data.extraction import extract_expression
from breadth.data.generators.base import Task, TaskProperties, inline_mcq_prompt
from breadth.data.generators.countdown import numbers_and_target, row_meta
from breadth.data.generators.natural import (
    chosen,
    instruction,
    listed_numbers,
    mcq_prompt,
    natural_target,
    spaced,
)
from breadth.data.records import Record
from breadth.data.verifiers import MAX_OUTCOME_CHARS, Verification

# (how many numbers, smallest, largest)
_LEVELS = {1: (5, 1, 20), 2: (6, 1, 40), 3: (7, 10, 99)}
MIN_ANSWERS = 2
"""Right answers every drawn problem has at least."""


class Pairs(Task):
    name: ClassVar[str] = "pairs"
    summary: ClassVar[str] = ("Pick two of the given numbers that sum to a target: several "
                              "right answers per problem, and a graded score.")
    levels: ClassVar[tuple[int, ...]] = tuple(_LEVELS)
    level_help: ClassVar[dict[int, str]] = {
        1: "five different numbers 1-20", 2: "six different numbers 1-40",
        3: "seven different numbers 10-99",
    }
    properties: ClassVar[TaskProperties] = TaskProperties(
        answers=f">= {MIN_ANSWERS} (every pair that reaches the target)",
        outcome="the pair, smaller number first (3+9)",
        graded=True,
        trace="the pair's sum (3+9=12)")
    same_problem: ClassVar[str] = ("the numbers as a set and the target (3 5 7 9 4 -> 12 and "
                                   "4 9 7 5 3 -> 12 are one)")

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None:
        count, low, high = _LEVELS[level]
        numbers = rng.sample(range(low, high + 1), count)
        reached = Counter(a + b for a, b in itertools.combinations(numbers, 2))
        targets = sorted(total for total, pairs in reached.items() if pairs >= MIN_ANSWERS)
        if not targets:
            return None
        target = rng.choice(targets)
        a, b = rng.choice(_pairs_reaching(numbers, target))
        return Record.create(
            source="synthetic:pairs", split=split,
            question=f"Sum to {target} with two of {' '.join(map(str, numbers))}",
            answer=str(target), solution=f"{a}+{b}", difficulty=level, task=self.name,
            meta={"numbers": numbers, "target": target},
        )

    def problem_key(self, record: Record) -> str:
        """The given numbers (all different) as a set, and the target.

        >>> key = Pairs().problem_key
        >>> [key(Record.create(source="synthetic:pairs", split="train", answer="12",
        ...                    question=f"Sum to 12 with two of {n}", task="pairs",
        ...                    meta={"numbers": [int(x) for x in n.split()], "target": 12}))
        ...  for n in ("3 5 7 9 4", "4 9 7 5 3")]
        ['[3, 4, 5, 7, 9]->12', '[3, 4, 5, 7, 9]->12']
        """
        numbers, target = _meta(record.meta)
        return f"{sorted(numbers)}->{target}"

    def free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        pair = record.solution or ""
        target = f"{pair}={record.answer}. Answer: {pair}" if reasoning else pair
        return f"{record.question}:", target

    def mcq_options(self, record: Record, num_options: int, rng: random.Random
                    ) -> tuple[str, list[str]]:
        numbers, target = _meta(record.meta)
        misses = [f"{a}+{b}" for a, b in itertools.combinations(numbers, 2) if a + b != target]
        if len(misses) < num_options - 1:
            raise ValueError(f"only {len(misses)} wrong pairs for {num_options - 1} distractors")
        gold = record.solution or ""
        return gold, [gold, *rng.sample(misses, num_options - 1)]

    def mcq_prompt(self, record: Record, options: list[str], reasoning: bool) -> str:
        return inline_mcq_prompt(f"{record.question}?", options, reasoning)

    def mcq_trace(self, record: Record, options: list[str], letter: str,
                  moved: dict[str, str]) -> str:
        return f"{record.solution}={record.answer}. Answer: {letter}"

    def natural_free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        # The trace is the pair's sum, with reasoning or without.
        numbers, target = _meta(record.meta)
        pair = spaced(record.solution or "")
        question = f"Which two of the numbers {listed_numbers(numbers)} add up to {target}?"
        ask = instruction("the two numbers joined by +")
        return f"{question}\n{ask}", natural_target(f"{pair} = {target}.", pair)

    def natural_mcq_prompt(self, record: Record, options: list[str]) -> str:
        numbers, target = _meta(record.meta)
        return mcq_prompt(f"Which pair of the numbers {listed_numbers(numbers)} adds up to "
                          f"{target}?", options)

    def natural_mcq_trace(self, record: Record, options: list[str], letter: str,
                          moved: dict[str, str]) -> str:
        return chosen(f"{spaced(record.solution or '')} = {record.answer}.", letter)

    def verify(self, completion: object, row: Mapping[str, Any]) -> Verification:
        numbers, target = _meta(row_meta(row))
        return verify_pair(completion, numbers, target)

    def valid_answers(self, record: Record) -> list[str]:
        numbers, target = _meta(record.meta)
        return [f"{a}+{b}" for a, b in _pairs_reaching(numbers, target)]


def verify_pair(completion: object, numbers: list[int], target: int) -> Verification:
    """Whether the answer line is two given numbers that sum to `target`, with the graded score.

    >>> v = verify_pair("Answer: 9+3", [3, 5, 7, 9, 4], 12)
    >>> v.correct, v.outcome, v.score
    (True, '3+9', 1.0)
    >>> verify_pair("Answer: 5+9", [3, 5, 7, 9, 4], 12).score
    0.8333333333333334
    """
    expression = extract_expression(completion)
    if expression is None:
        return Verification(False, 0.0, None, None, "no pair found (Answer: a+b)")
    extracted = expression[:MAX_OUTCOME_CHARS]
    try:
        tree = parse_expression(expression)
    except ExpressionError as error:
        return Verification(False, 0.0, extracted, None, f"unsafe or invalid: {error}")
    if not (isinstance(tree, BinOp) and tree.op == "+" and isinstance(tree.left, Num)
            and isinstance(tree.right, Num)):
        return Verification(False, 0.0, extracted, None, "not two numbers joined by +")
    a, b = sorted((tree.left.value, tree.right.value))
    outcome = f"{a}+{b}"
    missing = Counter((a, b)) - Counter(numbers)
    if missing:
        extra = " ".join(str(n) for n in sorted(missing.elements()))
        return Verification(False, 0.0, extracted, outcome, f"uses numbers not given: {extra}")
    if a + b == target:
        return Verification(True, 1.0, extracted, outcome, "correct")
    score = max(0.0, 1.0 - abs(a + b - target) / target)
    return Verification(False, score, extracted, outcome, f"sum {a + b} is not the target {target}")


def _pairs_reaching(numbers: list[int], target: int) -> list[tuple[int, int]]:
    return sorted((min(a, b), max(a, b)) for a, b in itertools.combinations(numbers, 2)
                  if a + b == target)


def _meta(meta: Mapping[str, Any]) -> tuple[list[int], int]:
    return numbers_and_target(meta, "pairs")
