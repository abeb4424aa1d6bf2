"""The calibration simulation: its variances taken from a real run (`--from-pilot`) or from a
grid's committed tables (`--from-committed`), its non-normal seed effects and the candidate
intervals."""

import itertools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from breadth.stats.calibration import (
    METHODS,
    ROBUSTNESS_METHODS,
    Scenario,
    calibration_grid,
    committed_variances,
    fit_beta_to_pass_at_k,
    grid_variances,
    pilot_variances,
    read_pilot,
    score_methods,
    seed_bootstrap_t,
    seed_shifts,
    seed_sign_flip,
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


@pytest.mark.parametrize("kind", ["normal", "t3", "skewed", "lognormal"])
def test_every_seed_effect_is_centred_and_scaled_to_the_seed_sd(kind):
    shifts = seed_shifts(Scenario(400_000, 0.03, seed_effects=kind), np.random.default_rng(1))
    assert abs(shifts.mean()) < 0.0005 and shifts.std() == pytest.approx(0.03, rel=0.03)


def test_a_transition_is_a_rare_large_shift_and_centred():
    # 1 seed in 15 crosses: 10 seed sds above the others, which sit at -10/15 sd.
    scenario = Scenario(300_000, 1.0, seed_effects="transition", jump=10.0)
    shifts = seed_shifts(scenario, np.random.default_rng(2))[:, 0]
    crossed = shifts > 5.0
    assert crossed.mean() == pytest.approx(1 / 15, abs=0.002)
    assert np.median(shifts[~crossed]) == pytest.approx(-10 / 15, abs=0.01)
    assert abs(shifts.mean()) < 0.02
    assert scenario.label == "transition (10 sd, p = 1/15)"


def test_an_unknown_seed_effect_names_the_choices():
    with pytest.raises(ValueError, match="seed_effects='cauchy': choose one of normal, t3"):
        Scenario(3, 0.1, seed_effects="cauchy")


def _sign_flip_rejects(means, mu, alpha=0.05):
    """The sign-flip test of centre mu by brute force over all 2^S sign patterns."""
    signs = np.array(list(itertools.product([1, -1], repeat=len(means))))
    flipped = signs @ (means - mu)
    observed = flipped[0]  # all signs +1: the same sum, summed the same way
    return min(np.mean(flipped >= observed), np.mean(flipped <= observed)) <= alpha / 2


def test_the_sign_flip_interval_is_the_inverted_randomisation_test():
    means = np.random.default_rng(3).normal(size=8)
    low, high = seed_sign_flip(means[:, None], 0, 0.95, 0)
    eps = 1e-9
    assert [_sign_flip_rejects(means, mu) for mu in (low - eps, low + eps, high - eps,
                                                     high + eps)] == [True, False, False, True]
    # 5 seeds: the smallest two-sided p is 2 / 32 > 0.05, so no 95% interval is finite.
    assert seed_sign_flip(means[:5, None], 0, 0.95, 0) == (-math.inf, math.inf)
    with pytest.raises(ValueError, match="S = 21 > 20"):
        seed_sign_flip(np.zeros((21, 1)), 0, 0.95, 0)


def test_the_bootstrap_t_interval_holds_the_mean_and_is_none_without_spread():
    means = np.array([[0.1], [0.3], [0.2], [0.5], [0.4]])
    low, high = seed_bootstrap_t(means, 400, 0.95, 0)
    assert low < 0.3 < high
    assert all(map(math.isnan, seed_bootstrap_t(np.ones((4, 1)), 50, 0.95, 0)))


def test_the_beta_fit_recovers_a_known_curve():
    from scipy.special import betaln  # here, not at the top: scipy costs each worker's collection

    ks = [1, 2, 4, 8, 16, 32]
    curve = [1 - math.exp(betaln(0.5, 0.8 + k) - betaln(0.5, 0.8)) for k in ks]
    assert fit_beta_to_pass_at_k(ks, curve) == (pytest.approx(0.5, rel=1e-4),
                                                 pytest.approx(0.8, rel=1e-4))


NIGHTLY = Path(__file__).resolve().parents[3] / "docs/results/superseded/nightly-grid-80e1e8eb"


def test_the_committed_nightly_gives_the_simulations_structure():
    committed = committed_variances(NIGHTLY / "pass_at_k_by_objective.csv",
                                    NIGHTLY / "claims.json")
    # 15 seeds of 128 problems, n = 32; Δ pass@1's standard error 0.00638 x sqrt(15).
    assert (committed.num_seeds, committed.num_problems, committed.num_samples) == (15, 128, 32)
    assert committed.delta_sd == pytest.approx(0.0063824 * math.sqrt(15), rel=1e-4)
    # The fit follows the committed SFT curve within a point at every k.
    assert np.abs(committed.fitted - np.array(committed.pass_at_k)).max() < 0.01
    a, b = committed.beta_a, committed.beta_b
    assert a / (a + b) == pytest.approx(0.51, abs=0.01)
    assert committed.within_seed_se < committed.delta_sd and committed.seed_sd > 0
    scenario = committed.scenario()
    assert (scenario.beta_a, scenario.num_problems, scenario.num_samples) == (a, 128, 32)


def test_committed_variances_name_what_is_missing(tmp_path):
    csv = tmp_path / "curve.csv"
    csv.write_text("format,arm,k\nfree_form,sft,1\n")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['estimate'\]"):
        committed_variances(csv, NIGHTLY / "claims.json")
    claims = tmp_path / "claims.json"
    claims.write_text("[]")
    with pytest.raises(ValueError, match="no measured sharpening Δ pass@1 row of free_form"):
        committed_variances(NIGHTLY / "pass_at_k_by_objective.csv", claims)


def test_the_grid_scores_the_robustness_scenarios_with_the_kept_method_and_the_candidates():
    template = Scenario(1, 0.0, num_problems=16, num_samples=8, pass_rates=(0.5,))
    kinds = [Scenario(1, 0.0, seed_effects="t3"),
             Scenario(1, 0.0, seed_effects="transition", jump=3.0)]
    rows = calibration_grid([6], [0.0], 0.02, reps=5, seed=0, resamples=20, template=template,
                            robustness=kinds, robustness_sds=[0.05])
    other = [r for r in rows if r["seed_effects"] != "normal"]
    assert {r["seed_effects"] for r in other} == {"heavy-tailed (t, 3 df)",
                                                  "transition (3 sd, p = 1/15)"}
    assert {r["method"] for r in other} == set(ROBUSTNESS_METHODS)
    assert {r["method"] for r in rows if r["seed_effects"] == "normal"} == set(METHODS)


def test_a_large_transition_inflates_every_methods_false_positives():
    # Centred, a 10-sd transition leaves the (14/15)^15 = 36% of studies without one at a
    # consistent -2/3 sd: each method, t or sign-flip, reads that as an effect.
    scenario = Scenario(15, 0.03, seed_effects="transition", jump=10.0, num_problems=32)
    methods = {name: METHODS[name] for name in ROBUSTNESS_METHODS[:2]}
    # 150 studies: rates of 0.24 and 0.23 (0.21 at 300). At 0.21 a rate of 150 studies has a
    # standard error of 0.033: 0.1 is 3.3 of them below, the nominal 0.05 is 4.8 below. The t3
    # check keeps 300: its 0.027 and 0.043 (+- 0.012) stand 1.9 standard errors under 0.065.
    scores = score_methods(scenario, reps=150, seed=4, methods=methods, resamples=50)
    assert all(s["excludes_zero"].value > 0.1 for s in scores.values())
    heavy = score_methods(replace(scenario, seed_effects="t3"), reps=300, seed=4,
                          methods=methods, resamples=50)
    assert all(s["excludes_zero"].value < 0.065 for s in heavy.values())
