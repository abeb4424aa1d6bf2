"""Verifier pitfalls found on real data and by fuzzing, one table per pitfall.

Every table mixes cases that must be rejected with cases that must be accepted (positive
controls), so a fix cannot pass by rejecting everything.
"""

from __future__ import annotations

import threading
import time

import pytest

from breadth.data.extraction import extract_choice
from breadth.data.symbolic import refusal, warm_up
from breadth.data.verifiers import _exactly, verify_free_form, verify_mcq

THREAD_TIME_LIMIT_S = 2.0


def _cases(table):
    return pytest.mark.parametrize("completion,gold,correct", table,
                                   ids=[f"{c!r}-vs-{g!r}" for c, g, _ in table])


# A Unicode minus (U+2212) is a minus, not noise.
UNICODE_MINUS = [
    ("Answer: \u22121234", "1234", False),
    ("Answer: \u22127", "-7", True),
    ("Answer: \u22127", "\u22127", True),
    ("Answer: 7", "-7", False),
    ("Answer: -7", "\u22127", True),
    ("Answer: 1234", "1234", True),
]


@_cases(UNICODE_MINUS)
def test_unicode_minus(completion, gold, correct) -> None:
    assert verify_free_form(completion, gold).correct is correct


# Integer golds compare exactly; other numbers keep a 1e-6 relative tolerance.
INTEGER_EXACT = [
    ("Answer: 1450001", "1450000", False),
    ("Answer: 1450000", "1450000", True),
    ("Answer: 1,450,000.0", "1450000", True),
    ("Answer: 2900000/2", "1450000", True),
    ("Answer: 1.45e6", "1450000", True),
    ("Answer: 100000000000000000001", "100000000000000000000", False),
    ("Answer: 100000000000000000000", "100000000000000000000", True),
    ("Answer: 0.3333333", "0.333333", True),
    ("Answer: 0.3334", "0.333333", False),
]


@_cases(INTEGER_EXACT)
def test_integer_golds_compare_exactly(completion, gold, correct) -> None:
    assert verify_free_form(completion, gold).correct is correct


# A zero denominator is no number: "0/0" is not 0 (nor 7: 0 == 7 * 0), "5/0" is not 0.
DIVISION_BY_ZERO = [
    ("Answer: 0/0", "0", False),
    ("Answer: 0/0", "7", False),
    ("Answer: 5/0", "0", False),
    ("Answer: 0/0", "0.5", False),
    ("Answer: 5/0", "0.0", False),
    ("Answer: 0/5", "0", True),
    ("Answer: 14/2", "7", True),
]


@_cases(DIVISION_BY_ZERO)
def test_a_zero_denominator_is_never_correct(completion, gold, correct) -> None:
    assert verify_free_form(completion, gold).correct is correct


def test_the_exact_integer_check_refuses_a_zero_denominator_itself() -> None:
    # parse_number refuses x/0 before verify_free_form reaches the exact check, so the table
    # above cannot see the check's own guard: numerator == gold * denominator holds for 0/0
    # and every gold. Checked here so the guard stays if parse_number ever lets x/0 through.
    assert not _exactly("0/0", 0) and not _exactly("0/0", 7) and not _exactly("5/0", 0)
    assert _exactly("0/5", 0) and _exactly("14/2", 7)


# A non-numeric gold must parse whole, or it is compared as normalised text.
NON_NUMERIC_GOLD = [
    ("Answer: 1", "5(\u221a3 + 1)", False),
    ("Answer: 5", "5(\u221a3 + 1)", False),
    ("Answer: 3", "5(\u221a3 + 1)", False),
    ("Answer: 5(\u221a3 + 1)", "5(\u221a3 + 1)", True),
    ("Answer: 5(\u221a3+1)", "5(\u221a3 + 1)", True),
    ("Answer: 5\\sqrt{3}+5", "5(\u221a3 + 1)", True),
    ("Answer: 150", "Rs. 150", False),
    ("Answer: rs. 150", "Rs. 150", True),
    ("Answer: 12 km/hr", "12 km/hr", True),
    ("Answer: 1+x", "x+1", True),
    ("Answer: x+2", "x+1", False),
]


@_cases(NON_NUMERIC_GOLD)
def test_non_numeric_golds_parse_whole(completion, gold, correct) -> None:
    assert verify_free_form(completion, gold).correct is correct


def test_non_numeric_gold_fuzz_has_no_false_positive() -> None:
    # Every short number and a few expressions: none is 5(sqrt(3)+1) = 13.66...
    wrong = [str(n) for n in range(-20, 101)] + ["\\sqrt{3}", "5", "x", "\\frac{1}{2}", "13.66"]
    accepted = [w for w in wrong if verify_free_form(f"Answer: {w}", "5(\u221a3 + 1)").correct]
    assert accepted == []


# MCQ: several letters, or a negation, after the marker extract nothing.
OPTIONS = ["31", "33", "36", "30"]
MCQ_HEDGES = [
    ("Answer: not B", None),
    ("Answer: A, B, C or D", None),
    ("A, B, C or D", None),
    ("Answer: B or C", None),
    ("Answer: (A) and (B)", None),
    ("Answer: neither A nor C", None),
    ("Answer: anything except B", None),
    ("Answer: B", "B"),
    ("Answer: (B) 33", "B"),
    ("Answer: B. A and C are too small", "B"),
    ("Answer: B, since 7*3=21", "B"),
    ("B", "B"),
]


@pytest.mark.parametrize("completion,letter", MCQ_HEDGES, ids=[c for c, _ in MCQ_HEDGES])
def test_mcq_hedges_pick_no_letter(completion, letter) -> None:
    assert extract_choice(completion, OPTIONS)[0] == letter
    assert verify_mcq(completion, OPTIONS, "B").correct is (letter == "B")


def test_an_option_text_with_letters_is_not_a_hedge() -> None:
    options = ["A only", "A and B", "B only", "neither"]
    assert extract_choice("Answer: B) A and B", options)[0] == "B"
    assert extract_choice("Answer: D) neither", options)[0] == "D"


def test_duplicated_gold_text_accepts_both_letters() -> None:
    options = ["59", "12", "59", "7", "3"]  # gold letter A; C has the same text
    assert verify_mcq("Answer: A", options, "A").correct
    assert verify_mcq("Answer: C", options, "A").correct
    assert not verify_mcq("Answer: B", options, "A").correct
    assert verify_mcq("Answer: C", options, "A").outcome == "59"


# Superscripts are powers and vulgar fractions are fractions (NFKC makes 3² "32", ½ "1").
UNICODE_NUMBERS = [
    ("Answer: 3\u00b2", "32", False),
    ("Answer: 3\u00b2", "9", True),
    ("Answer: \u00bd", "1", False),
    ("Answer: \u00bd", "0.5", True),
    ("Answer: 3\u00bd", "3.5", True),
    ("Answer: 3\u00bd", "31", False),
    ("Answer: 10\u00b3", "1000", True),
    ("Answer: \u00be", "0.75", True),
]


@_cases(UNICODE_NUMBERS)
def test_superscripts_and_vulgar_fractions(completion, gold, correct) -> None:
    assert verify_free_form(completion, gold).correct is correct


# Bounded off the main thread, where signal-based timeouts cannot fire.
SLOW_FOR_SYMPY = [
    ("Answer: 72^75^46^24^86", "33", False),
    ("Answer: 72^75^46^24^86", "x+1", False),
    ("Answer: (9^99)^99", "33", False),
    ("Answer: 2^{3^{4}}", "33", False),
    ("Answer: 9^{99}", "x+1", False),
    ("Answer: \\binom{999999999999999999}{99999999}", "x+1", False),
    ("Answer: x+1", "1+x", True),
    ("Answer: \\frac{1}{2}", "0.5", True),
]


@pytest.fixture
def helper_started() -> None:
    # The helper's start-up (an interpreter importing sympy) does not depend on the input; the
    # bound below is on the work an input causes. Warmed before every case: a case that runs
    # into the limit kills its helper, and the next would otherwise also pay a fresh start-up.
    warm_up()


@_cases(SLOW_FOR_SYMPY)
def test_verify_in_a_worker_thread_is_bounded(helper_started, completion, gold,
                                              correct) -> None:
    verdicts = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: verdicts.append(verify_free_form(completion, gold)))
    worker.start()
    worker.join(timeout=30)
    elapsed = time.monotonic() - started
    assert not worker.is_alive() and elapsed < THREAD_TIME_LIMIT_S, f"took {elapsed:.1f} s"
    assert verdicts[0].correct is correct


def test_power_towers_are_refused_before_parsing() -> None:
    assert refusal("72^75^46^24^86") == "power towers are not evaluated"
    assert refusal("x^2+y^2") is None
    assert refusal("10^{10^{10}}") == "power towers are not evaluated"


def test_a_check_that_overruns_in_a_worker_thread_is_cut_off(helper_started) -> None:
    # Past the screen sympy can still be slow; here the screen is bypassed with a tower that
    # sympy would evaluate for ever. The helper is killed at the limit and later replaced.
    from breadth.data import symbolic

    verdicts: list[bool | None] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: verdicts.append(
        symbolic._HELPERS.check("2^{3^{4^{5}}}", "1")))
    worker.start()
    worker.join(timeout=30)
    assert verdicts == [None] and time.monotonic() - started < THREAD_TIME_LIMIT_S
    worker = threading.Thread(target=lambda: verdicts.append(
        symbolic.symbolic_equal("x+1", "1+x")))
    worker.start()
    worker.join(timeout=30)
    assert verdicts == [None, True]


def test_many_worker_threads_share_a_few_helpers(helper_started) -> None:
    from breadth.data import symbolic

    verdicts: list[bool | None] = []
    workers = [threading.Thread(target=lambda: verdicts.append(
        symbolic.symbolic_equal("x+1", "1+x"))) for _ in range(3 * symbolic.MAX_HELPERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert verdicts == [True] * len(workers)
    assert len(symbolic._HELPERS.idle) <= symbolic.MAX_HELPERS


def test_a_new_helper_answers_every_warm_up_check_before_it_takes_a_real_one(monkeypatch) -> None:
    # The warm-up pays sympy's lazy set-up per kind of expression outside a check's time
    # limit; under load "x+1" = "1+x" in a fresh helper otherwise came back undecided.
    from breadth.data import symbolic

    asked: list[tuple[str, str, float]] = []
    real_ask = symbolic._Helpers._ask

    def recording_ask(helper, answer, text, timeout):
        asked.append((answer, text, timeout))
        return real_ask(helper, answer, text, timeout)

    monkeypatch.setattr(symbolic._Helpers, "_ask", staticmethod(recording_ask))
    helper = symbolic._Helpers()._start()
    assert helper is not None
    try:
        assert asked == [(a, t, symbolic.STARTUP_TIMEOUT_S) for a, t in symbolic.WARM_UP_CHECKS]
    finally:
        helper.kill()
        helper.wait()


def test_the_warm_up_checks_are_equalities_the_symbolic_path_decides() -> None:
    from breadth.data import symbolic

    assert [symbolic._equal(a, t, None) for a, t in symbolic.WARM_UP_CHECKS] == [True] * len(
        symbolic.WARM_UP_CHECKS)
