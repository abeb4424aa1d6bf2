"""arithmetic: one expression with a unique numeric answer.

1: two 1-digit operands with +; 2: two 2-digit operands with + or -; 3: three operands, one
product (e.g. "12+7*3").

    free_form  "12+7*3="                                   target "33"
    mcq        "12+7*3=? A)31 B)33 C)36 D)30 Answer:"      target "B"

With a trace: free_form "7*3=21, 12+21=33. Answer: 33"; mcq weighs every option
("7*3=21, 12+21=33. A)31 no; B)33 yes; C)36 no; D)30 no. Answer: B").

Natural (data.rendering=natural): "What is 12 + 7 * 3?" and the request for an answer line;
target "12 + 7 * 3 = 33.\\nThe answer is 33." (with a trace "First, 7 * 3 = 21. Then
12 + 21 = 33.\\nThe answer is 33."); mcq lists the options one a line, target "The answer is B."
"""

from __future__ import annotations

import random
from typing import ClassVar

from breadth.data.distractors import numeric_distractors
from breadth.data.expressions import (
    BinOp,
    ExpressionError,
    Node,
    Num,
    canonical,
    parse_expression,
    render,
    steps,
)
from breadth.data.extraction import canonical_number
from breadth.data.generators.base import TaskProperties, WorkedExpression
from breadth.data.records import Record
from breadth.data.synthetic import int_apply


class Arithmetic(WorkedExpression):
    name: ClassVar[str] = "arithmetic"
    summary: ClassVar[str] = "One expression with a unique numeric answer, e.g. 12+7*3."
    levels: ClassVar[tuple[int, ...]] = (1, 2, 3)
    level_help: ClassVar[dict[int, str]] = {
        1: "two 1-digit operands with + (100 problems in all)",
        2: "two 2-digit operands with + or -",
        3: "three operands, one product (e.g. 12+7*3)",
    }
    properties: ClassVar[TaskProperties] = TaskProperties(
        answers="one", outcome="the number",
        trace="the expression's steps, innermost first (7*3=21, 12+21=33)")
    same_problem: ClassVar[str] = ("the expression up to the order of + and * operands "
                                   "(98+87 and 87+98 are one; 9-4 and 4-9 are not)")

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None:
        tree = _tree(rng, level)
        if tree is None:
            return None
        return Record.create(
            source="synthetic:arithmetic", split=split, question=render(tree),
            answer=str(whole_value(tree)), solution=", ".join(steps(tree)),
            difficulty=level, task="arithmetic",
        )

    def problem_key(self, record: Record) -> str:
        """The expression's canonical form (`expressions.canonical`): sums and products
        flattened with their operands sorted, so swapping the operands of + or * asks the same
        problem; a difference keeps its order.

        >>> key = Arithmetic().problem_key
        >>> [key(_record(q)) for q in ("98+87", "87+98", "12+7*3", "3*7+12", "9-4")]
        ['87+98', '87+98', '3*7+12', '3*7+12', '9-4']
        """
        return canonical(parse_expression(record.question))

    def valid_answers(self, record: Record) -> list[str]:
        return [record.answer]

    def mcq_options(self, record: Record, num_options: int, rng: random.Random
                    ) -> tuple[str, list[str]]:
        gold = canonical_number(record.answer)
        if record.choices or gold is None:
            return super().mcq_options(record, num_options, rng)
        wrong = numeric_distractors(gold, num_options - 1, rng, expression=_parsed(record))
        return gold, [gold, *wrong]

    def worked(self, record: Record) -> str:
        """The record's solution, else the steps of its parsed expression (else the question)."""
        if record.solution:
            return record.solution
        tree = _parsed(record)
        return ", ".join(steps(tree)) if tree is not None else record.question


def _tree(rng: random.Random, difficulty: int) -> Node | None:
    if difficulty == 1:
        return BinOp("+", Num(rng.randint(0, 9)), Num(rng.randint(0, 9)))
    if difficulty == 2:
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        if rng.random() < 0.5:
            return BinOp("+", Num(a), Num(b))
        return BinOp("-", Num(max(a, b)), Num(min(a, b)))
    product = BinOp("*", Num(rng.randint(2, 19)), Num(rng.randint(2, 19)))
    other = Num(rng.randint(1, 199))
    form = rng.randrange(4)
    tree = [BinOp("+", other, product), BinOp("+", product, other),
            BinOp("-", product, other), BinOp("-", other, product)][form]
    return tree if whole_value(tree) >= 0 else None


def whole_value(node: Node) -> int:
    """The value of a tree of whole-number steps."""
    if isinstance(node, Num):
        return node.value
    assert isinstance(node, BinOp)
    return int_apply(node.op, whole_value(node.left), whole_value(node.right))


def _record(question: str) -> Record:
    """A bare arithmetic record, for examples."""
    return Record.create(source="synthetic:arithmetic", split="train", question=question,
                         answer="0", task="arithmetic")


def _parsed(record: Record) -> Node | None:
    try:
        return parse_expression(record.question)
    except ExpressionError:
        return None
