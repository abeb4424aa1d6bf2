import numpy as np
import pytest

from breadth.rewards.unlikeliness import likelihood_ranks, unlikeliness_reward

from ._cases import params


@pytest.mark.parametrize("case", params("unlikeliness"))
def test_unlikeliness_table(case):
    got = unlikeliness_reward(case["rewards"], case["logprobs"], case["beta"])
    np.testing.assert_allclose(got, case["expected"], atol=1e-12)


def test_ranks_average_ties():
    assert likelihood_ranks([-1.0, -3.0, -1.0, -0.5]).tolist() == [1.5, 0.0, 1.5, 3.0]


@pytest.mark.parametrize(
    ("rewards", "logprobs", "beta", "match"),
    [
        ([1, 0], [-1.0], 0.25, "equal length"),
        ([1], [-1.0], 1.5, "beta must be in"),
        ([1, 1], [-1.0, float("nan")], 0.25, "finite"),
    ],
)
def test_unlikeliness_rejects(rewards, logprobs, beta, match):
    with pytest.raises(ValueError, match=match):
        unlikeliness_reward(rewards, logprobs, beta)
