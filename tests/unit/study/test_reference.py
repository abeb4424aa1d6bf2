"""The rows a thinned grid left out, told from a fuller grid's table (`--reference`)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from breadth.study.claim_table import verdict_text
from breadth.study.claims import Claim, claims_markdown, evaluate_claims
from breadth.study.grid_settings import ClaimSettings
from breadth.study.reference import read_reference

from .test_claims import _cells

SETTINGS = ClaimSettings(num_resamples=50)


def _full_and_thin():
    """A full grid (free form and mcq, correctness) and the same grid without mcq."""
    free = pd.concat([_cells([8, 0] * 20, seeds=(0, 1, 2)),
                      _cells([8, 1] * 20, seeds=(3,))])  # a spread, so intervals have width
    mcq = _cells([4, 0] * 20, n=4, sft_correct=3, fmt="mcq", num_options=4)
    return pd.concat([free, mcq]), free


@pytest.fixture
def reference(tmp_path):
    full, _ = _full_and_thin()
    path = tmp_path / "full" / "claims.json"
    path.parent.mkdir()
    path.write_text(json.dumps([c.to_dict() for c in evaluate_claims(full, SETTINGS)]))
    return read_reference(path, source="full/claims.json")


def test_the_rows_of_a_left_out_format_are_not_run_and_cite_what_the_reference_measured(
        reference):
    _, thin = _full_and_thin()
    alone = evaluate_claims(thin, SETTINGS)
    cited = evaluate_claims(thin, SETTINGS, reference=reference)
    assert not [c for c in alone if c.format == "mcq"]  # without it: no mcq rows at all
    mcq = [c for c in cited if c.format == "mcq"]
    expected = [r for r in reference.rows if r["format"] == "mcq"]
    assert [(c.claim, c.measure) for c in mcq] == [(r["claim"], r["measure"]) for r in expected]
    assert {c.verdict for c in mcq} == {"not run"}
    assert all(c.estimate is None and c.low is None and c.power is None for c in mcq)
    # The table shows nothing measured for any of them, the crossover included.
    table = claims_markdown(cited)
    assert [line.split(" | ")[4] for line in table.splitlines() if " | mcq | " in line] == [
        "n/a"] * len(mcq)
    # A row the reference measured quotes its verdict, seeds and details, word for word.
    [sharpening] = [c for c in mcq if c.claim == "sharpening" and "pass@1" in c.measure]
    [row] = [r for r in expected if r["measure"] == sharpening.measure]
    assert row["verdict"] != "not run" and row["num_seeds"] == 2
    assert sharpening.detail == (f"the grid left out mcq; full/claims.json measured it at 2 "
                                 f"seeds: {row['wording']} ({row['detail']})")
    assert row["wording"].startswith(row["verdict"])
    assert (sharpening.delta, sharpening.paper) == (row["delta"], row["paper"])
    # A row the reference did not run either says so, with the reference's reason.
    [historical] = [c for c in mcq if c.claim == "historical" and "pass@1" in c.measure]
    assert historical.detail == ("the grid left out mcq; not run in full/claims.json either: "
                                 "arm not in the grid: correctness+ucb")


def test_the_reference_changes_no_measured_row_and_the_format_claim_stays_last(reference):
    _, thin = _full_and_thin()
    alone = evaluate_claims(thin, SETTINGS)
    cited = evaluate_claims(thin, SETTINGS, reference=reference)
    assert [c for c in cited if c.format == "free_form"] == [
        c for c in alone if c.format == "free_form"]  # same family, same Holm, same details
    assert cited[-1].claim == "format" and cited[-1].format == "both"
    # This grid's own not-run row cites the reference where the reference measured it.
    [row] = [r for r in reference.rows if r["claim"] == "format"]
    assert row["verdict"] != "not run"
    assert cited[-1].detail == (f"{alone[-1].detail}; full/claims.json measured it at "
                                f"{row['num_seeds']} seeds: {row['wording']} ({row['detail']})")
    assert alone[-1].detail == "format not in the grid: mcq"


def test_a_grid_that_ran_every_format_is_unchanged_by_a_reference(reference):
    full, _ = _full_and_thin()
    assert evaluate_claims(full, SETTINGS, reference=reference) == evaluate_claims(full, SETTINGS)


@pytest.mark.parametrize(("text", "why"), [
    (None, "No such file"),
    ("{not json", "Expecting property name"),
    ('{"claims": []}', "not a non-empty list of claim rows"),
    ('[{"claim": "sharpening", "format": "mcq"}]', "row 1 lacks measure, verdict, detail"),
])
def test_a_reference_that_cannot_be_read_names_the_file_and_how_to_write_it(tmp_path, text, why):
    path = tmp_path / "claims.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=f"reference table {path}: .*{why}.*"
                                         r"breadth compare --grid GRID --claims-out DIR"):
        read_reference(path)


def test_a_claims_json_written_before_the_two_tests_still_reads():
    # The full grid's committed table has no `wording` or test fields: it is cited by its
    # verdict, and its rows still make claims (as `breadth compare` prints them).
    path = Path(__file__).parents[3] / "docs/results/grids/full-grid-6abeba80/claims.json"
    old = read_reference(path, source="full")
    assert all("wording" not in row for row in old.rows)
    [row] = [r for r in old.rows if (r["claim"], r["format"]) == ("forking", "free_form")]
    assert old.account(row).startswith("full measured it at 4 seeds: refuted (family of 9;")
    claims = [Claim(**row) for row in old.rows]
    assert {c.differs_from_zero for c in claims} == {None}
    assert verdict_text(Claim(**row)) == "refuted"
