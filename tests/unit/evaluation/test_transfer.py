"""Transfer analysis: splits by the base model's result, and the pass@k crossover."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from breadth.evaluation.metrics import pass_at_k
from breadth.evaluation.transfer import (
    crossover_k,
    first_crossing,
    solved_by_base,
    transfer_analysis,
)


def test_split_rule_is_a_fixed_base_budget_not_any_of_n():
    # n = 8. pass@4 for c = 1 is 1 - C(7,4)/C(8,4) = 1 - 35/70 = 0.5: solved at threshold 0.5.
    n, c = [8] * 5, [0, 1, 2, 4, 8]
    assert solved_by_base(n, c, split_k=4, threshold=0.5).tolist() == [False, True, True, True, True]
    # pass@1 = c/n: only c >= 4 reaches 0.5. "Any of n" would call c = 1 solved.
    assert solved_by_base(n, c, split_k=1, threshold=0.5).tolist() == [False, False, False, True, True]
    # A 64-sample base that hits an answer once by chance is not "solved" at pass@4 >= 0.5.
    assert not solved_by_base([64], [1], split_k=4, threshold=0.5)[0]


def test_split_budget_above_the_sample_count_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="lower evaluation.transfer_split_k"):
        solved_by_base([4, 4], [1, 2], split_k=8)


def test_a_split_below_min_split_is_marked_inconclusive():
    base = pd.DataFrame({"num_samples": [8] * 30, "num_correct": [8] * 25 + [0] * 5,
                         "distinct_outcomes": [2.0] * 30}, index=[f"p{i}" for i in range(30)])
    r = transfer_analysis(base, base, ["distinct_outcomes"], num_resamples=20, min_split=20)
    assert (r.splits["solved"].num_problems, r.splits["solved"].conclusive) == (25, True)
    assert (r.splits["unsolved"].num_problems, r.splits["unsolved"].conclusive) == (5, False)


def test_crossover_when_base_is_broader():
    # Trained: 5 problems always right, 5 never. Base: right 1/8 of the time on all 10.
    n = np.full(10, 8)
    trained = np.array([8] * 5 + [0] * 5)
    base = np.full(10, 1)
    c = crossover_k(n, base, n, trained, ks=[1, 2, 4, 8], num_resamples=200, seed=0)
    # Base mean pass@k: 0.125, 0.25, 0.5, 1.0; trained: 0.5 at every k -> crossover at k=4.
    assert c.k == 4
    assert c.ks == [1, 2, 4, 8]
    assert c.difference[2].estimate == pytest.approx(0.0, abs=1e-12)
    assert c.difference[3].estimate == pytest.approx(0.5)
    assert c.low is not None and c.low <= 4 <= (c.high or 8)
    assert 0.0 < c.share_with_crossover <= 1.0


def test_no_crossover_when_trained_dominates():
    n = np.full(20, 8)
    c = crossover_k(n, np.zeros(20, int), n, np.full(20, 4), num_resamples=100)
    assert c.k is None and c.high is None and c.share_with_crossover == 0.0
    assert c.ks == [1, 2, 4, 8]


def test_crossover_at_one_when_base_is_ahead_everywhere():
    n = np.full(5, 4)
    c = crossover_k(n, np.full(5, 3), n, np.full(5, 1), num_resamples=50)
    assert c.k == 1 and c.low == 1 and c.high == 1


def test_crossover_is_seeded():
    rng = np.random.default_rng(0)
    n = np.full(30, 16)
    b, t = rng.integers(0, 5, 30), rng.integers(0, 16, 30)
    assert crossover_k(n, b, n, t, seed=3).to_dict() == crossover_k(n, b, n, t, seed=3).to_dict()


def test_crossover_rejects_misaligned_arrays():
    with pytest.raises(ValueError, match="aligned"):
        crossover_k([4, 4], [1, 1], [4], [1])


def _table(num_correct, distinct, n=4, ids=None):
    ids = ids or [f"p{i}" for i in range(len(num_correct))]
    return pd.DataFrame(
        {"num_samples": [n] * len(ids), "num_correct": num_correct, "distinct_outcomes": distinct},
        index=pd.Index(ids, name="problem_id"),
    )


def test_transfer_analysis_splits_and_means():
    base = _table([2, 1, 0, 0], [3.0, 4.0, 4.0, 2.0])
    trained = _table([4, 4, 0, 1], [1.0, 1.0, 2.0, 1.0])
    r = transfer_analysis(base, trained, ["distinct_outcomes"], num_resamples=100, seed=0)
    assert r.num_problems == 4
    solved, unsolved = r.splits["solved"], r.splits["unsolved"]
    assert (solved.num_problems, unsolved.num_problems) == (2, 2)
    assert solved.base["distinct_outcomes"].estimate == 3.5
    assert solved.trained["distinct_outcomes"].estimate == 1.0
    assert unsolved.base["distinct_outcomes"].estimate == 3.0
    assert unsolved.trained["distinct_outcomes"].estimate == 1.5
    ci = unsolved.trained["distinct_outcomes"]
    assert ci.low <= ci.estimate <= ci.high
    assert r.crossover is not None
    # Serialisable.
    assert r.to_dict()["splits"]["unsolved"]["trained"]["distinct_outcomes"]["estimate"] == 1.5


def test_transfer_uses_shared_problems_only_and_defaults_metrics(caplog):
    base = _table([1, 0, 0], [2.0, 3.0, 1.0], ids=["a", "b", "c"])
    trained = _table([1, 0], [1.0, 1.0], ids=["a", "b"])
    r = transfer_analysis(base, trained, num_resamples=20)
    assert r.num_problems == 2
    assert "only one of base/trained" in caplog.text
    assert set(r.splits["unsolved"].trained) == {"distinct_outcomes"}


def test_transfer_with_an_empty_split_and_nan_metric():
    base = _table([1, 2], [1.0, 1.0])
    trained = _table([1, 2], [1.0, 2.0]).assign(token_entropy=np.nan)
    r = transfer_analysis(base.assign(token_entropy=np.nan), trained, num_resamples=20)
    assert r.splits["unsolved"].num_problems == 0 and r.splits["unsolved"].trained == {}
    assert "token_entropy" not in r.splits["solved"].trained


def test_transfer_rejects_disjoint_problems_and_missing_columns():
    with pytest.raises(ValueError, match="share no problem_id"):
        transfer_analysis(_table([1], [1.0], ids=["a"]), _table([1], [1.0], ids=["b"]))
    with pytest.raises(ValueError, match="num_correct"):
        transfer_analysis(_table([1], [1.0]).drop(columns="num_correct"), _table([1], [1.0]))


def test_crossover_point_estimate_matches_pass_at_k_means():
    rng = np.random.default_rng(9)
    n = np.full(40, 32)
    b, t = rng.integers(0, 6, 40), rng.integers(0, 32, 40)
    c = crossover_k(n, b, n, t, num_resamples=50)
    for k, d in zip(c.ks, c.difference):
        assert d.estimate == pytest.approx(pass_at_k(n, b, k).mean() - pass_at_k(n, t, k).mean())


def test_curves_tied_at_zero_everywhere_have_no_crossover():
    # The audit's tiny run: both models solve nothing, pass@k = 0 at every k. The old rule
    # (first k with base >= trained) reported a crossover at k = 1 [1, 1].
    n = np.full(6, 4)
    c = crossover_k(n, np.zeros(6, int), n, np.zeros(6, int), ks=[1, 2, 4], num_resamples=50)
    assert c.k is None and c.low is None and c.high is None
    assert c.share_with_crossover == 0.0
    # Equal and non-zero everywhere (the same counts for both models): no crossover either.
    same = crossover_k(n, np.full(6, 2), n, np.full(6, 2), ks=[1, 2, 4], num_resamples=50)
    assert same.k is None and same.share_with_crossover == 0.0


def test_a_leading_tie_is_not_the_crossover():
    # Rows of base - trained pass@k at three ks. Equal at the first two, base ahead at the
    # third: the crossover is the third (the old rule said the first). Equal, trained ahead,
    # equal again: the base catches up at the third. Equal then trained ahead: none (the old
    # rule said the first). Base ahead at the first k: the first, as before.
    diff = np.array([[0.0, 0.0, 0.5], [0.0, -0.2, 0.0], [0.0, 0.0, -0.1], [0.1, 0.0, 0.0]])
    assert first_crossing(diff).tolist() == [2, 2, 3, 0]


def test_crossover_after_trained_leads_counts_a_tie_as_catching_up():
    # Trained ahead at k = 1, equal from k = 2: the base catches up at 2 (unchanged rule).
    diff = np.array([[-0.3, 0.0, 0.0], [-0.3, -0.1, 1e-13]])
    assert first_crossing(diff).tolist() == [1, 2]


def test_tied_runs_log_no_crossover_finding():
    from breadth.evaluation.result import _transfer_metrics

    base = pd.DataFrame({"num_samples": [4] * 3, "num_correct": [0] * 3, "distinct_outcomes": [2, 3, 1]},
                        index=["a", "b", "c"])
    r = transfer_analysis(base, base.copy(), ["distinct_outcomes"], num_resamples=20, split_k=1)
    metrics = _transfer_metrics(r)
    assert metrics["transfer/has_crossover"] == 0.0
    assert "transfer/crossover_k" not in metrics


def test_a_held_out_split_reads_the_first_half_and_measures_the_other():
    # p1's first half (2 samples) is all wrong: base-unsolved at pass@1 >= 0.5, although all
    # 4 samples give pass@1 = 0.5 (solved on the whole draw). Its split values come from the
    # held-out tables (1 and 2 distinct), not from the whole-draw tables (3 and 1).
    whole = pd.DataFrame({"num_samples": [4, 4], "num_correct": [2, 4], "split_num_samples": [2, 2],
                          "split_num_correct": [0, 2], "distinct_outcomes": [3.0, 1.0]},
                         index=["p1", "p2"])
    trained = whole.assign(distinct_outcomes=[1.0, 1.0])
    held_base = pd.DataFrame({"distinct_outcomes": [1.0, 1.0]}, index=["p1", "p2"])
    held_trained = pd.DataFrame({"distinct_outcomes": [2.0, 1.0]}, index=["p1", "p2"])
    r = transfer_analysis(whole, trained, ["distinct_outcomes"], num_resamples=20, split_k=1,
                          min_split=1, held_out=(held_base, held_trained))
    assert r.held_out and r.to_dict()["held_out"] is True
    unsolved = r.splits["unsolved"]
    assert unsolved.num_problems == 1
    assert (unsolved.base["distinct_outcomes"].estimate,
            unsolved.trained["distinct_outcomes"].estimate) == (1.0, 2.0)
    same = transfer_analysis(whole, trained, ["distinct_outcomes"], num_resamples=20, split_k=1,
                             min_split=1)
    assert not same.held_out and same.splits["unsolved"].num_problems == 0


def test_a_held_out_split_needs_the_first_half_counts():
    table = pd.DataFrame({"num_samples": [4], "num_correct": [2]}, index=["p1"])
    with pytest.raises(ValueError, match="split_num_samples"):
        transfer_analysis(table, table, [], split_k=1, held_out=(table, table))
