"""Each model against its base, paired by problem: hand-computed differences, the equal-n rule,
and the report's table and paired.json."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from breadth.evaluation.paired import paired_against_base, paired_differences
from breadth.evaluation.report import markdown_report, write_report
from breadth.evaluation.summary import evaluate_rollouts


def _table(n, c, distinct, ids=None):
    return pd.DataFrame({"num_samples": n, "num_correct": c, "distinct_outcomes": distinct},
                        index=ids or [f"p{i}" for i in range(len(n))])


def test_differences_by_hand_on_the_shared_problems():
    base = _table([4, 4, 4], [0, 2, 4], [4, 3, 1], ids=["a", "b", "only-base"])
    rl = _table([4, 4], [2, 4], [1, 1], ids=["a", "b"])
    got = {d.measure: d for d in paired_differences(rl, base, num_resamples=200)}
    # a: pass@1 0 -> 0.5, b: 0.5 -> 1: +0.5 each; pass@n a: 0 -> 1, b: 1 -> 1: mean +0.5;
    # distinct a: 4 -> 1, b: 3 -> 1: mean -2.5. "only-base" is not paired.
    assert got["pass@1"].difference.estimate == 0.5 and got["pass@1"].num_problems == 2
    assert got["pass@n"].difference.estimate == 0.5
    assert got["distinct outcomes"].difference.estimate == -2.5
    # Both problems move pass@1 by +0.5: every resample says +0.5, so the interval excludes 0.
    assert got["pass@1"].direction == "up" and got["distinct outcomes"].direction == "down"


def test_an_interval_holding_zero_is_no_clear_difference():
    base = _table([4, 4], [0, 4], [2, 2])
    rl = _table([4, 4], [4, 0], [2, 2])
    got = {d.measure: d for d in paired_differences(rl, base, num_resamples=200)}
    assert got["pass@1"].difference.estimate == 0.0
    assert got["pass@1"].direction == "no clear difference"


def test_count_measures_are_left_out_at_unequal_n():
    base = _table([4, 4], [1, 1], [3, 3])
    rl = _table([16, 16], [8, 8], [2, 2])
    assert [d.measure for d in paired_differences(rl, base, num_resamples=20)] == ["pass@1"]


def _rollouts(model, outcomes):
    rows = [(p, i, o, o == "0") for p, answers in outcomes.items() for i, o in enumerate(answers)]
    frame = pd.DataFrame(rows, columns=["problem_id", "sample_index", "outcome", "correct"])
    return frame.assign(model=model)


def test_the_report_states_the_paired_differences_and_writes_them(tmp_path):
    sft = _rollouts("sft", {"a": "0123", "b": "1234", "c": "0012"})
    rl = _rollouts("rl", {"a": "0000", "b": "0111", "c": "0000"})
    results = {"sft": evaluate_rollouts(sft, num_bootstrap=20),
               "rl": evaluate_rollouts(rl, base=sft, model="rl", num_bootstrap=20)}
    assert list(paired_against_base(results)) == ["rl"]
    text = markdown_report(results)
    assert "## Against the base, paired by problem" in text
    # pass@1: a 0.25 -> 1, b 0 -> 0.25, c 0.5 -> 1: mean (0.75 + 0.25 + 0.5) / 3 = +0.5.
    assert "| rl − sft | 3 | +0.500 [" in text
    write_report(results, tmp_path)
    written = json.loads((tmp_path / "paired.json").read_text())
    assert written["rl"]["base"] == "sft"
    assert written["rl"]["differences"][0]["measure"] == "pass@1"
    assert written["rl"]["differences"][0]["estimate"] == 0.5


def test_no_base_no_paired_section(tmp_path):
    results = {"sft": evaluate_rollouts(_rollouts("sft", {"a": "0123"}), num_bootstrap=20)}
    assert "paired by problem" not in markdown_report(results)
    write_report(results, tmp_path)
    assert json.loads((tmp_path / "paired.json").read_text()) == {}


def test_the_split_of_distinct_outcomes_sums_to_its_change_by_hand():
    """Outcome "0" is the right one. sft a "0123": 4 distinct = 1 right + 3 wrong; rl a "0000":
    1 = 1 + 0. b "1234" -> "0111": 4 = 0 + 4 -> 2 = 1 + 1. c "0012" -> "0000": 3 = 1 + 2 -> 1 = 1 + 0.
    Δ distinct -3, -2, -2 = Δ wrong -3, -3, -2 + Δ correct 0, +1, 0."""
    sft = evaluate_rollouts(_rollouts("sft", {"a": "0123", "b": "1234", "c": "0012"}),
                            num_bootstrap=20)
    rl = evaluate_rollouts(_rollouts("rl", {"a": "0000", "b": "0111", "c": "0000"}),
                           num_bootstrap=20)
    t, b = rl.per_problem, sft.per_problem
    assert (t["distinct_outcomes"] - b["distinct_outcomes"]).tolist() == [-3, -2, -2]
    assert (t["distinct_wrong_outcomes"] - b["distinct_wrong_outcomes"]).tolist() == [-3, -3, -2]
    assert (t["distinct_correct_outcomes"] - b["distinct_correct_outcomes"]).tolist() == [0, 1, 0]
    got = {d.measure: d.difference for d in paired_differences(t, b, num_resamples=200)}
    assert got["distinct outcomes"].estimate == pytest.approx(-7 / 3)
    assert got["distinct wrong outcomes"].estimate == pytest.approx(-8 / 3)
    assert got["distinct correct outcomes"].estimate == pytest.approx(1 / 3)
    assert (got["distinct wrong outcomes"].estimate + got["distinct correct outcomes"].estimate
            == pytest.approx(got["distinct outcomes"].estimate))


def test_tables_without_the_split_columns_still_pair_the_rest():
    base = _table([4, 4], [1, 1], [3, 3])
    rl = _table([4, 4], [2, 2], [2, 2])
    assert [d.measure for d in paired_differences(rl, base, num_resamples=20)] == [
        "pass@1", "pass@n", "distinct outcomes"]
