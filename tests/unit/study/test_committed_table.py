"""The committed claims tables (docs/results/**/claims.json) recomputed from what they commit.

A table commits each row's estimate, standard error and seed count, not its per-seed means.
The t interval and p-value read only the mean and spread of those means, so any S means with
the committed mean and standard error give the committed row: the test builds such means,
runs them through `seed_t_interval`, decides the family with `decide_family` (Holm, the
adjusted intervals, verdicts, power) and compares with every committed number. This is the
check that the statistics code (scipy's t since #48) moves no committed number.

Tolerance: 1e-9 relative, with two floors for what the committed numbers' own arithmetic
left in them. A bound is estimate ± half-width, so it also passes within 1e-9 of its
half-width: the committed quantiles came from a bisection to 1e-10, and a bound near 0 (full
grid's mcq transfer row: -0.0030701799, half-width 0.17) cancels most of its digits. A p-value
also passes within 1e-15 absolute: the committed ones were 2 (1 - cdf), whose cancellation
leaves ~1e-16 absolute error; scipy's survival function has none (the forking row's
p = 1.2296335e-9 moves in its 9th digit, 1e-17 absolute).
"""

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from breadth.stats.seed_interval import seed_t_interval
from breadth.study.claim_table import (
    MEASURED,
    NO_EFFECT,
    SMALLER_THAN_DELTA,
    Claim,
    decide_family,
)
from breadth.study.findings import committed_claims

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"
TABLES = sorted(RESULTS.rglob("claims.json"))
REL = 1e-9
P_ABS = 1e-15


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text())


def _has_spread(row: dict) -> bool:
    return row.get("standard_error") is not None and (row.get("num_seeds") or 0) >= 2


def _seed_means(estimate: float, standard_error: float, num_seeds: int) -> np.ndarray:
    """`num_seeds` per-seed means whose mean is `estimate` and whose standard error is
    `standard_error` (evenly spaced, scaled to that spread)."""
    z = np.arange(num_seeds, dtype=np.float64)
    z = (z - z.mean()) / z.std(ddof=1)
    return estimate + standard_error * math.sqrt(num_seeds) * z


def _recomputed(row: dict):
    return seed_t_interval(_seed_means(row["estimate"], row["standard_error"],
                                       row["num_seeds"])[:, None])


def _bounds(low: float, high: float):
    """(low, high) to compare within 1e-9 relative or 1e-9 of the half-width."""
    floor = REL * abs(high - low) / 2.0
    return pytest.approx(low, rel=REL, abs=floor), pytest.approx(high, rel=REL, abs=floor)


def test_the_committed_tables_are_found():
    assert RESULTS / "grids" / "fresh-seed-nightly-grid-f9e9d325" / "claims.json" in TABLES
    assert len(TABLES) >= 2


@pytest.mark.parametrize("path", TABLES, ids=lambda p: str(p.relative_to(RESULTS)))
def test_each_row_interval_and_p_value_recomputed(path):
    rows = [r for r in _rows(path) if _has_spread(r)]
    assert rows, f"{path}: no row with a standard error and 2+ seeds to recompute"
    for row in rows:
        ci = _recomputed(row)
        where = f"{path.name}: {row['claim']} / {row['format']} / {row['measure']}"
        assert (ci.estimate, ci.standard_error, ci.num_seeds) == (
            pytest.approx(row["estimate"], rel=REL, abs=1e-15),
            pytest.approx(row["standard_error"], rel=REL), row["num_seeds"]), where
        assert (ci.low, ci.high) == _bounds(row["low"], row["high"]), where
        assert ci.p_value == pytest.approx(row["p_value"], rel=REL, abs=P_ABS), where


def _verdict_then(row: dict, decided: Claim) -> str:
    """The verdict `decided` had under the rule its table was written with.

    Before #52 (a table without `wording`) an equivalence interval inside ±δ read *no
    effect* even where Holm excluded 0; that row now reads *smaller than δ, but not zero*.
    """
    if "wording" not in row and decided.verdict == SMALLER_THAN_DELTA:
        return NO_EFFECT
    return decided.verdict


@pytest.mark.parametrize("path", TABLES, ids=lambda p: str(p.relative_to(RESULTS)))
def test_the_family_decisions_recomputed(path):
    committed = [r for r in _rows(path) if r.get("p_holm") is not None]
    assert committed, f"{path}: no measured family to recompute"
    # Each row as `evaluate_claims` hands it to the family: measured, no power, and its p-value
    # recomputed from the seed means.
    claims = [replace(c, p_value=_recomputed(row).p_value)
              for c, row in zip(committed_claims(committed), committed, strict=True)]
    assert {c.verdict for c in claims} == {MEASURED}
    for row, decided in zip(committed, decide_family(claims), strict=True):
        where = f"{path.name}: {row['claim']} / {row['format']} / {row['measure']}"
        assert _verdict_then(row, decided) == row["verdict"], where
        assert decided.p_holm == pytest.approx(row["p_holm"], rel=REL, abs=P_ABS), where
        assert decided.adjusted_confidence == pytest.approx(row["adjusted_confidence"],
                                                            rel=1e-15), where
        assert (decided.adjusted_low, decided.adjusted_high) == _bounds(
            row["adjusted_low"], row["adjusted_high"]), where
        # The detail's family sentence (Holm p, unadjusted p, the equivalence interval) as
        # the table prints it; the power sentence before it may also cite a pilot or a price.
        note = decided.detail[decided.detail.index("family of "):].removesuffix("; ")
        if "wording" not in row:  # before #52 only an interval inside ±δ was named
            note = re.sub(r"; equivalence interval \[[^]]*\] not inside ±[0-9.e-]+", "", note)
        assert note in row["detail"], where
        power = row.get("power")
        if power is None:
            assert decided.power is None, where
            continue
        assert decided.power.family_size == power["family_size"], where
        assert decided.power.seed_sd == pytest.approx(power["seed_sd"], rel=REL), where
        assert decided.power.holm_half_width == pytest.approx(power["holm_half_width"],
                                                              rel=REL), where
        assert (decided.power.seeds_for_verdict, decided.power.seeds_for_delta,
                decided.power.reason) == (power["seeds_for_verdict"],
                                          power["seeds_for_delta"], power["reason"]), where
