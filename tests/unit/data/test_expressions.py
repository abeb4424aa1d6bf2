"""The safe expression parser: what it accepts, what it refuses, and canonical forms."""

from __future__ import annotations

from fractions import Fraction

import pytest

from breadth.data.expressions import (
    MAX_EXPRESSION_CHARS,
    ExpressionError,
    canonical,
    evaluate,
    numbers_used,
    parse_expression,
    render,
    steps,
)


@pytest.mark.parametrize("text,value", [
    ("3*5+7", 22),
    ("(3+5)*7", 56),
    ("7/2*2", 7),
    ("7/2", Fraction(7, 2)),
    ("10-3-2", 5),
    ("10-(3-2)", 9),
    ("8/4/2", 1),
    ("8/(4/2)", 4),
    (" 1 + 2 ", 3),
])
def test_evaluates_exactly(text, value) -> None:
    assert evaluate(parse_expression(text)) == value


@pytest.mark.parametrize("text,reason", [
    ("", "empty"),
    ("2**10", "exponentiation"),
    ("7//2", "floor division"),
    ("1e9", "not allowed"),
    ("3.5*2", "not allowed"),
    ("__import__('os')", "not allowed"),
    ("x+1", "not allowed"),
    ("(" * 17 + "1" + ")" * 17, "nested deeper"),
    ("(1+2", "unbalanced"),
    ("1+2)", "unbalanced"),
    ("1+" * 101 + "1", "longer than"),
    ("1234567", "larger than"),
    ("-3+5", "unary"),
    ("3 5", "not a valid expression"),
    ("()", "not allowed"),
    ("007", "not a valid expression"),
])
def test_refuses(text, reason) -> None:
    with pytest.raises(ExpressionError, match=reason):
        parse_expression(text)


def test_length_limit_is_the_documented_one() -> None:
    parse_expression("1+" * ((MAX_EXPRESSION_CHARS - 1) // 2) + "1")
    with pytest.raises(ExpressionError):
        parse_expression("1" + "+1" * MAX_EXPRESSION_CHARS)


def test_unary_minus_only_when_allowed() -> None:
    assert evaluate(parse_expression("-3+5", allow_unary=True)) == 2


def test_division_by_zero_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate(parse_expression("1/(2-2)"))


@pytest.mark.parametrize("variants", [
    ["3*5+7", "7+5*3", "(3*5)+7", "7+(5*3)", "((3))*5+7"],
    ["(3+5)*7", "7*(5+3)", "(5+3)*7"],
    ["9-(4-2)", "9-4+2", "2+9-4"],
    ["8/4*2", "2*8/4", "8*2/4"],
    ["1+2+3", "3+(2+1)", "(1+2)+3"],
])
def test_canonical_merges_equivalent_spellings(variants) -> None:
    forms = {canonical(parse_expression(text)) for text in variants}
    assert len(forms) == 1


@pytest.mark.parametrize("first,second", [
    ("3*5+7", "3*5-7"),
    ("(3+5)*7", "3+5*7"),
    ("8/4", "4/8"),
    ("9-4", "4-9"),
])
def test_canonical_keeps_different_expressions_apart(first, second) -> None:
    assert canonical(parse_expression(first)) != canonical(parse_expression(second))


def test_canonical_sorts_numbers_numerically() -> None:
    assert canonical(parse_expression("10+9")) == "9+10"


def test_render_drops_only_redundant_parentheses() -> None:
    assert render(parse_expression("((3*5))+(7)")) == "3*5+7"
    assert render(parse_expression("3*(5+7)")) == "3*(5+7)"
    assert render(parse_expression("10-(3-2)")) == "10-(3-2)"
    assert render(parse_expression("8/(4/2)")) == "8/(4/2)"
    assert render(parse_expression("(10-3)-2")) == "10-3-2"


def test_steps_and_numbers_used() -> None:
    tree = parse_expression("(15-1)*9")
    assert steps(tree) == ["15-1=14", "14*9=126"]
    assert numbers_used(tree) == [15, 1, 9]
