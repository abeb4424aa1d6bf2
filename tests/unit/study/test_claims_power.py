"""Each measured claim row's power: seed sd, Holm half-width, seeds needed, and why an
inconclusive row is inconclusive; a pilot's numbers beside the run's when given."""

import json
import math
from dataclasses import replace

import pandas as pd
import pytest

from breadth.stats.seed_interval import seed_t_interval, t_quantile
from breadth.study.budget import FormatCost, NightlyBudget
from breadth.study.claims import Claim, claims_markdown, decide_family, evaluate_claims
from breadth.study.grid_settings import ClaimSettings
from breadth.study.power import read_pilot_sizing


def _row(per_seed, delta, claim="sharpening", delta_name="pass@1", fmt="free_form", sign=+1):
    """A measured row from its per-seed means (one problem per seed)."""
    ci = seed_t_interval([[m] for m in per_seed])
    return Claim(claim, fmt, claim, ci.estimate, ci.low, ci.high, "measured", "seeds: 3",
                 delta=delta, p_value=ci.p_value, standard_error=ci.standard_error,
                 num_seeds=ci.num_seeds, sign=sign, delta_name=delta_name)


def _first_below(sd, target, alpha):
    """Smallest S with t(1 - alpha / 2, S - 1) * sd / sqrt(S) < target, by hand."""
    s = 2
    while t_quantile(1 - alpha / 2, s - 1) * sd / math.sqrt(s) >= target:
        s += 1
    return s


def test_an_underpowered_row_names_the_seeds_it_needs():
    # Per-seed means 0, 0.02, 0.04: mean 0.02, sd 0.02, se 0.02 / sqrt(3); t = sqrt(3), p =
    # 1 - t / sqrt(2 + t²) = 0.2254. In a family of 2 (with a clear effect), Holm does not
    # reject it: Bonferroni level 1 - 0.05 / 2, half-width t(0.9875, 2) * 0.02 / sqrt(3)
    # = 6.205 * 0.011547 = 0.0717 >= δ = 0.02.
    weak, strong = decide_family([_row([0.0, 0.02, 0.04], 0.02), _row([1.0, 1.01, 0.99], 0.02)])
    assert weak.verdict == "inconclusive" and strong.verdict == "reproduced"
    power = weak.power
    assert power.seed_sd == pytest.approx(0.02)
    assert power.holm_half_width == pytest.approx(t_quantile(0.9875, 2) * 0.02 / math.sqrt(3))
    assert power.holm_half_width == pytest.approx(0.0717, abs=1e-4)
    # Seeds for a half-width below δ / 2 = 0.01 at alpha / 2: t(0.9875, 23) * 0.02 / sqrt(24)
    # = 2.398 * 0.004082 = 0.00979 < 0.01 <= t(0.9875, 22) * 0.02 / sqrt(23) = 0.01002.
    assert power.seeds_for_verdict == _first_below(0.02, 0.01, 0.025) == 24
    assert power.seeds_for_delta == _first_below(0.02, 0.02, 0.025) == 9
    assert weak.detail.startswith("underpowered: at 3 seeds the Holm half-width ±0.0717 exceeds "
                                  "δ = 0.02; about 24 seeds at this spread (seed sd 0.02) for a "
                                  "verdict either way, 9 for a half-width below δ")
    assert power.reason == "underpowered" and power.pilot_sd is None


def test_an_inconclusive_row_prices_its_seeds_as_a_nightly_of_its_arms():
    # The weak row needs 24 seeds (above). Its arms, ucb and correctness in free form: a seed
    # is a warm start of 10 min and 2 objectives of 40, 90 min; on 2 workers 24 seeds take
    # 24 * 90 / 2 / 60 = 18.0 h; 3 h holds 3 * 60 * 2 // 90 = 4 seeds.
    rows = [replace(_row([0.0, 0.02, 0.04], 0.02), objectives=("correctness+ucb", "correctness")),
            _row([1.0, 1.01, 0.99], 0.02)]
    budget = NightlyBudget({"free_form": FormatCost(10.0, 40.0), "mcq": FormatCost(1.0, 1.0)})
    weak, strong = decide_family(rows, budget=budget)
    assert weak.power.price.seed_minutes == 90.0 and not weak.power.price.fits
    assert ("; a nightly of its arms (free_form: correctness+ucb, correctness), at 90 min of "
            "stage work a seed on 2 workers: 24 seeds take 18.0 h, beyond the 3-h nightly, "
            "which holds 4 seeds of them; family of 2") in weak.detail
    # A decided row has nothing to price.
    assert "stage work" not in strong.detail and strong.power.price is None
    # One objective fewer, 50 min a seed: 24 seeds are 24 * 50 / 2 / 60 = 10.0 h.
    (one, _) = decide_family([replace(rows[0], objectives=("correctness",)), rows[1]],
                             budget=budget)
    assert "(free_form: correctness), at 50 min of stage work a seed on 2 workers: 24 seeds " \
           "take 10.0 h, beyond" in one.detail
    # At 5 min a seed, 24 seeds are 24 * 5 / 2 / 60 = 1.0 h: within the nightly.
    (cheap, _) = decide_family(rows, budget=NightlyBudget({"free_form": FormatCost(1.0, 2.0)}))
    assert "24 seeds take 1.0 h, within the 3-h nightly; family of 2" in cheap.detail
    table = claims_markdown([weak, strong])
    assert "a nightly of its own arms" in table
    assert "a nightly of its own arms" not in claims_markdown(decide_family(rows))
    assert "stage work" not in decide_family(rows)[0].detail  # no budget given: none
    # No cost for the row's format, or no arms recorded (a table from before): no price.
    assert "stage work" not in decide_family(
        rows, budget=NightlyBudget({"mcq": FormatCost(1.0, 1.0)}))[0].detail
    assert "stage work" not in decide_family(
        [replace(rows[0], objectives=()), rows[1]], budget=budget)[0].detail


def test_the_rows_of_a_grid_carry_the_objectives_their_arms_read():
    frame = _frame([0, 8, 16], objectives=("correctness", "correctness+ucb"))
    rows = {(c.claim, c.measure.split(",")[0]): c for c in evaluate_claims(frame)}
    assert rows[("sharpening", "Δ pass@1")].objectives == ("correctness",)
    assert rows[("historical", "Δ pass@1")].objectives == ("correctness+ucb", "correctness")


def test_a_decided_row_does_not_claim_underpower():
    # The strong row is decided although its own Holm half-width (sd 0.01: ±6.205 * 0.01 /
    # sqrt(3) = ±0.0358 at 1 - 0.05 / 2) is above δ: power numbers, but no reason and no
    # underpower in its text.
    _, strong = decide_family([_row([0.0, 0.02, 0.04], 0.02), _row([1.0, 1.01, 0.99], 0.02)])
    assert strong.verdict == "reproduced" and strong.power.reason == ""
    assert strong.power.holm_half_width > strong.delta
    assert "underpowered" not in strong.detail and "lack of power" not in strong.detail
    table = claims_markdown([strong])
    assert "| 3 / " in table and "| reproduced (+1.000, not 0: Holm p " in table
    assert "beyond ±0.02) |" in table and "(underpowered)" not in table


def test_an_interval_narrower_than_delta_at_its_edge_is_not_a_power_problem():
    # Per-seed means 0.016, 0.03, 0.044 (δ 0.05), a family of 1: mean 0.03, sd 0.014, se
    # 0.008083, t = 3.71, p = 1 - t / sqrt(2 + t²) = 0.0655 (not rejected). Holm interval 0.03 ± 4.303 * 0.008083 = ±0.0348 < δ, holds 0; the equivalence
    # interval (90%) 0.03 ± 2.920 * 0.008083 = [0.0064, 0.0536] reaches past +0.05.
    (row,) = decide_family([_row([0.016, 0.03, 0.044], 0.05, delta_name="pass@n")])
    assert row.verdict == "inconclusive" and row.power.reason == "near δ"
    assert row.power.holm_half_width == pytest.approx(0.0348, abs=1e-4)
    assert row.detail.startswith("not for lack of power at δ: the Holm interval (±0.0348) is "
                                 "narrower than δ = 0.05 but holds 0 and reaches past ±δ")
    assert "underpowered" not in row.detail


def _pilot(tmp_path, values):
    path = tmp_path / "pilot.json"
    path.write_text(json.dumps({"seeds": [{"Δ pass@1": v, "n": 32.0} for v in values],
                                "times": []}))
    return read_pilot_sizing(path)


def test_the_pilots_numbers_appear_beside_the_runs_when_given(tmp_path):
    # The pilot's per-seed Δ pass@1: sd 0.02202 (ddof 1); at alpha / 2 it needs 28 seeds for a
    # half-width below 0.01.
    pilot = _pilot(tmp_path, [0.0249, 0.0542, 0.0215, 0.0007])
    rows = [_row([0.0, 0.02, 0.04], 0.02), _row([0.0, 0.02, 0.04], 0.02, claim="historical")]
    sharpening, historical = decide_family(rows, pilot=pilot)
    sd = pd.Series([0.0249, 0.0542, 0.0215, 0.0007]).std()
    assert sharpening.power.pilot_sd == pytest.approx(sd)
    assert sharpening.power.pilot_seeds == 4
    assert sharpening.power.pilot_seeds_for_verdict == _first_below(sd, 0.01, 0.025) == 28
    assert "; the pilot (4 seeds): seed sd 0.022, about 28 seeds for a verdict" in \
        sharpening.detail
    assert "3 / 24 (pilot: 28)" in claims_markdown([sharpening])
    # ucb − correctness is a contrast the pilot did not run: no pilot numbers on it.
    assert historical.power.pilot_sd is None and "pilot" not in historical.detail
    # Nor on another format's row: the pilot's preset ran free-form.
    (mcq,) = decide_family([_row([0.0, 0.02, 0.04], 0.02, fmt="mcq")], pilot=pilot)
    assert mcq.power.pilot_sd is None
    assert decide_family(rows)[0].power.pilot_sd is None  # no pilot given: none


def test_a_bad_pilot_file_names_itself(tmp_path):
    path = tmp_path / "pilot.json"
    path.write_text("[]")
    with pytest.raises(ValueError, match="pilot.json: not a power pilot's JSON"):
        read_pilot_sizing(path)


def _frame(rl_extra_by_seed, problems=40, n=8, objectives=("correctness",)):
    """SFT solves 2 of 8 everywhere; in seed s each objective's RL solves 3 of 8 on the first
    rl_extra_by_seed[s] problems, 2 of 8 elsewhere."""
    rows = []
    for seed, extra in enumerate(rl_extra_by_seed):
        for objective in objectives:
            for p in range(problems):
                for model, c in (("sft", 2), ("rl", 3 if p < extra else 2)):
                    rows.append({"format": "free_form", "objective": objective, "seed": seed,
                                 "model": model, "problem_id": f"p{p}", "num_samples": n,
                                 "num_correct": c, "distinct_outcomes": 2})
    return pd.DataFrame(rows)


def test_the_claims_table_carries_power_from_the_grids_own_seeds(tmp_path):
    # Per-seed Δ pass@1 = extra / 8 / 40: 0, 0.025, 0.05 -> sd 0.025. Δ pass@8 is 0 in every
    # seed (pass@8 of 2 or 3 correct in 8 is 1), and SFT's pass@8 is 1: its δ rule (a quarter
    # of SFT's headroom) leaves no room, so the row has no δ, no equivalence and no power.
    claims = evaluate_claims(_frame([0, 8, 16]), ClaimSettings(num_resamples=20),
                             pilot=_pilot(tmp_path, [0.0249, 0.0542, 0.0215, 0.0007]))
    pass1 = next(c for c in claims if c.measure.startswith("Δ pass@1, RL"))
    passn = next(c for c in claims if c.measure.startswith("Δ pass@n, RL"))
    m = pass1.power.family_size
    assert pass1.power.seed_sd == pytest.approx(0.025) and pass1.power.num_seeds == 3
    assert pass1.verdict == "inconclusive" and pass1.power.reason == "underpowered"
    needed = _first_below(0.025, 0.01, 0.05 / m)
    assert pass1.power.seeds_for_verdict == needed
    assert f"about {needed} seeds at this spread" in pass1.detail
    assert "the pilot (4 seeds)" in pass1.detail
    assert (passn.delta, passn.sft_level, passn.power, passn.within_delta) == (None, 1.0, None,
                                                                               None)
    assert passn.detail.endswith("δ = min(0.05, (1 − SFT pass@n) / 4): none at SFT pass@n 1 "
                                 "(no room to move)")
    assert passn.verdict == "inconclusive" and "underpowered" not in passn.detail
    # The JSON the report writes carries it.
    record = pass1.to_dict()["power"]
    assert record["seeds_for_verdict"] == needed and record["pilot_seeds"] == 4
