"""Seeded bootstrap over problems."""

from __future__ import annotations

import math

import numpy as np
import pytest

from breadth.stats.bootstrap import (
    ConfidenceInterval,
    bootstrap_ci,
    bootstrap_means,
    bootstrap_weights,
    hierarchical_bootstrap_ci,
    hierarchical_bootstrap_means,
    percentile_interval,
    widened_for_few_seeds,
)


def test_weights_are_resample_counts_and_seeded():
    w = bootstrap_weights(7, 100, seed=3)
    assert w.shape == (100, 7)
    assert np.all(w.sum(axis=1) == 7) and np.all(w >= 0)
    np.testing.assert_array_equal(w, bootstrap_weights(7, 100, seed=3))
    assert not np.array_equal(w, bootstrap_weights(7, 100, seed=4))


@pytest.mark.parametrize(
    ("values", "weights", "expected"),
    [
        ([1.0, 3.0], [[2, 0], [1, 1], [0, 2]], [1.0, 2.0, 3.0]),
        ([1.0, np.nan], [[1, 1], [0, 2]], [1.0, np.nan]),  # NaN problems are left out
    ],
)
def test_bootstrap_means_table(values, weights, expected):
    got = bootstrap_means(values, np.asarray(weights, dtype=float))
    np.testing.assert_allclose(got, expected)


def test_bootstrap_means_of_a_matrix_share_resamples():
    values = np.array([[0.0, 1.0], [1.0, 1.0]])
    got = bootstrap_means(values, np.array([[2.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_allclose(got, [[0.0, 1.0], [1.0, 1.0]])


def test_matrix_columns_with_and_without_nan_match_their_own_means():
    rng = np.random.default_rng(3)
    values = rng.random((200, 4))
    values[rng.random(200) < 0.2, 1] = np.nan  # one column with gaps, three without
    weights = bootstrap_weights(200, 40, seed=1)
    together = bootstrap_means(values, weights)
    for column in range(4):
        valid = ~np.isnan(values[:, column])
        expected = (weights[:, valid] @ values[valid, column]) / weights[:, valid].sum(axis=1)
        np.testing.assert_allclose(together[:, column], expected, rtol=1e-12)


def test_ci_brackets_the_mean_and_shrinks_with_more_problems():
    rng = np.random.default_rng(0)
    small = bootstrap_ci(rng.random(50), num_resamples=400, seed=1)
    large = bootstrap_ci(rng.random(5_000), num_resamples=400, seed=1)
    for ci in (small, large):
        assert ci.low <= ci.estimate <= ci.high
    assert (large.high - large.low) < (small.high - small.low) / 5


def test_ci_of_constant_values_is_a_point_and_deterministic():
    ci = bootstrap_ci([0.25] * 10, num_resamples=50, seed=0)
    assert (ci.estimate, ci.low, ci.high) == (0.25, 0.25, 0.25)
    assert bootstrap_ci([0.0, 1.0, 1.0], seed=5) == bootstrap_ci([0.0, 1.0, 1.0], seed=5)


def test_ci_of_all_nan_is_nan_and_bad_confidence_raises():
    ci = bootstrap_ci([np.nan, np.nan])
    assert all(math.isnan(x) for x in (ci.estimate, ci.low, ci.high))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0], confidence=1.0)
    with pytest.raises(ValueError, match="at least one problem"):
        bootstrap_weights(0)


def test_percentile_interval_and_to_dict():
    low, high = percentile_interval(np.arange(101, dtype=float), 0.9)
    assert (low, high) == (pytest.approx(5.0), pytest.approx(95.0))
    assert ConfidenceInterval(0.5, 0.4, 0.6).to_dict() == {"estimate": 0.5, "low": 0.4, "high": 0.6}


def test_coverage_is_near_nominal():
    # 95% intervals for the mean of Bernoulli(0.3) problems cover 0.3 in roughly 95% of trials.
    rng = np.random.default_rng(11)
    hits = 0
    for trial in range(200):
        values = (rng.random(200) < 0.3).astype(float)
        ci = bootstrap_ci(values, num_resamples=300, seed=trial)
        hits += ci.low <= 0.3 <= ci.high
    assert 0.88 <= hits / 200 <= 0.99


def test_widened_for_few_seeds_scales_by_sqrt_s_over_s_minus_1_and_stays_in_range():
    # Two seeds: the half-widths grow by sqrt(2); one seed: unchanged; the clip holds [0, 1].
    low, high = widened_for_few_seeds(np.array([0.5]), np.array([0.4]), np.array([0.55]), 2,
                                      np.array([0.0]), np.array([1.0]))
    assert low[0] == pytest.approx(0.5 - 0.1 * np.sqrt(2)) and high[0] == pytest.approx(
        0.5 + 0.05 * np.sqrt(2))
    same = widened_for_few_seeds(np.array([0.5]), np.array([0.4]), np.array([0.55]), 1,
                                 np.array([0.0]), np.array([1.0]))
    assert same[0][0] == pytest.approx(0.4) and same[1][0] == pytest.approx(0.55)
    clipped = widened_for_few_seeds(np.array([0.95]), np.array([0.9]), np.array([0.99]), 2,
                                    np.array([0.0]), np.array([1.0]))
    assert clipped[1][0] == 1.0


def test_hierarchical_ci_with_two_seeds_is_the_widened_percentile_interval():
    values = np.random.default_rng(3).random((2, 40))
    ci = hierarchical_bootstrap_ci(values, num_resamples=300, seed=1)
    means = hierarchical_bootstrap_means(values, 300, 1)
    low, high = percentile_interval(means)
    assert ci.high - ci.low == pytest.approx(np.sqrt(2) * (high - low))


def test_hierarchical_seed_slots_draw_their_problems_independently():
    # Each seed prepares its own problem sample, so each drawn slot resamples problems on its
    # own: four seeds with the same per-problem values average four independent problem
    # resamples (about 1/4 of one seed's variance). Slots sharing one problem draw would
    # keep the whole one-seed variance.
    row = np.random.default_rng(5).random(50)
    one_seed = hierarchical_bootstrap_means(row[None, :], 2000, 0)
    four_seeds = hierarchical_bootstrap_means(np.tile(row, (4, 1)), 2000, 0)
    assert np.var(four_seeds) / np.var(one_seed) == pytest.approx(0.25, abs=0.1)
