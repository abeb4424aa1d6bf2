"""The calibration simulation's variances taken from a real run (`--from-pilot`)."""

import math

import numpy as np
import pandas as pd
import pytest

from breadth.stats.calibration import (
    Scenario,
    calibration_grid,
    grid_variances,
    pilot_variances,
    read_pilot,
    simulate_study,
)


def _rollouts(correct: dict[str, list[int]]) -> pd.DataFrame:
    return pd.DataFrame([{"problem_id": pid, "correct": bool(c)}
                         for pid, samples in correct.items() for c in samples])


# Two seeds, two problems, two samples each.
# seed 0: SFT rates (1, 0), RL (1, 0.5): differences (0, +0.5), mean +0.25, se² 0.125 / 2
# seed 1: SFT rates (1, 0), RL (0.5, 0): differences (-0.5, 0), mean -0.25, se² 0.125 / 2
SEEDS = [
    (_rollouts({"a": [1, 1], "b": [0, 0]}), _rollouts({"a": [1, 1], "b": [1, 0]})),
    (_rollouts({"a": [1, 1], "b": [0, 0]}), _rollouts({"a": [1, 0], "b": [0, 0]})),
]


def test_pilot_variances_by_hand():
    pilot = pilot_variances(SEEDS)
    assert pilot.pass_rates == (1.0, 0.0, 1.0, 0.0)
    assert (pilot.num_problems, pilot.num_samples) == (2, 2)
    assert pilot.seed_deltas == (0.25, -0.25)
    # sd of (+0.25, -0.25) is sqrt(0.125); the problem noise of a seed's mean sqrt(0.0625);
    # the run-to-run part sqrt(0.125 - 0.0625) = 0.25.
    assert pilot.delta_sd == pytest.approx(math.sqrt(0.125))
    assert pilot.within_seed_se == pytest.approx(0.25)
    assert pilot.seed_sd == pytest.approx(0.25)


def test_seed_sd_is_zero_when_problem_noise_explains_the_spread():
    same = (_rollouts({"a": [1, 0], "b": [0, 0]}), _rollouts({"a": [1, 0], "b": [1, 1]}))
    pilot = pilot_variances([same, same])  # both seeds +0.5: no spread at all
    assert pilot.delta_sd == 0.0 and pilot.within_seed_se > 0 and pilot.seed_sd == 0.0


def test_pilot_variances_refuses_unpaired_problems_and_one_seed():
    with pytest.raises(ValueError, match="lack 1 of SFT's problems"):
        pilot_variances([SEEDS[0], (SEEDS[1][0], _rollouts({"a": [1, 0]}))])
    with pytest.raises(ValueError, match="at least 2 seeds"):
        pilot_variances(SEEDS[:1])


def _study_rows(seed, model, objective, counts, fmt="free_form"):
    """A study frame's rows: per problem, c correct of n."""
    return [{"format": fmt, "objective": objective, "seed": seed, "model": model,
             "problem_id": pid, "num_samples": n, "num_correct": c}
            for pid, (c, n) in counts.items()]


def test_grid_variances_read_the_study_frames_counts_as_the_pilots_samples():
    """The same two seeds as SEEDS, as a grid's study frame holds them: SFT shared by the
    seed's cells (repeated in each), an RL model per objective; other formats and objectives
    do not count."""
    rows = []
    for seed, rl in ((0, {"a": (2, 2), "b": (1, 2)}), (1, {"a": (1, 2), "b": (0, 2)})):
        for objective in ("correctness", "correctness+ucb"):
            rows += _study_rows(seed, "sft", objective, {"a": (2, 2), "b": (0, 2)})
        rows += _study_rows(seed, "rl", "correctness", rl)
        rows += _study_rows(seed, "rl", "correctness+ucb", {"a": (0, 2), "b": (2, 2)})
        rows += _study_rows(seed, "rl", "correctness", {"a": (0, 2), "b": (2, 2)}, fmt="mcq")
    rows += _study_rows(2, "sft", "correctness+ucb", {"a": (2, 2), "b": (0, 2)})  # no RL cell
    grid = grid_variances(pd.DataFrame(rows))
    assert grid == pilot_variances(SEEDS)
    assert grid.seed_deltas == (0.25, -0.25) and grid.seed_sd == pytest.approx(0.25)
    with pytest.raises(ValueError, match="no free_form cell of vector"):
        grid_variances(pd.DataFrame(rows), objective="vector")


def test_read_pilot_reads_one_folder_per_seed(tmp_path):
    for i, (sft, rl) in enumerate(SEEDS):
        root = tmp_path / f"abc{i}-s{i}"
        root.mkdir()
        sft.to_parquet(root / "sft.parquet")
        rl.to_parquet(root / "rl.parquet")
    (tmp_path / "unfinished-s2").mkdir()  # no rollouts yet: not a seed of the pilot
    assert read_pilot(tmp_path).seed_deltas == (0.25, -0.25)
    twice = tmp_path / "other-s1"
    twice.mkdir()
    SEEDS[1][0].to_parquet(twice / "sft.parquet")
    SEEDS[1][1].to_parquet(twice / "rl.parquet")
    with pytest.raises(ValueError, match="more than one config"):
        read_pilot(tmp_path)


def test_read_pilot_names_a_folder_without_seeds(tmp_path):
    with pytest.raises(FileNotFoundError, match="scripts/results/pilot.py"):
        read_pilot(tmp_path)


def test_simulation_resamples_the_given_pass_rates():
    # Rates of only 0 and 1 leave no binomial noise: every difference is the seed shift (0).
    rng = np.random.default_rng(0)
    assert not simulate_study(Scenario(3, 0.0, pass_rates=(0.0, 1.0)), rng).any()
    assert simulate_study(Scenario(3, 0.0), rng).any()  # the default Beta path has noise


def test_calibration_grid_keeps_the_templates_problems():
    template = Scenario(1, 0.0, num_problems=16, num_samples=8, pass_rates=(0.5,))
    rows = calibration_grid([3], [0.0], 0.02, reps=20, seed=0, resamples=20, template=template)
    t_row = next(r for r in rows if r["method"].startswith("t over"))
    # At q = 0.5 everywhere, the seed mean's sd is sqrt(2 * 0.25 / 8 / 16) = 0.0625: the t
    # half-width at 3 seeds is 4.30 * 0.0625 / sqrt(3) ≈ 0.155 on average (well above the
    # Beta default's ~0.012 at 128 problems).
    assert 0.08 < t_row["half_width"] < 0.25
