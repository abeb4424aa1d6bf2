"""Synthetic task families, deterministic by seed, with a difficulty knob (1 easy .. 3 hard).

- arithmetic: one expression with a unique numeric answer. 1: two 1-digit operands with +;
  2: two 2-digit operands with + or -; 3: three operands, one product (e.g. "12+7*3").
- countdown: reach a target from given numbers, each used at most once; many expressions are
  valid, and the record's `solution` holds one. 1: three numbers 1-9, target from two of them;
  2: three numbers 1-12, target from all three; 3: four numbers 1-15, target from three or
  four of them, division allowed.

Train and eval never share a problem: every problem is assigned to a split by a hash of its
canonical key (so "3 5 7 -> 22" and "7 3 5 -> 22" land together), and each split is drawn with
its own seed. Small problem spaces are finite (difficulty-1 arithmetic has 100 problems);
asking for more distinct problems than a split holds raises an error that says so.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

from breadth.data.expressions import BinOp, Node, Num, render, steps
from breadth.data.records import SPLITS, Record

DIFFICULTIES = (1, 2, 3)
EVAL_SHARE_PER_MILLE = 200
"""Share of each synthetic problem space reserved for the eval split (20%)."""
MAX_MISSES_IN_A_ROW = 2000
"""Draws without a new problem before a split's problem space counts as exhausted."""

Problem = tuple[str, Record]  # (canonical key, record)


def split_of(key: str) -> str:
    """The split a problem belongs to, from a hash of its canonical key.

    >>> split_of("3+4") in ("train", "eval")
    True
    """
    bucket = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % 1000
    return "eval" if bucket < EVAL_SHARE_PER_MILLE else "train"


def _rng(task: str, seed: int, difficulty: int, split: str) -> random.Random:
    digest = hashlib.sha256(f"{task}|{seed}|{difficulty}|{split}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _check(num: int, difficulty: int | None, split: str) -> None:
    if num < 0:
        raise ValueError(f"num must be >= 0, got {num}")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES} or None (mixed), got {difficulty!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


# --- arithmetic -----------------------------------------------------------------------------


def _arithmetic_tree(rng: random.Random, difficulty: int) -> Node | None:
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
    return tree if _whole_value(tree) >= 0 else None


def _whole_value(node: Node) -> int:
    if isinstance(node, Num):
        return node.value
    assert isinstance(node, BinOp)
    return _int_apply(node.op, _whole_value(node.left), _whole_value(node.right))


def _int_apply(op: str, a: int, b: int) -> int:
    # Plain ints, not Fractions: generation only builds exact whole-number steps, and this
    # runs a few hundred thousand times per prepared data set.
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a // b


def _arithmetic_record(tree: Node, difficulty: int, split: str) -> Problem:
    question = render(tree)
    record = Record.create(
        source="synthetic:arithmetic", split=split, question=question,
        answer=str(_whole_value(tree)), solution=", ".join(steps(tree)),
        difficulty=difficulty, task="arithmetic",
    )
    return question, record


def generate_arithmetic(num: int, *, seed: int, difficulty: int | None, split: str) -> list[Record]:
    """`num` distinct arithmetic problems of one difficulty (None: levels 1-3 mixed).

    >>> records = generate_arithmetic(3, seed=0, difficulty=3, split="train")
    >>> [r.task for r in records], records == generate_arithmetic(3, seed=0, difficulty=3,
    ...                                                             split="train")
    (['arithmetic', 'arithmetic', 'arithmetic'], True)
    """
    _check(num, difficulty, split)

    def draw(rng: random.Random, level: int) -> Problem | None:
        tree = _arithmetic_tree(rng, level)
        return None if tree is None else _arithmetic_record(tree, level, split)

    return _generate("arithmetic", draw, num, seed=seed, difficulty=difficulty, split=split)


# --- countdown ------------------------------------------------------------------------------

# (how many numbers are given, largest number, how many the target uses, ops, largest target)
_COUNTDOWN_LEVELS = {
    1: (3, 9, (2,), "+-*", 100),
    2: (3, 12, (3,), "+-*", 200),
    3: (4, 15, (3, 4), "+-*/", 500),
}


def _countdown_problem(rng: random.Random, difficulty: int, split: str) -> Problem | None:
    count, largest, uses, ops, max_target = _COUNTDOWN_LEVELS[difficulty]
    numbers = [rng.randint(1, largest) for _ in range(count)]
    chosen = rng.sample(numbers, rng.choice(uses))
    built = _random_tree(rng, chosen, ops)
    if built is None:
        return None
    tree, value = built
    if not 2 <= value <= max_target or value in numbers:
        return None  # out of range, or trivially "use that number"
    key = f"{sorted(numbers)}->{value}"
    record = Record.create(
        source="synthetic:countdown", split=split,
        question=f"Reach {value} with {' '.join(map(str, numbers))}",
        answer=str(value), solution=render(tree), difficulty=difficulty, task="countdown",
        meta={"numbers": numbers, "target": value},
    )
    return key, record


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
    value = _int_apply(op, a, b)
    if value <= 0:
        return None
    return BinOp(op, left_node, right_node), value


def generate_countdown(num: int, *, seed: int, difficulty: int | None, split: str) -> list[Record]:
    """`num` distinct countdown problems of one difficulty (None: levels 1-3 mixed).

    >>> record = generate_countdown(1, seed=0, difficulty=1, split="train")[0]
    >>> record.task, sorted(record.meta), record.answer == str(record.meta["target"])
    ('countdown', ['numbers', 'target'], True)
    """
    _check(num, difficulty, split)

    def draw(rng: random.Random, level: int) -> Problem | None:
        return _countdown_problem(rng, level, split)

    return _generate("countdown", draw, num, seed=seed, difficulty=difficulty, split=split)


# --- shared drawing -------------------------------------------------------------------------


def _generate(
    task: str,
    draw: Callable[[random.Random, int], Problem | None],
    num: int,
    *,
    seed: int,
    difficulty: int | None,
    split: str,
) -> list[Record]:
    if difficulty is not None:
        records = _draw_unique(draw, num, _rng(task, seed, difficulty, split), difficulty, split)
        if len(records) < num:
            raise ValueError(
                f"only {len(records)} distinct difficulty-{difficulty} {task} problems exist in "
                f"the {split!r} split, asked for {num}: ask for fewer (data.num_{split} / "
                f"--num-{split}), a higher difficulty (data.difficulty / --difficulty), or "
                "mixed levels (data.difficulty=mixed / --difficulty mixed)"
            )
        return records
    # Mixed: an equal share per level; what a small level cannot supply goes to the next.
    records: list[Record] = []
    shortfall = 0
    for index, level in enumerate(DIFFICULTIES):
        share = num // 3 + (1 if index < num % 3 else 0) + shortfall
        drawn = _draw_unique(draw, share, _rng(task, seed, level, split), level, split)
        shortfall = share - len(drawn)
        records += drawn
    if shortfall:
        raise ValueError(f"only {len(records)} distinct {task} problems exist in the {split!r} "
                         f"split, asked for {num}")
    _rng(task, seed, 0, split).shuffle(records)  # level 0: the mixing draw
    return records


def _draw_unique(draw: Callable[[random.Random, int], Problem | None], num: int,
                 rng: random.Random, level: int, split: str) -> list[Record]:
    seen: set[str] = set()
    records: list[Record] = []
    misses = 0
    while len(records) < num and misses < MAX_MISSES_IN_A_ROW:
        problem = draw(rng, level)
        if problem is None or problem[0] in seen or split_of(problem[0]) != split:
            misses += 1
            continue
        seen.add(problem[0])
        records.append(problem[1])
        misses = 0
    return records
