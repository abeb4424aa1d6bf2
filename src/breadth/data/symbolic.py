"""Symbolic equality of a gold answer and a model answer, bounded in time on any thread.

math_verify (sympy underneath) decides "\\frac{1}{2}" = "0.5" or "x+1" = "1+x", but can take
seconds or minutes on small text ("72^75^46", "10^{10^{10}}"). Three guards bound it:

1. a screen refuses text that is long, deeply nested, or has factorials, sums, products,
   power towers or big exponents, before any parsing;
2. on the main thread, math_verify's own signal-based timeout;
3. off the main thread (Prefect tasks, TRL reward workers), where signals cannot fire, the
   check runs in a helper process that is killed after `SUBPROCESS_TIMEOUT_S`.

A parse must also account for the whole text: math_verify's loose reader takes "5(\\u221a3 + 1)"
as 1, so only its LaTeX reader is used, and text it cannot parse whole is compared as
normalised text instead.
"""

from __future__ import annotations

import math
import multiprocessing
import re
import signal
import threading
import time
from typing import Any

MATH_VERIFY_MAX_CHARS = 160
MATH_VERIFY_MAX_DEPTH = 6
MAIN_THREAD_TIMEOUT_S = 1
SUBPROCESS_TIMEOUT_S = 1.0
"""Hard limit on one symbolic check off the main thread; the helper process is then killed."""

_SAFE_EXPONENT = re.compile(r"\^(?:\{-?\d{1,2}\}|-?\d{1,2}(?!\d)|[a-zA-Z](?![\w{]))")
_LONG_DIGITS = re.compile(r"\d{19,}")
# An exponent that is itself raised, or holds a power: "a^b^c", "(a^b)^c", "a^{b^c}".
_POWER_TOWER = re.compile(r"\^\s*(?:\{[^{}]*\^|[\w.]+\s*\)*\s*\^)")
# Unicode spellings math_verify does not read (it would drop them and parse what is left).
_UNICODE_MATH = (("\u2212", "-"), ("\u00d7", "\\times "), ("\u00f7", "\\div "), ("\u22c5", "\\cdot "),
                 ("\u03c0", "\\pi "), ("\u221e", "\\infty "))
_SQUARE_ROOT = re.compile(r"\u221a\s*(\d+(?:\.\d+)?|[a-zA-Z]|\([^()]*\))")


def refusal(text: str) -> str | None:
    """Why `text` must not be parsed symbolically (it could take unbounded time), or None.

    >>> refusal("\\\\frac{1}{2}") is None
    True
    >>> refusal("72^75^46^24^86")
    'power towers are not evaluated'
    """
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
    if "!" in text or "\\prod" in text or "\\sum" in text or "\\binom" in text:
        return "factorials, sums, products and binomials are not evaluated"
    if _POWER_TOWER.search(text) or "**" in text:
        # Even two-digit exponents explode when stacked: 72^75^46 has ~10^80 digits.
        return "power towers are not evaluated"
    if text.count("^") != len(_SAFE_EXPONENT.findall(text)):
        return "exponents above two digits are not evaluated"
    if _LONG_DIGITS.search(text):
        return "numbers longer than 18 digits are not evaluated"
    return None


def as_latex(text: str) -> str:
    """Text as math_verify reads it: unicode operators spelt in LaTeX, wrapped in $...$.

    >>> as_latex("5(\\u221a3 + 1)")
    '$5(\\\\sqrt{3} + 1)$'
    """
    text = _SQUARE_ROOT.sub(lambda m: "\\sqrt{" + m.group(1) + "}", text.strip())
    for symbol, latex in _UNICODE_MATH:
        text = text.replace(symbol, latex)
    if text.startswith("$") or "\\boxed" in text:
        return text
    return f"${text}$"


def parsed_whole(parsed: list[Any]) -> bool:
    """Whether math_verify's LaTeX reader parsed the text (it returns the bare string when it
    could not; its looser expression reader would instead keep a fragment: "5(\u221a3 + 1)"
    reads as 1)."""
    return len(parsed) == 2 and not isinstance(parsed[0], str)


def symbolic_equal(answer: str, text: str) -> bool | None:
    """Whether gold `answer` and `text` are equal as mathematics; None when undecided (either
    does not parse whole, a screen refuses it, or the time limit passed)."""
    if refusal(answer) or refusal(text):
        return None
    if threading.current_thread() is threading.main_thread():
        with _KeepOuterAlarm():
            return _equal(answer, text, MAIN_THREAD_TIMEOUT_S)
    return _HELPERS.check(answer, text)


def _equal(answer: str, text: str, timeout: int | None) -> bool | None:
    try:
        from math_verify import LatexExtractionConfig, parse
        from math_verify import verify as math_verify
    except ImportError:
        return None
    try:
        readers = [LatexExtractionConfig()]
        gold = parse(as_latex(answer), extraction_config=readers, parsing_timeout=timeout)
        predicted = parse(as_latex(text), extraction_config=readers, parsing_timeout=timeout)
        if not parsed_whole(gold) or not parsed_whole(predicted):
            return None
        return bool(math_verify(gold, predicted, timeout_seconds=timeout))
    except Exception:  # noqa: BLE001 - math_verify and sympy raise many kinds; none may escape
        return None


def _serve(connection: Any) -> None:
    """The helper process: answer (gold, text) requests until the pipe closes."""
    while True:
        try:
            answer, text = connection.recv()
        except EOFError:
            return
        connection.send(_equal(answer, text, None))


class _Helpers:
    """Idle helper processes, one taken per concurrent check; a helper that overruns is killed
    (its sympy computation cannot be interrupted otherwise) and replaced on the next call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[tuple[Any, Any]] = []

    def check(self, answer: str, text: str) -> bool | None:
        with self.lock:
            helper = self.idle.pop() if self.idle else None
        if helper is None:
            helper = self._start()
            if helper is None:
                return None
        process, connection = helper
        try:
            connection.send((answer, text))
            if connection.poll(SUBPROCESS_TIMEOUT_S):
                result = connection.recv()
                with self.lock:
                    self.idle.append(helper)
                return result
        except (OSError, EOFError):
            pass
        process.kill()
        process.join(timeout=1)
        return None

    @staticmethod
    def _start() -> tuple[Any, Any] | None:
        # forkserver: forking this (threaded, maybe torch-laden) process is unsafe, and
        # spawning per helper would re-import sympy; the server imports it once.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["math_verify", "breadth.data.symbolic"])
        ours, theirs = context.Pipe()
        try:
            process = context.Process(target=_serve, args=(theirs,), daemon=True)
            process.start()
        except (AssertionError, OSError):  # inside a daemon process: no children allowed
            return None
        theirs.close()
        return process, ours


_HELPERS = _Helpers()


class _KeepOuterAlarm:
    """math_verify's timeout uses signal.alarm, which cancels any alarm already set (by
    pytest-timeout, say); re-arm the outer one afterwards."""

    def __enter__(self) -> None:
        self.armed = hasattr(signal, "alarm")
        self.remaining = signal.alarm(0) if self.armed else 0
        self.started = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        if self.armed and self.remaining:
            elapsed = time.monotonic() - self.started
            signal.alarm(max(1, math.ceil(self.remaining - elapsed)))
