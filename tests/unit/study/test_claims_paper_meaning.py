"""Each claim at its paper's meaning, or named for what it measures (#52 item 4): UCB on pass@n
and distinct outcomes, coverage as Yue et al. mean it, the crossover's largest k, search's
out-of-distribution child prompts, and the renamed rows read from tables written before."""

import json

import pandas as pd
import pytest

from breadth.study.claim_registry import DELTAS, RENAMED, today
from breadth.study.claims import claims_markdown, evaluate_claims
from breadth.study.grid_settings import ClaimSettings
from breadth.study.power import PILOT_MEASURES, PilotSizing
from breadth.study.reference import read_reference

from .test_claims import _cells
from .test_claims_family import _null_transfer_frame

SETTINGS = ClaimSettings(num_resamples=50)


def _coverage_frame(seeds=(0, 1, 2)) -> pd.DataFrame:
    """40 problems a seed, 8 samples (halves of 4). SFT is right 2 + 2 times on p0-p19 (solved
    in both halves) and never on p20-p39. RL, in its other half: fails p0-p3 (4 of SFT's 20,
    plus p4 in seed 2), and solves p20-p24 (5 of the other 20)."""
    rows = []
    for seed in seeds:
        for p in range(40):
            solved = p < 20
            lost = p < 4 or (seed == 2 and p == 4)
            gained = 20 <= p < 25
            sft = (2, 4) if solved else (0, 0)
            rl = (2, 2) if lost else (2, 4) if solved else (0, 1) if gained else (0, 0)
            for model, (split, total) in (("sft", sft), ("rl", rl)):
                rows.append({"format": "free_form", "objective": "correctness", "seed": seed,
                             "model": model, "problem_id": f"p{p}", "num_samples": 8,
                             "num_correct": total, "split_num_samples": 4,
                             "split_num_correct": split, "distinct_outcomes": 3,
                             "heldout_distinct_outcomes": 2})
    return pd.DataFrame(rows)


def _coverage(claims):
    lost, gained = [c for c in claims if c.claim == "coverage"]
    return lost, gained


def test_coverage_rows_read_what_rl_loses_and_gains_against_sfts_own_redraw():
    lost, gained = _coverage(evaluate_claims(_coverage_frame(), SETTINGS))
    # Lost: of SFT's 20 solved problems RL fails 4 (5 in seed 2) in its other half, where SFT
    # solves all 20: 0.2, 0.2, 0.25.
    assert lost.estimate == pytest.approx((0.2 + 0.2 + 0.25) / 3)
    assert (lost.sign, lost.delta, lost.verdict) == (+1, 0.05, "reproduced")
    assert lost.measure.startswith("share RL no longer solves of the problems SFT solves")
    assert "split sizes per seed: [20, 20, 20]" in lost.detail
    # Gained: of the 20 SFT does not solve, RL solves 5 and SFT's other half none: +0.25, a
    # rise, which Yue et al.'s "RL's solvable set is nearly a subset of the base's" refutes.
    assert gained.estimate == pytest.approx(0.25)
    assert (gained.sign, gained.verdict) == (-1, "refuted")
    assert gained.objectives == lost.objectives == ("correctness",)
    assert "Yue et al." in lost.paper and "a rise refutes" in gained.paper


@pytest.mark.parametrize("simulation", [0, 1, 2])
def test_coverage_rows_hold_zero_where_rl_is_sft_drawn_again(simulation):
    # RL an independent second draw of SFT (3 seeds of 300 problems, 32 samples): each row is
    # 0 in truth. Split and measured on the same samples, "lost" would read every problem SFT
    # solved by luck and RL did not as a loss. (Over simulations 0-5 every interval held 0;
    # lost averaged +0.004, gained -0.024 on its smaller split.)
    for row in _coverage(evaluate_claims(_null_transfer_frame(seed=simulation), SETTINGS)):
        assert row.low <= 0 <= row.high, row


def test_coverage_rows_are_not_run_with_options_or_without_the_split_halves():
    mcq = _cells([8, 0] * 20, fmt="mcq", num_options=4)
    rows = [c for c in evaluate_claims(mcq, SETTINGS) if c.claim == "coverage"]
    assert len(rows) == 2 and {c.verdict for c in rows} == {"not run"}
    assert all("a guess solves a problem within n/2 samples" in c.detail for c in rows)
    bare = _coverage_frame().drop(columns=["split_num_samples", "split_num_correct"])
    rows = [c for c in evaluate_claims(bare, SETTINGS) if c.claim == "coverage"]
    assert {c.verdict for c in rows} == {"not run"}
    assert all("lack the split halves (split_num_samples, split_num_correct)" in c.detail
               for c in rows)


def test_ucb_is_read_on_pass_at_n_and_distinct_outcomes_beside_pass_at_1():
    # correctness solves every other problem always (pass@8 0.5), ucb all (1.0); distinct
    # outcomes 2 (correctness) and 3 (ucb) against SFT's 4.
    ucb = _cells([8, 8] * 20, objective="correctness+ucb", seeds=(0, 1))
    ucb.loc[ucb["model"] == "rl", "distinct_outcomes"] = 3
    frame = pd.concat([_cells([8, 0] * 20, seeds=(0, 1)), ucb])
    rows = {c.measure.split(",")[0]: c for c in evaluate_claims(frame, SETTINGS)
            if c.claim == "historical"}
    assert list(rows) == ["Δ pass@1", "Δ pass@n", "Δ distinct outcomes"]
    assert all(c.objectives == ("correctness+ucb", "correctness") for c in rows.values())
    passn, distinct = rows["Δ pass@n"], rows["Δ distinct outcomes"]
    assert (passn.estimate, passn.sign, passn.delta_name) == (pytest.approx(0.5), +1,
                                                               "ucb pass@n")
    # SFT's pass@8 is 1 (2 of 8 right everywhere): its rule leaves no room, so no δ.
    assert passn.delta is None and "no room to move" in passn.detail
    # A twentieth of SFT's distinct outcomes above one: (4 - 1) / 20.
    assert distinct.estimate == pytest.approx(1.0)
    assert (distinct.delta, distinct.delta_rule) == (pytest.approx(0.15),
                                                     "(SFT distinct outcomes − 1) / 20")
    assert distinct.verdict == "reproduced"


@pytest.mark.parametrize(("name", "level", "expected"), [
    ("ucb pass@n", 0.867, 0.25 * (1 - 0.867)),  # the chain nightly's SFT pass@32
    ("ucb distinct", 4.78, 0.189),  # half of chain's -0.48 collapse, about
    ("ucb distinct", 4.0, 0.15),  # mcq's 4 options at most
    ("coverage", None, 0.05),
])
def test_the_new_deltas_at_the_committed_levels(name, level, expected):
    assert DELTAS[name].of(level) == pytest.approx(expected)


def test_the_crossover_says_up_to_which_k_it_looked():
    crossed = next(c for c in evaluate_claims(_cells([8, 0] * 20), SETTINGS)
                   if c.claim == "crossover")
    assert crossed.wording == "reproduced (SFT catches up within k ≤ 8 examined)"
    never = next(c for c in evaluate_claims(_cells([8] * 40, sft_correct=0), SETTINGS)
                 if c.claim == "crossover")
    assert never.verdict == "inconclusive"
    assert never.wording == "no crossover up to k = 8 (RL ahead at every k examined)"
    assert never.to_dict()["wording"] == never.wording
    assert "| no crossover up to k = 8 (RL ahead at every k examined) |" in claims_markdown(
        [never])
    # At the study's n = 128 the ks run to 128: the tens to hundreds of Yue et al.
    wide = next(c for c in evaluate_claims(_cells([128, 0] * 20, n=128), SETTINGS)
                if c.claim == "crossover")
    assert "ks tried: [1, 2, 4, 8, 16, 32, 64, 128] (n = 128 samples)" in wide.detail
    assert wide.wording.endswith("k ≤ 128 examined)")


def test_an_mcq_crossover_at_chance_loses_its_wording_with_its_verdict():
    mcq = _cells([8, 0] * 20, fmt="mcq", num_options=4)  # SFT at chance
    crossover = next(c for c in evaluate_claims(mcq, SETTINGS) if c.claim == "crossover")
    assert crossover.verdict == "inconclusive" and crossover.to_dict()["wording"] == "inconclusive"


def test_search_rows_say_their_child_prompts_are_out_of_distribution():
    rows = [c for c in evaluate_claims(_cells([8, 0] * 20), SETTINGS) if c.claim == "search"]
    assert len(rows) == 2
    assert all("child prompts out of distribution" in c.measure for c in rows)


def test_a_reference_written_before_the_renames_is_cited_by_todays_names(tmp_path):
    forking_measure = ("Δ share of reasoning tokens above SFT's 80th-percentile reasoning "
                       "entropy, RL − SFT (answer line excluded)")
    old = [{"claim": "forking", "format": "free_form", "measure": forking_measure,
            "verdict": "refuted", "detail": "family of 9", "num_seeds": 4, "sign": 1},
           {"claim": "transfer", "format": "mcq", "measure": "Δ distinct outcomes (held-out "
            "half), RL − SFT, base-unsolved", "verdict": "inconclusive", "detail": "n = 12",
            "num_seeds": 4, "paper": "Yue et al. 2025: RL narrows", "delta": 0.5}]
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(old))
    claims = evaluate_claims(_cells([8, 0] * 20), SETTINGS, reference=read_reference(path, "old"))
    # This grid has no forking share (no entropies): its not-run row cites the old "forking".
    [forking] = [c for c in claims if c.claim == "forking share"]
    assert forking.verdict == "not run" and "; old measured it at 4 seeds: refuted" in forking.detail
    # The left-out mcq row: today's name and its paper's words; the old reading in its detail.
    [unsolved] = [c for c in claims if c.format == "mcq"]
    assert unsolved.claim == "diversity on unsolved" and unsolved.verdict == "not run"
    assert unsolved.paper.startswith("not Yue et al.'s claim")
    assert "old measured it at 4 seeds: inconclusive (n = 12)" in unsolved.detail


def test_old_names_map_to_todays_for_the_pilot():
    assert today("transfer") == "diversity on unsolved" and today("coverage") == "coverage"
    assert set(RENAMED.values()) <= {claim for claim, _ in PILOT_MEASURES}
    pilot = PilotSizing({"Δ distinct outcomes, SFT-unsolved (held-out half)": (0.1, 0.3, 0.2)})
    assert pilot.sd_of("transfer", "distinct", "free_form") == pilot.sd_of(
        "diversity on unsolved", "distinct", "free_form") == (pytest.approx(0.1), 3)
