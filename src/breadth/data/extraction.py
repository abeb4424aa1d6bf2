"""Pull the final answer out of model text: a letter, a number or an expression.

Every function here first cuts the text to a bounded window (the last `MAX_TAIL_CHARS`
characters, then at most `MAX_SEGMENT_CHARS` after the answer marker), so the work done on any
input, a megabyte of digits included, is bounded. None of them raises on model text.

Where the answer is, in order (explicit markers first, as a real model's reply mentions many
numbers on the way):

1. the last `\\boxed{...}`;
2. the first line after the last marker: "Answer:", "answer is" ("The answer is 21.", "The
   final answer is: $21$"), GSM8K's "####". A number there is its first one, or, where the line
   is an equation from its start ("The answer is 48 - 37 = 11."), the number after its last
   "=";
3. with no marker, prose: the last number of the final non-empty line ("... So the sum is
   21." gives 21). A reply whose final line holds no number ("I hope this helps!") has no
   answer: the number of an earlier line is not guessed at.

Bold markdown around an answer ("The answer is **21**", "**Answer:** B") is read through.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from breadth.data.unicode_text import normalize_text

MAX_TAIL_CHARS = 2000
"""Only the end of a completion is searched: the final answer is there."""
MAX_SEGMENT_CHARS = 512
"""Only this much text after the answer marker is read."""
MAX_NUMBER_CHARS = 64
"""A longer digit run is not a plausible answer (and would be slow to convert)."""

LETTERS = "ABCDEFGHIJ"

_MARKER = re.compile(r"answer\s*(?:is\s*:?|:)|####", re.IGNORECASE)
_BOXED = "\\boxed{"
_NUMBER = re.compile(
    r"(?:(?<![\w)\]])-)?"  # a minus sign counts only where it cannot be subtraction
    r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
    r"(?:[eE][-+]?\d+|/\d+)?"
)
_PLAIN_NUMBER = re.compile(r"\s*\$?\s*(" + _NUMBER.pattern + r")\s*\.?\s*")
# An equation from the start of the answer line: numbers joined by operators, then "=".
_EQUATION_HEAD = re.compile(r"\$?\s*(?:\d[\d,.]*\s*[-+*/\u00d7\u00f7x]\s*)+\d[\d,.]*\s*\$?\s*=")
# Markdown bold: "**" that opens or closes a word, never the "**" inside "2**8".
_EMPHASIS = re.compile(r"(?<![\w*])\*\*|\*\*(?![\w*])")
_LEADING_LETTER = re.compile(r"\s*[(\[]?([A-Z])(?:[)\]]|(?=[\s.,;:!?]|$))")
_LETTER_MENTION = re.compile(r"\(([A-Z])\)|(?<![\w])([A-Z])\)")
_TRAILING_LETTER = re.compile(r"(?<![\w])([A-Z])[\s.!]*$")
_FIRST_CLAUSE = re.compile(r"(?<!\d)[.;](?:\s|$)|\.\s")
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|except|isn't|cannot)\b", re.IGNORECASE)
_STANDALONE_LETTER = re.compile(r"\(([A-Z])\)|(?<![\w'])([A-Z])(?![\w'])")
_EXPRESSION_RUN = re.compile(r"[0-9+\-*/() ]+")
_SYMBOLS = {"\u00d7": "*", "\u00f7": "/", "\u2212": "-", "\u2013": "-", "\u22c5": "*"}
_LATEX_SYMBOLS = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"), ("\\left", ""),
                  ("\\right", ""), ("$", ""))


def answer_segment(text: object) -> tuple[str, bool]:
    """The bounded part of a completion holding the final answer, and whether a marker was seen.

    Priority: the last \\boxed{...}; else the text after the last "Answer:" / "answer is" /
    "####"; else the end of the text.

    >>> answer_segment("7*3=21, 12+21=33. Answer: 33")
    ('33', True)
    >>> answer_segment("33")
    ('33', False)
    """
    if not isinstance(text, str) or not text:
        return "", False
    tail = normalize_text(text[-MAX_TAIL_CHARS:])
    boxed_at = tail.rfind(_BOXED)
    if boxed_at >= 0:
        return _EMPHASIS.sub("", _boxed_content(tail, boxed_at + len(_BOXED))), True
    last = None
    for last in _MARKER.finditer(tail):
        pass
    if last is not None:
        segment = tail[last.end():last.end() + MAX_SEGMENT_CHARS]
        return _EMPHASIS.sub("", segment).strip(), True
    return _EMPHASIS.sub("", tail[-MAX_SEGMENT_CHARS:]).strip(), False


def answer_marker(text: str) -> int | None:
    """Where the final answer's marker starts in `text` (the last \\boxed{, else the last
    "Answer:" / "answer is" / "####"), None without one: the work is what comes before it.

    >>> text = "3 + 4 = 7.\\nThe answer is 7."
    >>> text[:answer_marker(text)]
    '3 + 4 = 7.\\nThe '
    """
    boxed_at = text.rfind(_BOXED)
    if boxed_at >= 0:
        return boxed_at
    last = None
    for last in _MARKER.finditer(text):
        pass
    return last.start() if last else None


def _boxed_content(text: str, start: int) -> str:
    depth = 1
    end = min(len(text), start + MAX_SEGMENT_CHARS)
    for index in range(start, end):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[start:index].strip()
    return text[start:end].strip()


def parse_number(text: str) -> float | None:
    """The value of one number token ("1,000", "-3.5", "2e3", "3/4"); None if not finite.

    >>> parse_number("1,000"), parse_number("3/4"), parse_number("1e999999")
    (1000.0, 0.75, None)
    """
    if len(text) > MAX_NUMBER_CHARS:
        return None
    try:
        if "/" in text:
            numerator, denominator = text.replace(",", "").split("/")
            value = float(numerator) / float(denominator) if float(denominator) else math.inf
        else:
            value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def plain_number(text: str) -> str | None:
    """The number token when `text` is nothing but one number (with an optional $ or period).

    >>> plain_number(" $1,000. "), plain_number("x+1")
    ('1,000', None)
    """
    if len(text) > MAX_SEGMENT_CHARS:
        return None
    match = _PLAIN_NUMBER.fullmatch(normalize_text(text))
    return match.group(1) if match else None


def canonical_number(text: str) -> str | None:
    """A gold number in one spelling: "1,000" -> "1000", "3.50" -> "3.5"; None if not a number.

    >>> canonical_number("1,000"), canonical_number("3.50"), canonical_number("abc")
    ('1000', '3.5', None)
    """
    token = plain_number(text)
    if token is None or "/" in token or parse_number(token) is None:
        return None
    try:
        value = Decimal(token.replace(",", ""))
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def format_number(value: float) -> str:
    """The outcome spelling of a number: whole values without a decimal point.

    >>> format_number(33.0), format_number(0.5)
    ('33', '0.5')
    """
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.7g}"


def extract_number(text: object) -> str | None:
    """The final numeric answer token: on the answer line after a marker, its first number (or
    the result of an equation written from its start); without a marker, the last number of
    the final line.

    >>> extract_number("7*3=21, 12+21=33. Answer: 33 apples")
    '33'
    >>> extract_number("The answer is 48 - 37 = 11.")
    '11'
    >>> extract_number("48 - 37 is 11 in all.\\nSo she has 11 left")
    '11'
    >>> extract_number("no digits") is None
    True
    """
    segment, marked = answer_segment(text)
    line = segment.split("\n", 1)[0]
    if marked:
        equation = _EQUATION_HEAD.match(line)
        match = _NUMBER.search(line, equation.end() if equation else 0)
        return match.group(0) if match else None
    lines = [line for line in segment.split("\n") if line.strip()]
    last = None
    for last in _NUMBER.finditer(lines[-1] if lines else ""):
        pass
    return last.group(0) if last else None


def normalize_option(text: str) -> str:
    """How option texts are compared and counted: case, spacing and end punctuation ignored.

    >>> normalize_option("  Rs. 150. ")
    'rs. 150'
    """
    return " ".join(normalize_text(text).casefold().split()).rstrip(".!")


def extract_choice(text: object, options: Sequence[str]) -> tuple[str | None, str | None]:
    """The chosen letter (or None) and what was read as the choice (or None).

    A letter at the start of the answer segment ("B", "(B)", "B) 33"), else the exact text of
    one option, else (without an answer marker) a single letter mentioned as "(B)" or "B)".
    A letter outside the options comes back as (None, "E").

    >>> extract_choice("7*3=21. Answer: B", ["31", "33", "36", "30"])
    ('B', 'B')
    >>> extract_choice("33", ["31", "33", "36", "30"])
    ('B', '33')
    """
    segment, marked = answer_segment(text)
    if not segment:
        return None, None
    valid = LETTERS[: len(options)]
    if _hedged(segment, options, valid):
        return None, None
    bare = segment.strip("()[]. ")
    if len(bare) == 1 and bare.isalpha():  # "b", "(E)": the whole answer is one letter
        letter = bare.upper()
        return (letter, letter) if letter in valid else (None, letter)
    leading = _LEADING_LETTER.match(segment)
    if leading and leading.group(1) in valid:
        return leading.group(1), leading.group(1)
    by_text = _match_option_text(segment, options)
    if by_text is not None:
        return by_text
    if leading and marked:
        return None, leading.group(1)
    if not marked:
        mentioned = {a or b for a, b in _LETTER_MENTION.findall(segment)} & set(valid)
        if len(mentioned) == 1:
            letter = mentioned.pop()
            return letter, letter
    trailing = _TRAILING_LETTER.search(segment)
    if trailing and trailing.group(1) in valid:
        return trailing.group(1), trailing.group(1)
    return None, None


def _hedged(segment: str, options: Sequence[str], valid: str) -> bool:
    """Whether the answer names no single letter: "not B", "A, B, C or D", "B or C".

    Only the first clause counts (the answer proper; reasons may follow), and an option's own
    text is not read as letters ("C) A and B" picks C when option C is "A and B").
    """
    clause = _FIRST_CLAUSE.split(segment.split("\n", 1)[0], maxsplit=1)[0]
    leading = _LEADING_LETTER.match(clause)
    if leading and leading.group(1) in valid:
        rest = normalize_option(clause[leading.end():])
        if rest == normalize_option(options[LETTERS.index(leading.group(1))]):
            return False
    if _NEGATION.search(clause):
        return True
    letters = {a or b for a, b in _STANDALONE_LETTER.findall(clause)} & set(valid)
    return len(letters) > 1


def _match_option_text(segment: str, options: Sequence[str]) -> tuple[str, str] | None:
    first_line = segment.split("\n", 1)[0]
    candidates = {normalize_option(segment), normalize_option(first_line)}
    for index, option in enumerate(options):
        if normalize_option(option) in candidates:
            return LETTERS[index], option
    return None


def extract_expression(text: object) -> str | None:
    """The candidate countdown expression: the answer line, cut at "=" and to allowed characters.

    >>> extract_expression("3*5=15, 15+7=22. Answer: 3*5+7")
    '3*5+7'
    >>> extract_expression("3 * 5 + 7 = 22")
    '3 * 5 + 7'
    >>> extract_expression("I would use (3+5)*2 here.")
    '(3+5)*2'
    """
    segment, marked = answer_segment(text)
    if not marked:
        lines = [line for line in segment.split("\n") if line.strip()]
        segment = lines[-1] if lines else ""
    line = segment.split("\n", 1)[0]
    for symbol, replacement in _SYMBOLS.items():
        line = line.replace(symbol, replacement)
    for symbol, replacement in _LATEX_SYMBOLS:
        line = line.replace(symbol, replacement)
    line = line.split("=", 1)[0].strip().rstrip(".!")
    if not line:
        return None
    runs = [match.group(0).strip() for match in _EXPRESSION_RUN.finditer(line)
            if _stands_alone(line, match.start(), match.end())]
    runs = [run for run in runs if any(char.isdigit() for char in run)]
    if not runs:
        return None
    return max(runs, key=len)


def _stands_alone(line: str, start: int, end: int) -> bool:
    """Whether a run of expression characters is a whole expression, not a piece of a longer
    token: "3.0*5", "1e999", "3^5" and "(22).real" must not yield "0*5", "999", "5" or "(22)"."""
    run = line[start:end]
    start, end = start + len(run) - len(run.lstrip()), end - (len(run) - len(run.rstrip()))
    before = line[start - 1] if start > 0 else " "
    after = line[end] if end < len(line) else " "
    if before.isalnum() or before in "._^$\\":
        return False
    return not (after.isalnum() or after in "._^")
