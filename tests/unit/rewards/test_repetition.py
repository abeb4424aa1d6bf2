import numpy as np
import pytest

from breadth.rewards.repetition import batch_repetition_penalty

from ._cases import params


@pytest.mark.parametrize("case", params("repetition"))
def test_batch_repetition_penalty_table(case):
    got = batch_repetition_penalty(case["outcomes"], case["coef"])
    np.testing.assert_allclose(got, case["expected"], atol=1e-12)
    assert got.shape == (len(case["outcomes"]),)


def test_penalty_is_nonnegative_and_matches_pairwise_definition():
    rng = np.random.default_rng(0)
    for _ in range(50):
        outcomes = [None if v == 0 else str(v) for v in rng.integers(0, 4, size=8)]
        got = batch_repetition_penalty(outcomes, 0.3)
        expected = [
            0.3 / 8 * sum(outcomes[j] == outcomes[i] for j in range(8) if j != i) for i in range(8)
        ]
        np.testing.assert_allclose(got, expected, atol=1e-12)
        assert (got >= 0).all()


def test_negative_coef_rejected():
    with pytest.raises(ValueError, match="coef must be >= 0"):
        batch_repetition_penalty(["a"], -0.1)
