import math

import numpy as np
import pytest

from breadth.rewards.passk import group_passk, passk_advantages

from ._cases import params


@pytest.mark.parametrize("case", params("passk"))
def test_passk_advantages_table(case):
    got = passk_advantages(case["correct"], case["k"])
    np.testing.assert_allclose(got, case["expected"], atol=case["tol"] or 1e-12, rtol=0)


@pytest.mark.parametrize("case", params("passk", "errors"))
def test_passk_advantages_rejects(case):
    with pytest.raises(ValueError, match=case["match"]):
        passk_advantages(case["correct"], case["k"])


def test_issue_check_values_R():
    # The paper's check (docs/design/algorithms.md): n=8, c=3, k=4 gives R=0.92857.
    assert group_passk([1, 1, 1, 0, 0, 0, 0, 0], 4) == pytest.approx(0.92857, abs=1e-5)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 16])
def test_group_mean_is_zero_and_matches_closed_form(n):
    # The mean-zero property is what makes scale_rewards="none" give advantage == A exactly.
    for k in range(1, n + 1):
        for c in range(n + 1):
            correct = [1] * c + [0] * (n - c)
            advantages = passk_advantages(correct, k)
            assert advantages.mean() == pytest.approx(0.0, abs=1e-12)
            R = 1 - math.comb(n - c, k) / math.comb(n, k)
            if 0 < R < 1:
                assert advantages[0] == pytest.approx((1 - R) / math.sqrt(R * (1 - R)))


def test_k1_equals_grpo_standardised_correctness():
    correct = np.array([1, 0, 1, 0, 0, 1, 0, 0], dtype=float)
    expected = (correct - correct.mean()) / correct.std()
    np.testing.assert_allclose(passk_advantages(correct, 1), expected, atol=1e-12)
