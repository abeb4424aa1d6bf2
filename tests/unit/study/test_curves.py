"""Collapse over training steps: curves, intervals and collapse rates on histories computed by
hand; the report section and the loader of the histories (MLflow faked)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from breadth.study.curves import (
    DISTINCT_OUTCOMES,
    ENTROPY,
    least_squares_slope,
    training_curves,
)
from breadth.study.curves_report import collapse_section, write_training_curves
from breadth.study.frame import load_training_histories
from breadth.tracking.records import MetricPoint

T_975_2 = 4.302653  # Student's t, 97.5% quantile, 2 degrees of freedom


def _line(intercept, slope, steps):
    return [(s, intercept + slope * s) for s in steps]


def test_the_slope_of_a_known_line():
    assert least_squares_slope([0, 10, 20, 30], [5.0, 4.0, 3.0, 2.0]) == pytest.approx(-0.1)
    # Noise symmetric about the line leaves the slope: y = 2 + 0.5 x, residuals +1, -1, -1, +1.
    assert least_squares_slope([0, 1, 2, 3], [3.0, 1.5, 2.0, 4.5]) == pytest.approx(0.5)
    assert math.isnan(least_squares_slope([4, 4], [1.0, 2.0]))  # one distinct step: no line


def test_collapse_rate_per_cell_and_its_mean_with_a_t_interval_over_seeds():
    steps = [0, 10, 20, 30]
    histories = {("correctness", "free_form", seed): {DISTINCT_OUTCOMES: _line(6.0, slope, steps)}
                 for seed, slope in ((0, -0.1), (1, -0.2), (2, -0.3))}
    training = training_curves(histories, metrics=[DISTINCT_OUTCOMES])
    assert training.rates["collapse_rate"].tolist() == pytest.approx([-0.1, -0.2, -0.3])
    assert training.rates["steps"].tolist() == [4, 4, 4]
    row = training.rate_means.iloc[0]
    # mean -0.2; sd 0.1, se 0.1 / sqrt(3); half-width t(0.975, 2) * se.
    half = T_975_2 * 0.1 / math.sqrt(3)
    assert (row["estimate"], row["low"], row["high"]) == pytest.approx((-0.2, -0.2 - half,
                                                                        -0.2 + half), abs=1e-6)
    assert row["seeds"] == 3 and training.notes == []


def test_the_mean_and_interval_at_a_step_over_three_seeds():
    histories = {("darling", "mcq", seed): {ENTROPY: [(5, value), (10, value + 1.0)]}
                 for seed, value in ((0, 2.0), (1, 3.0), (2, 4.0))}
    curves = training_curves(histories).curves
    at_5 = curves[(curves["metric"] == ENTROPY) & (curves["step"] == 5)].iloc[0]
    # Values 2, 3, 4: mean 3, sd 1, se 1 / sqrt(3).
    half = T_975_2 / math.sqrt(3)
    assert (at_5["mean"], at_5["low"], at_5["high"]) == pytest.approx((3.0, 3 - half, 3 + half),
                                                                      abs=1e-6)
    assert at_5["seeds"] == 3
    assert curves.loc[curves["step"] == 10, "mean"].item() == pytest.approx(4.0)
    # Entropy has no collapse rate: only distinct outcomes do.
    assert training_curves(histories).rate_means.empty


def test_one_seed_gives_a_mean_and_no_interval():
    curves = training_curves({("passk", "mcq", 0): {ENTROPY: [(1, 0.7)]}}).curves
    row = curves.iloc[0]
    assert row["mean"] == 0.7 and math.isnan(row["low"]) and math.isnan(row["high"])


def test_misaligned_steps_are_dropped_and_counted():
    histories = {
        ("correctness", "free_form", 0): {ENTROPY: [(1, 1.0), (2, 1.0), (3, 1.0)]},
        ("correctness", "free_form", 1): {ENTROPY: [(1, 2.0), (2, 2.0), (3, 2.0), (4, 2.0)]},
        ("correctness", "free_form", 2): {ENTROPY: [(2, 3.0), (3, 3.0)]},
    }
    training = training_curves(histories, metrics=[ENTROPY])
    assert training.curves["step"].tolist() == [2, 3]
    assert training.curves["mean"].tolist() == pytest.approx([2.0, 2.0])
    alignment = training.alignment.iloc[0]
    assert (alignment["common_steps"], alignment["dropped_points"]) == (2, 3)
    assert training.notes == [("correctness/free_form, train/entropy: 3 logged points dropped at "
                              "steps not every seed logged (seed 0: 1, seed 1: 2); 2 common "
                              "steps kept")]


def test_a_step_given_twice_keeps_its_last_value():
    training = training_curves({("vector", "mcq", 0): {ENTROPY: [(1, 5.0), (2, 4.0), (1, 3.0)]}})
    assert training.curves["mean"].tolist() == [3.0, 4.0]


def test_a_missing_metric_is_noted_and_its_seed_left_out():
    histories = {
        ("correctness", "mcq", 0): {DISTINCT_OUTCOMES: [(1, 3.0)], ENTROPY: [(1, 1.0)]},
        ("correctness", "mcq", 1): {DISTINCT_OUTCOMES: [(1, 2.0)]},  # no entropy logged
        ("correctness", "mcq", 2): {DISTINCT_OUTCOMES: [(1, 4.0)], ENTROPY: [(1, 2.0)]},
    }
    training = training_curves(histories)
    entropy = training.curves[training.curves["metric"] == ENTROPY].iloc[0]
    assert entropy["seeds"] == 2 and entropy["mean"] == pytest.approx(1.5)
    assert any(note.startswith("correctness/mcq, train/entropy: not logged by seed 1")
               for note in training.notes)
    # One step: a line cannot be fitted, and the notes say so.
    assert any("no collapse rate, 1 common step(s)" in note for note in training.notes)
    assert training.rate_means.empty and training.rates["collapse_rate"].isna().all()


def test_a_seed_without_a_line_is_noted_and_left_out_of_the_mean_rate():
    histories = {("passk", "free_form", seed): {DISTINCT_OUTCOMES: _line(5.0, slope, [0, 1, 2])}
                 for seed, slope in ((0, -1.0), (1, -2.0), (2, float("nan")))}
    training = training_curves(histories, metrics=[DISTINCT_OUTCOMES])
    row = training.rate_means.iloc[0]
    assert (row["estimate"], row["seeds"]) == (pytest.approx(-1.5), 2)
    assert training.notes == [("passk/free_form: no collapse rate for seed 2 (a value logged as "
                              "NaN); its mean is over the other seeds")]


def test_no_histories_at_all_make_an_empty_result_and_a_section_saying_so(tmp_path):
    training = training_curves({("correctness", "mcq", seed): {} for seed in (0, 1)})
    assert training.empty and write_training_curves(training, tmp_path) == []
    section = collapse_section(training, [])
    assert section.startswith("## Collapse over training steps\n\nNo training histories")
    assert ("- correctness/mcq, train/breadth/distinct_outcomes_per_group: not logged by seed "
            "0, 1 (") in section


def _study_histories():
    histories = {}
    for fmt, start in (("mcq", 4.0), ("free_form", 8.0)):
        for objective, slope in (("correctness", -0.02), ("correctness+ucb", -0.01)):
            for seed in (0, 1, 2):
                steps = range(0, 50, 10)
                histories[(objective, fmt, seed)] = {
                    DISTINCT_OUTCOMES: _line(start, slope * (1 + 0.1 * seed), steps),
                    ENTROPY: _line(1.0, -0.001, steps),
                }
    return histories


def test_the_section_shows_rates_and_the_format_curves_side_by_side(tmp_path):
    training = training_curves(_study_histories())
    paths = write_training_curves(training, tmp_path)
    assert [p.name for p in paths] == [
        "training_distinct_outcomes_per_group.png", "training_entropy.png",
        "format_curves_correctness.png", "training_curves.csv", "collapse_rates.csv",
    ]
    assert all(p.stat().st_size > 0 for p in paths)
    rates = pd.read_csv(tmp_path / "collapse_rates.csv")
    row = rates[(rates["format"] == "mcq") & (rates["objective"] == "correctness")].iloc[0]
    assert row["estimate"] == pytest.approx(-0.022) and row["seeds"] == 3
    assert row["per_seed"] == "seed 0: -0.02; seed 1: -0.022; seed 2: -0.024"
    section = collapse_section(training, paths)
    assert "| mcq | correctness | -0.022 | [" in section
    assert "| free_form | correctness+ucb | -0.011 | [" in section
    assert "### Format, over training steps: correctness under mcq and free_form" in section
    # mcq starts at 4, free_form at 8; seeds' slopes average -0.022 over 40 steps.
    assert ("| distinct outcomes per group, first → last common step (relative change) | "
            "4 → 3.12 (steps 0 → 40; -22%) | 8 → 7.12 (steps 0 → 40; -11%) |") in section
    assert "![format_curves_correctness](format_curves_correctness.png)" in section
    assert "nothing dropped" in section


def test_the_format_comparison_says_when_a_format_is_missing():
    histories = {k: v for k, v in _study_histories().items() if k[1] == "free_form"}
    section = collapse_section(training_curves(histories), [])
    assert ("Not shown: it needs correctness curves in both formats; this grid has them in "
            "free_form.") in section


class _Client:
    """Parent runs p0 (tagged with its RL stage run, a cached one) and p1 (found by search);
    p2 has no RL run."""

    def __init__(self):
        self.searched = []

    def get_run(self, run_id):
        tags = {"p0": {"stage_run.rl": "rl-cached"}, "p1": {}, "p2": {}}[run_id]
        return SimpleNamespace(tags=tags, experiment_id="1")

    def search_runs(self, experiment_ids, filter_string):
        self.searched.append(filter_string)
        if "'p1'" in filter_string:
            return [SimpleNamespace(run_id="rl-old", start_time=1),
                    SimpleNamespace(run_id="rl-p1", start_time=2)]
        return []

    def metric_history(self, run_id, key):
        if key != DISTINCT_OUTCOMES:
            return []
        # Step 2 logged twice (a resumed run replays its history): the later value counts.
        return {"rl-cached": [MetricPoint(2, 9.0, 30), MetricPoint(1, 4.0, 10),
                              MetricPoint(2, 3.0, 20)],
                "rl-p1": [MetricPoint(1, 5.0, 1)]}[run_id]


def test_the_loader_reads_each_cells_rl_run(monkeypatch):
    client = _Client()
    monkeypatch.setattr("breadth.study.frame.tracking_client", lambda uri: client)
    frame = pd.DataFrame({"objective": ["correctness"] * 4, "format": ["mcq"] * 4,
                          "seed": [0, 0, 1, 2], "run_id": ["p0", "p0", "p1", "p2"],
                          "problem_id": ["a", "b", "a", "a"]})
    histories = load_training_histories("http://127.0.0.1:9", frame)
    assert histories == {
        ("correctness", "mcq", 0): {DISTINCT_OUTCOMES: [(1, 4.0), (2, 9.0)]},
        ("correctness", "mcq", 1): {DISTINCT_OUTCOMES: [(1, 5.0)]},
        ("correctness", "mcq", 2): {},
    }
    assert "tags.`breadth.stage` = 'rl'" in client.searched[0] and len(client.searched) == 2
    notes = training_curves(histories).notes
    assert any("not logged by seed 2" in note for note in notes)
