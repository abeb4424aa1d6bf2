"""scripts/results/budget.py: a published table's inconclusive rows priced as a nightly of their
arms at its header's stage work, and the nightly that decides the most of them, on hand-made
headers and rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from breadth.study.budget import FormatCost, NightlyBudget
from tests.unit.scripts.helpers import load_script

price = load_script("results/budget.py")

HEADER = """# Claims of grid grid-abc

- seeds: 4
- cells: 12 (free_form, mcq x 2 objectives: correctness, correctness+ucb)
- minutes of stage work (each stage's run once, wherever and whenever it ran: a stage from the \
cache counts where it was computed): free_form 100.0, mcq 260.0; 360.0 in all
"""


def _row(verdict, reason, need, pilot=None, pilot_sd=None, fmt="free_form",
         measure="Δ pass@1, RL − SFT (correctness)", **extra):
    return {"claim": "sharpening", "format": fmt, "measure": measure, "verdict": verdict,
            "power": {"reason": reason, "num_seeds": 4, "seeds_for_verdict": need,
                      "pilot_sd": pilot_sd, "pilot_seeds_for_verdict": pilot}, **extra}


def test_a_table_is_named_with_its_cells_per_format_and_warm_start_share():
    assert price.parse_table_arg("d/claims.md:free_form=8/2/0.37,mcq=4/1") == (
        Path("d/claims.md"), {"free_form": [8, 2, 0.37], "mcq": [4, 1]})
    assert price.parse_table_arg("d/claims.md") == (Path("d/claims.md"), None)  # its header's
    for bad in ("d/claims.md:", "d/claims.md:free_form=8", "d/claims.md:free_form=0/2",
                "d/claims.md:free_form=8/2/1.5", "d/claims.md:free_form=8.5/2"):
        with pytest.raises(ValueError, match=r"PATH:FORMAT=CELLS/FULL\[/SHARE\]"):
            price.parse_table_arg(bad)


def test_the_header_and_the_named_cells_give_each_formats_cost():
    grid, budget = price.header_budget(HEADER, {"free_form": [8, 2, 0.4], "mcq": [4, 1]}, 2, 3.0)
    assert grid == "grid-abc" and budget.workers == 2 and budget.hours == 3.0
    # free_form: 100 min over 8 cells, 2 a seed = 25 a full seed; its warm start 0.4 of it
    # (10), each of its 2 objectives (25 - 10) / 2 = 7.5. mcq: 260 over 4, 1 a seed = 65,
    # not split.
    assert budget.costs["free_form"] == FormatCost(pytest.approx(10.0), pytest.approx(7.5))
    assert budget.costs["mcq"] == FormatCost(65.0, 0.0, split=False)
    # One free_form seed thinned to one objective (7 cells): it still paid a whole warm start,
    # so 100 = 4 seeds x warm + 7 cells x own, warm = 0.4 F and own = 0.6 F / 2:
    # F = 100 / (1.6 + 2.1) = 27.03, warm 10.81, own 8.11 (not 100 / 7 x 2 = 28.6 split).
    thinned = HEADER.replace("- cells: 12 ", "- cells: 11 ")
    _, budget = price.header_budget(thinned, {"free_form": [7, 2, 0.4], "mcq": [4, 1]}, 2, 3.0)
    warm, own = budget.costs["free_form"].warm_start, budget.costs["free_form"].objective
    assert (warm, own) == (pytest.approx(0.4 * 100 / 3.7), pytest.approx(0.3 * 100 / 3.7))
    assert 4 * warm + 7 * own == pytest.approx(100.0)


def test_a_header_with_its_own_lines_needs_none_named():
    header = (HEADER + "- cells per format (in all / a full seed): free_form 8 / 2, mcq 4 / 1\n"
              "- minutes of stage work of a seed's warm start / of one objective's own stages: "
              "free_form 9.5 / 7.75, mcq 40.0 / 25.0\n")
    _, budget = price.header_budget(header, None, 2, 3.0)
    assert budget.costs == {"free_form": FormatCost(9.5, 7.75), "mcq": FormatCost(40.0, 25.0)}
    with pytest.raises(ValueError, match="no cells per format line"):
        price.header_budget(HEADER, None, 2, 3.0)


def test_a_share_the_header_cannot_take_is_refused_not_ignored():
    split = ("- minutes of stage work of a seed's warm start / of one objective's own stages: "
             "free_form 9.5 / 7.75\n")
    # The header measured free_form's split: a share named for it would be ignored.
    with pytest.raises(ValueError, match="measures free_form's split .* drop the share named "
                                         r"for it \(0.4\)"):
        price.header_budget(HEADER + split, {"free_form": [8, 2, 0.4], "mcq": [4, 1]}, 2, 3.0)
    # Without a seeds line, a share has no warm starts to count: it would be ignored too.
    no_seeds = HEADER.replace("- seeds: 4\n", "")
    with pytest.raises(ValueError, match="share for free_form needs the header's seeds line"):
        price.header_budget(no_seeds, {"free_form": [8, 2, 0.4], "mcq": [4, 1]}, 2, 3.0)
    # The same without the share: priced at a full seed, as the docstring says.
    _, budget = price.header_budget(no_seeds, {"free_form": [8, 2], "mcq": [4, 1]}, 2, 3.0)
    assert budget.costs["free_form"] == FormatCost(25.0, 0.0, split=False)


def test_cells_that_do_not_add_up_or_a_header_without_its_lines_are_refused():
    with pytest.raises(ValueError, match="do not match the header"):
        price.header_budget(HEADER, {"free_form": [8, 2], "mcq": [3, 1]}, 2, 3.0)
    with pytest.raises(ValueError, match="do not match the header"):
        price.header_budget(HEADER, {"free_form": [12, 3]}, 2, 3.0)
    with pytest.raises(ValueError, match="lacks its work line"):
        price.header_budget(HEADER.rsplit("\n- minutes", 1)[0], {"free_form": [12, 3]}, 2, 3.0)


def test_a_rows_objectives_are_its_own_else_read_from_its_measure():
    assert price.legacy_objectives({"measure": "x", "objectives": ["vector", "correctness"]}) \
        == ["vector", "correctness"]
    assert price.legacy_objectives({"measure": "Δ (evolutionary − independent success), "
                                               "correctness+batch − correctness, equal budget"}) \
        == ["correctness+batch", "correctness"]
    assert price.legacy_objectives({"measure": "Δ distinct correct outcomes, darling − "
                                               "correctness@unscaled"}) \
        == ["darling", "correctness@unscaled"]
    assert price.legacy_objectives({"measure": "Δ relative fall, mcq − free_form"}) \
        == ["correctness"]


def test_only_inconclusive_rows_with_power_are_priced_at_their_arms():
    budget = NightlyBudget({"free_form": FormatCost(30.0, 15.0), "mcq": FormatCost(10.0, 0.0,
                                                                                   split=False)})
    rows = [_row("inconclusive", "underpowered", 10, pilot=3, pilot_sd=0.0),
            _row("no effect", "", 4), _row("inconclusive", "underpowered", None),
            {**_row("not run", "", 0), "power": None},
            _row("inconclusive", "underpowered", 10, pilot=None, pilot_sd=0.5, fmt="mcq"),
            _row("inconclusive", "underpowered", 4, measure="Δ pass@1, ucb − correctness")]
    priced = price.priced_rows(rows, budget)
    assert [p[1] for p in priced] == [{"free_form": ["correctness"]}, {"free_form": ["correctness"]},
                                      {"mcq": ["correctness"]},
                                      {"free_form": ["correctness+ucb", "correctness"]}]
    lines = price.table_lines(priced)
    # 10 seeds * (30 + 15) min / 2 workers = 3.75 h, beyond 3 h; the pilot's 3 seeds: 1.1 h.
    # A pilot with an sd of 0 is still a pilot.
    assert lines[2].endswith("| 4 / 10 (pilot: 3) | free_form: correctness | 45.0 | "
                             "3.8 (pilot: 1.1) | no |")
    assert lines[3].endswith("| 4 / >200 | free_form: correctness | 45.0 | >200 seeds | no |")
    # mcq at 10 min a seed: 10 seeds are 0.8 h, within; its pilot needs more than 200.
    assert lines[4].endswith("| 4 / 10 (pilot: >200) | mcq: correctness | 10.0 | "
                             "0.8 (pilot: >200 seeds) | yes |")
    # ucb and correctness: 4 seeds * (30 + 2 * 15) / 2 / 60 = 2.0 h.
    assert lines[5].endswith("| free_form: correctness+ucb, correctness | 60.0 | 2.0 | yes |")
    # The plan: the mcq row (0.8 h) and the ucb row (2.0 h) fit alone, but together a grid runs
    # all their arms at the most seeds either needs: 10 * (10 + 60) / 120 = 5.8 h. So one row,
    # the cheaper: mcq.
    [plan] = price.plan_lines(priced, budget)
    assert plan.startswith("**The nightly that decides the most of these rows in 3 h**: mcq: "
                           "correctness; 10 seeds, 0.8 h of stage work on 2 workers. It "
                           "decides 1 of 4: sharpening (mcq, Δ pass@1).")
    [none] = price.plan_lines(priced[:2], budget)
    assert none.startswith("**No nightly of 3 h decides any of these rows**: each needs more "
                           "seeds of its arms than the hours hold. Seeds are sized at the Holm "
                           "family of the table they come from")


def test_the_page_gives_its_command_each_grids_seeds_and_machine_and_its_own(tmp_path,
                                                                             monkeypatch):
    table = tmp_path / "claims.md"
    table.write_text(HEADER + "- machine: box (2 CPU cores; GPU: none)\n")
    (tmp_path / "claims.json").write_text(
        '[{"claim": "sharpening", "format": "mcq", "measure": "Δ pass@1", "verdict": '
        '"inconclusive", "power": {"reason": "underpowered", "num_seeds": 4, '
        '"seeds_for_verdict": 10, "pilot_sd": null, "pilot_seeds_for_verdict": null}}]')
    page = tmp_path / "budget.md"
    monkeypatch.setattr("sys.argv", ["budget.py", f"{table}:free_form=8/2,mcq=4/1",
                                     "--markdown", str(page)])
    price.main()
    text = page.read_text()
    assert f"scripts/results/budget.py {table}:free_form=8/2,mcq=4/1 --markdown {page}`" in text
    assert "## [grid-abc](claims.md)\n\n- seeds: 4\n- machine: box (2 CPU cores; GPU: none)\n" \
        in text
    # mcq at 65 min a seed, 10 seeds: 10 * 65 / 2 / 60 = 5.4 h.
    assert "| 4 / 10 | mcq: correctness | 65.0 | 5.4 | no |" in text
    assert "\nPriced on " in text and " CPU cores) in " in text
