"""Grid statistics over the frame fetch_runs returns: means, intervals, paired deltas."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from breadth.study.grid_statistics import (
    config_variants,
    estimate_text,
    grid_summary,
    keys_beyond_the_rows,
    mean_curve,
    models_in,
    summary_k,
)

_RUN_CI = {"rl/eval_ci/low/pass_at_1": 0.35, "rl/eval_ci/high/pass_at_1": 0.45}
_NO_CI = (math.nan, math.nan)


@pytest.mark.parametrize(
    ("runs", "column", "expected"),
    [
        # one seed: the run's own bootstrap interval
        ([{"rl/eval/pass_at_1": 0.4, **_RUN_CI}], "pass_at_1", (0.4, 0.35, 0.45)),
        # one seed, no interval logged: NaN bounds
        ([{"rl/eval/pass_at_1": 0.4}], "pass_at_1", (0.4, *_NO_CI)),
        # two seeds without per-problem tables: the mean, and no interval (never a t-interval)
        ([{"rl/eval/pass_at_1": 0.2, **_RUN_CI}, {"rl/eval/pass_at_1": 0.4, **_RUN_CI}],
         "pass_at_1", (0.3, *_NO_CI)),
        ([{"rl/transfer/unsolved/distinct_outcomes": v} for v in (1.0, 2.0, 3.0)],
         "distinct_unsolved", (2.0, *_NO_CI)),
        # a seed without the metric is left out of the mean (and its interval with it)
        ([{"rl/eval/pass_at_1": 0.2}, {"rl/eval/pass_at_1": math.nan, **_RUN_CI}], "pass_at_1",
         (0.2, *_NO_CI)),
        # absent everywhere: NaN
        ([{"rl/eval/pass_at_1": 0.2}], "search_success", (math.nan, *_NO_CI)),
        # paired delta: (0.5 - 0.3 + 0.7 - 0.3) / 2
        ([{"rl/eval/pass_at_1": 0.5, "sft/eval/pass_at_1": 0.3},
          {"rl/eval/pass_at_1": 0.7, "sft/eval/pass_at_1": 0.3}], "pass_at_1_delta",
         (0.3, *_NO_CI)),
    ],
)
def test_grid_summary_from_runs_alone(runs, column, expected):
    frame = pd.DataFrame([{"format": "mcq", "reward": "correctness", "seed": i, **r}
                          for i, r in enumerate(runs)])
    row = grid_summary(frame).iloc[0]
    got = (row[column], row[f"{column}_ci_low"], row[f"{column}_ci_high"])
    np.testing.assert_allclose(got, expected, atol=1e-3)
    assert row["seeds"] == len(runs)
    assert row["ci"] == ("the run's bootstrap over problems" if len(runs) == 1
                         else "none (no per-problem tables)")


def test_grid_summary_reads_pass_at_k_at_the_largest_k_every_run_measured():
    frame = pd.DataFrame([
        {"format": "mcq", "reward": "a", "rl/eval/pass_at_8": 0.6, "rl/eval/pass_at_16": 0.8},
        {"format": "mcq", "reward": "b", "rl/eval/pass_at_8": 0.5, "rl/eval/pass_at_16": math.nan},
    ])
    summary = grid_summary(frame)
    assert summary.attrs["k"] == 8 and list(summary["k"]) == [8, 8]
    assert list(summary["pass_at_kmax"]) == [0.6, 0.5]


def test_grid_summary_errors_name_the_missing_columns():
    with pytest.raises(ValueError, match=r"\['reward'\].*fetch_runs"):
        grid_summary(pd.DataFrame({"format": ["mcq"]}))
    with pytest.raises(ValueError, match="no runs"):
        grid_summary(pd.DataFrame(columns=["format", "reward"]))


def _cell_runs(configs, grid_ids=None) -> pd.DataFrame:
    """Runs of one cell (free_form / correctness), as fetch_runs gives them: seeds 0, 1, ..."""
    n = len(configs)
    return pd.DataFrame({
        "run_id": [f"run{i}" for i in range(n)], "grid_id": grid_ids or [None] * n,
        "format": ["free_form"] * n, "reward": ["correctness"] * n, "seed": list(range(n)),
        "config": configs, "rl/eval/pass_at_1": [0.2 * (i + 1) for i in range(n)],
        "sft/eval/pass_at_1": [0.1] * n,
    })


_SHORT = {"rl.max_steps": "2", "sft.epochs": "1", "rl.lr": "1e-5"}
_LONG = {"rl.max_steps": "100", "sft.epochs": "8", "rl.lr": "1e-5"}


@pytest.mark.parametrize(
    ("configs", "grid_ids", "expected"),
    [
        # one config, two seeds: pooled
        ([_LONG, _LONG], None, [("", 2, 0.3)]),
        # the audit's case: unlike configs are separate rows, named by the keys that differ
        ([_SHORT, _LONG, _LONG], None, [("rl.max_steps=100, sft.epochs=8", 2, 0.5),
                                         ("rl.max_steps=2, sft.epochs=1", 1, 0.2)]),
        # a key only one run logged differs too
        ([_LONG, {**_LONG, "rl.new_knob": "1"}], None,
         [("rl.new_knob=1", 1, 0.4), ("rl.new_knob=<absent>", 1, 0.2)]),
        # no config logged: nothing says two lone runs share one
        ([{}, {}], None, [("config not logged (run run0)", 1, 0.2),
                          ("config not logged (run run1)", 1, 0.4)]),
        # ... but a grid's cells were checked to share it when the grid was made
        ([{}, {}], ["g", "g"], [("", 2, 0.3)]),
    ],
)
def test_seeds_are_pooled_only_when_the_rest_of_the_config_is_equal(configs, grid_ids, expected):
    summary = grid_summary(_cell_runs(configs, grid_ids))
    got = [(row["config"], row["seeds"], round(row["pass_at_1"], 3))
           for _, row in summary.iterrows()]
    assert got == expected
    split = summary.attrs["split_cells"]
    assert (split == {}) == (len(expected) == 1)


def test_config_variants_names_the_differing_keys_per_cell_only():
    runs = pd.concat([_cell_runs([_SHORT, _LONG]),
                      _cell_runs([_LONG]).assign(reward="darling")], ignore_index=True)
    labels, split = config_variants(runs)
    assert split == {"free_form / correctness": ["rl.max_steps", "sft.epochs"]}
    assert list(labels) == ["rl.max_steps=2, sft.epochs=1", "rl.max_steps=100, sft.epochs=8", ""]


def _two_rewards(correctness: dict, darling: dict, grid_ids=None) -> pd.DataFrame:
    return pd.concat([_cell_runs([correctness], grid_ids),
                      _cell_runs([darling], grid_ids).assign(reward="darling")],
                     ignore_index=True)


def test_rows_that_differ_in_more_than_their_reward_are_named():
    """Two rows, correctness (100 steps) and darling (300 steps): their difference is not the
    reward's alone. The reward's own keys and the format are what rows compare; a grid's cells
    were checked fair when it was made."""
    correctness = {**_LONG, "rl.reward.spec": "correctness"}
    darling = {**_LONG, "rl.reward.spec": "darling", "rl.reward.darling_weight": "1"}
    assert keys_beyond_the_rows(_two_rewards(correctness, darling)) == []
    longer = {**darling, "rl.max_steps": "300", "data.format": "mcq"}
    assert keys_beyond_the_rows(_two_rewards(correctness, longer)) == ["rl.max_steps"]
    assert grid_summary(_two_rewards(correctness, longer)).attrs["keys_beyond_the_rows"] == [
        "rl.max_steps"]
    assert keys_beyond_the_rows(_two_rewards(correctness, longer, ["g"])) == []


def test_grid_summary_refuses_a_model_the_runs_do_not_hold():
    runs = pd.DataFrame({"format": ["mcq"], "reward": ["correctness"], "seed": [0],
                         "rl/eval/pass_at_1": [0.5], "sft/eval/pass_at_1": [0.1]})
    assert models_in(runs) == ["rl", "sft"]
    with pytest.raises(ValueError, match=r"model 'nosuch'.*hold: rl, sft.*--model rl"):
        grid_summary(runs, model="nosuch")
    empty = runs.drop(columns=["rl/eval/pass_at_1", "sft/eval/pass_at_1"])
    with pytest.raises(ValueError, match="hold none: did their evaluate stage run"):
        grid_summary(empty)


@pytest.mark.parametrize(
    ("curves", "expected"),
    [
        ([{1: 0.2, 2: 0.4}, {1: 0.4, 2: 0.6}], {1: 0.3, 2: 0.5}),
        ([{1: 0.2, 2: 0.4, 4: 0.5}, {1: 0.4, 2: 0.6}], {1: 0.3, 2: 0.5}),  # common ks only
        ([{1: 0.2}, {}, None], {1: 0.2}),  # runs without a curve are skipped
        ([{}, None], {}),
    ],
)
def test_mean_curve(curves, expected):
    got = mean_curve(curves)
    assert list(got) == list(expected)
    assert list(got.values()) == pytest.approx(list(expected.values()))


@pytest.mark.parametrize(
    ("args", "expected"),
    [((0.5, 0.4, 0.6), "0.500 [0.400, 0.600]"), ((0.5,), "0.500"), ((12.34, 11.0, 13.0), "12.3 [11.0, 13.0]"),
     ((math.nan, 0.1, 0.2), "-"), ((None,), "-"), ((0.5, math.nan, 0.6), "0.500")],
)
def test_estimate_text(args, expected):
    assert estimate_text(*args) == expected


def test_summary_k_reads_the_attribute_then_the_column():
    frame = pd.DataFrame({"k": [4]})
    assert summary_k(frame) == 4
    frame.attrs["k"] = 16
    assert summary_k(frame) == 16
    assert summary_k(pd.DataFrame({"format": []})) is None


def test_claim_settings_read_a_transfer_key_a_run_did_not_log_as_its_default():
    """Runs from before a transfer key was logged ran at its default: "<not logged>" counted
    as a value of its own, and compare refused old runs beside new ones at the default."""
    from breadth.study.grid_statistics import claim_settings_of_runs

    runs = pd.DataFrame({"run_id": ["old", "new"], "config": [
        {"seed": "0"}, {"evaluation.transfer_split_k": "4", "evaluation.transfer_min_split": "20"}]})
    settings = claim_settings_of_runs(runs)
    assert (settings.split_k, settings.min_split) == (4, 20)
    at_16 = pd.DataFrame({"run_id": ["old", "new"], "config": [
        {"seed": "0"}, {"evaluation.transfer_split_k": "16"}]})
    with pytest.raises(ValueError, match=r"transfer_split_k: 16 \(runs new\); 4 \(runs old\)"):
        claim_settings_of_runs(at_16)  # the old run's default 4 is not 16
