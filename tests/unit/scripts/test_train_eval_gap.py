"""scripts/results/train_eval_gap.py: per-problem measures, a cached rollout's first samples, and the
paired comparisons, on hand-made rows."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from tests.unit.scripts.helpers import load_script

gap = load_script("results/train_eval_gap.py")


def _rows(problem_id: str, outcomes: list[str], correct: list[bool]) -> list[dict]:
    return [{"problem_id": problem_id, "sample_index": i, "outcome": o, "correct": c}
            for i, (o, c) in enumerate(zip(outcomes, correct))]


def test_per_problem_counts_each_problems_share_correct_and_its_distinct_right_answers():
    rows = (_rows("a", ["1+5", "2+4", "2+4", "3+9"], [True, True, True, False])
            + _rows("b", ["7+7", "7+7"], [False, False]))
    measured = gap.per_problem(rows, ["b", "a"])  # the order asked for, not the rows'
    assert measured["pass_at_1"].tolist() == [0.0, 0.75]
    assert measured["distinct_correct"].tolist() == [0.0, 2.0]  # 3+9 is wrong: not counted


def test_a_problem_without_samples_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="no samples for problems"):
        gap.per_problem(_rows("a", ["1+5"], [True]), ["a", "missing"])


def test_first_samples_keeps_each_problems_first_n_and_refuses_a_short_rollout():
    rows = _rows("a", ["1", "2", "3", "4"], [True] * 4) + _rows("b", ["1", "2"], [True] * 2)
    assert [(r["problem_id"], r["sample_index"]) for r in gap.first_samples(rows, 2)] == [
        ("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    with pytest.raises(ValueError, match="fewer than 3 samples"):
        gap.first_samples(rows, 3)


def test_comparisons_pair_arm_and_control_by_problem_within_each_seed():
    def model(train_correct: list[float], eval_correct: list[float]) -> dict:
        return {side: {"pass_at_1": np.array(v), "distinct_correct": np.array(v) * 2}
                for side, v in (("train", train_correct), ("eval", eval_correct))}

    # Every objective 0.1 above SFT on train in seed 0 and 0.3 in seed 1; 0 on eval.
    seeds = {seed: {"sft": model([0.2, 0.4], [0.1, 0.1]),
                    **{o: model([0.2 + lift, 0.4 + lift], [0.1, 0.1]) for o in gap.OBJECTIVES}}
             for seed, lift in ((0, 0.1), (1, 0.3))}
    rows = {(r["arm"], r["control"], r["metric"]): r for r in gap.comparisons(seeds)}
    sharpening = rows["darling", "sft", "pass_at_1"]
    assert sharpening["train"]["per_seed"] == pytest.approx([0.1, 0.3])
    assert sharpening["train"]["estimate"] == pytest.approx(0.2)
    # two seeds: t(0.975, 1 df) = 12.706 times the standard error 0.1
    assert sharpening["train"]["high"] == pytest.approx(0.2 + 12.706 * 0.1, abs=1e-3)
    assert sharpening["eval"]["estimate"] == pytest.approx(0.0)
    diversity = rows["darling", "correctness@unscaled", "distinct_correct"]
    assert diversity["train"]["per_seed"] == pytest.approx([0.0, 0.0])
    assert len(rows) == len(gap.OBJECTIVES) + len(gap.DIVERSITY_COMPARISONS)


def test_the_page_has_a_row_per_model_and_per_comparison(tmp_path):
    def model(v: float) -> dict:
        return {side: {"pass_at_1": np.array([v, v]), "distinct_correct": np.array([v, v])}
                for side in gap.SIDES}

    seeds = {s: {"sft": model(0.1), **{o: model(0.2) for o in gap.OBJECTIVES}} for s in (0, 1)}
    levels = {s: {"train": {1: 1, 2: 1}, "eval": {1: 2}} for s in (0, 1)}
    args = argparse.Namespace(preset="multi", work=tmp_path, problems=2, samples=4)
    page = gap.markdown(seeds, levels, gap.comparisons(seeds), args, wall=60.0)
    assert "| sft | 0.100 | 0.100 | 0.10 | 0.10 |" in page
    assert "| RL − SFT (darling) | Δ pass@1 | +0.100 [+0.100, +0.100]" in page
    assert "| darling − correctness@unscaled | Δ distinct correct outcomes | +0.000" in page
    assert "seed 0 {1: 1, 2: 1} / {1: 2}" in page
