"""Claims: split rule, chance correction and verdicts on small frames computed by hand."""

import json

import numpy as np
import pandas as pd
import pytest

from breadth.stats.bootstrap import hierarchical_bootstrap_ci
from breadth.stats.seed_interval import seed_t_interval
from breadth.study.claims import (
    claims_markdown,
    effect_text,
    evaluate_claims,
    pass_metric,
    verdict,
)
from breadth.study.grid_settings import ClaimSettings


@pytest.mark.parametrize(
    ("low", "high", "sign", "expected"),
    [
        (0.01, 0.20, +1, "reproduced"),
        (-0.20, -0.01, +1, "refuted"),
        (-0.01, 0.20, +1, "inconclusive"),
        (-0.20, -0.01, -1, "reproduced"),
        (0.01, 0.20, -1, "refuted"),
        (0.0, 0.0, +1, "inconclusive"),  # a zero effect is not a direction
        (None, None, +1, "inconclusive"),
    ],
)
def test_verdict(low, high, sign, expected):
    assert verdict(low, high, sign) == expected


def test_mcq_pass_at_k_is_taken_above_chance():
    rows = pd.DataFrame({"num_samples": [4, 4, 4], "num_correct": [1, 4, 0], "num_options": [4] * 3})
    # pass@1 = 0.25, 1.0, 0.0; chance 0.25 -> (p - 0.25) / 0.75
    np.testing.assert_allclose(pass_metric(1)(rows), [0.0, 1.0, -1 / 3])
    free = rows.drop(columns="num_options")
    np.testing.assert_allclose(pass_metric(1)(free), [0.25, 1.0, 0.0])


def _cells(rl_correct, sft_correct=2, n=8, seeds=(0, 1), fmt="free_form", objective="correctness",
           **extra):
    """Per (seed, problem) rows; the transfer split's half reads as another draw with the
    same counts (split_num_* = n, c), held-out distinct outcomes as the distinct outcomes."""
    rows = []
    for seed in seeds:
        for p, rl_c in enumerate(rl_correct):
            for model, c in (("sft", sft_correct), ("rl", rl_c)):
                distinct = 4 if model == "sft" else 2
                rows.append({"format": fmt, "objective": objective, "seed": seed, "model": model,
                             "problem_id": f"p{p}", "num_samples": n, "num_correct": c,
                             "distinct_outcomes": distinct, "split_num_samples": n,
                             "split_num_correct": c, "heldout_distinct_outcomes": distinct,
                             "distinct_reasoning": 2.0 * distinct, **extra})
    return pd.DataFrame(rows)


def test_sharpening_reproduced_and_missing_arms_not_run():
    # SFT solves 2/8 of every problem; RL solves half the problems always, the other never.
    frame = _cells([8, 0] * 20)
    claims = {(c.claim, c.measure[:9]): c for c in evaluate_claims(frame, ClaimSettings())}
    up = claims[("sharpening", "Δ pass@1,")]
    assert up.estimate == pytest.approx(0.5 - 0.25) and up.verdict == "reproduced"
    # Both seeds identical: no run-to-run spread, so the t interval is the point itself.
    assert 0 < up.low == up.estimate == up.high
    down = claims[("sharpening", "Δ pass@n,")]
    # pass@8: SFT 1.0 everywhere; RL 1.0 on half, 0.0 on the other half.
    assert down.estimate == pytest.approx(-0.5) and down.verdict == "reproduced"
    historical = [c for c in claims.values() if c.claim == "historical"]
    assert len(historical) == 3  # pass@1, pass@n and distinct outcomes, ucb − correctness
    assert all(c.verdict == "not run" and "correctness+ucb" in c.detail for c in historical)


UNSOLVED = "diversity on unsolved"


def test_transfer_with_a_small_split_says_inconclusive_with_its_size():
    # SFT 2/8 everywhere: pass@4 = 1 - C(6,4)/C(8,4) = 55/70 >= 0.5, every problem base-solved.
    frame = _cells([8, 0] * 20)
    transfer = next(c for c in evaluate_claims(frame) if c.claim == UNSOLVED)
    assert transfer.verdict == "inconclusive"
    assert transfer.detail.startswith("inconclusive (pooled n = 0 < 20: 20 a seed x 0)")
    assert "seed(s) 0, 1 left out (split under 5)" in transfer.detail
    # Unsolved at split_k = 1 (pass@1 = 0.25 < 0.5): all 40 problems; distinct 4 -> 2.
    settings = ClaimSettings(split_k=1)
    transfer = next(c for c in evaluate_claims(frame, settings) if c.claim == UNSOLVED)
    assert transfer.estimate == pytest.approx(-2.0) and transfer.verdict == "reproduced"
    # The same 40 problems a seed under a floor of 50 a seed: no number, which the table would
    # show bare.
    small = ClaimSettings(split_k=1, min_split=50)
    transfer = next(c for c in evaluate_claims(frame, small) if c.claim == UNSOLVED)
    assert transfer.verdict == "inconclusive" and transfer.estimate is None
    assert transfer.detail.startswith("inconclusive (pooled n = 80 < 100: 50 a seed x 2)")
    assert effect_text(transfer) == "n/a"


def _split_sizes(frame: pd.DataFrame, unsolved: dict[int, int]) -> pd.DataFrame:
    """`frame` (SFT 2 of 8 right on every problem) with SFT right 0 of 8 on the first
    `unsolved[seed]` problems of each seed: those are its base-unsolved split."""
    frame = frame.copy()
    index = frame["problem_id"].str[1:].astype(int)
    first = index < frame["seed"].map(unsolved)
    sft = frame["model"] == "sft"
    frame.loc[sft & first, ["num_correct", "split_num_correct"]] = 0
    return frame


def test_the_pooled_split_rule_reads_a_seed_below_20_and_leaves_out_one_below_5():
    # #52 item 5: one seed's 12 base-unsolved problems left the nightly's row n/a under the old
    # rule (20 in every seed). Pooled: 30 + 12 = 42 >= 20 a seed x 2 is read; a seed of 3 is
    # left out, named, and the other two (30 + 12) are read.
    frame = _split_sizes(_cells([8, 0] * 20, seeds=(0, 1, 2)), {0: 30, 1: 12, 2: 3})
    row = next(c for c in evaluate_claims(frame) if c.claim == UNSOLVED)
    assert row.num_seeds == 2 and row.estimate == pytest.approx(-2.0)
    assert "split sizes per seed: [30, 12, 3]; seed(s) 2 left out (split under 5); pooled " \
           "split 42 over 2 seed(s) (rule: 20 a seed)" in row.detail
    # Below 20 a seed on average: 12 + 12 = 24 < 40.
    short = _split_sizes(_cells([8, 0] * 20), {0: 12, 1: 12})
    row = next(c for c in evaluate_claims(short) if c.claim == UNSOLVED)
    assert row.verdict == "inconclusive" and row.estimate is None
    assert row.detail.startswith("inconclusive (pooled n = 24 < 40: 20 a seed x 2)")


def test_crossover_found_where_rl_falls_below_sft():
    frame = _cells([8, 0] * 20)
    crossover = next(c for c in evaluate_claims(frame) if c.claim == "crossover")
    # pass@1: RL 0.5 > SFT 0.25; pass@2: SFT 1 - C(6,2)/C(8,2) = 13/28 = 0.464 < 0.5 (RL ahead);
    # pass@4: SFT 0.786 > RL 0.5. The first k with RL below SFT is 4.
    assert crossover.estimate == 4.0 and crossover.verdict == "reproduced"


def test_format_claim_compares_relative_narrowing():
    free = _cells([8, 0] * 20)
    mcq = _cells([4, 0] * 20, n=4, sft_correct=3, fmt="mcq", num_options=4)  # above chance
    mcq.loc[mcq["model"] == "rl", "distinct_reasoning"] = 8  # mcq: no fall at all
    claim = next(c for c in evaluate_claims(pd.concat([free, mcq])) if c.claim == "format")
    # fall 1 - RL / SFT of distinct reasoning: free_form 1 - 4/8 = 0.5; mcq 1 - 8/8 = 0:
    # mcq - free_form = -0.5 in every seed.
    assert claim.estimate == pytest.approx(-0.5) and claim.verdict == "reproduced"
    assert "**format**" in claims_markdown([claim])
    # What a nightly must run for it: correctness, in each format.
    assert claim.objectives == ("correctness",)


@pytest.mark.parametrize("num_seeds", [1, 2, 3])
def test_proportion_intervals_stay_in_the_unit_interval(num_seeds):
    rng = np.random.default_rng(num_seeds)
    # Proportions piled against 1 (and one against 0): a t-interval would leave [0, 1].
    values = np.clip(rng.normal(0.97, 0.05, size=(num_seeds, 30)), 0, 1)
    for matrix in (values, 1 - values):
        ci = hierarchical_bootstrap_ci(matrix, num_resamples=400)
        assert 0.0 <= ci.low <= ci.estimate <= ci.high <= 1.0


def test_study_report_writes_the_table_and_a_curve_per_arm(tmp_path):
    from breadth.study.report import write_study_report

    frame = pd.concat([_cells([8, 0] * 20), _cells([8, 8] * 20, objective="correctness+batch")])
    claims = evaluate_claims(frame)
    paths = write_study_report(frame, claims, tmp_path, header="# test study")
    assert [p.name for p in paths] == ["claims.md", "claims.json", "pass_at_k_by_objective.png",
                                       "pass_at_k_by_objective.csv"]
    curves = pd.read_csv(paths[3])
    assert set(curves["arm"]) == {"sft", "correctness", "correctness+batch"}
    batch_at_1 = curves[(curves["arm"] == "correctness+batch") & (curves["k"] == 1)].iloc[0]
    assert batch_at_1["estimate"] == pytest.approx(1.0) and batch_at_1["low"] == pytest.approx(1.0)
    assert "| **sharpening** |" in paths[0].read_text()


def test_seeds_with_their_own_problems_are_paired_within_each_seed():
    # Each training seed prepares its own eval problems: seed 1's ids differ from seed 0's.
    seed0 = _cells([8, 0] * 20, seeds=(0,))
    seed1 = _cells([8, 0] * 20, seeds=(1,))
    seed1["problem_id"] = "s1-" + seed1["problem_id"]
    sharpening = next(c for c in evaluate_claims(pd.concat([seed0, seed1]))
                      if c.claim == "sharpening")
    assert sharpening.estimate == pytest.approx(0.25)
    assert "problems per seed: [40, 40]" in sharpening.detail


def test_crossover_refuted_when_rl_is_behind_from_k_1():
    # RL solves 1/8 where SFT solves 2/8: never ahead, so there is nothing to cross over.
    crossover = next(c for c in evaluate_claims(_cells([1] * 40)) if c.claim == "crossover")
    assert crossover.estimate == 1.0 and crossover.verdict == "refuted"


def test_mcq_transfer_split_is_taken_above_chance():
    # 4 options, n = 8, c = 2: pass@4 = 55/70 = 0.79 looks "solved", but chance pass@4 is
    # 1 - 0.75^4 = 0.68, so above chance it is (0.786 - 0.684) / 0.316 = 0.32 < 0.5: unsolved.
    mcq = _cells([8, 0] * 20, fmt="mcq", num_options=4)
    transfer = next(c for c in evaluate_claims(mcq) if c.claim == UNSOLVED)
    assert "split sizes per seed: [40, 40]" in transfer.detail


def test_mcq_claims_at_chance_are_inconclusive_whatever_their_interval():
    # 4 options, SFT right 2 of 8 times = exactly chance (pass@1 above chance 0): the RL arm's
    # clear gain must not be read as a finding about the policy.
    mcq = _cells([8, 0] * 20, fmt="mcq", num_options=4)
    sharpening = next(c for c in evaluate_claims(mcq) if c.claim == "sharpening")
    assert sharpening.low is not None and sharpening.low > 0  # the interval is still reported
    assert sharpening.verdict == "inconclusive"
    assert "not above chance" in sharpening.detail


def _tied_at_k_1_then_sft_ahead():
    # RL right 4 of 16 times, SFT 2 of 8: pass@1 = 0.25 for both on every problem (so in every
    # resample), but at k = 2 SFT's 1 - C(6,2)/C(8,2) = 0.464 beats RL's 1 - C(12,2)/C(16,2)
    # = 0.45. RL never leads, so it has no lead to lose.
    frame = _cells([4] * 40)
    frame.loc[frame["model"] == "rl", "num_samples"] = 16
    return frame


@pytest.mark.parametrize(
    ("frame", "expected", "estimate"),
    [
        # Identical curves: level at every k, no lead to lose (the old rule said refuted).
        (lambda: _cells([2] * 40), "inconclusive", None),
        # SFT passes RL at k = 2, but a tie at k = 1 is no lead for RL to lose (the old rule
        # said reproduced).
        (_tied_at_k_1_then_sft_ahead, "inconclusive", 2.0),
        # RL 0.5 ahead at k = 1 and 2, SFT ahead from k = 4: a real crossing.
        (lambda: _cells([8, 0] * 20), "reproduced", 4.0),
        # SFT already ahead at k = 1.
        (lambda: _cells([1] * 40), "refuted", 1.0),
        # RL strictly ahead at every k tried (SFT never right): no crossover up to k = 8,
        # which says nothing past it (it read refuted before #52 item 4).
        (lambda: _cells([8] * 40, sft_correct=0), "inconclusive", None),
    ],
)
def test_crossover_needs_rl_strictly_ahead_at_k_1(frame, expected, estimate):
    crossover = next(c for c in evaluate_claims(frame()) if c.claim == "crossover")
    assert (crossover.verdict, crossover.estimate) == (expected, estimate)


def test_claim_settings_take_every_transfer_key_of_the_evaluation_config():
    # The grid flow and `compare --grid` both read the cells' split through this mapping: a
    # renamed config key would silently leave the claims at the default split.
    from breadth.config import EvaluationConfig
    from breadth.study.grid_settings import TRANSFER_SETTINGS

    assert {k for k in EvaluationConfig.model_fields if k.startswith("transfer_")} == set(
        TRANSFER_SETTINGS
    )
    config = EvaluationConfig(transfer_split_k=2, transfer_split_threshold=0.25,
                              transfer_min_split=5)
    s = ClaimSettings.of_evaluation(config.model_dump())
    assert (s.split_k, s.split_threshold, s.min_split) == (2, 0.25, 5)


def test_transfer_measure_names_the_split_rule_each_format_uses():
    # mcq splits on pass@4 above chance (solved_by_base with options): the label says so.
    frame = pd.concat([_cells([8, 0] * 20), _cells([8, 0] * 20, fmt="mcq", num_options=4)])
    measures = {c.format: c.measure for c in evaluate_claims(frame) if c.claim == UNSOLVED}
    assert measures["free_form"].endswith("(SFT pass@4 < 0.5, on SFT's other half)")
    assert measures["mcq"].endswith("(SFT pass@4 above chance < 0.5, on SFT's other half)")


def test_mcq_claims_are_inconclusive_when_the_sft_start_is_only_maybe_above_chance():
    # The guard needs the interval above chance, not just the point: SFT right 8/8 on 11 of 40
    # problems and 0/8 on the rest gives pass@1 above chance (11 - 29/3) / 40 = +0.033, with an
    # interval that still holds 0. RL's clear gain (+0.33 above chance) must not be read.
    # Seed 0's SFT is right 8/8 on 12 of 40 problems (pass@1 0.3, above chance (0.3 - 0.25)
    # / 0.75 = +0.067), seed 1's on 10 (exactly chance): mean +0.033, t interval
    # 0.033 +- 12.71 * 0.033 holds 0.
    mcq = _cells([8, 0] * 20, fmt="mcq", num_options=4)
    sft = mcq["model"] == "sft"
    index = mcq["problem_id"].str[1:].astype(int)
    mcq.loc[sft, "num_correct"] = np.where(index[sft] < np.where(mcq["seed"][sft] == 0, 12, 10), 8, 0)
    start = mcq[sft].sort_values(["seed", "problem_id"])
    ci = seed_t_interval(pass_metric(1)(start).reshape(2, 40))
    assert ci.estimate == pytest.approx(0.1 / 3) and ci.low <= 0 < ci.estimate
    claims = [c for c in evaluate_claims(mcq) if c.format == "mcq"]
    # Arms the grid lacks stay "not run": nothing was measured, so nothing to discount.
    measured = [c for c in claims if c.verdict != "not run"]
    assert measured and all(c.verdict == "inconclusive" for c in measured)
    assert all("the SFT start is not above chance" in c.detail for c in measured)


def test_format_claim_is_two_sided():
    # The mirror of test_format_claim_compares_relative_narrowing: here mcq narrows and
    # free_form does not, so the difference is negative, and a difference either way is the
    # claim (the formats explore differently).
    free = _cells([8, 0] * 20)
    free.loc[free["model"] == "rl", "distinct_reasoning"] = 8  # free_form: no fall at all
    mcq = _cells([4, 0] * 20, n=4, sft_correct=3, fmt="mcq", num_options=4)  # above chance
    claim = next(c for c in evaluate_claims(pd.concat([free, mcq])) if c.claim == "format")
    # falls: mcq 1 - 4/8 = 0.5, free_form 0: difference +0.5 in every seed.
    assert claim.estimate == pytest.approx(0.5) and claim.low > 0
    assert claim.verdict == "reproduced"


def test_crossover_inconclusive_when_the_interval_of_k_reaches_k_1():
    # RL right 8/8 on 7 of 40 problems and 1/8 on the rest: pass@1 0.125 + 0.875 * 7/40 = 0.278
    # beats SFT's 0.25 at the point, and SFT is ahead at k = 2 (0.464 vs 0.381), so the point
    # estimate is k = 2; but in many resamples RL is not ahead at k = 1, so the interval of k
    # starts at 1 and RL's lead at k = 1 is not established.
    crossover = next(c for c in evaluate_claims(_cells([8] * 7 + [1] * 33))
                     if c.claim == "crossover")
    assert (crossover.estimate, crossover.low, crossover.high) == (2.0, 1.0, 2.0)
    assert crossover.verdict == "inconclusive"


def test_claims_of_arms_the_grid_did_not_run_are_not_run(tmp_path):
    """A grid without passk, vector or darling listed their claims as `n/a | inconclusive`,
    which reads as "measured, no effect"; only the details said the arm was not in the grid."""
    from breadth.study.report import write_study_report

    frame = pd.concat([_cells([8, 0] * 20), _cells([8, 8] * 20, objective="correctness+batch")])
    claims = evaluate_claims(frame, ClaimSettings(num_resamples=50))
    verdicts = {(c.claim, c.measure.split(",")[0]): c.verdict for c in claims}
    for claim in ("historical", "pass@k objective", "darling", "forking share", "search",
                  "batch"):
        assert {v for (name, _), v in verdicts.items() if name == claim} == {"not run"}, claim
    forking = next(c for c in claims if c.claim == "forking share")
    assert "no token entropies of the reasoning" in forking.detail
    search = next(c for c in claims if c.claim == "search")
    assert search.detail == "no search results in the grid"
    batch = next(c for c in claims if c.claim == "batch")  # no distinct correct outcomes logged
    assert "lack distinct_correct_outcomes" in batch.detail
    historical = next(c for c in claims if c.claim == "historical")
    assert historical.estimate is None and "arm not in the grid: correctness+ucb" in historical.detail
    table, data = write_study_report(frame, claims, tmp_path)[:2]
    assert ("| **darling** | free_form | Δ distinct correct outcomes, darling − correctness@unscaled "
            "| SFT distinct correct outcomes / 10 | n/a |  |  | not run |") in table.read_text()
    assert "*not run*: the grid lacks an arm" in table.read_text()
    assert {c["verdict"] for c in json.loads(data.read_text())} >= {"not run", "reproduced"}


def test_a_grid_without_correctness_has_its_crossover_and_format_claims_not_run():
    free = _cells([8, 0] * 20, objective="darling")
    mcq = _cells([4, 0] * 20, n=4, sft_correct=3, fmt="mcq", num_options=4)
    claims = evaluate_claims(pd.concat([free, mcq]), ClaimSettings(num_resamples=50))
    crossover = next(c for c in claims if c.claim == "crossover" and c.format == "free_form")
    assert crossover.verdict == "not run" and crossover.detail == "arm not in the grid: correctness"
    claim = next(c for c in claims if c.claim == "format")
    assert claim.verdict == "not run" and "for free_form: correctness" in claim.detail


@pytest.mark.parametrize(("fmt", "absent"), [("free_form", "mcq"), ("mcq", "free_form")])
def test_a_single_format_grid_has_its_format_claim_not_run(tmp_path, fmt, absent):
    """A grid of one format left the format claim out of the table, where every other claim
    whose arm the grid lacks reads "not run"."""
    from breadth.study.report import write_study_report

    frame = _cells([8, 0] * 20, fmt=fmt, **({"num_options": 4} if fmt == "mcq" else {}))
    claims = evaluate_claims(frame, ClaimSettings(num_resamples=50))
    [claim] = [c for c in claims if c.claim == "format"]
    assert (claim.format, claim.verdict) == ("both", "not run")
    assert (claim.estimate, claim.low, claim.high) == (None, None, None)
    assert claim.detail == f"format not in the grid: {absent}"
    table, data = write_study_report(frame, claims, tmp_path)[:2]
    assert ("| **format** | both | Δ relative fall of distinct reasoning paths (1 − RL / SFT), "
            "mcq − free_form | ±0.1 | n/a |  |  | not run |") in table.read_text()
    [row] = [c for c in json.loads(data.read_text()) if c["claim"] == "format"]
    assert row["verdict"] == "not run" and row["estimate"] is None


def test_a_study_reads_each_seeds_rows_as_the_frame_gives_them_and_keeps_them_apart():
    """`Study` keeps each arm's rows per seed (the claims read the same arms dozens of times):
    the rows a metric gets are the frame's own for that seed and those problems, in their
    order, and a metric that adds a column leaves the next metric's rows as they were."""
    from breadth.study.claims import SFT, Study, _of_seed

    frame = pd.concat([_cells([8, 0, 4], seeds=(0, 1)), _cells([8, 0], seeds=(2,))])
    frame = frame[~((frame["seed"] == 1) & (frame["problem_id"] == "p1"))]  # seed 1 lacks p1
    study = Study(frame, "free_form", ClaimSettings())
    rl = ("correctness", "rl")
    for arm in (rl, SFT):
        for seed, problems in ((0, ["p2", "p0"]), (1, ["p0", "p2"]), (2, ["p1"])):
            expected = _of_seed(study.arm(*arm), seed, problems)
            pd.testing.assert_frame_equal(study._of_seed(arm, seed, problems), expected)
    values, detail = study.aligned([rl, SFT], pass_metric(1))
    assert detail == "seeds: 3, problems per seed: [3, 2, 2]"
    np.testing.assert_array_equal(values[1, :, 0], [1.0, 0.5, np.nan])  # p0, p2, padding

    def widening(rows):
        rows["extra"] = 1.0
        return rows["num_correct"].to_numpy(np.float64)

    study.aligned([rl], widening)
    assert "extra" not in study._of_seed(rl, 0, ["p0"])
    with pytest.raises(KeyError):  # a seed the arm lacks fails as the frame's rows do
        study._of_seed(rl, 7, ["p0"])
