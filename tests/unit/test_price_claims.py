"""scripts/price_claims.py: a published table's inconclusive rows priced at its header's stage
work per seed, on hand-made headers and rows."""

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
- minutes of stage work (each stage's run once, ...): free_form 100.0, mcq 260.0; 360.0 in all
"""


def _row(verdict, reason, need, pilot=None):
    return {"claim": "sharpening", "format": "free_form", "measure": "Δ pass@1", "verdict": verdict,
            "power": {"reason": reason, "num_seeds": 4, "seeds_for_verdict": need,
                      "pilot_seeds_for_verdict": pilot}}


def test_the_header_gives_the_grid_and_its_stage_work_per_seed():
    grid, budget = price.header_budget(HEADER, workers=2, hours=3.0)
    assert grid == "grid-abc" and budget == NightlyBudget(90.0, 2, 3.0)  # 360 min / 4 seeds


def test_a_header_without_its_stage_work_is_refused_naming_the_line():
    with pytest.raises(ValueError, match="lacks its work line"):
        price.header_budget(HEADER.splitlines()[0] + "\n- seeds: 4\n", 2, 3.0)


def test_only_inconclusive_rows_with_power_are_priced():
    budget = NightlyBudget(90.0)
    rows = [_row("inconclusive", "underpowered", 10, pilot=3), _row("no effect", "", 4),
            _row("inconclusive", "underpowered", None), {**_row("not run", "", 0), "power": None}]
    priced = price.priced_rows(rows, budget)
    # 10 seeds * 90 min / 2 workers = 7.5 h, beyond 3 h; the pilot's 3 seeds: 2.25 h.
    assert priced[0][4:] == ["4 / 10 (pilot: 3)", "7.5 (pilot: 2.2)", "no"]
    assert priced[1][4:] == ["4 / >200", ">200 seeds", "no"]
    assert len(priced) == 2
    assert price.priced_rows([_row("inconclusive", "near δ", 4)], budget)[0][-2:] == ["3.0", "yes"]
