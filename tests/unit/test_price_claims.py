"""scripts/price_claims.py: a published table's inconclusive rows priced at its header's stage
work per full seed of their format, on hand-made headers and rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from breadth.study.power import NightlyBudget

_spec = importlib.util.spec_from_file_location(
    "price_claims", Path(__file__).resolve().parents[2] / "scripts" / "price_claims.py")
price = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(price)

HEADER = """# Claims of grid grid-abc

- seeds: 4
- cells: 12 (free_form, mcq x 2 objectives: correctness, correctness+ucb)
- minutes of stage work (each stage's run once, wherever and whenever it ran: a stage from the \
cache counts where it was computed): free_form 100.0, mcq 260.0; 360.0 in all
"""


def _row(verdict, reason, need, pilot=None, pilot_sd=None, fmt="free_form"):
    return {"claim": "sharpening", "format": fmt, "measure": "Δ pass@1", "verdict": verdict,
            "power": {"reason": reason, "num_seeds": 4, "seeds_for_verdict": need,
                      "pilot_sd": pilot_sd, "pilot_seeds_for_verdict": pilot}}


def test_a_table_is_named_with_its_cells_per_format():
    assert price.parse_table_arg("d/claims.md:free_form=8/2,mcq=4/1") == (
        Path("d/claims.md"), {"free_form": [8, 2], "mcq": [4, 1]})
    assert price.parse_table_arg("d/claims.md") == (Path("d/claims.md"), None)  # its header's
    for bad in ("d/claims.md:", "d/claims.md:free_form=8", "d/claims.md:free_form=0/2"):
        with pytest.raises(ValueError, match="PATH:FORMAT=CELLS/FULL"):
            price.parse_table_arg(bad)


def test_the_header_and_the_cells_give_each_formats_minutes_per_full_seed():
    grid, budgets = price.header_budgets(HEADER, {"free_form": [8, 2], "mcq": [4, 1]}, 2, 3.0)
    assert grid == "grid-abc"
    # free_form: 100 min over 8 cells, 2 a seed = 25; mcq: 260 over 4, 1 a seed = 65.
    assert budgets["free_form"] == NightlyBudget(25.0, "free_form cells", 2, 3.0)
    assert budgets["mcq"].minutes_per_seed == 65.0 and budgets["both"].minutes_per_seed == 90.0


def test_cells_that_do_not_add_up_or_a_header_without_its_lines_are_refused():
    with pytest.raises(ValueError, match="do not match the header"):
        price.header_budgets(HEADER, {"free_form": [8, 2], "mcq": [3, 1]}, 2, 3.0)
    with pytest.raises(ValueError, match="do not match the header"):
        price.header_budgets(HEADER, {"free_form": [12, 3]}, 2, 3.0)
    with pytest.raises(ValueError, match="lacks its work line"):
        price.header_budgets(HEADER.rsplit("\n- minutes", 1)[0], {"free_form": [12, 3]}, 2, 3.0)


def test_only_inconclusive_rows_with_power_are_priced_at_their_formats_cost():
    budgets = {"free_form": NightlyBudget(90.0), "mcq": NightlyBudget(10.0)}
    rows = [_row("inconclusive", "underpowered", 10, pilot=3, pilot_sd=0.0),
            _row("no effect", "", 4), _row("inconclusive", "underpowered", None),
            {**_row("not run", "", 0), "power": None},
            _row("inconclusive", "underpowered", 10, pilot=None, pilot_sd=0.5, fmt="mcq")]
    priced = price.priced_rows(rows, budgets)
    assert len(priced) == 3
    # 10 seeds * 90 min / 2 workers = 7.5 h, beyond 3 h; the pilot's 3 seeds: 2.25 h. A pilot
    # with an sd of 0 is still a pilot.
    assert priced[0][4:] == ["4 / 10 (pilot: 3)", "90.0", "7.5 (pilot: 2.2)", "no"]
    assert priced[1][4:] == ["4 / >200", "90.0", ">200 seeds", "no"]
    # mcq at 10 min a seed: 10 seeds are 0.8 h, within; its pilot needs more than 200.
    assert priced[2][4:] == ["4 / 10 (pilot: >200)", "10.0", "0.8 (pilot: >200 seeds)", "yes"]


def test_a_header_with_its_cells_per_format_needs_none_named():
    header = HEADER + "- cells per format (in all / a full seed): free_form 8 / 2, mcq 4 / 1\n"
    assert price.header_budgets(header, None, 2, 3.0) == \
        price.header_budgets(HEADER, {"free_form": [8, 2], "mcq": [4, 1]}, 2, 3.0)
    with pytest.raises(ValueError, match="no cells per format line"):
        price.header_budgets(HEADER, None, 2, 3.0)
