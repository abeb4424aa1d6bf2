"""Verify a completion against a rendered row: correctness, score and the outcome for diversity.

Deterministic, bounded in time on any input, and never executes model text: numbers are read
with a regular expression, countdown expressions with the AST walker in `expressions`, and
LaTeX or symbolic answers go to `math_verify` only after a strict size and shape screen.
`verify` never raises on model text (a malformed *row* still raises, naming the field).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import lru_cache
from typing import Any

from breadth.data.expressions import (
    ExpressionError,
    canonical,
    evaluate,
    numbers_used,
    parse_expression,
)
from breadth.data.extraction import (
    LETTERS,
    MAX_NUMBER_CHARS,
    answer_segment,
    extract_choice,
    extract_expression,
    extract_number,
    format_number,
    normalize_option,
    normalize_text,
    parse_number,
    plain_number,
)
from breadth.data.symbolic import refusal, symbolic_equal

RELATIVE_TOLERANCE = 1e-6
ABSOLUTE_TOLERANCE = 1e-9
MAX_OUTCOME_CHARS = 200
_LATEX_HINT = re.compile(r"\\[a-zA-Z]+|[{}^]")


@dataclass(frozen=True)
class Verification:
    """The verdict on one completion.

    >>> Verification(True, 1.0, "33", "33", "correct").score
    1.0
    """

    correct: bool
    """Whether the extracted answer matches the gold."""
    score: float
    """1.0 when correct, else 0.0 (graded tasks may give partial scores)."""
    extracted: str | None
    """What was read as the answer (a letter, number token or expression), None if nothing."""
    outcome: str | None
    """The canonical outcome counted for diversity; None when nothing could be extracted."""
    reason: str
    """Why: "correct", "wrong answer", "no number found", "uses numbers not given", ..."""


def _verdict(correct: bool, extracted: str | None, outcome: str | None, reason: str) -> Verification:
    return Verification(bool(correct), 1.0 if correct else 0.0, extracted, outcome, reason)


def as_list(value: Any, name: str) -> list[str]:
    if value is None or isinstance(value, str):
        raise ValueError(f"row field {name!r} must be a list of strings, got {value!r}")
    return [str(item) for item in value]


def verify_mcq(completion: object, options: Sequence[str], letter: str) -> Verification:
    """Multiple choice: the gold letter, or the exact text of the gold option.

    The outcome is the chosen option's normalised text, so the same answer under different
    letters (after shuffling) counts as one outcome.

    >>> verify_mcq("Answer: (B)", ["31", "33", "36", "30"], "B").correct
    True
    >>> verify_mcq("36", ["31", "33", "36", "30"], "B").outcome
    '36'
    """
    chosen, extracted = extract_choice(completion, options)
    if chosen is None:
        if extracted is None:
            return _verdict(False, None, None, "no choice found")
        valid = LETTERS[: len(options)]
        return _verdict(False, extracted, None, f"letter {extracted} is not one of {valid}")
    outcome = normalize_option(options[LETTERS.index(chosen)])
    # A source may list the gold text twice (AQuA does): either letter is that answer.
    correct = chosen == letter or (letter in LETTERS[: len(options)] and
                                   outcome == normalize_option(options[LETTERS.index(letter)]))
    return _verdict(correct, extracted, outcome, "correct" if correct else "wrong choice")


def verify_free_form(completion: object, answer: str) -> Verification:
    """Free-form: exact equality for an integer gold, 1e-6 relative for other numbers, else
    the normalised text or (for LaTeX and symbolic answers) math_verify.

    >>> verify_free_form("so 1,000.0 in all", "1000").correct
    True
    >>> verify_free_form("Answer: 1450001", "1450000").correct
    False
    >>> verify_free_form("Answer: \\\\frac{1}{2}", "0.5").correct
    True
    """
    gold = _gold_number(answer)
    segment, _ = answer_segment(completion)
    if gold is None:
        return _verify_symbolic(segment, answer)
    numeric = _verify_number(completion, *gold)
    if numeric.correct or not _LATEX_HINT.search(segment):
        return numeric
    # "\\frac{1}{2}" against 0.5: the number reader sees 1 and 2, math_verify sees one half.
    symbolic = _verify_symbolic(segment, answer)
    return symbolic if symbolic.correct else numeric


@lru_cache(maxsize=4096)
def _gold_number(answer: str) -> tuple[float, int | None] | None:
    """A gold answer read as one number: its value and the integer it spells (None for decimals
    and fractions); None when it is not one number. Cached: the completions of a group share
    their gold, and a training run meets each problem's many times."""
    token = plain_number(answer)
    value = parse_number(token) if token else None
    if token is None or value is None:
        return None
    return value, _as_integer(token)


def _verify_number(completion: object, gold: float, integer_gold: int | None) -> Verification:
    token = extract_number(completion)
    if token is None:
        return _verdict(False, None, None, "no number found")
    value = parse_number(token)
    if value is None:
        return _verdict(False, token[:MAX_OUTCOME_CHARS], None, "number out of range")
    if integer_gold is not None:
        # A relative tolerance would accept 1450001 for 1450000: integers compare exactly.
        correct = _exactly(token, integer_gold)
    else:
        correct = math.isclose(value, gold, rel_tol=RELATIVE_TOLERANCE,
                               abs_tol=ABSOLUTE_TOLERANCE)
    return _verdict(correct, token, format_number(value), "correct" if correct else "wrong answer")


def _as_integer(token: str) -> int | None:
    """The integer a gold token spells ("1,000" -> 1000); None for decimals and fractions."""
    digits = token.replace(",", "")
    return int(digits) if digits.lstrip("-").isdigit() else None


def _exactly(token: str, gold: int) -> bool:
    """Whether a number token ("1,000", "33.0", "66/2", "3.3e1") is exactly `gold`."""
    digits = token.removeprefix("-")
    if digits.isascii() and digits.isdecimal() and len(digits) <= MAX_NUMBER_CHARS:
        return int(token) == gold  # a plain integer ("33", "-7"): as Decimal would say, faster
    numerator, _, denominator = token.replace(",", "").partition("/")
    try:
        with localcontext() as context:
            context.prec = 2 * MAX_NUMBER_CHARS  # exact for every token extract_number yields
            if denominator:
                return Decimal(denominator) != 0 and (
                    Decimal(numerator) == Decimal(gold) * Decimal(denominator))
            return Decimal(numerator) == Decimal(gold)
    except (ArithmeticError, ValueError):
        return False


def _text_form(text: str) -> str:
    """How non-numeric answers compare as text: case, spaces, "$" and end periods ignored."""
    return "".join(normalize_text(text).casefold().split()).strip("$").rstrip(".")


def _verify_symbolic(segment: str, answer: str) -> Verification:
    if not segment:
        return _verdict(False, None, None, "no answer found")
    extracted = segment.split("\n", 1)[0].strip()[:MAX_OUTCOME_CHARS]
    outcome = " ".join(extracted.split())
    if _text_form(extracted) == _text_form(answer):
        return _verdict(True, extracted, outcome, "correct")
    unsafe = refusal(extracted)
    if unsafe:
        return _verdict(False, extracted, outcome or None, unsafe)
    verdict = symbolic_equal(answer, extracted)
    if verdict is None:
        return _verdict(False, extracted, outcome or None, "math_verify could not decide")
    return _verdict(verdict, extracted, outcome or None, "correct" if verdict else "wrong answer")


def verify_countdown(completion: object, numbers: Sequence[int], target: int) -> Verification:
    """Countdown: a safe-parsed expression using given numbers at most once, equal to target.

    The outcome is the canonicalised expression, so "3*5+7" and "7+5*3" are one outcome.

    >>> v = verify_countdown("Answer: 7+5*3", [3, 5, 7], 22)
    >>> v.correct, v.outcome
    (True, '3*5+7')
    >>> verify_countdown("__import__('os').system('x')", [3, 5, 7], 22).correct
    False
    """
    expression = extract_expression(completion)
    if expression is None:
        return _verdict(False, None, None, "no expression found")
    try:
        tree = parse_expression(expression)
    except ExpressionError as error:
        return _verdict(False, expression[:MAX_OUTCOME_CHARS], None, f"unsafe or invalid: {error}")
    outcome = canonical(tree)
    used = Counter(numbers_used(tree))
    missing = used - Counter(int(n) for n in numbers)
    if missing:
        extra = " ".join(str(n) for n in sorted(missing.elements()))
        return _verdict(False, expression, outcome, f"uses numbers not given: {extra}")
    try:
        value = evaluate(tree)
    except ExpressionError as error:
        return _verdict(False, expression, outcome, str(error))
    correct = value == target
    reason = "correct" if correct else f"value {value} is not the target {target}"
    return _verdict(correct, expression, outcome, reason)


def warm_up_symbolic() -> None:
    """Pay the symbolic check's one-time cost now: on the main thread, importing math_verify
    (and sympy beneath it); off it, starting the helper process the check runs in.

    A trainer calls this at start, so that cost does not land inside whichever training step
    first meets a LaTeX-looking answer.
    """
    symbolic_equal("\\frac{1}{2}", "0.5")
