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

import json
import math
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

MATH_VERIFY_MAX_CHARS = 160
MATH_VERIFY_MAX_DEPTH = 6
MAIN_THREAD_TIMEOUT_S = 1
SUBPROCESS_TIMEOUT_S = 1.0
"""Hard limit on one symbolic check off the main thread; the helper process is then killed."""
STARTUP_TIMEOUT_S = 60.0
# Asked of each new helper before it takes a real check, under STARTUP_TIMEOUT_S: the first
# check of each kind of expression (symbols, implicit products, fractions, roots, tuples) pays
# a one-off sympy set-up (0.05-0.25 s each, measured beside a running grid; more under heavier
# load), which would otherwise count against a real check's limit: a clean-clone suite beside a
# grid saw "x+1" = "1+x" come back undecided.
WARM_UP_CHECKS = (("x+1", "1+x"), ("2x", "x*2"), ("\\frac{1}{2}", "0.5"), ("\\sqrt{2}", "2^{1/2}"),
                  ("(1,2)", "(1,2)"), ("3", "3.0"))
MAX_HELPERS = 4
"""Helper processes at most; further concurrent checks wait for one (each waits <= 1 s)."""

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
        # The model's text first: most texts sent here do not parse whole (an untrained model's
        # braces and carets), and then the gold need not be parsed at all (same verdict, None).
        predicted = parse(as_latex(text), extraction_config=readers, parsing_timeout=timeout)
        if not parsed_whole(predicted):
            return None
        gold = parse(as_latex(answer), extraction_config=readers, parsing_timeout=timeout)
        if not parsed_whole(gold):
            return None
        return bool(math_verify(gold, predicted, timeout_seconds=timeout))
    except Exception:  # noqa: BLE001 - math_verify and sympy raise many kinds; none may escape
        return None


class _Helpers:
    """Idle helper processes, one taken per concurrent check; a helper that overruns is killed
    (its sympy computation cannot be interrupted otherwise) and replaced on the next call.

    A helper is this file run as a script, speaking one JSON line per request on its stdin
    and stdout: unlike multiprocessing's spawn and forkserver, it never re-runs the
    caller's main script, and unlike fork it is safe in a threaded (torch-laden) process.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[subprocess.Popen[bytes]] = []
        # Each helper is an interpreter with sympy (~100 MB): many threads share a few.
        self.slots = threading.BoundedSemaphore(MAX_HELPERS)

    def warm_up(self) -> None:
        """Start one helper now and let it import the LaTeX parser."""
        with self.lock:
            if self.idle:
                return
        helper = self._start()
        if helper is not None:
            with self.lock:
                self.idle.append(helper)

    def check(self, answer: str, text: str) -> bool | None:
        with self.slots:
            return self._check(answer, text)

    def _check(self, answer: str, text: str) -> bool | None:
        with self.lock:
            helper = self.idle.pop() if self.idle else None
        if helper is None:
            helper = self._start()
            if helper is None:
                return None
        verdict = self._ask(helper, answer, text, SUBPROCESS_TIMEOUT_S)
        if verdict is _FAILED:
            return None
        with self.lock:
            self.idle.append(helper)
        return verdict

    @staticmethod
    def _ask(helper: subprocess.Popen[bytes], answer: str, text: str, timeout: float) -> Any:
        """The helper's verdict, or _FAILED (the helper is then killed)."""
        assert helper.stdin is not None and helper.stdout is not None
        try:
            helper.stdin.write(json.dumps([answer, text]).encode() + b"\n")
            helper.stdin.flush()
            ready, _, _ = select.select([helper.stdout], [], [], timeout)
            if ready:
                line = helper.stdout.readline()
                if line:
                    return json.loads(line)
        except (OSError, ValueError):
            pass
        helper.kill()
        helper.wait()
        return _FAILED

    def _start(self) -> subprocess.Popen[bytes] | None:
        """A helper that has answered the WARM_UP_CHECKS (so sympy, the LaTeX parser and their
        lazy set-up are done: the start-up does not count against a check's time limit), or
        None."""
        helper = self._spawn()
        if helper is None:
            return None
        for answer, text in WARM_UP_CHECKS:
            if self._ask(helper, answer, text, STARTUP_TIMEOUT_S) is _FAILED:
                return None
        return helper

    @staticmethod
    def _spawn() -> subprocess.Popen[bytes] | None:
        # This file run as a script needs only the standard library and math_verify (not the
        # breadth package, whatever version of it the path would find); -P keeps this
        # folder's modules from shadowing any of theirs.
        try:
            return subprocess.Popen(
                [sys.executable, "-P", str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None


_FAILED = object()
_HELPERS = _Helpers()


def warm_up() -> None:
    """Start a helper process for symbolic checks off the main thread (a fresh interpreter
    importing sympy, then the WARM_UP_CHECKS: 2-3.5 s on a loaded 2-core machine). Call it
    before verifying from worker threads, so that the first check is bounded like every other;
    otherwise that check also waits for the start-up (which does not depend on the input)."""
    _HELPERS.warm_up()


def _serve() -> None:
    """The helper's loop: one JSON [gold, text] per line in, one JSON verdict per line out."""
    for line in sys.stdin.buffer:
        answer, text = json.loads(line)
        sys.stdout.write(json.dumps(_equal(answer, text, None)) + "\n")
        sys.stdout.flush()


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


if __name__ == "__main__":
    _serve()
