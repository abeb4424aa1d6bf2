import numpy as np
import pytest

from breadth.rewards.vector import set_level_vector_reward

VECTOR_CASES = [
    # (name, vectors, expected, atol): exact whenever the winner does not depend on the draw.
    ("identical_share_credit", [[1.0, 0.5], [1.0, 0.5], [1.0, 0.5]], [0.0, 0.0, 0.0], 1e-12),
    (
        "dominant_wins_every_draw",
        [[1.0, 1.0], [0.0, 0.0], [0.5, 0.5]],
        [2 / 3, -1 / 3, -1 / 3],
        1e-12,
    ),
    ("one_dimension_ties_split", [[0.2], [0.9], [0.9]], [-1 / 3, 1 / 6, 1 / 6], 1e-12),
    ("G1", [[0.3, 0.7]], [0.0], 1e-12),
    # Worse on average (0.5 < 0.6) yet best whenever w1 > 0.6: P = 0.4 under Dirichlet(1, 1).
    ("trade_off_credit", [[1.0, 0.0], [0.6, 0.6]], [-0.1, 0.1], 0.01),
    ("symmetric_trade_off", [[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0], 0.01),
]


@pytest.mark.parametrize(
    ("name", "vectors", "expected", "atol"), VECTOR_CASES, ids=[c[0] for c in VECTOR_CASES]
)
def test_set_level_vector_reward_table(name, vectors, expected, atol):
    got = set_level_vector_reward(np.array(vectors), 20000, 1.0, np.random.default_rng(0))
    np.testing.assert_allclose(got, expected, atol=atol)
    assert got.sum() == pytest.approx(0.0, abs=1e-12)  # mean-centred


def test_seeded_draws_are_reproducible():
    vectors = np.random.default_rng(1).random((8, 3))
    a = set_level_vector_reward(vectors, 64, 0.5, np.random.default_rng(7))
    b = set_level_vector_reward(vectors, 64, 0.5, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("vectors", "draws", "alpha", "match"),
    [
        ([1.0, 2.0], 4, 1.0, "G x D"),
        ([[1.0, float("nan")]], 4, 1.0, "finite"),
        ([[1.0]], 0, 1.0, "num_draws"),
        ([[1.0]], 4, 0.0, "alpha"),
    ],
)
def test_rejects_bad_input(vectors, draws, alpha, match):
    with pytest.raises(ValueError, match=match):
        set_level_vector_reward(np.array(vectors), draws, alpha, np.random.default_rng(0))
