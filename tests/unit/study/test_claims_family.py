"""The claims' statistics on hand-computed frames: the seed t interval, Holm, the equivalence
verdict, the chance correction at large k, the independent transfer split, each re-specified
claim, and a small calibration simulation."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from breadth.evaluation.metrics import chance_corrected_pass_at_k
from breadth.evaluation.summary import per_problem_table
from breadth.stats.calibration import (
    Scenario,
    bootstrap_over_pooled_problems,
    score_methods,
    seed_t,
)
from breadth.stats.seed_interval import (
    holm_adjusted,
    seed_t_interval,
    t_cdf,
    t_interval,
    t_quantile,
)
from breadth.study.claim_table import read_interval
from breadth.study.claims import (
    Claim,
    claims_markdown,
    decide_family,
    evaluate_claims,
    verdict,
)
from breadth.study.grid_settings import ClaimSettings


def _t2(q):
    """Student t quantile with 2 df in closed form: (2q - 1) / sqrt(2 q (1 - q))."""
    return (2 * q - 1) / math.sqrt(2 * q * (1 - q))


def test_t_distribution_matches_closed_forms():
    # df = 1 is Cauchy: tan(pi (q - 1/2)); df = 2 has the closed form above.
    for q in (0.6, 0.975, 0.99875):
        assert t_quantile(q, 1) == pytest.approx(math.tan(math.pi * (q - 0.5)), rel=1e-7)
        assert t_quantile(q, 2) == pytest.approx(_t2(q), rel=1e-7)
    assert t_cdf(3.0, 2) == pytest.approx(0.5 + 3 / (2 * math.sqrt(11)))


def test_seed_t_interval_by_hand():
    # Per-seed means 0.2, 0.4, 0.6 (seed 1 has a NaN-padded problem): mean 0.4, sd 0.2,
    # se 0.2 / sqrt(3); t(0.975, 2) = 4.3027.
    ci = seed_t_interval([[0.1, 0.3], [0.4, np.nan], [0.5, 0.7]])
    se = 0.2 / math.sqrt(3)
    assert (ci.estimate, ci.num_seeds) == (pytest.approx(0.4), 3)
    assert ci.low == pytest.approx(0.4 - _t2(0.975) * se)
    assert ci.high == pytest.approx(0.4 + _t2(0.975) * se)
    # Two-sided p of t = 0.4 / se = 3.464 with 2 df: 1 - t / sqrt(2 + t^2).
    t = 0.4 / se
    assert ci.p_value == pytest.approx(1 - t / math.sqrt(2 + t * t))
    one = seed_t_interval([[0.1, 0.3]])
    assert one.estimate == pytest.approx(0.2) and math.isnan(one.low) and math.isnan(one.p_value)


def test_a_claim_row_and_its_seed_interval_share_one_t_interval():
    # Holm's and the equivalence levels re-read a row's interval from its estimate and
    # standard error: the row must give what the seed interval gives at every level.
    ci = seed_t_interval([[0.1, 0.3], [0.4, np.nan], [0.5, 0.7]])
    row = Claim("a", "free_form", "a", ci.estimate, ci.low, ci.high, "measured", "",
                standard_error=ci.standard_error, num_seeds=ci.num_seeds)
    for level in (0.95, 1 - 0.05 / 3, 1 - 2 * 0.05 / 7):
        assert row.interval_at(level) == ci.at(level) == t_interval(
            ci.estimate, ci.standard_error, ci.num_seeds, level)
    assert (row.low, row.high) == ci.at(0.95)
    assert all(map(math.isnan, replace(row, num_seeds=1).interval_at(0.95)))


def test_holm_by_hand():
    # Sorted: 0.005 * 4 = 0.02; 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> 0.06.
    adjusted = holm_adjusted([0.01, 0.04, 0.03, 0.005, np.nan])
    np.testing.assert_allclose(adjusted[:4], [0.03, 0.06, 0.06, 0.02])
    assert math.isnan(adjusted[4])


def _measured(name, estimate, se, sign=+1, delta=0.05):
    t = abs(estimate) / se
    p = 1 - t / math.sqrt(2 + t * t)  # 3 seeds: 2 df
    return Claim(name, "free_form", name, estimate, None, None, "measured", "", delta=delta,
                 p_value=p, standard_error=se, num_seeds=3, sign=sign)


def test_decide_family_holm_levels_and_the_equivalence_verdict():
    # a: t = 10, p = 1 - 10/sqrt(102) = 0.0099; b: t = 3, p = 0.0955; c: t = 1, p = 0.4226.
    # Holm (m = 3): a 3 * 0.0099 = 0.030 <= 0.05, rejected at level 1 - 0.05/3; b 2 * 0.0955 =
    # 0.191, not rejected: Bonferroni level 1 - 0.05/3; c 0.423.
    claims = [_measured("a", 1.0, 0.1), _measured("b", 0.3, 0.1, delta=0.02),
              _measured("c", 0.001, 0.001), _measured("d", -1.0, 0.1)]
    claims[3] = Claim("d", "free_form", "d", None, None, None, "not run", "no arm")
    a, b, c, d = decide_family(claims)
    assert a.p_holm == pytest.approx(3 * (1 - 10 / math.sqrt(102)))
    assert a.adjusted_confidence == pytest.approx(1 - 0.05 / 3)
    half = _t2(1 - 0.05 / 6) * 0.1  # 7.649 * 0.1
    assert (a.adjusted_low, a.adjusted_high) == (pytest.approx(1 - half), pytest.approx(1 + half))
    assert a.verdict == "reproduced"
    assert b.verdict == "inconclusive" and b.adjusted_low < 0 < b.adjusted_high
    assert b.p_holm == pytest.approx(2 * (1 - 3 / math.sqrt(11)))
    # c: the equivalence interval (level 1 - 2 * 0.05 / 3) is 0.001 +- t(0.98333, 2) * 0.001
    # = [-0.0043, +0.0063], inside +-0.05: no effect.
    assert c.verdict == "no effect" and "inside ±0.05" in c.detail
    assert d.verdict == "not run" and d.p_holm is None
    # The same effect on the other side of the claim is refuted, not reproduced.
    assert decide_family([_measured("a", 1.0, 0.1, sign=-1)])[0].verdict == "refuted"


@pytest.mark.parametrize(
    ("adjusted", "equivalence", "sign", "expected", "differs", "within", "beyond"),
    [
        # The truth table of docs/design/algorithms.md, δ = 0.05: D (0 excluded), W (the
        # equivalence interval inside ±δ), B (the adjusted interval beyond δ).
        ((0.10, 0.20), (0.11, 0.19), +1, "reproduced", True, False, True),  # D, B, claimed side
        ((0.01, 0.20), (0.02, 0.15), +1, "reproduced", True, False, False),  # D, size vs δ open
        ((0.01, 0.20), (0.02, 0.15), 0, "reproduced", True, False, False),  # two-sided
        ((-0.20, -0.10), (-0.19, -0.11), +1, "refuted", True, False, True),
        ((-0.20, -0.01), (-0.15, -0.02), +1, "refuted", True, False, False),
        ((0.01, 0.03), (0.012, 0.028), +1, "smaller than δ, but not zero", True, True, False),
        ((-0.03, -0.01), (-0.028, -0.012), +1, "smaller than δ, but not zero", True, True, False),
        ((-0.01, 0.03), (-0.005, 0.02), +1, "no effect", False, True, False),  # inside ±δ
        ((-0.01, 0.09), (-0.005, 0.06), +1, "inconclusive", False, False, False),  # past δ
        ((-0.30, 0.30), (-0.20, 0.20), -1, "inconclusive", False, False, False),  # too wide
    ],
)
def test_verdict_reports_both_tests(adjusted, equivalence, sign, expected, differs, within,
                                    beyond):
    reading = read_interval(adjusted[0], adjusted[1], sign, 0.05, equivalence)
    assert (reading.verdict, reading.differs_from_zero, reading.within_delta,
            reading.beyond_delta) == (expected, differs, within, beyond)
    assert verdict(adjusted[0], adjusted[1], sign, 0.05, equivalence) == expected


def test_without_a_delta_only_the_test_against_zero_is_read():
    reading = read_interval(0.01, 0.03, +1)
    assert (reading.verdict, reading.within_delta, reading.beyond_delta) == (
        "reproduced", None, None)
    assert read_interval(None, None, +1).verdict == "inconclusive"


def test_a_significant_effect_inside_delta_is_not_called_no_effect():
    # The nightly's forking row (grid-80e1e8eb): -0.016 at 15 seeds, Holm p ~ 5e-9, its
    # equivalence interval [-0.019, -0.013] inside ±0.02. It read "no effect"; both tests
    # say it is not zero and smaller than δ.
    row = replace(_measured("forking", -0.0157, 0.0012, delta=0.02), num_seeds=15,
                  p_value=1.23e-9)
    (decided,) = decide_family([row])
    assert decided.verdict == "smaller than δ, but not zero"
    assert (decided.differs_from_zero, decided.within_delta, decided.beyond_delta) == (
        True, True, False)
    assert decided.wording == ("smaller than δ, but not zero (-0.016 within ±0.02; Holm p "
                               "1.2e-09; against the claimed sign)")
    assert decided.to_dict()["wording"] == decided.wording
    # A family of 1: the equivalence level is 90%, -0.0157 ± t(0.95, 14) 1.761 x 0.0012.
    assert "equivalence interval [-0.018, -0.014] inside ±0.02" in decided.detail
    assert f"| {decided.wording} |" in claims_markdown([decided])


def test_chance_correction_at_k_32_with_an_unsolved_problem():
    # 4 options: chance pass@32 = 1 - 0.75^32 = 0.99990; above chance, one problem with no
    # correct sample weighed -9,954. Past chance 0.99 the correction is not defined.
    assert math.isnan(chance_corrected_pass_at_k(0.0, 4, 32).item())
    assert chance_corrected_pass_at_k(0.0, 4, 16).item() == pytest.approx(
        -(1 - 0.75**16) / 0.75**16)


def test_the_pass_at_n_row_of_a_format_with_options_is_raw():
    """Chance cancels in RL - SFT on the same options; corrected at the capped k = 16, the
    difference was divided by 1 - 0.98998 (x100) and a raw -0.1 read as about -10 against
    δ = 0.05. Per seed, RL solves 9 of 10 problems at every sample and one never; SFT is
    right 8 of 32 times everywhere, so its pass@32 is 1."""
    rows = []
    for seed in (0, 1, 2):
        for p in range(10):
            for model, c in (("sft", 8), ("rl", 0 if p == 0 else 32)):
                rows.append({"format": "mcq", "objective": "correctness", "seed": seed,
                             "model": model, "problem_id": f"p{p}", "num_samples": 32,
                             "num_correct": c, "num_options": 4, "distinct_outcomes": 1})
    claims = evaluate_claims(pd.DataFrame(rows), ClaimSettings(num_resamples=20))
    (row,) = [c for c in claims if c.claim == "sharpening" and c.delta_name == "pass@n"]
    assert row.estimate == pytest.approx(0.9 - 1.0)
    assert row.measure.startswith("Δ pass@n (raw: chance cancels in the difference)")
    # pass@1 stays above chance: (0.9 - 0.25) / 0.75 - (0.25 - 0.25) / 0.75.
    (first,) = [c for c in claims if c.claim == "sharpening" and c.delta_name == "pass@1"]
    assert first.estimate == pytest.approx(0.65 / 0.75)


def _rollouts(rng, q, n, wrong=100_000):
    """n samples per problem: right with probability q, else one of `wrong` wrong answers
    (so many that nearly every wrong sample is a new answer, as with free-form numbers)."""
    problems = np.repeat(np.arange(len(q)), n)
    correct = rng.random(problems.size) < q[problems]
    outcome = np.where(correct, "gold", np.char.add("w", rng.integers(0, wrong, problems.size).astype(str)))
    return pd.DataFrame({"problem_id": np.char.add("p", problems.astype(str)),
                         "sample_index": np.tile(np.arange(n), len(q)),
                         "correct": correct, "outcome": outcome})


def _null_transfer_frame(seed=1, seeds=3, problems=300, n=32):
    """RL is a second, independent draw of SFT: its true Δ on any split is 0."""
    rng = np.random.default_rng(seed)
    frames = []
    for s in range(seeds):
        q = rng.beta(0.6, 1.2, size=problems)
        for model in ("sft", "rl"):
            table = per_problem_table(_rollouts(rng, q, n)).reset_index()
            frames.append(table.assign(format="free_form", objective="correctness", seed=s,
                                       model=model))
    return pd.concat(frames, ignore_index=True)


def test_transfer_split_on_held_out_samples_is_unbiased_under_the_null():
    frame = _null_transfer_frame()
    settings = ClaimSettings(num_resamples=20)
    held_out = next(c for c in evaluate_claims(frame, settings)
                    if c.claim == "diversity on unsolved")
    # The old rule: split on the samples that are then measured.
    same = frame.assign(split_num_samples=frame["num_samples"],
                        split_num_correct=frame["num_correct"],
                        heldout_distinct_outcomes=frame["distinct_outcomes"])
    reused = next(c for c in evaluate_claims(same, settings) if c.claim == "diversity on unsolved")
    # Selecting problems on SFT's bad draws, then counting that draw's wrong answers, shows
    # RL "narrowing" where RL is SFT; the held-out split does not. (Over simulation seeds 0-5
    # the held-out estimate averaged +0.018 +- 0.016, the reused one -0.40.)
    assert reused.high < 0
    assert held_out.low <= 0 <= held_out.high
    assert abs(held_out.estimate) < abs(reused.estimate) / 3


def test_transfer_split_reads_the_first_half_and_measures_the_second():
    rows = pd.DataFrame({"problem_id": ["a"] * 8, "sample_index": range(8),
                         "correct": [1, 1, 0, 0, 0, 0, 0, 0],
                         "outcome": ["g", "g", "x", "y", "x", "x", "x", "x"]})
    table = per_problem_table(rows)
    assert table.loc["a", ["split_num_samples", "split_num_correct"]].tolist() == [4, 2]
    # Held-out half (samples 4-7): only "x".
    assert table.loc["a", "heldout_distinct_outcomes"] == 1
    assert table.loc["a", "distinct_correct_outcomes"] == 1


def _arms(values, seeds=(0, 1, 2), fmt="free_form", problems=4, **constant):
    """{(objective or 'sft'): per-seed value} -> study-frame rows, the value in every problem
    of that seed and arm, for each column named in `values`' inner dicts."""
    rows = []
    for seed in seeds:
        for arm, columns in values.items():
            objective, model = (("correctness", "sft") if arm == "sft" else (arm, "rl"))
            for p in range(problems):
                rows.append({"format": fmt, "objective": objective, "seed": seed, "model": model,
                             "problem_id": f"p{p}", "num_samples": 8,
                             **{k: (v[seed] if isinstance(v, (list, tuple)) else v)
                                for k, v in columns.items()}, **constant})
    return pd.DataFrame(rows)


BASE = {"num_correct": 4, "distinct_outcomes": 3, "distinct_correct_outcomes": 2}


def test_distinct_correct_claims_compare_at_the_same_scale_rewards():
    frame = _arms({"sft": BASE, "correctness": BASE,
                   "correctness@unscaled": {**BASE, "distinct_correct_outcomes": [1, 1, 2]},
                   "darling": {**BASE, "distinct_correct_outcomes": [3, 4, 3],
                               "num_correct": [3, 4, 4]}})
    claims = evaluate_claims(frame, ClaimSettings(num_resamples=20))
    darling = next(c for c in claims if c.claim == "darling")
    # Against correctness@unscaled: per seed 2, 3, 1: mean 2.
    assert darling.measure == "Δ distinct correct outcomes, darling − correctness@unscaled"
    assert darling.estimate == pytest.approx(2.0)
    # Beside it: the pass@1 cost (per seed -1/8, 0, 0) and the group-scaled control (1, 2, 1).
    assert "pass@1 cost -0.042" in darling.detail
    assert "against correctness at scale_rewards=group +1.333" in darling.detail
    # Without the unscaled control the row is not run, and says the confounded number.
    confounded = frame[frame["objective"] != "correctness@unscaled"]
    darling = next(c for c in evaluate_claims(confounded, ClaimSettings(num_resamples=20))
                   if c.claim == "darling")
    assert darling.verdict == "not run" and "arm not in the grid: correctness@unscaled" in darling.detail
    assert "confounded Δ is +1.333" in darling.detail


def test_distinct_correct_claims_are_not_run_on_a_single_answer_task():
    single = {**BASE, "distinct_correct_outcomes": 1}
    frame = _arms({"sft": single, "correctness": single, "correctness+batch": single})
    batch = next(c for c in evaluate_claims(frame) if c.claim == "batch")
    assert batch.verdict == "not run" and "single-answer" in batch.detail


def test_forking_reads_reasoning_tokens_and_the_answer_line_is_excluded():
    # Character tokens: "ab" is the reasoning, "Answer:1" the answer line (entropy 5.0 there
    # must not count). SFT's reasoning entropies 0.1 and 0.9: the 80th percentile is 0.74.
    def rows(entropies):
        return pd.DataFrame({"problem_id": ["a"], "correct": [True], "outcome": ["1"],
                             "text": ["abAnswer:1"], "entropy": [entropies + [5.0] * 8]})

    from breadth.evaluation.summary import evaluate_rollouts

    sft = rows([0.1, 0.9])
    rl = evaluate_rollouts(rows([0.1, 0.2]), base=sft, num_bootstrap=5, split_k=1)
    own = evaluate_rollouts(sft, num_bootstrap=5, split_k=1)
    # Counting the answer line's 5.0s (above 0.74) would give SFT 9/10 and RL 8/10.
    assert own.per_problem.loc["a", "reasoning_forking_share"] == 0.5
    assert rl.per_problem.loc["a", "reasoning_forking_share"] == 0.0


def test_forking_and_format_are_not_run_where_completions_hold_no_trace():
    # Without a trace the completion is only the answer ("33": its cue is in the prompt), with
    # no answer marker of its own; read as reasoning, its digits would give a forking share.
    from breadth.evaluation.summary import evaluate_rollouts

    def per_problem(entropies, trace):
        rows = pd.DataFrame({"problem_id": ["a", "a"], "correct": [True, False],
                             "outcome": ["33", "34"], "text": ["33", "34"],
                             "entropy": entropies})
        return evaluate_rollouts(rows, num_bootstrap=5, split_k=1, trace=trace).per_problem

    # Pooled 0.1, 0.2, 0.8, 0.9: the 80th percentile is 0.84, so one digit of four is above.
    answers = [[0.1, 0.9], [0.2, 0.8]]
    assert per_problem(answers, trace=True).loc["a", "reasoning_forking_share"] == 0.25
    table = per_problem(answers, trace=False)
    assert table[["reasoning_forking_share", "distinct_reasoning"]].isna().all(axis=None)

    no_trace = {**BASE, "reasoning_forking_share": np.nan, "distinct_reasoning": np.nan}
    frame = _arms({"sft": no_trace, "correctness": no_trace})
    rows = {c.claim: c for c in evaluate_claims(pd.concat([frame, frame.assign(format="mcq")]))}
    assert rows["forking share"].verdict == "not run" and "trace" in rows["forking share"].detail
    assert rows["format"].verdict == "not run" and "trace" in rows["format"].detail


def test_forking_share_row_on_a_known_frame_is_two_sided():
    # Named for what it measures (#52 item 4): whether RL changes the share, either way. The
    # old "forking" row claimed a rise, and this fall read *refuted*.
    frame = _arms({"sft": {**BASE, "reasoning_forking_share": 0.2},
                   "correctness": {**BASE, "reasoning_forking_share": [0.10, 0.12, 0.08]}})
    forking = next(c for c in evaluate_claims(frame) if c.claim == "forking share")
    assert forking.estimate == pytest.approx(-0.1) and forking.sign == 0
    assert forking.high < 0
    assert forking.verdict == "reproduced"  # the share changes: by -0.1, beyond ±0.02
    assert forking.paper.startswith("not the 80/20 paper's claim")


def test_format_claim_reads_the_fall_of_distinct_reasoning_per_seed():
    free = _arms({"sft": {**BASE, "distinct_reasoning": 10},
                  "correctness": {**BASE, "distinct_reasoning": [5, 6, 4]}})
    mcq = _arms({"sft": {**BASE, "distinct_reasoning": 10},
                 "correctness": {**BASE, "distinct_reasoning": [8, 8, 9], "num_correct": 8}},
                fmt="mcq", num_options=4)
    # The mcq start is above chance by a margin that varies by seed (the at-chance guard).
    mcq.loc[mcq["model"] == "sft", "num_correct"] = [8, 8, 8, 8, 7, 8, 8, 8, 6, 8, 8, 8]
    claim = next(c for c in evaluate_claims(pd.concat([free, mcq])) if c.claim == "format")
    # falls: free_form 0.5, 0.4, 0.6; mcq 0.2, 0.2, 0.1: mcq - free_form -0.3, -0.2, -0.5.
    assert claim.estimate == pytest.approx(-1 / 3)
    se = np.std([-0.3, -0.2, -0.5], ddof=1) / math.sqrt(3)
    assert claim.low == pytest.approx(-1 / 3 - _t2(0.975) * se)


def test_search_is_not_run_without_a_graded_score_and_measured_with_one():
    search = {**BASE, "search_evolutionary": 1.0, "search_independent": [0.0, 0.0, 1.0]}
    frame = _arms({"sft": BASE, "correctness": search, "correctness+batch": search},
                  graded_score=0.0)
    rows = [c for c in evaluate_claims(frame) if c.claim == "search"]
    assert {c.verdict for c in rows} == {"not run"}
    assert all(c.detail.startswith("no signal to climb") for c in rows)
    graded = frame.assign(graded_score=1.0)
    gain, diversity = [c for c in evaluate_claims(graded) if c.claim == "search"]
    assert gain.estimate == pytest.approx(2 / 3) and diversity.estimate == pytest.approx(0.0)


def test_calibration_mini_simulation_tells_a_calibrated_interval_from_a_wrong_one():
    # 3 seeds, seed sd 0.08 (run-to-run noise larger than the problem noise of a mean over
    # 128 problems): the seed t interval's false positives stay near 5%; resampling pooled
    # problems ignores the seeds and is wrong most of the time.
    scores = score_methods(Scenario(3, 0.08), reps=200, seed=1, resamples=200,
                           methods={"t": seed_t, "pooled": bootstrap_over_pooled_problems})
    assert scores["t"]["excludes_zero"].value <= 0.10
    assert scores["pooled"]["excludes_zero"].value >= 0.5


def test_mcq_pass_at_k_curves_stop_below_chance_099():
    # 4 options, n = 32: chance pass@32 is 0.9999, where above-chance values explode; the
    # curves stop at k = 16 (chance 0.98998), as the claims do.
    from breadth.study.report import pass_at_k_by_objective

    frame = _arms({"sft": {**BASE, "num_samples": 32, "num_correct": [9, 10, 11]},
                   "correctness": {**BASE, "num_samples": 32, "num_correct": 12}},
                  fmt="mcq", num_options=4)
    curves = pass_at_k_by_objective(frame, ClaimSettings(num_resamples=20))
    assert sorted(set(curves["k"])) == [1, 2, 4, 8, 16]
    assert curves[["estimate", "low", "high"]].notna().all().all()


def test_each_row_carries_what_its_paper_reports():
    frame = _arms({"sft": BASE, "correctness": BASE})
    papers = {(c.claim, c.measure.split(",")[1].strip() if "," in c.measure else ""): c.paper
              for c in evaluate_claims(frame)}
    assert "Maze 0.432 → 0.593" in papers[("pass@k objective", "vector − correctness")]
    assert "MuSiQue 0.728 → 0.832" in papers[("pass@k objective", "vector − correctness")]
    assert "not reported" in papers[("pass@k objective", "passk − correctness@unscaled")]
    forking = next(p for (claim, _), p in papers.items() if claim == "forking share")
    assert "0.672" in forking and "+11.04 AIME'25" in forking
    assert "tens to hundreds" in next(p for (c, _), p in papers.items() if c == "crossover")
