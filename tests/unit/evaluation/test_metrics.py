"""pass@k, best-of-k, maj@k and chance levels against references and hand-worked tables."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from breadth.evaluation.metrics import (
    best_of_k,
    best_of_k_curve,
    chance_corrected_pass_at_k,
    chance_pass_at_k,
    default_ks,
    maj_at_k,
    outcome_codes,
    pass_at_k,
    pass_at_k_curve,
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
    got = maj_at_k(case["outcomes"], case["correct"], case["k"], num_resamples=4, seed=0)
    assert got.item() == pytest.approx(case["expected"], abs=1e-12)


def _maj_brute(outcomes, correct, k):
    """Exact expected maj@k over all k-subsets with the documented tie rule."""
    values = []
    for subset in itertools.combinations(range(len(outcomes)), k):
        counts = Counter(outcomes[i] for i in subset if outcomes[i] is not None)
        if not counts:
            values.append(0.0)
            continue
        top = max(counts.values())
        tied = [o for o, n in counts.items() if n == top]
        truth = {outcomes[i]: correct[i] for i in subset}
        values.append(sum(truth[o] for o in tied) / len(tied))
    return float(np.mean(values))


def _maj_many_draws(outcomes, correct, k, seed):
    """maj@k averaged over 20,000 draws: the one problem repeated in 2,000 rows x 10 resamples
    (the draws are vectorised over rows, so this is much faster than 20,000 resamples)."""
    rows = np.tile(np.asarray(outcomes, dtype=object), (2_000, 1))
    flags = np.tile(np.asarray(correct), (2_000, 1))
    return float(maj_at_k(rows, flags, k, num_resamples=10, seed=seed).mean())


def test_maj_at_k_converges_to_exact_enumeration():
    outcomes = ["4", "4", "5", "5", "5", None, "6", "4"]
    correct = [o == "4" for o in outcomes]
    for k in (1, 2, 3, 5, 7):
        exact = _maj_brute(outcomes, correct, k)
        got = _maj_many_draws(outcomes, correct, k, seed=1)
        assert got == pytest.approx(exact, abs=0.01), k


def test_maj_at_k_full_vote_is_exact_and_vectorised():
    outcomes = [["a", "a", "b"], ["a", "b", "c"], [None, None, "z"]]
    correct = [[True, True, False], [False, True, False], [False, False, False]]
    got = maj_at_k(outcomes, correct, 3)
    np.testing.assert_allclose(got, [1.0, 1 / 3, 0.0])


def test_maj_at_k_is_seeded_and_deterministic():
    rng = np.random.default_rng(5)
    codes = rng.integers(-1, 4, size=(50, 16))
    correct = codes == 0
    a = maj_at_k(codes, correct, 5, num_resamples=8, seed=11)
    b = maj_at_k(codes, correct, 5, num_resamples=8, seed=11)
    c = maj_at_k(codes, correct, 5, num_resamples=8, seed=12)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (50,) and np.all((a >= 0) & (a <= 1))


def test_maj_at_k_large_k_draws_are_uniform_subsets():
    # k > n/2 shuffles the complement: check against enumeration on a small case.
    outcomes = ["1", "1", "2", "3", "3", "3"]
    correct = [True, True, False, False, False, False]
    exact = _maj_brute(outcomes, correct, 5)
    assert _maj_many_draws(outcomes, correct, 5, seed=2) == pytest.approx(exact, abs=0.01)


def test_maj_at_k_k1_equals_mean_correct_over_answered_samples():
    outcomes = ["a", "b", "a", "c"]
    correct = [True, False, True, False]
    assert _maj_many_draws(outcomes, correct, 1, seed=0) == pytest.approx(0.5, abs=0.01)


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
