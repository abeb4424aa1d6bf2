"""Safe integer arithmetic expressions: parse, evaluate exactly, canonicalise.

Model text is never passed to Python's evaluator.

Model text is parsed with `ast.parse(mode="eval")` only after it passed a character whitelist
and length and nesting limits, and only Constant/BinOp/UnaryOp nodes with + - * / are walked.
Values are Fractions, so 7/2*2 is exactly 7 and no float rounding decides a countdown answer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fractions import Fraction

MAX_EXPRESSION_CHARS = 200
"""Longer text is refused before parsing, which bounds parse and evaluation time."""
MAX_NESTING = 16
"""Deepest parenthesis nesting accepted (CPython's parser itself gives up near 200)."""
MAX_CONSTANT = 10**6
"""Largest integer literal accepted; keeps every value's size small."""
ALLOWED_CHARS = frozenset("0123456789+-*/() ")

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


class ExpressionError(ValueError):
    """The text is not an acceptable expression (the message says why)."""


@dataclass(frozen=True)
class Num:
    value: int


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg:
    operand: Node


Node = Num | BinOp | Neg


def parse_expression(text: str, *, allow_unary: bool = False) -> Node:
    """Parse integer arithmetic with + - * / and parentheses into a small tree.

    >>> parse_expression("3*5+7")
    BinOp(op='+', left=BinOp(op='*', left=Num(value=3), right=Num(value=5)), right=Num(value=7))
    >>> parse_expression("2**8")
    Traceback (most recent call last):
    ...
    breadth.data.expressions.ExpressionError: exponentiation (**) is not allowed
    """
    if not isinstance(text, str):
        raise ExpressionError("expression must be a string")
    text = text.strip()
    if not text:
        raise ExpressionError("empty expression")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    bad = sorted(set(text) - ALLOWED_CHARS)
    if bad:
        shown = "".join(bad[:5]).encode("ascii", "backslashreplace").decode()
        raise ExpressionError(f"characters not allowed in an expression: {shown!r}")
    if "**" in text:
        raise ExpressionError("exponentiation (**) is not allowed")
    if "//" in text:
        raise ExpressionError("floor division (//) is not allowed")
    _check_nesting(text)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise ExpressionError(f"not a valid expression: {type(error).__name__}") from None
    return _convert(tree.body, allow_unary)


def _check_nesting(text: str) -> None:
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
            if depth > MAX_NESTING:
                raise ExpressionError(f"parentheses nested deeper than {MAX_NESTING}")
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ExpressionError("unbalanced parentheses")
    if depth != 0:
        raise ExpressionError("unbalanced parentheses")


def _convert(node: ast.AST, allow_unary: bool) -> Node:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ExpressionError(f"only integer literals are allowed, got {value!r}")
        if value > MAX_CONSTANT:
            raise ExpressionError(f"number larger than {MAX_CONSTANT}")
        return Num(value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return BinOp(
            _OPS[type(node.op)], _convert(node.left, allow_unary), _convert(node.right, allow_unary)
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        if not allow_unary:
            raise ExpressionError("unary signs are not allowed")
        inner = _convert(node.operand, allow_unary)
        return Neg(inner) if isinstance(node.op, ast.USub) else inner
    raise ExpressionError(f"{type(node).__name__} is not allowed in an expression")


def evaluate(node: Node) -> Fraction:
    """Exact value of an expression tree.

    >>> evaluate(parse_expression("7/2*2"))
    Fraction(7, 1)
    """
    return Fraction(exact_value(node))


def exact_value(node: Node) -> int | Fraction:
    """Like `evaluate`, but an int whenever every step is whole (the fast path)."""
    # Plain ints while every step is whole (Fractions are ~10x slower), Fractions after an
    # inexact division; ints and Fractions mix exactly.
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Neg):
        return -exact_value(node.operand)
    left, right = exact_value(node.left), exact_value(node.right)
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left - right
    if node.op == "*":
        return left * right
    if right == 0:
        raise ExpressionError("division by zero")
    if isinstance(left, int) and isinstance(right, int) and left % right == 0:
        return left // right
    return Fraction(left) / right


def numbers_used(node: Node) -> list[int]:
    """The integer literals of an expression, left to right.

    >>> numbers_used(parse_expression("(3+5)*7"))
    [3, 5, 7]
    """
    if isinstance(node, Num):
        return [node.value]
    if isinstance(node, Neg):
        return numbers_used(node.operand)
    return numbers_used(node.left) + numbers_used(node.right)


def format_fraction(value: Fraction) -> str:
    """ "22" for whole values, "7/2" otherwise."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _precedence(node: Node) -> int:
    if isinstance(node, BinOp):
        return _PRECEDENCE[node.op]
    return 3


def render(node: Node) -> str:
    """The expression as written, with only the parentheses precedence needs.

    >>> render(parse_expression("((3*5))+(7)"))
    '3*5+7'
    >>> render(parse_expression("9-(4-2)"))
    '9-(4-2)'
    """
    if isinstance(node, Num):
        return str(node.value)
    if isinstance(node, Neg):
        inner = render(node.operand)
        return f"-({inner})" if isinstance(node.operand, BinOp) else f"-{inner}"
    prec = _PRECEDENCE[node.op]
    left, right = render(node.left), render(node.right)
    if _precedence(node.left) < prec:
        left = f"({left})"
    right_prec = _precedence(node.right)
    if right_prec < prec or (right_prec == prec and node.op in "-/"):
        right = f"({right})"
    return f"{left}{node.op}{right}"


def steps(node: Node) -> list[str]:
    """The evaluation steps, innermost first, each on already computed values.

    >>> steps(parse_expression("12+7*3"))
    ['7*3=21', '12+21=33']
    """
    out: list[str] = []
    _steps(node, out)
    return out


def _steps(node: Node, out: list[str]) -> Fraction:
    if isinstance(node, Num):
        return Fraction(node.value)
    if isinstance(node, Neg):
        return -_steps(node.operand, out)
    left, right = _steps(node.left, out), _steps(node.right, out)
    value = apply_operator(node.op, left, right)
    out.append(f"{format_fraction(left)}{node.op}{format_fraction(right)}={format_fraction(value)}")
    return value


def apply_operator(op: str, left: Fraction, right: Fraction) -> Fraction:
    """`left op right` exactly; division by zero raises ExpressionError.

    >>> apply_operator("/", Fraction(7), Fraction(2))
    Fraction(7, 2)
    """
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise ExpressionError("division by zero")
    return left / right


def canonical(node: Node) -> str:
    """A canonical string: sums and products flattened, operands sorted, minimal parentheses.

    Two expressions that differ only by commutativity, associativity or redundant parentheses
    get the same string, so they count as one outcome for diversity.

    >>> canonical(parse_expression("7+5*3")) == canonical(parse_expression("(3*5)+7"))
    True
    >>> canonical(parse_expression("7+5*3"))
    '3*5+7'
    >>> canonical(parse_expression("9-(4-2)"))
    '2+9-4'
    """
    if isinstance(node, Num):
        return str(node.value)
    if isinstance(node, Neg) or node.op in "+-":
        terms: list[tuple[int, str]] = []
        _collect_terms(node, 1, terms)
        positive = sorted((t for sign, t in terms if sign > 0), key=_sort_key)
        negative = sorted((t for sign, t in terms if sign < 0), key=_sort_key)
        head = "+".join(positive)
        return head + "".join(f"-{t}" for t in negative)
    factors: list[tuple[int, str]] = []
    _collect_factors(node, 1, factors)
    numerator = sorted((f for exp, f in factors if exp > 0), key=_sort_key)
    denominator = sorted((f for exp, f in factors if exp < 0), key=_sort_key)
    head = "*".join(numerator) or "1"
    return head + "".join(f"/{f}" for f in denominator)


def _collect_terms(node: Node, sign: int, out: list[tuple[int, str]]) -> None:
    if isinstance(node, Neg):
        _collect_terms(node.operand, -sign, out)
    elif isinstance(node, BinOp) and node.op in "+-":
        _collect_terms(node.left, sign, out)
        _collect_terms(node.right, sign if node.op == "+" else -sign, out)
    else:
        out.append((sign, canonical(node)))


def _collect_factors(node: Node, exponent: int, out: list[tuple[int, str]]) -> None:
    if isinstance(node, BinOp) and node.op in "*/":
        _collect_factors(node.left, exponent, out)
        _collect_factors(node.right, exponent if node.op == "*" else -exponent, out)
    else:
        text = canonical(node)
        # A sum inside a product needs its parentheses back.
        if isinstance(node, Neg) or (isinstance(node, BinOp) and node.op in "+-"):
            text = f"({text})"
        out.append((exponent, text))


def _sort_key(text: str) -> tuple[int, int, str]:
    # Composite terms first (so "3*5+7" reads as written), then plain numbers in numeric
    # order (so 9 sorts before 10).
    if text.isdigit():
        return (1, int(text), "")
    return (0, 0, text)
