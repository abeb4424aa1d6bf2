"""Every diversity metric against a hand-worked JSON table (cases/diversity.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from breadth.evaluation import diversity as div

TABLES = json.loads((Path(__file__).parent / "cases" / "diversity.json").read_text())


def _ids(cases):
    return [c.get("name", str(i)) for i, c in enumerate(cases)]


@pytest.mark.parametrize("case", TABLES["outcome_diversity"], ids=_ids(TABLES["outcome_diversity"]))
def test_outcome_diversity_table(case):
    outcomes = np.array(
        case["outcomes"],
        dtype=object
        if any(isinstance(o, str) or o is None for o in case["outcomes"])
        else np.int64,
    )
    d = div.outcome_diversity(outcomes)
    assert int(d.distinct) == case["distinct"]
    assert float(d.fraction) == pytest.approx(case["fraction"], abs=1e-12)
    assert float(d.entropy) == pytest.approx(case["entropy"], abs=1e-12)
    # The single-metric wrappers agree with the combined call.
    assert int(div.distinct_outcomes(outcomes)) == case["distinct"]
    assert float(div.distinct_outcome_fraction(outcomes)) == pytest.approx(
        case["fraction"], abs=1e-12
    )
    assert float(div.outcome_entropy(outcomes)) == pytest.approx(case["entropy"], abs=1e-12)


def test_outcome_diversity_is_vectorised_over_problems():
    same_length = [
        c
        for c in TABLES["outcome_diversity"]
        if len(c["outcomes"]) == 4 and all(isinstance(o, str) or o is None for o in c["outcomes"])
    ]
    matrix = np.array([c["outcomes"] for c in same_length], dtype=object)
    d = div.outcome_diversity(matrix)
    assert d.distinct.tolist() == [c["distinct"] for c in same_length]
    np.testing.assert_allclose(d.entropy, [c["entropy"] for c in same_length], atol=1e-12)


def test_outcome_codes_are_compared_within_rows_only():
    # The same global code in two rows is two problems' own answers, counted per row.
    d = div.outcome_diversity(np.array([[0, 0, 1], [0, 2, 2]]))
    assert d.distinct.tolist() == [2, 2]


@pytest.mark.parametrize("case", TABLES["distinct_classes"])
def test_distinct_classes_table(case):
    assert int(div.distinct_classes(case["class_ids"])) == case["expected"]


def test_distinct_classes_accepts_a_darling_partition_matrix_and_rejects_negative_labels():
    assert div.distinct_classes(np.array([[0, 0, 1], [0, 1, 2]])).tolist() == [2, 3]
    with pytest.raises(ValueError, match="every sample belongs to a class"):
        div.distinct_classes([0, -1])
    with pytest.raises(ValueError, match="integer labels"):
        div.distinct_classes(["a", "b"])


@pytest.mark.parametrize("case", TABLES["distinct_n"], ids=lambda c: f"{c['texts']}-n{c['n']}")
def test_distinct_n_table(case):
    assert div.distinct_n(case["texts"], case["n"]) == pytest.approx(case["expected"], abs=1e-12)


def test_distinct_n_on_token_ids_and_characters_and_bad_n():
    assert div.distinct_n([[1, 2, 1, 2]], 2) == pytest.approx(2 / 3)
    assert div.distinct_n(["abab"], 1, tokenize=list) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="n must be >= 1"):
        div.distinct_n(["a"], 0)


def test_distinct_n_bounds_runaway_texts():
    got = div.distinct_n(["w " * 1_000_000], 1, max_tokens_per_text=100)
    assert got == pytest.approx(1 / 100)


@pytest.mark.parametrize("case", TABLES["distinct_k"], ids=lambda c: f"{c['class_ids']}-k{c['k']}")
def test_distinct_k_table(case):
    assert div.distinct_k(case["class_ids"], case["k"]) == case["expected"]


@pytest.mark.parametrize("case", TABLES["utility_k"], ids=_ids(TABLES["utility_k"]))
def test_utility_k_table(case):
    got = div.utility_k(case["class_ids"], case["utilities"], case["k"], case["patience"])
    assert got == pytest.approx(case["expected"], abs=1e-12)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: div.distinct_k([0, 1], 3), "k must be in"),
        (lambda: div.utility_k([0, 1], [1.0, 1.0], 0), "k must be in"),
        (lambda: div.utility_k([0, 1], [1.0], 2), "one per generation"),
        (lambda: div.utility_k([0, 1], [1.0, 1.0], 2, patience=0.0), "patience"),
    ],
)
def test_novelty_metrics_reject_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_default_patience_is_noveltybench_value():
    assert div.DEFAULT_PATIENCE == 0.8


@pytest.mark.parametrize("case", TABLES["token_entropy"], ids=lambda c: str(c["entropies"]))
def test_token_entropy_table(case):
    mean = div.mean_token_entropy(case["entropies"])
    share = div.forking_token_share(case["entropies"], case["threshold"])
    for got, want in ((mean, case["mean"]), (share, case["forking_share"])):
        if want is None:
            assert math.isnan(got)
        else:
            assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("case", TABLES["entropy_threshold"], ids=lambda c: str(c["entropies"]))
def test_entropy_threshold_table(case):
    assert div.entropy_threshold(case["entropies"], case["quantile"]) == pytest.approx(
        case["expected"]
    )


def test_entropy_threshold_needs_tokens():
    with pytest.raises(ValueError, match="empty `entropy` column"):
        div.entropy_threshold([[], None])


def test_base_80th_percentile_threshold_gives_20_percent_forking_tokens():
    base = [np.arange(100, dtype=float).tolist()]
    threshold = div.entropy_threshold(base)  # default quantile 0.8
    assert div.forking_token_share(base, threshold) == pytest.approx(0.2, abs=0.011)


@pytest.mark.parametrize(
    "case", TABLES["embedding_diversity"], ids=_ids(TABLES["embedding_diversity"])
)
def test_embedding_diversity_table(case):
    assert div.embedding_diversity(case["embeddings"]) == pytest.approx(case["expected"], abs=1e-12)


def test_embedding_diversity_rejects_non_matrix():
    with pytest.raises(ValueError, match="samples, dims"):
        div.embedding_diversity([1.0, 2.0])


@pytest.mark.parametrize("case", TABLES["vendi_outcomes"], ids=_ids(TABLES["vendi_outcomes"]))
def test_vendi_outcomes_table(case):
    got = div.vendi_outcomes(np.array(case["outcomes"], dtype=object))
    assert float(got) == pytest.approx(case["expected"], abs=1e-12)
    # The exact-match kernel by eigenvalues agrees (answered samples only).
    answered = [o for o in case["outcomes"] if o is not None]
    if answered:
        kernel = np.equal.outer(np.array(answered, dtype=object), np.array(answered, dtype=object))
        assert div.vendi_score(kernel.astype(float)) == pytest.approx(case["expected"], abs=1e-9)


@pytest.mark.parametrize("case", TABLES["vendi_text"], ids=_ids(TABLES["vendi_text"]))
def test_vendi_text_table(case):
    assert div.vendi_text(case["texts"], ns=case["ns"]) == pytest.approx(case["expected"],
                                                                        abs=1e-9)


@pytest.mark.parametrize("case", TABLES["vendi_score"], ids=_ids(TABLES["vendi_score"]))
def test_vendi_score_table(case):
    got = div.vendi_score(case["kernel"], case["weights"])
    assert got == pytest.approx(case["expected"], abs=1e-9)


def test_vendi_score_of_repeated_samples_equals_distinct_rows_weighted_by_their_counts():
    """The weights are how `vendi_text_by_group` keeps one row per distinct text."""
    rng = np.random.default_rng(3)
    x = rng.random((4, 6))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    kernel = unit @ unit.T
    repeats = np.array([3, 1, 2, 2])
    expanded = np.repeat(np.repeat(kernel, repeats, axis=0), repeats, axis=1)
    assert div.vendi_score(kernel, repeats / repeats.sum()) == pytest.approx(
        div.vendi_score(expanded), abs=1e-9)


@pytest.mark.parametrize(
    ("kernel", "weights", "message"),
    [([[1, 0.2], [0.3, 1]], None, "symmetric"), ([[2, 0], [0, 1]], None, "ones on its diagonal"),
     ([[1, 0, 0]], None, "square"), ([[1, 0], [0, 1]], [0.5, 0.6], "summing to 1")],
)
def test_vendi_score_rejects_what_is_not_a_kernel(kernel, weights, message):
    with pytest.raises(ValueError, match=message):
        div.vendi_score(kernel, weights)
