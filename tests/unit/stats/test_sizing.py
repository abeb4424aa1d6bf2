import math

import numpy as np
import pytest

from breadth.stats.seed_interval import seed_t_interval
from breadth.stats.sizing import decisive_half_width, half_width, seeds_needed


def test_half_width_is_the_seed_t_intervals_own() -> None:
    # Three seeds' means 0.1, 0.3, 0.5: sd 0.2, and seed_t_interval's half-width by hand is
    # t(0.975, 2) * 0.2 / sqrt(3) = 4.3027 * 0.11547 = 0.4968.
    means = [[0.1], [0.3], [0.5]]
    interval = seed_t_interval(means)
    assert half_width(0.2, 3) == pytest.approx((interval.high - interval.low) / 2, rel=1e-9)
    assert half_width(0.2, 3) == pytest.approx(0.4968, abs=1e-4)


def test_a_family_widens_the_interval_as_bonferronis_first_step() -> None:
    # alpha 0.05 / 5 = 0.01: t(0.995, 9) = 3.2498 against t(0.975, 9) = 2.2622.
    assert half_width(1.0, 10, family_size=5) / half_width(1.0, 10) == pytest.approx(
        3.2498 / 2.2622, rel=1e-3)


def test_seeds_needed_is_the_first_count_below_delta() -> None:
    needed = seeds_needed(0.05, 0.04)
    assert needed is not None
    assert half_width(0.05, needed) < 0.04 <= half_width(0.05, needed - 1)
    assert seeds_needed(0.0, 0.01) == 2  # no spread at all: two seeds to have an interval
    assert seeds_needed(10.0, 0.01, max_seeds=50) is None


@pytest.mark.parametrize("sd,delta", [(math.nan, 0.1), (-1.0, 0.1), (0.1, 0.0)])
def test_bad_inputs_are_refused(sd: float, delta: float) -> None:
    with pytest.raises(ValueError):
        seeds_needed(sd, delta)


def _decided_share(truth: float, sd: float, delta: float, seeds: int, reps: int = 400) -> float:
    rng = np.random.default_rng(1)
    decided = 0
    for _ in range(reps):
        interval = seed_t_interval(rng.normal(truth, sd, size=(seeds, 1)))
        effect = interval.low > 0 or interval.high < 0
        no_effect = -delta < interval.low and interval.high < delta
        decided += effect or no_effect
    return decided / reps


def test_sizing_at_half_delta_decides_where_sizing_at_delta_does_not() -> None:
    # A null and a small true effect (inside delta): sized so the half-width at the true sd is
    # below delta / 2, nearly every interval is decided (only a sample sd well above the true one
    # widens it past the guarantee); sized at delta, many hold 0 and reach past +-delta.
    sd, delta = 0.03, 0.05
    at_half = seeds_needed(sd, decisive_half_width(delta))
    at_delta = seeds_needed(sd, delta)
    assert at_half is not None and at_delta is not None and at_half > at_delta
    for truth in (0.0, 0.01):
        assert _decided_share(truth, sd, delta, at_half) > 0.8
        assert _decided_share(truth, sd, delta, at_delta) < 0.5
