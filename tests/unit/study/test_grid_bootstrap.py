"""Grid-summary intervals from per-problem tables: a bootstrap over seeds × problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from breadth.study.grid_bootstrap import BOOTSTRAPPED, cell_intervals, split_by_cell
from breadth.study.grid_settings import ClaimSettings
from breadth.study.grid_statistics import grid_summary

N = 8  # samples per problem
PROPORTIONS = ("pass_at_1", "base_pass_at_1", "pass_at_kmax", "base_pass_at_kmax",
               "search_success")
DELTAS = ("pass_at_1_delta", "pass_at_kmax_delta")
COUNTS = ("distinct_solved", "distinct_unsolved", "base_distinct_unsolved")
SPLIT_COUNTS = ("distinct_wrong_unsolved", "base_distinct_wrong_unsolved",
                "distinct_correct_unsolved", "base_distinct_correct_unsolved")


def _study(seeds, rng, *, problems=30, rl_solve=0.97, objective="correctness"):
    """RL solves almost everything (pass@1 near 1, where a t-interval across seeds leaves
    [0, 1]); SFT solves some problems; distinct outcomes and search outcomes vary."""
    rows = []
    for seed in seeds:
        for p in range(problems):
            sft_c = int(rng.integers(0, N + 1))
            rl_c = int(rng.binomial(N, rl_solve))
            for model, c, distinct in (("sft", sft_c, rng.integers(1, 9)),
                                       ("rl", rl_c, rng.integers(1, 4))):
                correct = min(distinct, int(c > 0) * int(rng.integers(1, 3)))
                rows.append({"format": "free_form", "objective": objective, "seed": seed,
                             "model": model, "problem_id": f"s{seed}p{p}", "num_samples": N,
                             "num_correct": c, "distinct_outcomes": float(distinct),
                             "distinct_correct_outcomes": float(correct),
                             "search_evolutionary": float(rng.random() < 0.9)})
    return pd.DataFrame(rows)


def _runs(frame):
    """The parent-run rows fetch_runs would give for the same cells (per-seed means)."""
    rows = []
    for seed, group in frame.groupby("seed"):
        rl, sft = (group[group["model"] == m] for m in ("rl", "sft"))
        rows.append({"format": "free_form", "reward": "correctness", "seed": seed,
                     "rl/eval/pass_at_1": (rl["num_correct"] / N).mean(),
                     "rl/eval/pass_at_8": (rl["num_correct"] > 0).mean(),
                     "sft/eval/pass_at_1": (sft["num_correct"] / N).mean(),
                     "sft/eval/pass_at_8": (sft["num_correct"] > 0).mean()})
    return pd.DataFrame(rows)


def _cell(frame, fmt, objective, settings):
    return cell_intervals(*split_by_cell(frame)[(fmt, objective)], N, settings)


@pytest.mark.parametrize("num_seeds", [1, 2, 3])
def test_intervals_stay_in_range_for_one_two_and_three_seeds(num_seeds):
    frame = _study(range(num_seeds), np.random.default_rng(num_seeds))
    # min_split 1: the 30 problems split in two, and each split's interval is checked here.
    settings = ClaimSettings(num_resamples=400, min_split=1)
    row = grid_summary(_runs(frame), frame, settings=settings).iloc[0]
    assert row["ci"] == "bootstrap over seeds × problems" and row["seeds"] == num_seeds
    for name in BOOTSTRAPPED:
        low, value, high = row[f"{name}_ci_low"], row[name], row[f"{name}_ci_high"]
        assert np.isfinite([low, value, high]).all(), name
        assert low <= value + 1e-12 and value <= high + 1e-12, name
        if name in PROPORTIONS:
            assert 0.0 <= low and high <= 1.0, name
        elif name in DELTAS:
            assert -1.0 <= low and high <= 1.0, name
        elif name in COUNTS:
            assert low >= 1.0 and high <= N, name  # every problem has 1..8 distinct outcomes
        elif name in SPLIT_COUNTS:
            assert low >= 0.0 and high <= N, name
        else:  # a change in a count
            assert -N <= low and high <= N, name


def test_estimates_match_the_runs_means_and_deltas_are_paired():
    frame = _study(range(2), np.random.default_rng(7))
    runs = _runs(frame)
    row = grid_summary(runs, frame, settings=ClaimSettings(num_resamples=100)).iloc[0]
    assert row["pass_at_1"] == pytest.approx(runs["rl/eval/pass_at_1"].mean())
    assert row["base_pass_at_kmax"] == pytest.approx(runs["sft/eval/pass_at_8"].mean())
    assert row["pass_at_1_delta"] == pytest.approx(row["pass_at_1"] - row["base_pass_at_1"])


def test_more_seeds_and_problems_narrow_the_interval():
    rng = np.random.default_rng(3)
    narrow, wide = (_cell(_study(seeds, rng, problems=p, rl_solve=0.6), "free_form",
                          "correctness", ClaimSettings(num_resamples=400))
                    for seeds, p in ((range(3), 60), (range(1), 10)))
    width = lambda c: c["pass_at_1"][2] - c["pass_at_1"][1]
    assert width(narrow) < width(wide)


def test_distinct_counts_are_split_by_what_the_base_solved():
    # Problem a: SFT solves it (8/8), RL gives 2 outcomes; problem b: SFT fails, RL gives 5.
    rows = [("sft", "a", 8, 6.0), ("rl", "a", 8, 2.0), ("sft", "b", 0, 7.0), ("rl", "b", 1, 5.0)]
    frame = pd.DataFrame([{"format": "mcq", "objective": "darling", "seed": 0, "model": m,
                           "problem_id": p, "num_samples": N, "num_correct": c,
                           "distinct_outcomes": d} for m, p, c, d in rows])
    got = _cell(frame, "mcq", "darling", ClaimSettings(num_resamples=50))
    assert got["distinct_solved"][0] == 2.0 and got["distinct_unsolved"][0] == 5.0
    assert got["base_distinct_unsolved"][0] == 7.0 and got["distinct_unsolved_delta"][0] == -2.0
    assert np.isnan(got["search_success"][0])  # no search stage: no value, no interval


def test_a_cell_without_its_arms_in_the_tables_has_no_bootstrap():
    frame = _study([0], np.random.default_rng(0), objective="darling")
    assert ("free_form", "correctness") not in split_by_cell(frame)
    row = grid_summary(_runs(frame).assign(seed=[0]), frame).iloc[0]  # reward: correctness
    assert row["ci"] == "the run's bootstrap over problems"


def test_runs_of_one_cell_with_unlike_configs_resample_only_their_own_tables():
    # Seed 0 of a short and of a long run: the same problems, unlike pass@1.
    frames = [_study([0], np.random.default_rng(i), rl_solve=solve).assign(run_id=run)
              for i, (run, solve) in enumerate((("short", 0.3), ("long", 0.97)))]
    runs = pd.concat([_runs(f).assign(run_id=f["run_id"].iloc[0], config=[{"rl.max_steps": s}])
                      for f, s in zip(frames, ("2", "100"))], ignore_index=True)
    settings = ClaimSettings(num_resamples=100)
    summary = grid_summary(runs, pd.concat(frames, ignore_index=True), settings=settings)
    assert list(summary["config"]) == ["rl.max_steps=100", "rl.max_steps=2"]
    for (_, row), run in zip(summary.iterrows(), ("long", "short")):
        own = runs[runs["run_id"] == run]
        assert row["ci"] == "bootstrap over seeds × problems" and row["seeds"] == 1
        assert row["pass_at_1"] == pytest.approx(own["rl/eval/pass_at_1"].iloc[0])
        assert row["pass_at_1_ci_low"] <= row["pass_at_1"] <= row["pass_at_1_ci_high"]
    # Tables that do not name their runs cannot be told apart: no interval from them.
    unnamed = pd.concat(frames, ignore_index=True).drop(columns="run_id")
    summary = grid_summary(runs, unnamed, settings=settings)
    assert set(summary["ci"]) == {"the run's bootstrap over problems"}


def test_each_row_pairs_its_runs_with_their_own_sft_start():
    """A row that is not split took its SFT rows from any run of its format: darling (C,
    sft.epochs=8, its SFT solves everything) was paired with run A's SFT (sft.epochs=1, solves
    nothing), so its base pass@1 read 0.0 and its delta was off by as much."""
    def frame(run: str, objective: str, sft_correct: int, seed: int) -> pd.DataFrame:
        rows = _study([0], np.random.default_rng(seed), objective=objective).assign(run_id=run)
        rows.loc[rows["model"] == "sft", "num_correct"] = sft_correct
        return rows

    frames = [frame("A", "correctness", 0, 0), frame("B", "correctness", N, 1),
              frame("C", "darling", N, 2)]
    runs = pd.concat([_runs(rows).assign(run_id=run, reward=reward, config=[{"sft.epochs": epochs}])
                      for rows, run, reward, epochs in zip(
                          frames, "ABC", ("correctness", "correctness", "darling"), "188")],
                     ignore_index=True)
    summary = grid_summary(runs, pd.concat(frames, ignore_index=True),
                           settings=ClaimSettings(num_resamples=50))
    darling = summary[summary["reward"] == "darling"].iloc[0]
    assert darling["base_pass_at_1"] == 1.0
    assert {row["base_pass_at_1"] for _, row in summary[summary["reward"] == "correctness"].iterrows()
            } == {0.0, 1.0}


def _split_study(solved: int, unsolved: int, seeds=(0,)) -> pd.DataFrame:
    """SFT solves `solved` problems (8/8) and none of the other `unsolved` (0/8)."""
    rows = []
    for seed in seeds:
        for p in range(solved + unsolved):
            sft_c = N if p < solved else 0
            for model, c, distinct in (("sft", sft_c, 6.0), ("rl", N, 8.0 if p < solved else 2.0)):
                rows.append({"format": "free_form", "objective": "correctness", "seed": seed,
                             "model": model, "problem_id": f"s{seed}p{p}", "num_samples": N,
                             "num_correct": c, "distinct_outcomes": distinct})
    return pd.DataFrame(rows)


def test_a_split_below_min_split_shows_no_number_but_why():
    """One run with 10 base-solved problems: the summary showed `distinct, solved` = 8.300
    [6.777, 10.000] while the run's report called the split inconclusive (10 < 20)."""
    frame = _split_study(solved=10, unsolved=30)
    row = grid_summary(_runs(frame), frame, settings=ClaimSettings(num_resamples=50)).iloc[0]
    for column in ("distinct_solved", "distinct_solved_ci_low", "distinct_solved_ci_high"):
        assert np.isnan(row[column]), column
    assert row["distinct_solved_inconclusive"] == "inconclusive (n=10 < 20)"
    assert row["distinct_unsolved"] == pytest.approx(2.0)  # 30 problems: a number
    assert row["distinct_unsolved_inconclusive"] is None
    # min_split is the runs' own: at 10 the same split is read.
    row = grid_summary(_runs(frame), frame,
                       settings=ClaimSettings(num_resamples=50, min_split=10)).iloc[0]
    assert row["distinct_solved"] == pytest.approx(8.0)
    assert row["distinct_solved_inconclusive"] is None


def test_a_split_is_as_small_as_its_smallest_seed():
    frame = pd.concat([_split_study(25, 25, seeds=[0]), _split_study(5, 45, seeds=[1])])
    row = grid_summary(_runs(frame), frame, settings=ClaimSettings(num_resamples=50)).iloc[0]
    assert row["distinct_solved_inconclusive"] == "inconclusive (n=5 < 20)"
    assert np.isnan(row["distinct_solved"]) and row["distinct_unsolved"] == pytest.approx(2.0)


def test_without_tables_the_split_sizes_the_runs_logged_decide():
    runs = pd.DataFrame({"format": ["mcq"] * 2, "reward": ["correctness"] * 2, "seed": [0, 1],
                         "rl/eval/pass_at_1": [0.5, 0.6],
                         "rl/transfer/unsolved/num_problems": [25.0, 12.0],
                         "rl/transfer/unsolved/distinct_outcomes": [3.0, 2.0],
                         "rl/transfer/solved/num_problems": [30.0, 30.0],
                         "rl/transfer/solved/distinct_outcomes": [1.5, 2.5]})
    row = grid_summary(runs).iloc[0]
    assert row["distinct_solved"] == pytest.approx(2.0)
    assert np.isnan(row["distinct_unsolved"]) and np.isnan(row["distinct_unsolved_delta"])
    assert row["distinct_unsolved_inconclusive"] == "inconclusive (n=12 < 20)"
    assert row["base_distinct_unsolved_inconclusive"] == "inconclusive (n=12 < 20)"


def test_the_unsolved_split_of_distinct_outcomes_sums_to_its_change_by_hand():
    """Two base-unsolved problems (SFT 0 of 8 right) and one solved. Unsolved a: SFT 6 wrong
    outcomes -> RL 1 right + 1 wrong; b: SFT 4 wrong -> RL 2 wrong. Δdistinct (-4, -2): Δwrong
    (-5, -2) + Δcorrect (+1, 0); the solved problem c counts in neither."""
    def rows(model, correct, distinct, right):
        return [{"format": "free_form", "objective": "correctness", "seed": 0, "model": model,
                 "problem_id": pid, "num_samples": N, "num_correct": c,
                 "distinct_outcomes": float(d), "distinct_correct_outcomes": float(r)}
                for pid, c, d, r in zip("abc", correct, distinct, right)]

    frame = pd.DataFrame(rows("sft", [0, 0, 8], [6, 4, 1], [0, 0, 1])
                         + rows("rl", [4, 0, 8], [2, 2, 1], [1, 0, 1]))
    got = _cell(frame, "free_form", "correctness", ClaimSettings(num_resamples=50, min_split=1))
    assert got["distinct_unsolved_delta"][0] == pytest.approx(-3.0)
    assert got["distinct_wrong_unsolved_delta"][0] == pytest.approx(-3.5)
    assert got["distinct_correct_unsolved_delta"][0] == pytest.approx(0.5)
    assert got["base_distinct_wrong_unsolved"][0] == pytest.approx(5.0)
    assert got["distinct_correct_unsolved"][0] == pytest.approx(0.5)
    # Tables from before the column: the split is NaN, the rest unchanged.
    old = _cell(frame.drop(columns="distinct_correct_outcomes"), "free_form", "correctness",
                ClaimSettings(num_resamples=50, min_split=1))
    assert np.isnan(old["distinct_wrong_unsolved_delta"][0])
    assert old["distinct_unsolved_delta"] == got["distinct_unsolved_delta"]
