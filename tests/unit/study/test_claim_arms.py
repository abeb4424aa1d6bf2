"""The claims' arms are the grid's objectives, named by the grid's own constants: an arm that
no grid runs (a misspelt name) would make its row "not run" on every grid, silently."""

from __future__ import annotations

import pandas as pd
import pytest

from breadth.study import claims
from breadth.study.grid_design import STUDY_OBJECTIVES, UNSCALED_CONTROL
from breadth.study.grid_settings import ClaimSettings
from tests.unit.study.test_claims import _cells

# Every measurement a claim reads, so that only a missing arm can leave a row not run.
MEASURED = {"distinct_correct_outcomes": 2.0, "num_answers": 2, "reasoning_forking_share": 0.2,
            "graded_score": 0.5, "search_evolutionary": 1.0, "search_independent": 0.0}


def _every_objective() -> pd.DataFrame:
    return pd.concat([_cells([8, 0] * 10, seeds=(0, 1, 2), fmt=fmt, objective=objective,
                             **MEASURED)
                      for fmt in ("mcq", "free_form")
                      for objective in [*STUDY_OBJECTIVES, UNSCALED_CONTROL]],
                     ignore_index=True)


def _missing_arms(rows) -> list[str]:
    return [f"{c.claim} ({c.format}): {c.detail}" for c in rows if "arm not in the grid" in c.detail]


def test_every_arm_a_claim_compares_is_a_grid_objective():
    rows = claims.evaluate_claims(_every_objective(), ClaimSettings(num_resamples=20))
    assert not _missing_arms(rows)
    assert ClaimSettings().diversity_arm in STUDY_OBJECTIVES


def test_a_misspelt_arm_is_caught(monkeypatch):
    # The check above can fail: an arm no grid runs leaves its row not run.
    monkeypatch.setattr(claims, "CORRECT_ANSWER_ROWS", (("batch", "correctness+bach"),))
    rows = claims.evaluate_claims(_every_objective(), ClaimSettings(num_resamples=20))
    missing = _missing_arms(rows)
    assert [row.partition(":")[0] for row in missing] == ["batch (free_form)", "batch (mcq)"]
    assert all(row.endswith("arm not in the grid: correctness+bach") for row in missing)


@pytest.mark.parametrize("objective", sorted({o for _, o in claims.CORRECT_ANSWER_ROWS}))
def test_the_correct_answer_rows_compare_objectives_of_the_default_grid(objective):
    assert objective in STUDY_OBJECTIVES
