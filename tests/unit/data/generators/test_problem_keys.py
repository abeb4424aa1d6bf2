"""Each task's problem key (#52): a training problem with its operands reordered is the same
problem, so it is never an eval problem, at the sizes the task's presets generate.

Each case builds the reordered copy by hand (a commutative operator's operands swapped, the
given numbers reversed) and checks that its key is the original's and is not an eval key.
"""

from __future__ import annotations

import pytest

from breadth.config import load_config
from breadth.data.expressions import BinOp, Node, parse_expression, render
from breadth.data.generators import get_task, problem_key
from breadth.data.prepare import SYNTHETIC_NUM_EVAL, SYNTHETIC_NUM_TRAIN
from breadth.data.records import Record
from breadth.data.synthetic import split_of
from tests.unit.data.synthetic_presets import SYNTHETIC_PRESETS


def _swapped(node: Node) -> Node:
    """Every + and * with its operands swapped (a difference keeps its order)."""
    if not isinstance(node, BinOp):
        return node
    left, right = _swapped(node.left), _swapped(node.right)
    return BinOp(node.op, right, left) if node.op in "+*" else BinOp(node.op, left, right)


def reordered(record: Record) -> Record:
    """`record` with its operands in another order, asking the same thing."""
    if record.task == "arithmetic":
        return _copy(record, render(_swapped(parse_expression(record.question))), record.meta)
    numbers = list(reversed(record.meta["numbers"]))
    listed = " ".join(map(str, numbers))
    question = {"chain": "+".join(map(str, numbers)),
                "countdown": f"Reach {record.answer} with {listed}",
                "pairs": f"Sum to {record.answer} with two of {listed}"}[record.task]
    return _copy(record, question, {**record.meta, "numbers": numbers})


def _copy(record: Record, question: str, meta: dict) -> Record:
    return Record.create(source=record.source, split=record.split, question=question,
                         answer=record.answer, solution=record.solution,
                         difficulty=record.difficulty, task=record.task, meta=meta)


@pytest.mark.parametrize("name", SYNTHETIC_PRESETS)
def test_a_reordered_training_problem_is_never_an_eval_problem(name) -> None:
    data = load_config(*SYNTHETIC_PRESETS[name]).data
    task = get_task(data.source.removeprefix("synthetic:"))
    difficulty = None if data.difficulty == "mixed" else data.difficulty
    generated = {split: task.generate(num or default, seed=0, difficulty=difficulty,
                                      split=split, fill=data.mixed_fill)
                 for split, num, default in (("train", data.num_train, SYNTHETIC_NUM_TRAIN),
                                             ("eval", data.num_eval, SYNTHETIC_NUM_EVAL))}
    eval_keys = {problem_key(r) for r in generated["eval"]}
    assert len(eval_keys) == len(generated["eval"])
    moved = 0
    for record in generated["train"]:
        copy = reordered(record)
        assert problem_key(copy) == problem_key(record), (record.question, copy.question)
        assert problem_key(copy) not in eval_keys and split_of(problem_key(copy)) == "train"
        moved += copy.question != record.question
    # Most problems read differently reordered (not 3+3, not a difference alone).
    assert moved > len(generated["train"]) / 2


@pytest.mark.parametrize("question,other", [("98+87", "87+98"), ("12+7*3", "3*7+12"),
                                            ("7*3-12", "3*7-12")])
def test_arithmetic_keys_ignore_the_order_of_sum_and_product_operands(question, other) -> None:
    arithmetic = get_task("arithmetic")
    assert arithmetic.problem_key(_arithmetic(question)) == arithmetic.problem_key(
        _arithmetic(other))


@pytest.mark.parametrize("question,other", [("98-87", "87-98"), ("7*3-12", "12-7*3")])
def test_arithmetic_keys_keep_the_order_of_a_difference(question, other) -> None:
    arithmetic = get_task("arithmetic")
    assert arithmetic.problem_key(_arithmetic(question)) != arithmetic.problem_key(
        _arithmetic(other))


def _arithmetic(question: str) -> Record:
    return Record.create(source="synthetic:arithmetic", split="train", question=question,
                         answer="0", task="arithmetic")
