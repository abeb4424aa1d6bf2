"""Verify a completion against a rendered row: correctness, score and the outcome for diversity.

Deterministic, bounded in time on any input, and never executes model text: numbers are read
with a regular expression, countdown expressions with the AST walker in `expressions`, and
LaTeX or symbolic answers go to `math_verify` only after a strict size and shape screen.
`verify` never raises on model text (a malformed *row* still raises, naming the field).
"""

from __future__ import annotations

import json
import math
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    answer_segment,
    extract_choice,
    extract_expression,
    extract_number,
    format_number,
    normalize_option,
    parse_number,
    plain_number,
)

RELATIVE_TOLERANCE = 1e-6
ABSOLUTE_TOLERANCE = 1e-9
MAX_OUTCOME_CHARS = 200

# math_verify (sympy underneath) can take seconds on "10^{10^{10}}" or 200 nested
# parentheses, so only short, shallow text without factorials or big exponents reaches it.
MATH_VERIFY_MAX_CHARS = 160
MATH_VERIFY_MAX_DEPTH = 6
_LATEX_HINT = re.compile(r"\\[a-zA-Z]+|[{}^]")
_SAFE_EXPONENT = re.compile(r"\^(?:\{-?\d{1,2}\}|-?\d{1,2}(?!\d)|[a-zA-Z](?![\w{]))")
_LONG_DIGITS = re.compile(r"\d{19,}")


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


def verify(completion: object, row: Mapping[str, Any]) -> Verification:
    """Verify a completion against a rendered row (uses format, task, answer, options, letter, meta).

    >>> verify("Answer: 33", {"format": "free_form", "task": "arithmetic", "answer": "33"}).correct
    True
    >>> verify("B", {"format": "mcq", "options": ["31", "33"], "letter": "B"}).outcome
    '33'
    """
    fmt = row.get("format")
    if fmt == "mcq":
        return verify_mcq(completion, _as_list(row.get("options"), "options"), str(row["letter"]))
    if fmt != "free_form":
        raise ValueError(f"row field 'format' must be 'mcq' or 'free_form', got {fmt!r}")
    if row.get("task") == "countdown":
        meta = _as_meta(row.get("meta"))
        try:
            numbers, target = [int(n) for n in meta["numbers"]], int(meta["target"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                "countdown row needs meta {'numbers': [int, ...], 'target': int}, "
                f"got {meta!r}"
            ) from None
        return verify_countdown(completion, numbers, target)
    return verify_free_form(completion, str(row["answer"]))


def _as_list(value: Any, name: str) -> list[str]:
    if value is None or isinstance(value, str):
        raise ValueError(f"row field {name!r} must be a list of strings, got {value!r}")
    return [str(item) for item in value]


def _as_meta(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


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
    correct = chosen == letter
    return _verdict(correct, extracted, outcome, "correct" if correct else "wrong choice")


def verify_free_form(completion: object, answer: str) -> Verification:
    """Free-form: numeric equivalence (1e-6 relative) for numeric gold, else math_verify.

    >>> verify_free_form("so 1,000.0 in all", "1000").correct
    True
    >>> verify_free_form("Answer: \\\\frac{1}{2}", "0.5").correct
    True
    """
    gold_token = plain_number(answer)
    gold = parse_number(gold_token) if gold_token else None
    segment, _ = answer_segment(completion)
    if gold is None:
        return _verify_symbolic(segment, answer)
    numeric = _verify_number(completion, gold)
    if numeric.correct or not _LATEX_HINT.search(segment):
        return numeric
    # "\frac{1}{2}" against 0.5: the number reader sees 1 and 2, math_verify sees one half.
    symbolic = _verify_symbolic(segment, answer)
    return symbolic if symbolic.correct else numeric


def _verify_number(completion: object, gold: float) -> Verification:
    token = extract_number(completion)
    if token is None:
        return _verdict(False, None, None, "no number found")
    value = parse_number(token)
    token = token[:MAX_OUTCOME_CHARS]
    if value is None:
        return _verdict(False, token, None, "number out of range")
    correct = math.isclose(value, gold, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE)
    return _verdict(correct, token, format_number(value), "correct" if correct else "wrong answer")


def _verify_symbolic(segment: str, answer: str) -> Verification:
    if not segment:
        return _verdict(False, None, None, "no answer found")
    extracted = segment.split("\n", 1)[0].strip()[:MAX_OUTCOME_CHARS]
    outcome = " ".join(extracted.split())
    if outcome == " ".join(answer.split()):
        return _verdict(True, extracted, outcome, "correct")
    unsafe = _math_verify_refusal(extracted)
    if unsafe:
        return _verdict(False, extracted, outcome or None, unsafe)
    verdict = _math_verify_equal(answer, extracted)
    if verdict is None:
        return _verdict(False, extracted, outcome or None, "math_verify could not decide")
    return _verdict(verdict, extracted, outcome or None, "correct" if verdict else "wrong answer")


def _math_verify_refusal(text: str) -> str | None:
    """Why `text` must not reach math_verify (too big to parse in bounded time), or None."""
    if len(text) > MATH_VERIFY_MAX_CHARS:
        return f"answer longer than {MATH_VERIFY_MAX_CHARS} characters"
    depth = deepest = 0
    for char in text:
        if char in "({[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")}]":
            depth -= 1
    if deepest > MATH_VERIFY_MAX_DEPTH:
        return f"brackets nested deeper than {MATH_VERIFY_MAX_DEPTH}"
    if "!" in text or "\\prod" in text or "\\sum" in text:
        return "factorials, sums and products are not evaluated"
    if text.count("^") != len(_SAFE_EXPONENT.findall(text)):
        return "exponents above two digits are not evaluated"
    if _LONG_DIGITS.search(text):
        return "numbers longer than 18 digits are not evaluated"
    return None


def _math_verify_equal(answer: str, text: str) -> bool | None:
    """math_verify's verdict on gold `answer` vs `text`; None when it cannot parse either."""
    try:
        from math_verify import parse
        from math_verify import verify as math_verify
    except ImportError:  # the string comparison above already ran
        return None
    # signal-based timeouts work only in the main thread; elsewhere the screen above is the
    # only bound (math_verify refuses a timeout off the main thread).
    timeout = 1 if threading.current_thread() is threading.main_thread() else None
    with _keep_outer_alarm():
        try:
            gold = parse(_as_latex(answer), parsing_timeout=timeout)
            predicted = parse(_as_latex(text), parsing_timeout=timeout)
            if not gold or not predicted:
                return None
            return bool(math_verify(gold, predicted, timeout_seconds=timeout))
        except Exception:  # noqa: BLE001 - math_verify and sympy raise many kinds; none may escape
            return None


def _as_latex(text: str) -> str:
    text = text.strip()
    if text.startswith("$") or "\\boxed" in text:
        return text
    return f"${text}$"


class _keep_outer_alarm:
    """math_verify's timeout uses signal.alarm, which cancels any alarm already set (by
    pytest-timeout, say); re-arm the outer one afterwards."""

    def __enter__(self) -> None:
        self.main = (hasattr(signal, "alarm")
                     and threading.current_thread() is threading.main_thread())
        self.remaining = signal.alarm(0) if self.main else 0
        self.started = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        if self.main and self.remaining:
            elapsed = time.monotonic() - self.started
            signal.alarm(max(1, math.ceil(self.remaining - elapsed)))


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
