"""The pre-registered δs: fixed numbers, and rules of SFT's own level that a row records."""

import pandas as pd
import pytest

from breadth.study.claim_registry import DELTAS, Smallest
from breadth.study.claims import claims_markdown, evaluate_claims
from breadth.study.grid_settings import ClaimSettings


@pytest.mark.parametrize(
    ("name", "level", "expected"),
    [
        # The committed levels the rules were checked against (claim_registry's docstring).
        ("pass@n", 0.867, 0.25 * (1 - 0.867)),  # chain nightly: a quarter of the headroom
        ("pass@n", 0.459, 0.05),  # multi-answer: the cap
        ("pass@n", 1.0, None),  # SFT solves everything at n: no room, no δ
        ("distinct", 4.78, 0.378),  # chain: a tenth of 3.78 above one
        ("distinct", 4.0, 0.3),  # mcq's 4 options: at most 0.3
        ("distinct", 1.0, None),  # collapsed already
        ("distinct_correct", 0.47, 0.047),
        ("distinct_correct", None, None),  # no level read: no δ
        ("pass@1", 0.51, 0.02),  # fixed: the level is not read
        ("forking", None, 0.02),
    ],
)
def test_each_delta_at_the_committed_levels(name, level, expected):
    got = DELTAS[name].of(level)
    assert got == (None if expected is None else pytest.approx(expected))


def test_every_delta_says_why_and_a_rule_names_what_it_reads():
    for name, smallest in DELTAS.items():
        assert len(smallest.why) > 40, name
        if smallest.is_rule:
            assert smallest.level.startswith("SFT ") and smallest.level in smallest.formula()
        else:
            assert smallest.formula() == f"{smallest.delta:g}"


@pytest.mark.parametrize("kwargs", [{}, {"delta": 0.1, "fraction": 0.1, "scale": "level",
                                         "level": "SFT x"},
                                    {"fraction": 0.1, "scale": "log", "level": "SFT x"}])
def test_a_delta_is_a_number_or_a_well_formed_rule(kwargs):
    with pytest.raises(ValueError, match="δ"):
        Smallest("why", **kwargs)


def _frame():
    """10 problems, 8 samples each, 3 seeds. SFT solves 2 of 8 on every problem but p0 (0 of
    8): SFT pass@8 = 0.9, and p0 is its one base-unsolved problem. SFT has 5 distinct outcomes
    per problem, RL 3; RL solves p0 in seed 1 only."""
    rows = []
    for seed in (0, 1, 2):
        for p in range(10):
            sft = 0 if p == 0 else 2
            rl = 2 if p or seed == 1 else 0
            for model, c, distinct in (("sft", sft, 5), ("rl", rl, 3)):
                rows.append({"format": "free_form", "objective": "correctness", "seed": seed,
                             "model": model, "problem_id": f"p{p}", "num_samples": 8,
                             "num_correct": c, "distinct_outcomes": distinct,
                             "split_num_samples": 8, "split_num_correct": c,
                             "heldout_distinct_outcomes": distinct})
    return pd.DataFrame(rows)


def test_a_row_records_the_sft_level_its_rule_read_and_the_delta_it_gave():
    claims = evaluate_claims(_frame(), ClaimSettings(num_resamples=20))
    rows = {(c.claim, c.delta_name): c for c in claims}
    passn = rows[("sharpening", "pass@n")]
    assert passn.sft_level == pytest.approx(0.9) and passn.delta == pytest.approx(0.025)
    assert passn.delta_rule == "min(0.05, (1 − SFT pass@n) / 4)"
    assert passn.detail.endswith("δ = min(0.05, (1 − SFT pass@n) / 4) = 0.025 at SFT pass@n "
                                 "0.9 (pre-registered rule)")
    # The transfer split holds p0 alone (too few to decide), but its δ is read all the same:
    # SFT's held-out distinct outcomes on it, 5 -> (5 - 1) / 10.
    transfer = rows[("diversity on unsolved", "distinct")]
    assert (transfer.sft_level, transfer.delta) == (5.0, pytest.approx(0.4))
    # A fixed δ reads no level.
    pass1 = rows[("sharpening", "pass@1")]
    assert (pass1.sft_level, pass1.delta, pass1.delta_rule) == (None, 0.02, "")
    record = passn.to_dict()
    assert (record["sft_level"], record["delta_rule"]) == (passn.sft_level, passn.delta_rule)
    table = claims_markdown(claims)
    assert "| Δ pass@n, RL − SFT (correctness) | ±0.025 |" in table
