"""Plausible wrong options for multiple choice when the source has none.

Distractors are the mistakes a solver makes, not random noise: off by one or ten, swapped
digits, a forgotten carry, precedence ignored, one operator misread. Which of the plausible
candidates appear is drawn with the caller's seeded `random.Random`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from itertools import chain

from breadth.data.expressions import (
    BinOp,
    ExpressionError,
    Neg,
    Node,
    Num,
    apply_operator,
    exact_value,
    render,
)

_FILL_STEPS = (3, -3, 4, -4, 5, -5, 6, 7, 8, 9, 11, 12)
_OPERATOR_SWAPS = {"+": ("-", "*"), "-": ("+",), "*": ("+", "-"), "/": ("*", "-")}


def numeric_distractors(
    answer: str, count: int, rng: random.Random, *, expression: Node | None = None
) -> list[str]:
    """`count` distinct wrong numbers near `answer`, as strings.

    >>> from breadth.data.expressions import parse_expression
    >>> options = numeric_distractors("33", 3, random.Random(0),
    ...                               expression=parse_expression("12+7*3"))
    >>> len(options), "33" in options, all(o.isdigit() for o in options)
    (3, False, True)
    """
    try:
        gold = Decimal(answer)
    except InvalidOperation:
        raise ValueError(f"answer {answer!r} is not a number") from None
    if gold == gold.to_integral_value():
        whole = int(gold)
        allowed = (lambda v: v >= 0) if whole >= 0 else (lambda v: True)
        pool: Iterable[str] = (str(v) for v in _integer_candidates(whole, expression)
                               if v != whole and allowed(v))
        fill: Iterable[str] = (str(whole + step) for step in _FILL_STEPS
                               if allowed(whole + step))
    else:
        unit = Decimal(1).scaleb(gold.as_tuple().exponent)
        steps = (unit, -unit, 10 * unit, -10 * unit, Decimal(1), Decimal(-1))
        candidates = [gold + step for step in steps] + [gold * 10, gold / 10]
        pool = (_decimal_text(v) for v in candidates if v != gold)
        fill = (_decimal_text(gold + k * unit) for k in range(2, 12))
    return _draw(pool, fill, count, rng, exclude={answer, _decimal_text(gold)})


def _integer_candidates(gold: int, expression: Node | None) -> list[int]:
    mistakes: list[int] = []
    if expression is not None:
        mistakes += _whole_values([_left_to_right(expression)])
        mistakes += _whole_values(_safe_value(v) for v in _one_operator_changed(expression))
        mistakes += _digit_mistakes(expression)
    near = [gold + 1, gold - 1, gold + 10, gold - 10]
    near += _digit_swaps(gold)
    near += [gold + 2, gold - 2, gold + 100 if abs(gold) >= 100 else gold + 11]
    # Interleave so both kinds of mistake reach the small plausible pool.
    out: list[int] = []
    for index in range(max(len(mistakes), len(near))):
        out += mistakes[index:index + 1] + near[index:index + 1]
    return out


def _draw(candidates: Iterable[str], fallback: Iterable[str], count: int, rng: random.Random,
          exclude: set[str]) -> list[str]:
    """`count` of the first few plausible candidates, drawn with `rng`; the fallback only fills
    up when there are too few. Both are read lazily: most records need six candidates."""
    plausible = _first_unique(candidates, max(count + 2, 2 * count), exclude)
    if len(plausible) >= count:
        return rng.sample(plausible, count)
    chosen = plausible + _first_unique(fallback, count - len(plausible), exclude | set(plausible))
    if len(chosen) < count:
        raise ValueError(f"could not find {count} distinct distractors")
    return chosen


def _first_unique(values: Iterable[str], limit: int, exclude: set[str]) -> list[str]:
    seen, out = set(exclude), []
    for value in values:
        if len(out) == limit:
            break
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def _decimal_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _whole_values(values: Iterable[int | Fraction | None]) -> list[int]:
    return [int(v) for v in values if v is not None and (isinstance(v, int) or v.denominator == 1)]


def _safe_value(node: Node) -> int | Fraction | None:
    try:
        return exact_value(node)
    except ExpressionError:
        return None


def _one_operator_changed(node: Node) -> list[Node]:
    """Every tree that differs from `node` in exactly one operator."""
    if not isinstance(node, BinOp):
        return []
    out: list[Node] = [BinOp(op, node.left, node.right) for op in _OPERATOR_SWAPS[node.op]]
    out += [BinOp(node.op, left, node.right) for left in _one_operator_changed(node.left)]
    out += [BinOp(node.op, node.left, right) for right in _one_operator_changed(node.right)]
    return out


def _tokens(node: Node) -> list[int | str]:
    if isinstance(node, Num):
        return [node.value]
    if isinstance(node, Neg):
        return ["-", *_tokens(node.operand)]
    return [*_tokens(node.left), node.op, *_tokens(node.right)]


def _left_to_right(node: Node) -> Fraction | None:
    """The value when precedence is ignored: 12+7*3 read as (12+7)*3."""
    tokens = _tokens(node)
    if not isinstance(tokens[0], int):
        return None
    value = Fraction(tokens[0])
    for op, operand in zip(tokens[1::2], tokens[2::2], strict=False):
        if not isinstance(op, str) or not isinstance(operand, int):
            return None
        try:
            value = apply_operator(op, value, Fraction(operand))
        except ExpressionError:
            return None
    return value


def _digit_mistakes(node: Node) -> list[int]:
    """Column arithmetic slips on two-operand sums and differences: a forgotten carry or borrow."""
    if not (isinstance(node, BinOp) and isinstance(node.left, Num) and isinstance(node.right, Num)):
        return []
    a, b = node.left.value, node.right.value
    if node.op == "+":
        return [_columnwise(a, b, lambda x, y: (x + y) % 10)]
    if node.op == "-" and a >= b:
        return [_columnwise(a, b, lambda x, y: abs(x - y))]
    return []


def _columnwise(a: int, b: int, digit_op: object) -> int:
    width = max(len(str(a)), len(str(b)))
    left, right = str(a).zfill(width), str(b).zfill(width)
    return int("".join(str(digit_op(int(x), int(y))) for x, y in zip(left, right)))  # type: ignore


def _digit_swaps(value: int) -> list[int]:
    digits = str(abs(value))
    sign = -1 if value < 0 else 1
    out = []
    for i in range(len(digits) - 1):
        swapped = digits[:i] + digits[i + 1] + digits[i] + digits[i + 2:]
        if swapped != digits and not swapped.startswith("0"):
            out.append(sign * int(swapped))
    return out


def expression_distractors(
    solution: Node, numbers: list[int], target: int, count: int, rng: random.Random
) -> list[str]:
    """`count` distinct countdown expressions over the given numbers that miss the target.

    >>> from breadth.data.expressions import parse_expression
    >>> wrong = expression_distractors(parse_expression("3*5+7"), [3, 5, 7], 22, 3,
    ...                                random.Random(0))
    >>> len(wrong), "3*5+7" in wrong
    (3, False)
    """
    gold_text = render(solution)
    variants = chain(_one_operator_changed(solution), _one_number_changed(solution, numbers))
    pool = (render(v) for v in variants if _misses(v, target))
    fallback = _random_expressions(numbers, target, rng, 4 * count)
    return _draw(pool, fallback, count, rng, exclude={gold_text})


def _misses(node: Node, target: int) -> bool:
    value = _safe_value(node)
    return value is not None and value != target


def _one_number_changed(node: Node, numbers: list[int]) -> list[Node]:
    used = _tokens(node)
    unused = list(numbers)
    for token in used:
        if isinstance(token, int) and token in unused:
            unused.remove(token)
    return [_replace_first(node, old, new) for old in sorted({t for t in used if isinstance(t, int)})
            for new in sorted(set(unused)) if new != old]


def _replace_first(node: Node, old: int, new: int) -> Node:
    def walk(n: Node, done: list[bool]) -> Node:
        if isinstance(n, Num):
            if not done[0] and n.value == old:
                done[0] = True
                return Num(new)
            return n
        if isinstance(n, Neg):
            return Neg(walk(n.operand, done))
        return BinOp(n.op, walk(n.left, done), walk(n.right, done))

    return walk(node, [False])


def _random_expressions(numbers: list[int], target: int, rng: random.Random,
                        tries: int) -> Iterator[str]:
    for _ in range(tries):
        a, b = rng.sample(numbers, 2) if len(numbers) >= 2 else (numbers[0], numbers[0])
        node = BinOp(rng.choice("+-*"), Num(a), Num(b))
        if _misses(node, target):
            yield render(node)
