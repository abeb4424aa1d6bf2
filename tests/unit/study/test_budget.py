"""A nightly's price at a row's arms, and the nightly that decides the most rows within its
hours, on hand-computed costs."""

from __future__ import annotations

import pytest

from breadth.study.budget import (
    FormatCost,
    NightlyBudget,
    NightlyPlan,
    nightly_budget,
    plan_nightly,
    row_arms,
)

# A chain-like grid: free form's warm start 10 min a seed and 10 min an objective; mcq's
# warm start 30 and 27 an objective.
BUDGET = NightlyBudget({"free_form": FormatCost(10.0, 10.0), "mcq": FormatCost(30.0, 27.0)})


def test_a_seed_costs_its_warm_start_and_each_objectives_own_stages():
    assert BUDGET.seed_minutes({"free_form": ["correctness"]}) == 20.0
    assert BUDGET.seed_minutes({"free_form": ["correctness", "correctness+ucb"]}) == 30.0
    # The format claim: correctness in both formats, 20 + 57.
    assert BUDGET.seed_minutes(row_arms("both", ["correctness"])) == 77.0
    # 11 seeds of two objectives: 11 * 30 / 2 workers / 60 = 2.75 h, within 3 h; 12 seeds
    # are 3.0 h, 13 are 3.25.
    arms = {"free_form": ["correctness", "correctness+ucb"]}
    assert BUDGET.hours_for(11, arms) == pytest.approx(2.75)
    assert BUDGET.holds(12, arms) and not BUDGET.holds(13, arms) and not BUDGET.holds(None, arms)
    assert BUDGET.seeds_within(arms) == 12


def test_a_rows_price_says_its_arms_its_hours_and_what_the_nightly_holds():
    price = BUDGET.price({"free_form": ["correctness"]}, 15, pilot_sized=True, pilot_seeds=20)
    # 15 * 20 / 2 / 60 = 2.5 h; the pilot's 20 seeds 3.3 h; 3 h hold 18 seeds.
    assert price.fits and price.seeds_within == 18
    assert price.text() == ("a nightly of its arms (free_form: correctness), at 20 min of stage "
                            "work a seed on 2 workers: 15 seeds take 2.5 h (the pilot's 20 "
                            "seeds take 3.3 h), within the 3-h nightly")
    both = BUDGET.price(row_arms("both", ["correctness"]), None)
    assert not both.fits and both.text().endswith(
        "(free_form: correctness; mcq: correctness), at 77 min of stage work a seed on 2 "
        "workers: more than 200 seeds, beyond the 3-h nightly, which holds 4 seeds of them")
    assert BUDGET.price({"pairs": ["correctness"]}, 3) is None  # no cost for that format


def test_a_grid_without_its_stage_split_prices_a_full_seed_whatever_the_arms():
    # free_form: 116 min over 8 cells, 2 a full seed = 29 min, however few objectives a row
    # reads; mcq has its split.
    budget = nightly_budget({"compute_minutes": {"free_form": 116.0, "mcq": 200.0},
                             "format_cells": {"free_form": [8, 2], "mcq": [4, 1]},
                             "stage_split": {"mcq": [30.0, 20.0]}}, workers=3, hours=2.0)
    assert budget.workers == 3 and budget.hours == 2.0
    assert budget.costs["free_form"] == FormatCost(29.0, 0.0, split=False)
    assert budget.costs["mcq"] == FormatCost(30.0, 20.0)
    price = budget.price({"free_form": ["correctness"]}, 4)
    assert price.seed_minutes == 29.0 and not price.split
    assert "a full seed of the grid's cells (its stage work is not split by stage)" in price.text()
    assert nightly_budget({"compute_minutes": {}, "format_cells": {}}) is None
    # Stage runs without times: a split of zeros prices nothing (it would divide by zero).
    assert nightly_budget({"stage_split": {"mcq": [0.0, 0.0]}}) is None
    assert nightly_budget({"compute_minutes": {"mcq": 10.0}}) is None  # no cell counts


def test_the_plan_decides_the_most_rows_at_the_union_of_their_arms_and_their_most_seeds():
    rows = [
        ({"free_form": ["correctness"]}, 15),                     # 15 * 20 / 120 = 2.5 h
        ({"free_form": ["correctness", "correctness+ucb"]}, 11),  # 11 * 30 / 120 = 2.75 h
        ({"free_form": ["correctness"]}, 62),                     # 10.3 h: never
        ({"mcq": ["correctness"]}, 6),                            # 6 * 57 / 120 = 2.85 h
        ({"free_form": ["correctness"]}, None),                   # more than 200 seeds
    ]
    # Rows 0 and 1 together: both objectives at 15 seeds, 15 * 30 / 120 = 3.75 h, too long;
    # row 0 or row 1 with row 3: 2 formats, over 3 h. So one row, the cheapest: row 0.
    assert plan_nightly(rows, BUDGET) == NightlyPlan({"free_form": ["correctness"]}, 15, 2.5,
                                                     (0,))
    # With 13 seeds for row 0, rows 0 and 1 share: 13 * 30 / 120 = 3.25 h, still over; at 12
    # seeds 3.0 h fits: two rows decided.
    rows[0] = ({"free_form": ["correctness"]}, 12)
    assert plan_nightly(rows, BUDGET) == NightlyPlan(
        {"free_form": ["correctness", "correctness+ucb"]}, 12, 3.0, (0, 1))
    assert plan_nightly(rows[2:3] + rows[4:], BUDGET) is None  # no row fits alone
