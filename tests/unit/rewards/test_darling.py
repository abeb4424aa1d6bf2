import pickle

import numpy as np
import pytest

from breadth.rewards.darling import (
    NgramOverlapJudge,
    darling_diversity,
    equivalence_classes,
    ngram_overlap,
    short_text_equivalent,
)

from ._cases import load_table, params


@pytest.mark.parametrize("case", params("darling"))
def test_classes_and_diversity_table(case):
    classes = equivalence_classes(case["outcomes"])
    assert classes == case["classes"]
    np.testing.assert_allclose(darling_diversity(classes), case["diversity"], atol=1e-6)


@pytest.mark.parametrize("case", params("darling", "short_text"))
def test_short_text_rule(case):
    assert short_text_equivalent(case["a"], case["b"]) is case["equivalent"], case["why"]
    assert short_text_equivalent(case["b"], case["a"]) is case["equivalent"]  # symmetric


@pytest.mark.parametrize("case", params("darling", "ngram_overlap"))
def test_ngram_overlap(case):
    assert ngram_overlap(case["a"], case["b"], case["n"]) == pytest.approx(case["expected"])


def test_custom_judge_is_closed_transitively():
    # 1~2 and 2~3 put 1 and 3 together although |1-3| > 1: union-find, as DARLING partitions.
    assert equivalence_classes([1, 2, 3, 10], judge=lambda a, b: abs(a - b) <= 1) == [0, 0, 0, 1]


def test_pairwise_judge_matches_equality_fast_path():
    outcomes = ["4", "5", "4", None, None, "7"]
    assert equivalence_classes(outcomes, judge=lambda a, b: a == b) == equivalence_classes(outcomes)


def test_ngram_judge_uses_short_rule_then_overlap():
    judge = NgramOverlapJudge(n=2, threshold=0.5)
    assert judge("the sum is 12", "sum is 12")  # short texts: unigram rule
    long_a = "we add the two numbers and get twelve as the result"
    long_b = "we add the two numbers and get twelve as the answer"
    assert judge(long_a, long_b)  # 9 of 11 distinct bigrams shared
    assert not judge(long_a, "first multiply both sides by three then subtract four from it")
    texts = [long_a, long_b, "first multiply both sides by three then subtract four from it"]
    assert equivalence_classes(texts, judge) == [0, 0, 1]
    assert pickle.loads(pickle.dumps(judge))(long_a, long_b)


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"threshold": 1.5}])
def test_ngram_judge_validates(kwargs):
    with pytest.raises(ValueError):
        NgramOverlapJudge(**kwargs)


def test_table_file_is_complete():
    table = load_table("darling")
    assert {"all_identical", "all_distinct", "G1"} <= {c["name"] for c in table["cases"]}
