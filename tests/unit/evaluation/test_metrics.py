"""pass@k, best-of-k, maj@k and chance levels against references and hand-worked tables."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from breadth.evaluation.metrics import (
    _distinct_vote_tables,
    _exact_vote_work,
    best_of_k,
    best_of_k_curve,
    chance_corrected_pass_at_k,
    chance_pass_at_k,
    default_ks,
    g_pass_at_k,
    maj_at_k,
    maj_at_k_curve,
    maj_at_k_estimates,
    mg_pass_at_k,
    outcome_codes,
    pass_at_k,
    pass_at_k_curve,
    pass_hat_k,
)

CASES = Path(__file__).parent / "cases"


def _load(name: str):
    return json.loads((CASES / name).read_text())


# --- pass@k -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _load("pass_at_k.json"), ids=lambda c: c["name"])
def test_pass_at_k_table(case):
    got = pass_at_k(case["n"], case["c"], case["k"])
    assert got.shape == ()
    assert got.item() == pytest.approx(case["expected"], abs=1e-12)


def _codex_reference(n: int, c: int, k: int) -> float:
    """Chen et al. 2021, exact: 1 - C(n-c, k) / C(n, k) with Python's big integers."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _codex_numpy(n: int, c: int, k: int) -> float:
    """The numpy form printed in the Codex paper."""
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def test_pass_at_k_matches_codex_reference_on_100k_random_triples():
    rng = np.random.default_rng(2021)
    num = 100_000
    n = rng.integers(1, 301, size=num)
    c = (rng.random(num) * (n + 1)).astype(np.int64)
    k = 1 + (rng.random(num) * n).astype(np.int64)
    got = pass_at_k(n, c, k)
    want = np.array(
        [_codex_reference(a, b, kk) for a, b, kk in zip(n.tolist(), c.tolist(), k.tolist())]
    )
    assert got.shape == (num,)
    assert np.max(np.abs(got - want)) <= 1e-12
    # Exactly 1.0 (not 1 - tiny) wherever n - c < k.
    assert np.all(got[(n - c) < k] == 1.0)


def test_pass_at_k_matches_codex_numpy_form_on_large_n():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 2049))
        c = int(rng.integers(0, n + 1))
        k = int(rng.integers(1, n + 1))
        assert pass_at_k(n, c, k).item() == pytest.approx(_codex_numpy(n, c, k), abs=1e-12)


def test_pass_at_k_broadcasts_k_and_keeps_shape():
    got = pass_at_k(np.full((2, 3), 8), np.array([[0, 1, 2], [3, 8, 5]]), 2)
    assert got.shape == (2, 3)
    assert got[1, 1] == 1.0 and got[0, 0] == 0.0


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (4, 1, 5, "k must be <= num_samples"),
        (4, 1, 0, "k must be >= 1"),
        (4, 5, 1, "num_correct must be <= num_samples"),
        (4, -1, 1, "num_correct must be >= 0"),
        ([4, 4, 2], [0, 0, 0], 3, "problem 2"),
        (4.5, 1, 1, "whole numbers"),
    ],
)
def test_pass_at_k_rejects_bad_input_naming_it(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)


def test_pass_at_k_curve_default_ks_and_values():
    curve = pass_at_k_curve([16, 16], [0, 4])
    assert list(curve) == [1, 2, 4, 8, 16]
    assert curve[1].tolist() == [0.0, 0.25]
    assert curve[16].tolist() == [0.0, 1.0]
    assert list(pass_at_k_curve([10, 12], [1, 1])) == [1, 2, 4, 8, 10]


@pytest.mark.parametrize(
    ("n", "ks"), [(1, [1]), (2, [1, 2]), (5, [1, 2, 4, 5]), (64, [1, 2, 4, 8, 16, 32, 64])]
)
def test_default_ks(n, ks):
    assert default_ks(n) == ks


# --- pass^k, G-Pass@k, mG-Pass@k ----------------------------------------------------------


@pytest.mark.parametrize("case", _load("pass_hat_k.json"), ids=lambda c: c["name"])
def test_pass_hat_k_table(case):
    got = pass_hat_k(case["n"], case["c"], case["k"])
    assert got.shape == ()
    assert got.item() == pytest.approx(case["expected"], abs=1e-12)


@pytest.mark.parametrize("case", _load("g_pass_at_k.json"), ids=lambda c: c["name"])
def test_g_pass_at_k_table(case):
    got = g_pass_at_k(case["n"], case["c"], case["k"], tau=case["tau"])
    assert got.shape == ()
    assert got.item() == pytest.approx(case["expected"], abs=1e-12)


@pytest.mark.parametrize("case", _load("mg_pass_at_k.json"), ids=lambda c: c["name"])
def test_mg_pass_at_k_table(case):
    got = mg_pass_at_k(case["n"], case["c"], case["k"])
    assert got.shape == ()
    assert got.item() == pytest.approx(case["expected"], abs=1e-12)


def _hypergeometric_tail(n: int, c: int, k: int, m: int) -> float:
    """P(at least m of k drawn without replacement are correct), in exact integers."""
    top = sum(math.comb(c, j) * math.comb(n - c, k - j) for j in range(m, min(c, k) + 1))
    return top / math.comb(n, k)


def _random_triples(seed: int, num: int, largest: int):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, largest + 1, size=num)
    c = (rng.random(num) * (n + 1)).astype(np.int64)
    k = 1 + (rng.random(num) * n).astype(np.int64)
    return n, c, k


def test_pass_hat_k_is_exact_binomial_ratio_on_random_triples():
    n, c, k = _random_triples(11, 20_000, 300)
    want = [math.comb(b, kk) / math.comb(a, kk) for a, b, kk in zip(*(x.tolist() for x in (n, c, k)))]
    got = pass_hat_k(n, c, k)
    assert np.max(np.abs(got - np.array(want))) <= 1e-12
    assert np.all(got[c < k] == 0.0) and np.all(got[c == n] == 1.0)


@pytest.mark.parametrize("tau", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
def test_g_pass_at_k_is_the_exact_hypergeometric_tail(tau):
    n, c, k = _random_triples(int(tau * 100), 3_000, 120)
    got = g_pass_at_k(n, c, k, tau=tau)
    want = [_hypergeometric_tail(a, b, kk, max(math.ceil(round(tau * kk, 9)), 1))
            for a, b, kk in zip(n.tolist(), c.tolist(), k.tolist())]
    assert np.max(np.abs(got - np.array(want))) <= 1e-12


def test_g_pass_at_k_at_its_ends_is_pass_at_k_and_pass_hat_k():
    """A threshold small enough that one correct sample passes (ceil(tau k) = 1) is pass@k;
    tau = 1 (all k correct) is pass^k."""
    n, c, k = _random_triples(5, 5_000, 200)
    small = g_pass_at_k(n, c, k, tau=1e-6)  # ceil(1e-6 * k) = 1 for every k <= 200
    assert np.max(np.abs(small - pass_at_k(n, c, k))) <= 1e-12
    assert np.max(np.abs(g_pass_at_k(n, c, k, tau=1.0) - pass_hat_k(n, c, k))) <= 1e-12
    # Between them, whatever tau: pass^k <= G-Pass@k <= pass@k.
    middle = g_pass_at_k(n, c, k, tau=0.5)
    assert np.all(middle <= pass_at_k(n, c, k) + 1e-12)
    assert np.all(middle >= pass_hat_k(n, c, k) - 1e-12)


def test_mg_pass_at_k_is_the_mean_of_g_pass_over_the_upper_half_of_thresholds():
    n, c, k = _random_triples(9, 400, 60)
    for a, b, kk, got in zip(n, c, k, mg_pass_at_k(n, c, k)):
        terms = [_hypergeometric_tail(int(a), int(b), int(kk), i)
                 for i in range(math.ceil(kk * 0.5) + 1, kk + 1)]
        assert got == pytest.approx(2.0 * sum(terms) / kk, abs=1e-12)


def test_pass_hat_and_g_pass_broadcast_and_keep_shape():
    n, c = np.full((2, 3), 8), np.array([[0, 1, 2], [3, 8, 5]])
    for metric in (pass_hat_k, g_pass_at_k, mg_pass_at_k):
        got = metric(n, c, 2)
        assert got.shape == (2, 3)
        assert got[0, 0] == 0.0 and got[1, 1] == 1.0  # no sample correct; every sample correct
    # k broadcasts too: 2 of 8 with 4 right at tau 0.5 is pass@2 = 1 - C(4,2)/C(8,2); k = n is 1.
    assert g_pass_at_k([8, 8], [4, 4], [2, 8]).tolist() == pytest.approx([1 - 6 / 28, 1.0],
                                                                         abs=1e-12)


@pytest.mark.parametrize("metric", [pass_hat_k, g_pass_at_k, mg_pass_at_k])
@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [(4, 1, 5, "k must be <= num_samples"), (4, 5, 1, "num_correct must be <= num_samples"),
     ([4, 4, 2], [0, 0, 0], 3, "problem 2")],
)
def test_pass_hat_and_g_pass_reject_bad_counts_naming_them(metric, n, c, k, message):
    with pytest.raises(ValueError, match=message):
        metric(n, c, k)


@pytest.mark.parametrize("tau", [-0.1, 1.5])
def test_g_pass_at_k_rejects_a_threshold_outside_0_1(tau):
    with pytest.raises(ValueError, match=r"tau must be in \[0, 1\]"):
        g_pass_at_k(4, 2, 2, tau=tau)


# --- best-of-k ----------------------------------------------------------------------------


def _best_of_k_brute(scores, k):
    subsets = list(itertools.combinations(scores, k))
    return sum(max(s) for s in subsets) / len(subsets)


def test_best_of_k_matches_brute_force_enumeration():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        # Include ties: scores from a small set half of the time.
        scores = rng.integers(0, 3, n) / 2 if rng.random() < 0.5 else rng.normal(size=n)
        for k in range(1, n + 1):
            assert best_of_k(scores, k).item() == pytest.approx(
                _best_of_k_brute(scores.tolist(), k), abs=1e-12
            )


@pytest.mark.parametrize(
    ("scores", "k", "expected"),
    [
        ([0.0, 0.5, 1.0], 1, 0.5),
        ([0.0, 0.5, 1.0], 2, 5 / 6),
        ([0.0, 0.5, 1.0], 3, 1.0),
        ([1.0, 0.0, 0.0, 0.0], 2, 0.5),
        ([0.3], 1, 0.3),
    ],
)
def test_best_of_k_table(scores, k, expected):
    assert best_of_k(scores, k).item() == pytest.approx(expected, abs=1e-12)


def test_best_of_k_is_stable_for_large_n():
    # C(4096, 2048) overflows floats; the ratio weights must not.
    scores = np.linspace(0.0, 1.0, 4096)
    for k in (1, 64, 2048, 4096):
        got = best_of_k(scores, k).item()
        assert math.isfinite(got)
        # E[max of k uniform-ish order statistics] over an even grid = k(n+1)/(k+1) th grid point.
        assert got == pytest.approx((k * 4097 / (k + 1) - 1) / 4095, abs=1e-9)


def test_best_of_k_curve_equals_pointwise_and_batches_rows():
    rng = np.random.default_rng(0)
    scores = rng.random((5, 12))
    curve = best_of_k_curve(scores)
    assert list(curve) == [1, 2, 4, 8, 12]
    for k, values in curve.items():
        np.testing.assert_allclose(values, best_of_k(scores, k), atol=1e-12)
    np.testing.assert_allclose(curve[1], scores.mean(axis=1), atol=1e-12)


@pytest.mark.parametrize(
    ("scores", "k", "message"),
    [([1.0, np.nan], 1, "NaN"), ([1.0, 2.0], 3, r"k must be"), ([], 1, "at least one")],
)
def test_best_of_k_rejects_bad_input(scores, k, message):
    with pytest.raises(ValueError, match=message):
        best_of_k(scores, k)


# --- maj@k --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _load("maj_at_k.json"), ids=lambda c: c["name"])
def test_maj_at_k_table(case):
    got = maj_at_k(case["outcomes"], case["correct"], case["k"])
    assert got.item() == pytest.approx(case["expected"], abs=1e-12)


def _maj_brute(outcomes, correct, k):
    """Exact expected maj@k over all k-subsets with the documented rules: the plurality of
    outcomes other than None wins, a tie is a uniform tie-break, an outcome is right with the
    mean `correct` of its drawn samples."""
    values = []
    for subset in itertools.combinations(range(len(outcomes)), k):
        counts = Counter(outcomes[i] for i in subset if outcomes[i] is not None)
        if not counts:
            values.append(0.0)
            continue
        top = max(counts.values())
        tied = [o for o, n in counts.items() if n == top]
        truth = {o: np.mean([correct[i] for i in subset if outcomes[i] == o]) for o in tied}
        values.append(sum(truth.values()) / len(tied))
    return float(np.mean(values))


def test_maj_at_k_none_heavy_problem_by_hand():
    # The audit's problem: three samples without an answer and one correct "7". The vote is
    # right exactly when "7" is drawn: maj@k = P(drawn) = k / 4. 32 random draws gave
    # maj@1 = 0.344 > pass@1 = 0.25 and maj@2 = 0.625.
    outcomes, correct = [None, None, None, "7"], [False, False, False, True]
    got = {k: float(v) for k, v in maj_at_k_curve(outcomes, correct, [1, 2, 3, 4]).items()}
    assert got == pytest.approx({1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0}, abs=1e-15)
    assert got[1] <= float(pass_at_k(4, 1, 1))


def test_maj_at_k_two_two_tie_by_hand():
    # "7" x2 right, "3" x2 wrong. k=2: of the 6 pairs, {7,7} scores 1, {3,3} 0, and the 4
    # mixed pairs tie 1-1 and score 1/2: (1 + 0 + 4 * 0.5) / 6 = 1/2. k=3: every triple is
    # 2-1, and "7" has the 2 in half of them: 1/2. k=4: the 2-2 tie, 1/2.
    outcomes, correct = ["7", "7", "3", "3"], [True, True, False, False]
    got = maj_at_k_curve(outcomes, correct, [1, 2, 3, 4])
    assert {k: float(v) for k, v in got.items()} == pytest.approx(
        {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5}, abs=1e-15
    )
    # Three of "7" (right) against one "3": k=2 scores 1 on the 3 pairs {7,7} and 1/2 on the
    # 3 mixed ones: 0.75; k=3: 1 always (the triple holds two "7"s at least).
    three = maj_at_k_curve(["7", "7", "7", "3"], [True, True, True, False], [2, 3])
    assert float(three[2]) == pytest.approx(0.75, abs=1e-15)
    assert float(three[3]) == pytest.approx(1.0, abs=1e-15)


def test_maj_at_1_is_the_share_of_correct_samples_with_an_outcome_exactly():
    rng = np.random.default_rng(3)
    codes = rng.integers(-1, 4, (200, 12))
    correct = rng.random((200, 12)) < 0.5
    expected = ((codes >= 0) & correct).sum(axis=1) / 12
    np.testing.assert_array_equal(maj_at_k(codes, correct, 1), expected)
    assert np.all(maj_at_k(codes, correct, 1) <= pass_at_k(12, correct.sum(axis=1), 1) + 1e-15)


def test_maj_at_k_equals_enumeration_of_every_subset():
    # Random small problems, None included, correctness sometimes mixed within an outcome
    # (a non-deterministic verifier), every k from 1 to n.
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.integers(2, 10))
        pool = [None, "a", "b", "c", "d"][: int(rng.integers(2, 6))]
        outcomes = [pool[i] for i in rng.integers(0, len(pool), n)]
        correct = [bool(f) for f in rng.random(n) < 0.4]
        got = maj_at_k_curve(outcomes, correct, range(1, n + 1))
        for k in range(1, n + 1):
            assert float(got[k]) == pytest.approx(_maj_brute(outcomes, correct, k), abs=1e-13), (
                outcomes, correct, k,
            )


def test_maj_at_k_is_exact_for_many_problems_at_once():
    # Vectorised over problems, with repeated problems computed once: the same as one at a time.
    rng = np.random.default_rng(11)
    codes = rng.integers(-1, 3, (300, 9))
    correct = (codes == 0) | (rng.random((300, 9)) < 0.1)
    together = maj_at_k_curve(codes, correct, [2, 3, 5, 8])
    for p in range(0, 300, 37):
        alone = maj_at_k_curve(codes[p], correct[p], [2, 3, 5, 8])
        for k in (2, 3, 5, 8):
            assert float(together[k][p]) == pytest.approx(float(alone[k]), abs=1e-15)
    outcomes = [None if c < 0 else str(c) for c in codes[5]]
    assert float(together[5][5]) == pytest.approx(
        _maj_brute(outcomes, [bool(f) for f in correct[5]], 5), abs=1e-13
    )


def test_maj_at_k_stays_finite_and_exact_past_float_binomials():
    # C(1100, 550) ~ 2^1094 overflows a float (past 2^1024); the scaled polynomials do not.
    # One right outcome of 560 samples against 540 wrong of another, k = 550: the right one
    # wins when it draws more than 275 of the 550, and half the time when it draws 275 (a
    # tie). Against that count in exact integers (0.726...: not a value that rounding to 0 or
    # 1 would reach). It was 1,200 against 800 at k = 1,000 (a value of 1 - 1e-30, 2.5x the
    # CPU of this one).
    right, wrong, k = 560, 540, 550
    outcomes = np.array([0] * right + [1] * wrong)
    correct = outcomes == 0
    wins = sum(math.comb(right, x) * math.comb(wrong, k - x) for x in range(k // 2 + 1, k + 1))
    ties = math.comb(right, k // 2) * math.comb(wrong, k // 2)
    exact = float(Fraction(2 * wins + ties, 2 * math.comb(right + wrong, k)))
    assert 0.7 < exact < 0.75
    got = float(maj_at_k(outcomes, correct, k, exact_work_limit=math.inf))
    assert got == pytest.approx(exact, rel=1e-12)
    # Small k against the two-outcome formula: the right one draws 3, 4 or 5 of the k = 5.
    k = 5
    exact = sum(math.comb(right, x) * math.comb(wrong, k - x) for x in range(3, 6)) / math.comb(
        right + wrong, k
    )
    assert float(maj_at_k(outcomes, correct, k)) == pytest.approx(exact, rel=1e-12)


def _skewed_outcomes(num_problems: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    u = rng.random((num_problems, n))
    codes = (u * u * rng.integers(2, 12, size=(num_problems, 1))).astype(np.int64)
    codes[rng.random((num_problems, n)) < 0.1] = -1
    return codes, codes == rng.integers(0, 3, size=(num_problems, 1))


def test_maj_at_k_past_the_work_limit_is_a_seeded_estimate_of_the_exact_value():
    codes, correct = _skewed_outcomes(400, 24)
    ks = [1, 3, 8, 24]
    exact, none = maj_at_k_estimates(codes, correct, ks, exact_work_limit=math.inf)
    drawn, resampled = maj_at_k_estimates(codes, correct, ks, exact_work_limit=0,
                                          num_resamples=200, seed=3)
    assert none == [] and resampled == [3, 8]  # k = 1 and k = n are exact at any limit
    for k in (1, 24):
        np.testing.assert_array_equal(drawn[k], exact[k])
    bound = 0.5 / math.sqrt(200 * 400)  # the documented bound on the mean's standard error
    for k in (3, 8):
        assert not np.array_equal(drawn[k], exact[k])
        assert abs(drawn[k].mean() - exact[k].mean()) < 4 * bound
    again, _ = maj_at_k_estimates(codes, correct, [8], exact_work_limit=0, num_resamples=200,
                                  seed=3)
    np.testing.assert_array_equal(again[8], drawn[8])  # seeded per k, whatever other ks
    other, _ = maj_at_k_estimates(codes, correct, [8], exact_work_limit=0, num_resamples=200,
                                  seed=4)
    assert not np.array_equal(other[8], drawn[8])


def test_maj_at_k_switches_to_draws_only_where_the_exact_work_passes_the_limit():
    codes, correct = _skewed_outcomes(50, 64)
    tables = _distinct_vote_tables(codes * 2 + correct)
    work = {k: _exact_vote_work(tables[0], k) for k in (4, 16)}
    assert work[4] < work[16]
    limit = (work[4] + work[16]) / 2
    _, resampled = maj_at_k_estimates(codes, correct, [4, 16], exact_work_limit=limit)
    assert resampled == [16]


def test_maj_at_k_rejects_a_number_of_draws_below_one():
    with pytest.raises(ValueError, match="num_resamples must be >= 1"):
        maj_at_k(["a", "b"], [True, False], 1, num_resamples=0)


def test_maj_at_k_curve_matches_maj_at_k_and_defaults_to_the_ks():
    outcomes = [["a", "b", "a", None], ["c", "c", "d", "d"]]
    correct = [[True, False, True, False], [False, False, True, True]]
    curve = maj_at_k_curve(outcomes, correct)
    assert list(curve) == [1, 2, 4]
    for k, values in curve.items():
        np.testing.assert_array_equal(values, maj_at_k(outcomes, correct, k))


@pytest.mark.parametrize(
    ("outcomes", "correct", "k", "message"),
    [
        (["a", "b"], [True], 1, "shape"),
        (["a", "b"], [True, False], 3, "k must be"),
        (["a", "b"], [True, False], 0, "k must be"),
        ([True, False], [True, False], 1, "not booleans"),
    ],
)
def test_maj_at_k_rejects_bad_input(outcomes, correct, k, message):
    with pytest.raises(ValueError, match=message):
        maj_at_k(outcomes, correct, k)


def test_outcome_codes_maps_none_and_nan_to_minus_one():
    codes = outcome_codes(np.array([["x", None, float("nan"), "x", "y"]], dtype=object))
    assert codes[0, 1] == codes[0, 2] == -1
    assert codes[0, 0] == codes[0, 3] != codes[0, 4]
    np.testing.assert_array_equal(outcome_codes(np.array([3, -1, 3])), [3, -1, 3])


# --- chance levels ------------------------------------------------------------------------


@pytest.mark.parametrize("case", _load("chance.json"), ids=lambda c: f"m={c['m']},k={c['k']}")
def test_chance_table(case):
    assert chance_pass_at_k(case["m"], case["k"]).item() == pytest.approx(case["chance"], abs=1e-12)
    corrected = chance_corrected_pass_at_k(case["p"], case["m"], case["k"]).item()
    if case["corrected"] is None:
        assert math.isnan(corrected)
    else:
        assert corrected == pytest.approx(case["corrected"], abs=1e-12)


def test_random_guessing_pass_at_k_matches_chance_level():
    # Simulate a uniform guesser on 4 options: its unbiased pass@k is the chance level.
    rng = np.random.default_rng(0)
    n, m = 64, 4
    correct = rng.integers(0, m, size=(20_000, n)) == 0
    for k in (1, 2, 8):
        est = pass_at_k(n, correct.sum(axis=1), k).mean()
        assert est == pytest.approx(chance_pass_at_k(m, k).item(), abs=0.01)
        assert chance_corrected_pass_at_k(est, m, k).item() == pytest.approx(0.0, abs=0.03)


def test_outcome_codes_reads_a_float_nan_among_strings_as_nothing_extracted():
    # np.asarray(["a", nan]) is a str array holding the text 'nan': it was an outcome, so
    # maj@4 of "7" against three NaN read 0.0 and the problem had 2 distinct outcomes.
    assert outcome_codes(["a", math.nan, "a"]).tolist() == [0, -1, 0]
    assert float(maj_at_k(["7", math.nan, math.nan, math.nan], [True, False, False, False], 4)) == 1.0
    assert outcome_codes(["a", "nan"]).tolist() == [0, 1]  # the text "nan" is an answer


def test_maj_at_k_curve_warns_when_its_values_are_draws():
    codes, correct = _skewed_outcomes(20, 12)
    with pytest.warns(UserWarning, match=r"maj@k at k = 4 is the mean of 32 seeded draws"):
        maj_at_k_curve(codes, correct, [1, 4, 12], exact_work_limit=0)
