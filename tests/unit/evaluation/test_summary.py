"""Rollouts DataFrame -> EvaluationResult: values, names, transfer, serialisation, errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from breadth.evaluation.summary import (
    DIVERSITY_METRICS,
    EvaluationResult,
    evaluate_models,
    evaluate_rollouts,
    per_problem_table,
)

MLFLOW_SAFE = re.compile(r"^[A-Za-z0-9_\-./ ]+$")


def rollouts(model="rl", rows=None) -> pd.DataFrame:
    """Two problems x 4 samples, worked by hand in the tests below."""
    rows = rows or [
        ("a", 0, "4", True, 1.0),
        ("a", 1, "5", False, 0.2),
        ("a", 2, "5", False, 0.2),
        ("a", 3, "6", False, 0.1),
        ("b", 0, "1", False, 0.3),
        ("b", 1, "1", False, 0.3),
        ("b", 2, "1", False, 0.3),
        ("b", 3, "1", False, 0.3),
    ]
    df = pd.DataFrame(rows, columns=["problem_id", "sample_index", "outcome", "correct", "score"])
    df["model"] = model
    df["format"] = "free_form"
    df["text"] = [f"the answer is {o}" for o in df["outcome"]]
    return df


def test_headline_values_by_hand():
    r = evaluate_rollouts(rollouts(), num_bootstrap=50)
    m = r.metrics()
    assert r.ks == [1, 2, 4] and r.num_problems == 2 and r.num_samples == 4
    assert m["eval/pass_at_1"] == pytest.approx(0.125)
    assert m["eval/pass_at_2"] == pytest.approx(0.25)  # a: 1 - C(3,2)/C(4,2) = 0.5
    assert m["eval/pass_at_4"] == pytest.approx(0.5)
    assert m["eval/maj_at_4"] == 0.0  # a votes "5" (wrong), b votes "1" (wrong)
    assert m["eval/best_of_1"] == pytest.approx((0.375 + 0.3) / 2)
    assert m["eval/best_of_4"] == pytest.approx((1.0 + 0.3) / 2)
    assert m["eval/distinct_outcomes"] == 2.0
    assert m["eval/distinct_outcome_fraction"] == 0.5
    assert m["eval/outcome_entropy"] == pytest.approx(-(0.5 * np.log(0.5) + 0.5 * np.log(0.25)) / 2)
    assert m["eval/distinct_1"] == pytest.approx((6 / 16 + 4 / 16) / 2)  # unique words / words
    # Without a class_id column, classes are the outcome partition.
    assert m["eval/distinct_classes"] == 2.0
    assert m["eval/distinct_k"] == 2.0  # k = min(10, n) = 4


def test_metric_names_are_mlflow_safe_and_cover_the_contract():
    r = evaluate_rollouts(rollouts(), base=rollouts("base"), num_bootstrap=20, min_split=1)
    names = r.metrics()
    for name in names:
        assert MLFLOW_SAFE.match(name) and "@" not in name, name
    for required in (
        "eval/pass_at_1",
        "eval/pass_at_4",
        "eval/maj_at_4",
        "eval/best_of_4",
        "eval/distinct_outcomes",
        "eval/outcome_entropy",
        "transfer/unsolved/distinct_outcomes",
        "transfer/solved/distinct_outcomes",
        "transfer/unsolved/base/distinct_outcomes",
        "transfer/unsolved/num_problems",
    ):
        assert required in names, required
    assert all(isinstance(v, float) and np.isfinite(v) for v in names.values())


def test_pass_hat_g_pass_split_and_vendi_by_hand():
    """The same two problems: a has one right answer of 4 samples ("4"; wrong "5", "5", "6"),
    b none (four "1"s)."""
    r = evaluate_rollouts(rollouts(), num_bootstrap=50)
    m = r.metrics()
    assert r.settings["g_pass_tau"] == 0.5
    # pass^k: a's one correct sample cannot fill k >= 2; pass^1 is pass@1.
    assert [m[f"eval/pass_hat_{k}"] for k in (1, 2, 4)] == [pytest.approx(0.125), 0.0, 0.0]
    # G-Pass@k at tau 0.5 needs 1, 1, 2 correct of k = 1, 2, 4: pass@1, pass@2, then 0.
    assert [m[f"eval/g_pass_at_{k}"] for k in (1, 2, 4)] == [
        pytest.approx(0.125), pytest.approx(0.25), 0.0]
    assert [m[f"eval/mg_pass_at_{k}"] for k in (1, 2, 4)] == [0.0, 0.0, 0.0]
    table = r.per_problem
    # distinct outcomes = correct + wrong: a 3 = 1 + 2, b 1 = 0 + 1.
    assert table["distinct_correct_outcomes"].tolist() == [1, 0]
    assert table["distinct_wrong_outcomes"].tolist() == [2, 1]
    # Exact-match Vendi: a's shares 1/4, 1/2, 1/4 give 2^1.5; b's one outcome 1.
    assert table["vendi_outcomes"].tolist() == [pytest.approx(2 ** 1.5), 1.0]
    # Text Vendi: a's texts "the answer is X" share 3 of 4 words, 2 of 3 bigrams, 1 of 2
    # trigrams and no 4-gram: cosine (3/4 + 2/3 + 1/2 + 0) / 4 between different answers.
    s = (3 / 4 + 2 / 3 + 1 / 2) / 4
    kernel = np.array([[1, s, s, s], [s, 1, 1, s], [s, 1, 1, s], [s, s, s, 1]])  # 4, 5, 5, 6
    lam = np.clip(np.linalg.eigvalsh(kernel / 4), 1e-300, None)
    assert table["vendi_text"].tolist() == [
        pytest.approx(np.exp(-(lam * np.log(lam)).sum()), abs=1e-9), 1.0]
    assert m["eval/vendi_outcomes"] == pytest.approx((2 ** 1.5 + 1) / 2)


def test_held_out_distinct_outcomes_split_into_correct_and_wrong():
    # Held-out halves (sample_index 2, 3): a "5" "6" both wrong; c "3" right once and wrong
    # once: an outcome some sample got right counts as correct, so c's one outcome is correct.
    rows = [("a", 0, "4", True, 1.0), ("a", 1, "5", False, 0.0), ("a", 2, "5", False, 0.0),
            ("a", 3, "6", False, 0.0), ("c", 0, "1", False, 0.0), ("c", 1, "2", False, 0.0),
            ("c", 2, "3", True, 1.0), ("c", 3, "3", False, 0.0)]
    table = per_problem_table(rollouts(rows=rows))
    assert table["heldout_distinct_outcomes"].tolist() == [2, 1]
    assert table["heldout_distinct_correct_outcomes"].tolist() == [0, 1]
    assert table["heldout_distinct_wrong_outcomes"].tolist() == [2, 0]
    assert (table["distinct_correct_outcomes"] + table["distinct_wrong_outcomes"]
            == table["distinct_outcomes"]).all()


def test_curves_are_lists_of_k_value_pairs_for_step_logging():
    r = evaluate_rollouts(rollouts(), num_bootstrap=20)
    curves = r.curves()
    names = {"eval/pass_at_k", "eval/maj_at_k", "eval/best_of_k", "eval/pass_hat_k",
             "eval/g_pass_at_k", "eval/mg_pass_at_k"}
    bounds = {f"eval_ci/{b}/{n.split('/')[1]}" for n in names for b in ("low", "high")}
    assert set(curves) == names | bounds
    assert [k for k, _ in curves["eval/pass_at_k"]] == [1, 2, 4]
    assert curves["eval/pass_at_k"][-1] == (4, pytest.approx(0.5))
    for (k, low), (_, value), (_, high) in zip(curves["eval_ci/low/pass_at_k"],
                                               curves["eval/pass_at_k"],
                                               curves["eval_ci/high/pass_at_k"]):
        assert low <= value + 1e-12 <= high + 2e-12, k


def test_interval_bounds_are_logged_in_folders_of_their_own():
    # Bounds beside their metric (`eval/pass_at_1_ci_low`) tripled every chart section of
    # MLflow's views; in `eval_ci/low/` and `eval_ci/high/` they fill sections of their own.
    # A base right twice on problem a is ahead at every k: a crossover at k = 1, with bounds
    # (the same rollouts for both models would tie everywhere: no crossover, no bounds).
    base_rows = [("a", i, "4", True, 1.0) if i < 2 else row
                 for i, row in enumerate(rollouts().itertuples(index=False, name=None))]
    base = rollouts("base", [row[:5] for row in base_rows])
    m = evaluate_rollouts(rollouts(), base=base, num_bootstrap=20, min_split=1).metrics()
    assert m["transfer/has_crossover"] == 1.0
    bounds = [n for n in m if "_ci/" in n]
    assert {n.split("/")[0] for n in bounds} == {"eval_ci", "transfer_ci"}
    assert not [n for n in m if "_ci_" in n or n.startswith("ci/")]
    for name in bounds:
        group, side, rest = name.split("/", 2)
        estimate = f"{group.removesuffix('_ci')}/{rest}"
        assert estimate in m, name
        assert (m[name] <= m[estimate] + 1e-12) if side == "low" else (m[name] >= m[estimate] - 1e-12)


def test_cis_bracket_estimates_and_to_dict_is_strict_json():
    r = evaluate_rollouts(rollouts(), num_bootstrap=100)
    for point in [*r.pass_at_k, *r.maj_at_k, *r.best_of_k]:
        assert point.low <= point.estimate + 1e-12 and point.estimate <= point.high + 1e-12
    d = r.to_dict(include_per_problem=True)
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["model"] == "rl" and back["ks"] == [1, 2, 4]
    assert back["metrics"]["eval/pass_at_1"] == pytest.approx(0.125)
    assert len(back["per_problem"]) == 2


def test_seeded_results_are_reproducible():
    a = evaluate_rollouts(rollouts(), num_bootstrap=30, seed=4).to_dict()
    b = evaluate_rollouts(rollouts(), num_bootstrap=30, seed=4).to_dict()
    assert a == b


def test_transfer_analysis_against_a_broader_base():
    base_rows = [
        ("a", 0, "4", True, 1.0),
        ("a", 1, "3", False, 0.0),
        ("a", 2, "2", False, 0.0),
        ("a", 3, "1", False, 0.0),
        ("b", 0, "7", False, 0.0),
        ("b", 1, "8", False, 0.0),
        ("b", 2, "9", False, 0.0),
        ("b", 3, "2", False, 0.0),
    ]
    r = evaluate_rollouts(rollouts(), base=rollouts("base", base_rows), num_bootstrap=50, min_split=1)
    assert r.base_model == "base"
    t = r.transfer
    assert t is not None and t.num_problems == 2
    assert t.splits["solved"].num_problems == 1 and t.splits["unsolved"].num_problems == 1
    # Problem b is base-unsolved: 4 distinct answers under base, 1 after training.
    assert t.splits["unsolved"].base["distinct_outcomes"].estimate == 4.0
    assert t.splits["unsolved"].trained["distinct_outcomes"].estimate == 1.0
    m = r.metrics()
    assert m["transfer/unsolved/distinct_outcomes"] == 1.0
    assert m["transfer/unsolved/base/distinct_outcomes"] == 4.0
    # Same pass@k at every k here: the curves never cross (k = 1 was reported before, a tie
    # read as a finding).
    assert t.crossover.k is None and m["transfer/has_crossover"] == 0.0
    assert "transfer/crossover_k" not in m


def test_ragged_sample_counts_limit_ks_and_evaluate_each_group():
    df = rollouts()
    df = df[~((df["problem_id"] == "b") & (df["sample_index"] == 3))]
    with pytest.warns(UserWarning, match="'b' \\(n=3\\)"):
        r = evaluate_rollouts(df, num_bootstrap=20)
    assert r.ks == [1, 2, 3] and r.num_samples == 3
    table = r.per_problem
    assert table.loc["b", "num_samples"] == 3 and table.loc["a", "num_samples"] == 4
    # a (n=4, c=1): pass@3 = 1 - C(3,3)/C(4,3) = 0.75; b: 0.
    assert r.metrics()["eval/pass_at_3"] == pytest.approx(0.375)
    with pytest.raises(ValueError, match="outside"), pytest.warns(UserWarning):
        evaluate_rollouts(df, ks=[4])


def test_rows_are_sorted_by_sample_index_within_problems():
    df = rollouts().sample(frac=1.0, random_state=0)
    a = evaluate_rollouts(df, num_bootstrap=20).to_dict()
    b = evaluate_rollouts(rollouts(), num_bootstrap=20).to_dict()
    assert a["metrics"] == b["metrics"]


def test_multiple_choice_reports_chance_levels():
    df = rollouts()
    df["format"] = "mcq"
    df["options"] = [["1", "4", "5", "6"]] * len(df)
    r = evaluate_rollouts(df, num_bootstrap=20)
    assert [c.k for c in r.chance] == [1, 2, 4]
    assert r.chance[0].chance == pytest.approx(0.25)
    m = r.metrics()
    assert m["eval/chance_pass_at_2"] == pytest.approx(1 - 0.75**2)
    assert m["eval/chance_corrected_pass_at_1"] == pytest.approx((0.125 - 0.25) / 0.75)


def test_class_id_column_feeds_the_solution_class_metrics():
    df = rollouts()
    df["class_id"] = [0, 0, 0, 0, 0, 1, 2, 3]
    r = evaluate_rollouts(df, num_bootstrap=20)
    assert r.per_problem["distinct_classes"].tolist() == [1.0, 4.0]
    assert r.per_problem["distinct_k"].tolist() == [1.0, 4.0]


def test_darling_partition_from_rewards_can_be_fed_in():
    darling = pytest.importorskip("breadth.rewards.darling")
    df = rollouts()
    df["class_id"] = [
        c
        for _, g in df.groupby("problem_id", sort=False)
        for c in darling.equivalence_classes(list(g["outcome"]))
    ]
    r = evaluate_rollouts(df, num_bootstrap=20)
    assert r.per_problem["distinct_classes"].tolist() == [3.0, 1.0]


def test_token_entropy_uses_the_base_threshold():
    df = rollouts()
    df["entropy"] = [[0.1, 2.0]] * 4 + [[0.1, 0.1]] * 4
    base = rollouts("base")
    base["entropy"] = [[float(i), float(i) + 0.5] for i in range(8)]  # 80th pct of 0..7.5 = 6.1
    r = evaluate_rollouts(df, base=base, num_bootstrap=20)
    assert r.entropy_threshold == pytest.approx(np.quantile(np.arange(16) / 2, 0.8))
    m = r.metrics()
    assert m["eval/token_entropy"] == pytest.approx((1.05 + 0.1) / 2)
    assert m["eval/forking_token_share"] == 0.0  # 2.0 is below the base's cut-off
    own = evaluate_rollouts(df, num_bootstrap=20, entropy_quantile=0.5)
    assert own.entropy_threshold == pytest.approx(0.1)
    assert own.metrics()["eval/forking_token_share"] == pytest.approx((0.5 + 0.0) / 2)


def test_embedding_column_gives_embedding_diversity():
    df = rollouts()
    df["embedding"] = [[1.0, 0.0], [0.0, 1.0]] * 4
    r = evaluate_rollouts(df, num_bootstrap=20)
    # Per problem e1, e2, e1, e2: 2 of the 6 pairs are identical (cosine 1), 4 orthogonal.
    assert r.metrics()["eval/embedding_diversity"] == pytest.approx(1 - 2 / 6)


def test_optional_metrics_are_left_out_when_their_columns_are_absent():
    df = rollouts().drop(columns=["text", "score", "model", "format", "sample_index"])
    r = evaluate_rollouts(df, num_bootstrap=20)
    assert r.model == "model" and r.format is None
    assert "token_entropy" not in r.diversity and "distinct_1" not in r.diversity
    # score falls back to correct.
    assert r.metrics()["eval/best_of_4"] == pytest.approx(0.5)
    assert set(r.per_problem.columns) >= set(DIVERSITY_METRICS)


def test_evaluate_models_splits_by_model_and_compares_to_the_base():
    df = pd.concat([rollouts("base"), rollouts("rl")], ignore_index=True)
    results = evaluate_models(df, base_model="base", num_bootstrap=20)
    assert list(results) == ["base", "rl"]
    assert results["base"].transfer is None and results["rl"].transfer is not None
    assert isinstance(results["rl"], EvaluationResult)
    with pytest.raises(ValueError, match="not among the models"):
        evaluate_models(df, base_model="sft")
    with pytest.raises(ValueError, match="2 models"):
        evaluate_rollouts(df)


def test_a_split_budget_beyond_the_base_samples_is_a_typed_error_with_its_numbers():
    # The base has 2 samples of b: pass@4 cannot split it. The error carries the numbers so a
    # command can name its own way of setting the key (breadth evaluate: --set ...=2).
    from breadth.evaluation.summary import SplitBudgetError

    with pytest.raises(SplitBudgetError) as caught:
        evaluate_rollouts(rollouts(), base=rollouts("base").iloc[:-2], num_bootstrap=10)
    assert (caught.value.split_k, caught.value.fewest) == (4, 2)
    assert "set evaluation.transfer_split_k to 2 or less" in str(caught.value)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda df: df.drop(columns=["correct"]), r"required columns \['correct'\]"),
        (lambda df: df.iloc[:0], "empty"),
        (lambda df: pd.concat([df, df.iloc[[0]]]), "problem_id='a' sample_index=0 appears twice"),
        (lambda df: df.assign(correct=["yes"] + [False] * 7), "rollout row 0 is 'yes'"),
        (lambda df: df.assign(correct=[2] + [0] * 7), "rollout row 0"),
    ],
)
def test_bad_rollouts_fail_with_a_message_naming_the_fault(mutate, message):
    with pytest.raises(ValueError, match=message):
        evaluate_rollouts(mutate(rollouts()), num_bootstrap=10)


def test_missing_correct_values_count_as_incorrect():
    df = rollouts().astype({"correct": object})
    df.loc[0, "correct"] = None
    table = per_problem_table(df)
    assert table.loc["a", "num_correct"] == 0


def test_uneven_sample_counts_warn_and_name_the_short_problems():
    from breadth.evaluation.summary import UnevenSamplesWarning

    rows = rollouts().iloc[:-2]  # problem b keeps 2 of its 4 samples
    with pytest.warns(UnevenSamplesWarning, match=r"1 of 2 problems .*'b' \(n=2\)") as caught:
        r = evaluate_rollouts(rows, num_bootstrap=20)
    assert "k = 2" in str(caught[0].message) and r.ks == [1, 2]


def test_uneven_sample_counts_are_kept_on_the_result():
    # Problem b has 2 samples, a has 4: the result says so, and no sample is dropped (a's
    # pass@1 still counts all four of its samples).
    with pytest.warns(UserWarning):
        r = evaluate_rollouts(rollouts().iloc[:-2], num_bootstrap=20)
    uneven = r.uneven_samples
    assert (uneven.num_problems, uneven.most, uneven.fewest, uneven.short) == (2, 4, 2, (("b", 2),))
    assert r.per_problem["num_samples"].to_dict() == {"a": 4, "b": 2}
    assert r.pass_at_k[0].estimate == pytest.approx((1 / 4 + 0 / 2) / 2)
    assert evaluate_rollouts(rollouts(), num_bootstrap=20).uneven_samples is None


def test_even_sample_counts_do_not_warn():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate_rollouts(rollouts(), num_bootstrap=20)


def _same_model_draw(seed: int, model: str, problems: int = 1000, samples: int = 16) -> pd.DataFrame:
    """`samples` answers per problem from one fixed per-problem distribution (the same for every
    seed): the right answer "0" with probability p, else one of 30 wrong answers."""
    p = np.random.default_rng(0).uniform(0.02, 0.5, problems)
    rng = np.random.default_rng(seed)
    right = rng.random((problems, samples)) < p[:, None]
    wrong = rng.integers(1, 31, (problems, samples)).astype(str)
    outcome = np.where(right, "0", wrong).ravel()
    return pd.DataFrame({"problem_id": np.repeat([f"q{i}" for i in range(problems)], samples),
                         "sample_index": np.tile(np.arange(samples), problems),
                         "outcome": outcome, "correct": outcome == "0", "model": model})


def test_the_transfer_split_is_unbiased_when_the_trained_model_is_the_base():
    # Two draws of one model: the trained model's narrowing on base-unsolved problems is 0 in
    # truth. Splitting on the samples it measures selects problems whose base draw went badly
    # and then counts that draw's extra wrong answers (a spurious narrowing); the held-out
    # split does not.
    base, again = _same_model_draw(1, "base"), _same_model_draw(2, "rl")
    r = evaluate_rollouts(again, base=base, num_bootstrap=200, split_k=4)
    assert r.transfer.held_out
    unsolved = r.transfer.splits["unsolved"]
    delta = (unsolved.trained["distinct_outcomes"].estimate
             - unsolved.base["distinct_outcomes"].estimate)
    from breadth.evaluation.transfer import transfer_analysis

    tables = [per_problem_table(frame) for frame in (base, again)]
    same = transfer_analysis(*tables, ["distinct_outcomes"], num_resamples=20, split_k=4)
    biased = (same.splits["unsolved"].trained["distinct_outcomes"].estimate
              - same.splits["unsolved"].base["distinct_outcomes"].estimate)
    # Measured at these seeds: -0.52 on the same samples, +0.02 held out.
    assert biased < -0.3 and abs(delta) < 0.15, (biased, delta)


def test_too_few_base_samples_for_halves_split_on_the_measured_samples_and_say_so(caplog):
    import logging

    from breadth.evaluation.report import markdown_report

    with caplog.at_level(logging.WARNING, logger="breadth.evaluation.summary"):
        r = evaluate_rollouts(rollouts(), base=rollouts("base"), num_bootstrap=20, split_k=4)
    assert not r.transfer.held_out
    assert "sample it at least 8 times" in caplog.text
    assert "reads the same samples it measures" in markdown_report({"rl": r})
