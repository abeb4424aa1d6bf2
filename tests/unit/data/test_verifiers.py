"""Table-driven extraction + verification per format, adversarial text included.

Every case also asserts that verification took under 50 ms (best of three runs, so a scheduler
hiccup on a shared CPU does not fail a case that is fast every other time).
"""

from __future__ import annotations

import time

import pytest

from breadth.data.generators import verify
from breadth.data.verifiers import (
    Verification,
    verify_countdown,
    verify_free_form,
    verify_mcq,
)

# A guard against blow-ups, not a speed goal (those are in benchmarks/): an unbounded verifier
# spends seconds to forever on these inputs (2**99999999, a 10^22 factorial, 10k nested
# parentheses), while a bounded one answers in about a millisecond. 50 ms failed once on a busy
# 2-core machine; a second still tells the two apart by orders of magnitude.
TIME_LIMIT_S = 1.0
MEGABYTE = 1_000_000
NESTED_10K = "(" * 10_000 + "3*5+7" + ")" * 10_000
INJECTION = "__import__('os').system('x')"


def timed(call, *args) -> Verification:
    best, result = float("inf"), None
    for _ in range(3):
        start = time.perf_counter()
        result = call(*args)
        best = min(best, time.perf_counter() - start)
    assert best < TIME_LIMIT_S, f"took {best * 1000:.1f} ms"
    assert isinstance(result, Verification)
    assert result.score == (1.0 if result.correct else 0.0)
    return result


@pytest.fixture(scope="module", autouse=True)
def warm_math_verify() -> None:
    # The first math_verify call imports sympy (~1 s); the time limit is about verification.
    verify_free_form("Answer: \\frac{1}{2}", "0.5")


# --- multiple choice ------------------------------------------------------------------------

OPTIONS = ["31", "33", "36", "30"]  # gold: B (33)
TEXT_OPTIONS = ["3 and 1", "1/2 and 8", "5 and 1", "3/5 and 5", "1/5 and 1"]  # gold: C

# (id, completion, correct, extracted, outcome); options OPTIONS, gold letter B.
MCQ_CASES = [
    ("bare-letter", "B", True, "B", "33"),
    ("bare-letter-wrong", "A", False, "A", "31"),
    ("parenthesised", "(B)", True, "B", "33"),
    ("letter-paren", "B)", True, "B", "33"),
    ("letter-with-text", "B) 33", True, "B", "33"),
    ("letter-period", "B.", True, "B", "33"),
    ("lowercase", "b", True, "B", "33"),
    ("answer-colon", "Answer: B", True, "B", "33"),
    ("answer-no-space", "Answer:B", True, "B", "33"),
    ("answer-is", "The answer is D", False, "D", "30"),
    ("answer-is-paren", "so the answer is (B).", True, "B", "33"),
    ("lowercase-marker", "answer: c", False, "C", "36"),
    ("reasoning-trace", "7*3=21, 12+21=33. A)31 no; B)33 yes; C)36 no; D)30 no. Answer: B",
     True, "B", "33"),
    ("last-marker-wins", "Answer: A\nwait, no. Answer: B", True, "B", "33"),
    ("option-text", "33", True, "33", "33"),
    ("option-text-marker", "Answer: 33", True, "33", "33"),
    ("option-text-period", "Answer: 33.", True, "33", "33"),
    ("option-text-wrong", "36", False, "36", "36"),
    ("gsm8k-marker", "#### B", True, "B", "33"),
    ("boxed-letter", "\\boxed{B}", True, "B", "33"),
    ("boxed-text", "\\boxed{33}", True, "33", "33"),
    ("single-mention", "I think B) is right", True, "B", "33"),
    ("trailing-letter", "my pick is B", True, "B", "33"),
    ("ambiguous-mentions", "maybe A) or B)", False, None, None),
    ("two-letters-hedge", "A) or B) maybe", False, None, None),
    ("letter-out-of-range", "Answer: E", False, "E", None),
    ("bare-out-of-range", "E", False, "E", None),
    ("no-choice-prose", "I do not know", False, None, None),
    ("not-an-option-number", "Answer: 34", False, None, None),
    ("empty", "", False, None, None),
    ("whitespace", "   \n\t ", False, None, None),
    ("megabyte-letters", "B" * MEGABYTE, False, None, None),
    ("megabyte-then-answer", "x" * MEGABYTE + " Answer: B", True, "B", "33"),
    ("answer-then-megabyte", "Answer: B" + " x" * MEGABYTE, False, None, None),
    ("arabic-indic-digits", "\u0663\u0663", True, "33", "33"),
    ("fullwidth-digits", "\uff13\uff13", True, "33", "33"),
    ("fullwidth-letter", "\uff22", True, "B", "33"),
    ("nested-parens-10k", "(" * 10_000 + "B" + ")" * 10_000, False, None, None),
    ("huge-exponent", "1e999999", False, None, None),
    ("code-injection", INJECTION, False, None, None),
    ("power-injection", "2**99999999", False, None, None),
    ("null-bytes", "\x00\x00B\x00", False, None, None),
    ("emoji-flood", "\U0001F600" * 100_000, False, None, None),
    ("not-a-string", None, False, None, None),
]


@pytest.mark.parametrize("case_id,completion,correct,extracted,outcome", MCQ_CASES,
                         ids=[case[0] for case in MCQ_CASES])
def test_mcq_cases(case_id, completion, correct, extracted, outcome) -> None:
    result = timed(verify_mcq, completion, OPTIONS, "B")
    assert (result.correct, result.extracted, result.outcome) == (correct, extracted, outcome)


@pytest.mark.parametrize("completion,correct,outcome", [
    ("C", True, "5 and 1"),
    ("Answer: 5 and 1", True, "5 and 1"),
    ("answer: 5 AND 1.", True, "5 and 1"),
    ("Answer: 1/2 and 8", False, "1/2 and 8"),
])
def test_mcq_text_options(completion, correct, outcome) -> None:
    result = timed(verify_mcq, completion, TEXT_OPTIONS, "C")
    assert (result.correct, result.outcome) == (correct, outcome)


def test_mcq_outcome_ignores_the_letter() -> None:
    # The same answer under another shuffle is the same outcome (diversity counts it once).
    first = verify_mcq("A", ["33", "31", "36", "30"], "A")
    second = verify_mcq("C", ["31", "36", "33", "30"], "C")
    assert first.outcome == second.outcome == "33"


# --- free-form numbers ----------------------------------------------------------------------

# (id, completion, gold, correct, outcome)
FREE_FORM_CASES = [
    ("bare", "33", "33", True, "33"),
    ("bare-wrong", "34", "33", False, "34"),
    ("answer-marker", "Answer: 33", "33", True, "33"),
    ("reasoning-chain", "7*3=21, 12+21=33. Answer: 33", "33", True, "33"),
    ("marker-first-number", "Answer: 33 apples, not 34", "33", True, "33"),
    ("last-number-without-marker", "12+21 gives 33", "33", True, "33"),
    ("gsm8k-marker", "48/2=24\n#### 72", "72", True, "72"),
    ("boxed", "so \\boxed{72}", "72", True, "72"),
    ("thousands-comma", "Answer: 1,000", "1000", True, "1000"),
    ("decimal-zero", "Answer: 33.0", "33", True, "33"),
    ("decimal", "Answer: 0.5", "0.5", True, "0.5"),
    ("within-tolerance", "Answer: 3.141592654", "3.14159265", True, "3.141593"),
    ("integer-gold-exact", "Answer: 33.00001", "33", False, "33.00001"),
    ("outside-tolerance", "Answer: 33.001", "33", False, "33.001"),
    ("negative", "Answer: -5", "-5", True, "-5"),
    ("negative-wrong-sign", "Answer: 5", "-5", False, "5"),
    ("subtraction-not-sign", "12-7", "7", True, "7"),
    ("equals-negative", "7-12=-5", "-5", True, "-5"),
    ("dollar", "Answer: $18", "18", True, "18"),
    ("trailing-period", "The answer is 72.", "72", True, "72"),
    ("scientific", "Answer: 3.3e1", "33", True, "33"),
    ("fraction-token", "Answer: 3/4", "0.75", True, "0.75"),
    ("latex-fraction", "Answer: \\frac{1}{2}", "0.5", True, "\\frac{1}{2}"),
    ("latex-boxed-fraction", "\\boxed{\\frac{66}{2}}", "33", True, "\\frac{66}{2}"),
    ("latex-gold-symbolic", "Answer: x+1", "1+x", True, "x+1"),
    ("text-gold-exact", "Answer: Rs. 150", "Rs. 150", True, "Rs. 150"),
    ("zero", "Answer: 0", "0", True, "0"),
    ("zero-wrong", "Answer: 0.001", "0", False, "0.001"),
    ("big-integer", "Answer: 123456789012", "123456789012", True, "123456789012"),
    ("no-number", "I cannot solve this", "33", False, None),
    ("empty", "", "33", False, None),
    ("whitespace", " \n ", "33", False, None),
    ("megabyte-digits", "9" * MEGABYTE, "33", False, None),
    ("megabyte-then-answer", "x" * MEGABYTE + " 33", "33", True, "33"),
    ("megabyte-answers", "Answer: 33 " * 100_000, "33", True, "33"),
    ("arabic-indic-digits", "\u0663\u0663", "33", True, "33"),
    ("fullwidth-digits", "\uff13\uff13", "33", True, "33"),
    ("nested-parens-10k", "(" * 10_000 + "33" + ")" * 10_000, "33", False, None),
    ("huge-exponent", "1e999999", "33", False, None),
    ("tiny-exponent", "1e-999999", "0", False, "0"),
    ("code-injection", INJECTION, "33", False, None),
    ("power-injection", "2**99999999", "33", False, "99999999"),
    ("latex-huge-power", "Answer: 2^{99999999}", "33", False, "2"),
    ("latex-tower", "Answer: 10^{10^{10}}", "33", False, "10"),
    ("latex-deep", "Answer: " + "\\frac{" * 500, "33", False, None),
    ("factorial", "Answer: 9999999999999999999999!", "33", False, "1e+22"),
    ("seventy-digits", "1" * 70, "33", False, None),
    ("null-bytes", "\x00\x0033\x00", "33", True, "33"),
    ("emoji-flood", "\U0001F600" * 100_000, "33", False, None),
    ("not-a-string", None, "33", False, None),
]


@pytest.mark.parametrize("case_id,completion,gold,correct,outcome", FREE_FORM_CASES,
                         ids=[case[0] for case in FREE_FORM_CASES])
def test_free_form_cases(case_id, completion, gold, correct, outcome) -> None:
    result = timed(verify_free_form, completion, gold)
    assert (result.correct, result.outcome) == (correct, outcome)


# --- countdown ------------------------------------------------------------------------------

NUMBERS, TARGET = [3, 5, 7], 22

# (id, completion, correct, outcome); numbers 3 5 7, target 22.
COUNTDOWN_CASES = [
    ("bare", "3*5+7", True, "3*5+7"),
    ("commuted", "7+5*3", True, "3*5+7"),
    ("redundant-parens", "((3*5))+(7)", True, "3*5+7"),
    ("spaces", "3 * 5 + 7", True, "3*5+7"),
    ("with-value", "3*5+7=22", True, "3*5+7"),
    ("with-value-spaced", "3*5+7 = 22", True, "3*5+7"),
    ("answer-marker", "Answer: 7+3*5", True, "3*5+7"),
    ("reasoning-chain", "3*5=15, 15+7=22. Answer: 3*5+7", True, "3*5+7"),
    ("last-line", "let me think\n5*3+7", True, "3*5+7"),
    ("in-prose", "I would use 3*5+7 here.", True, "3*5+7"),
    ("unicode-times", "3\u00d75+7", True, "3*5+7"),
    ("latex-times", "$3 \\times 5 + 7$", True, "3*5+7"),
    ("fullwidth", "\uff13*\uff15+\uff17", True, "3*5+7"),
    ("arabic-indic", "\u0663*\u0665+\u0667", True, "3*5+7"),
    ("wrong-value", "3*5-7", False, "3*5-7"),
    ("wrong-grouping", "3*(5+7)", False, "(5+7)*3"),
    ("reuses-a-number", "3*5+7+7-7", False, "3*5+7+7-7"),
    ("number-not-given", "2*11", False, "2*11"),
    ("just-the-target", "22", False, "22"),
    ("uses-subset", "5*3+7", True, "3*5+7"),
    ("division-exact", "Answer: (7*5+9)/2", False, "(5*7+9)/2"),
    ("division-by-zero", "7/(5-5)", False, "7/(5-5)"),
    ("division-fraction", "7/3*5", False, "5*7/3"),
    ("associativity", "(3+5)+7", False, "3+5+7"),
    ("unary-minus", "-3+5*7", False, None),
    ("float-literal", "3.0*5+7", False, None),
    ("leading-zero", "03*5+7", False, None),
    ("nested-16", "(" * 16 + "3" + ")" * 16 + "*5+7", True, "3*5+7"),
    ("nested-17", "(" * 17 + "3" + ")" * 17 + "*5+7", False, None),
    ("unbalanced", "(3*5+7", False, None),
    ("empty", "", False, None),
    ("whitespace", "  \n ", False, None),
    ("prose-only", "no idea", False, None),
    ("megabyte-digits", "7" * MEGABYTE, False, None),
    ("megabyte-then-answer", "x" * MEGABYTE + "\nAnswer: 3*5+7", True, "3*5+7"),
    ("megabyte-expression", "3+" * (MEGABYTE // 2) + "5", False, None),
    ("nested-parens-10k", NESTED_10K, False, None),
    ("huge-exponent", "1e999999", False, None),
    ("code-injection", INJECTION, False, None),
    ("power-injection", "2**99999999", False, None),
    ("floor-division", "7//3", False, None),
    ("caret-power", "Answer: 3^5", False, None),
    ("big-literal", "Answer: 9999999*0+22", False, None),
    ("lambda", "(lambda: 22)()", False, None),
    ("attribute", "(22).real", False, None),
    ("null-bytes", "\x00 3*5+7", True, "3*5+7"),
    ("emoji-flood", "\U0001F600" * 100_000, False, None),
    ("not-a-string", None, False, None),
]


@pytest.mark.parametrize("case_id,completion,correct,outcome", COUNTDOWN_CASES,
                         ids=[case[0] for case in COUNTDOWN_CASES])
def test_countdown_cases(case_id, completion, correct, outcome) -> None:
    result = timed(verify_countdown, completion, NUMBERS, TARGET)
    assert (result.correct, result.outcome) == (correct, outcome)


def test_countdown_repeated_numbers_may_each_be_used() -> None:
    assert verify_countdown("7*7", [7, 7, 2], 49).correct
    assert not verify_countdown("7*7*7", [7, 7, 2], 343).correct


def test_countdown_division_uses_exact_fractions() -> None:
    assert verify_countdown("8/3*6", [8, 3, 6], 16).correct


# --- dispatch from rendered rows ------------------------------------------------------------


def test_verify_dispatches_on_format_and_task() -> None:
    mcq_row = {"format": "mcq", "task": "arithmetic", "answer": "33", "options": OPTIONS,
               "letter": "B", "meta": "{}"}
    free_row = {"format": "free_form", "task": "arithmetic", "answer": "33", "options": [],
                "letter": "", "meta": "{}"}
    countdown_row = {"format": "free_form", "task": "countdown", "answer": "22", "options": [],
                     "letter": "", "meta": '{"numbers": [3, 5, 7], "target": 22}'}
    assert verify("B", mcq_row).correct
    assert verify("33", free_row).correct
    assert verify("7+5*3", countdown_row).outcome == "3*5+7"
    # meta may also arrive as a dict, options as any sequence (numpy arrays from parquet).
    assert verify("3*5+7", {**countdown_row, "meta": {"numbers": [3, 5, 7], "target": 22}}).correct
    assert verify("B", {**mcq_row, "options": tuple(OPTIONS)}).correct


def test_verify_rejects_a_malformed_row_with_the_field_named() -> None:
    with pytest.raises(ValueError, match="format"):
        verify("33", {"format": "essay", "answer": "33"})
    with pytest.raises(ValueError, match="meta"):
        verify("3*5+7", {"format": "free_form", "task": "countdown", "meta": "{}"})


# --- what a real instruct model writes (SmolLM2-135M-Instruct and its like) -----------------

# (id, completion, gold, correct, extracted): explicit markers first ("The answer is", "####",
# \boxed{}, "Answer:"), read through bold and "$"; prose only without a marker, and then only
# the final line's last number. The first three are SmolLM2's own replies, tried by hand.
REAL_FREE_FORM_CASES = [
    ("smollm2-37+58", "The answer is 153.", "95", False, "153"),
    ("smollm2-7+6+2+6", "The answer is 18.", "21", False, "18"),
    ("smollm2-12*7", "12 * 7 = 90\nThe answer is 90.", "84", False, "90"),
    ("answer-is-no-period", "The answer is 21", "21", True, "21"),
    ("bold-number", "The answer is **21**.", "21", True, "21"),
    ("bold-marker", "**Answer:** 21", "21", True, "21"),
    ("bold-line", "**The answer is 21.**", "21", True, "21"),
    ("dollar", "The answer is $21.", "21", True, "21"),
    ("latex-dollars", "The final answer is: $21$", "21", True, "21"),
    ("negative-bold", "The answer is **-5**", "-5", True, "-5"),
    ("thousands", "The answer is 1,024.", "1024", True, "1,024"),
    ("boxed-in-prose", "So the total is \\boxed{21}.", "21", True, "21"),
    ("gsm8k", "She has 5 + 16 = 21 apples.\n#### 21", "21", True, "21"),
    ("work-then-line", ("First, 7 + 6 = 13.\nThen 13 + 2 = 15.\nFinally, 15 + 6 = 21.\n"
     "The answer is 21."), "21", True, "21"),
    ("chatter-after-line", ("The answer is 21.\n\nI hope this helps! Let me know if you have 2 "
     "more questions."), "21", True, "21"),
    ("equation-on-the-line", "The answer is 48 - 37 = 11.", "11", True, "11"),
    ("latex-equation-on-the-line", "The answer is $7 + 6 + 8 = 21$.", "21", True, "21"),
    ("reason-after-the-number", "The answer is 19, the sum of 5 and 4 results in 21.", "19",
     True, "19"),
    ("number-on-the-next-line", "The answer is:\n21", "21", True, "21"),
    ("prose-final-line", "First, 7 + 6 = 13.\nThen 13 + 8 = 21.\nSo the sum is 21.", "21", True,
     "21"),
    ("prose-one-line", "8 + 7 + 6 = 21, which is a simple yet elegant math problem.", "21", True,
     "21"),
    # No answer, not a guess: the placeholder copied, a number word, a closing line without one.
    ("placeholder", "The answer is N.", "21", False, None),
    ("placeholder-after-work", "8 + 8 + 7 = 54\n54 + 56 = 21\n\nThe answer is N.", "21", False,
     None),
    ("number-word", "The answer is nine.", "9", False, None),
    ("prose-then-sign-off", "So the sum is 21.\nI hope this helps!", "21", False, None),
]


@pytest.mark.parametrize("case_id,completion,gold,correct,extracted", REAL_FREE_FORM_CASES,
                         ids=[case[0] for case in REAL_FREE_FORM_CASES])
def test_real_model_free_form_cases(case_id, completion, gold, correct, extracted) -> None:
    result = timed(verify_free_form, completion, gold)
    assert (result.correct, result.extracted) == (correct, extracted)


NATURAL_OPTIONS = ["11", "85", "10", "12"]  # gold: A

# (id, completion, correct, extracted); options NATURAL_OPTIONS, gold letter A.
REAL_MCQ_CASES = [
    ("answer-is", "The answer is A.", True, "A"),
    ("answer-is-no-period", "The answer is A", True, "A"),
    ("bold-letter", "The answer is **A**.", True, "A"),
    ("bold-line", "**The answer is A**", True, "A"),
    ("parenthesised", "The answer is (A).", True, "A"),
    ("option-mention", "The correct option is (A).", True, "A"),
    ("letter-paren", "A) 11", True, "A"),
    ("answer-colon", "Answer: A", True, "A"),
    ("option-text", "The answer is 11.", True, "11"),
    ("option-text-wrong", "The answer is 85.", False, "85"),
    ("work-then-line", "48 - 37 = 11, which is option A.\nThe answer is A.", True, "A"),
    ("letter-with-reason", "The answer is A) 11 because 48 - 37 = 11.", True, "A"),
    ("bold-option", "The answer is: **A) 11**", True, "A"),
    ("option-word", "The answer is option A.", True, "A"),
    ("text-then-letter", "I think the answer is 11, which is option A.", True, "A"),
    ("boxed", "\\boxed{A}", True, "A"),
    ("wrong-letter", "The answer is B) 85.", False, "B"),
    ("placeholder", "The answer is X.", False, "X"),
    ("hedge", "The answer is A or B.", False, None),
    ("two-mentions-no-marker", "48 - 37 = 11.\nA) 11 is right, B) 85 is not.", False, None),
]


@pytest.mark.parametrize("case_id,completion,correct,extracted", REAL_MCQ_CASES,
                         ids=[case[0] for case in REAL_MCQ_CASES])
def test_real_model_mcq_cases(case_id, completion, correct, extracted) -> None:
    result = timed(verify_mcq, completion, NATURAL_OPTIONS, "A")
    assert (result.correct, result.extracted) == (correct, extracted)


@pytest.mark.parametrize("completion,correct,outcome", [
    ("The answer is 7 + 6.", True, "6+7"),
    ("The answer is **7 + 6**.", True, "6+7"),
    ("First, 7 + 6 = 13.\nThe answer is 7 + 6 = 13.", True, "6+7"),
    ("The answer is 7 * 6 = 42.", False, "6*7"),
    ("The answer is E.", False, None),
])
def test_real_model_countdown_answer_lines(completion, correct, outcome) -> None:
    result = timed(verify_countdown, completion, [7, 6, 4], 13)
    assert (result.correct, result.outcome) == (correct, outcome)
