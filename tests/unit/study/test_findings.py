"""breadth.study.findings: committed claims tables decided again by today's verdict code, and
the README's table of every decided row with its grid's Holm family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from breadth.study.claim_table import (
    INCONCLUSIVE,
    NO_EFFECT,
    NOT_RUN,
    REPRODUCED,
    SMALLER_THAN_DELTA,
)
from breadth.study.findings import (
    FAMILIES,
    HEADER,
    GridTable,
    committed_claims,
    findings_markdown,
    read_grid,
    redecided,
)

NIGHTLY = (Path(__file__).resolve().parents[3]
           / "docs/results/superseded/nightly-grid-80e1e8eb/claims.json")


def _row(claim: str, estimate: float, se: float, p: float, delta: float, **extra) -> dict:
    """A measured row as a claims.json of before #52 kept it (no `wording`, no test fields)."""
    return {"claim": claim, "format": "free_form", "measure": f"Δ {claim}", "estimate": estimate,
            "low": estimate - 2 * se, "high": estimate + 2 * se, "verdict": "no effect",
            "detail": "old", "delta": delta, "p_value": p, "p_holm": min(1.0, 2 * p),
            "standard_error": se, "num_seeds": 15, "sign": 1, "objectives": ["correctness"],
            "power": {"family_size": 2}, **extra}


def test_the_nightlys_forking_row_reads_smaller_than_delta_and_its_numbers_stay():
    rows = json.loads(NIGHTLY.read_text())
    claims = redecided(rows)
    [forking] = [c for c in claims if (c.claim, c.format) == ("forking", "free_form")]
    committed = next(r for r in rows if (r["claim"], r["format"]) == ("forking", "free_form"))
    assert committed["verdict"] == NO_EFFECT and forking.verdict == SMALLER_THAN_DELTA
    assert forking.wording == ("smaller than δ, but not zero (-0.016 within ±0.02; Holm p "
                               "4.9e-09; against the claimed sign)")
    # Only the reading is new: the family, its Holm p-values and intervals are the table's.
    for row, c in zip(rows, claims, strict=True):
        if row.get("p_holm") is None:
            assert (c.verdict, c.wording) == (row["verdict"], row["verdict"])
            continue
        assert c.p_holm == pytest.approx(row["p_holm"], rel=1e-9, abs=1e-15)
        assert (c.adjusted_low, c.adjusted_high) == (
            pytest.approx(row["adjusted_low"], abs=1e-9),
            pytest.approx(row["adjusted_high"], abs=1e-9))


def test_committed_claims_hand_the_family_back_undecided_and_name_a_bad_row():
    rows = [_row("forking", -0.016, 0.0012, 1e-9, 0.02),
            {"claim": "x", "format": "mcq", "measure": "m", "estimate": None, "low": None,
             "high": None, "verdict": NOT_RUN, "detail": "no arm"}]
    measured, not_run = committed_claims(rows)
    assert (measured.verdict, measured.p_holm, measured.power, measured.objectives) == (
        "measured", None, None, ("correctness",))
    assert (not_run.verdict, not_run.detail) == (NOT_RUN, "no arm")
    with pytest.raises(ValueError, match="claims row 2 lacks verdict, detail"):
        committed_claims([rows[0], {"claim": "x", "format": "mcq", "measure": "m"}])


def _grid(rows: list[dict], tmp_path: Path, formats=None) -> GridTable:
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(rows))
    return read_grid(path, "toy", "grid-toy", "toy/claims.md", "a toy grid", formats)


def test_the_table_quotes_every_decided_row_and_names_the_family(tmp_path):
    rows = [_row("sharpening", 0.05, 0.005, 1e-6, 0.02),   # clears 0 and δ: reproduced
            _row("forking", -0.016, 0.0012, 1e-9, 0.02),    # clears 0 inside δ
            _row("historical", 0.001, 0.02, 0.9, 0.02),     # wide: inconclusive, not quoted
            {**_row("transfer", 0.0, 0.0, 1.0, 0.5), "p_holm": None, "verdict": NOT_RUN,
             "estimate": None, "standard_error": None, "num_seeds": None}]
    grid = _grid(rows, tmp_path)
    assert [c.verdict for c in grid.claims] == [REPRODUCED, SMALLER_THAN_DELTA, INCONCLUSIVE,
                                                NOT_RUN]
    text = findings_markdown([grid])
    lines = text.splitlines()
    assert lines[0] == HEADER
    quoted = [line for line in lines if line.startswith("| [toy](toy/claims.md)")]
    assert [line.split(" | ")[1] for line in quoted] == ["**sharpening**: Δ sharpening",
                                                         "**forking**: Δ forking"]
    assert quoted[1].endswith("| smaller than δ, but not zero (-0.016 within ±0.02; Holm p "
                              "3e-09; against the claimed sign) |")
    assert lines[-1] == (f"{FAMILIES} **toy** (`grid-toy`, a toy grid): 3 rows, sharpening, "
                         "forking, historical; not quoted: 1 inconclusive, 1 not run. Renamed "
                         "since (#52 item 4, to what they measure): *forking* is today's "
                         "*forking share*; *transfer* is today's *diversity on unsolved*; "
                         "each row keeps the claimed sign it was decided with.")


def test_a_table_of_todays_names_needs_no_renaming_note(tmp_path):
    rows = [_row("sharpening", 0.05, 0.005, 1e-6, 0.02), _row("forking share", -0.016, 0.0012,
                                                               1e-9, 0.02)]
    last = findings_markdown([_grid(rows, tmp_path)]).splitlines()[-1]
    assert last.endswith("not quoted: 0 inconclusive, 0 not run.") and "Renamed" not in last


def test_a_grid_cited_for_some_formats_is_quoted_in_those_only(tmp_path):
    rows = [_row("forking", -0.016, 0.0012, 1e-9, 0.02),
            {**_row("transfer", -0.176, 0.03, 0.006, 0.5), "format": "mcq"}]
    text = findings_markdown([_grid(rows, tmp_path, formats=["mcq"])])
    assert "**forking**" not in text and "**transfer** (mcq)" in text
    assert (" 2 rows, forking, transfer (mcq); only its rows in mcq are quoted, and of those "
            "not quoted: 0 inconclusive, 0 not run. Renamed since") in text.splitlines()[-1]


def test_a_table_that_is_not_claim_rows_is_named(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text("{}")
    with pytest.raises(ValueError, match=r"claims table .*claims.json \(toy\): not a non-empty"):
        read_grid(path, "toy", "g", "l", "a")
