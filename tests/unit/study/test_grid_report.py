"""The cost-vs-gain plot's geometry: CI bars when they exist, identical cells told apart, axes
that hold every bar; and the markdown tables' width."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from breadth.study.grid_report import (
    MIN_HALF_RANGE,
    axis_half_range,
    plot_grid,
    summary_markdown,
    tradeoff_points,
)


def _summary(with_ci: bool) -> pd.DataFrame:
    rows = []
    for reward, x, y in (("correctness", 0.01, -0.004), ("darling", 0.01, -0.004),
                         ("passk", -0.2, 0.3)):
        row = {"format": "mcq", "reward": reward, "seeds": 2, "k": 8,
               "pass_at_1_delta": x, "pass_at_kmax_delta": y}
        if with_ci:
            row |= {"pass_at_1_delta_ci_low": x - 0.05, "pass_at_1_delta_ci_high": x + 0.05,
                    "pass_at_kmax_delta_ci_low": y - 0.4, "pass_at_kmax_delta_ci_high": y + 0.1}
        rows.append(row)
    return pd.DataFrame(rows)


def test_identical_cells_are_ranked_so_each_gets_its_own_label():
    points = tradeoff_points(_summary(with_ci=False))
    assert [(p["shared"], p["rank"]) for p in points] == [(2, 0), (2, 1), (1, 0)]
    assert not any(p["has_ci"] for p in points)


def test_axes_hold_every_ci_bar_and_never_shrink_to_the_noise():
    with_ci = tradeoff_points(_summary(with_ci=True))
    limit = axis_half_range(with_ci)
    for p in with_ci:
        assert p["has_ci"]
        assert p["y"] - p["yerr"][0][0] >= -limit and p["y"] + p["yerr"][1][0] <= limit
    tiny = [{"x": 0.004, "y": -0.016, "xerr": None, "yerr": None}]
    assert axis_half_range(tiny) == pytest.approx(MIN_HALF_RANGE)


@pytest.mark.parametrize("with_ci", [True, False])
def test_plot_grid_draws_both_plots_with_and_without_intervals(tmp_path, with_ci):
    summary = _summary(with_ci)
    runs = summary[["format", "reward"]].assign(curve_rl=[{1: 0.2, 8: 0.6}] * 3)
    for path in plot_grid(runs, summary, tmp_path):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_overlays_pass_hat_curves_as_it_does_pass_at_k(tmp_path):
    summary = _summary(with_ci=False)
    runs = summary[["format", "reward"]].assign(curve_rl=[{1: 0.2, 8: 0.6}] * 3)
    names = [path.name for path in plot_grid(runs, summary, tmp_path)]
    assert names == ["pass_at_k_by_format.png", "pass_at_1_cost_vs_pass_at_k_gain.png"]
    runs = runs.assign(pass_hat_curve_rl=[{1: 0.2, 8: 0.01}] * 3,
                       pass_hat_curve_sft=[{1: 0.1, 8: 0.0}] * 3)
    paths = plot_grid(runs, summary, tmp_path)
    assert paths[-1].name == "pass_hat_k_by_format.png"
    assert paths[-1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_grid_report_splits_the_change_in_distinct_outcomes_on_base_unsolved_problems():
    """The transfer claim reads distinct outcomes on base-unsolved problems: beside its Δ, the
    two parts (wrong answers dropped, narrowing among correct ones) that sum to it."""
    from rich.console import Console

    from breadth.study.grid_report import render_table

    summary = _summary(with_ci=False).assign(
        distinct_unsolved_delta=-3.0, distinct_wrong_unsolved_delta=-3.5,
        distinct_correct_unsolved_delta=0.5)
    md = summary_markdown(summary)
    assert "Δwrong (wrong answers dropped) + Δcorrect (narrowing among correct answers)" in md
    header = "| cell | Δwrong | Δcorrect |"
    assert header in md
    assert "| mcq / passk | -3.500 | 0.500 |" in md.split(header)[1]
    assert "Δwrong + Δcorrect = Δ distinct" in md
    console = Console(width=400, record=True)
    console.print(render_table(summary))
    assert "Δdistinct split, unsolved: Δwrong" in console.export_text()


def test_markdown_tables_fit_a_flow_run_page():
    summary = _summary(with_ci=True).assign(
        pass_at_1=0.5, pass_at_1_ci_low=0.4, pass_at_1_ci_high=0.6, base_pass_at_1=0.45,
        base_pass_at_1_ci_low=0.35, base_pass_at_1_ci_high=0.55, distinct_unsolved=3.25,
        distinct_unsolved_ci_low=2.5, distinct_unsolved_ci_high=4.0, search_success=math.nan,
        ci="bootstrap over seeds × problems")
    md = summary_markdown(summary)
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert rows and max(len(r) for r in rows) <= 100
    assert "search" not in md  # a measure no cell has is left out, not shown as dashes
    assert "bootstrap over seeds × problems" in md


def test_an_inconclusive_split_reads_as_such_in_the_table_and_the_markdown():
    from rich.console import Console

    from breadth.study.grid_report import render_table

    summary = _summary(with_ci=False).assign(
        distinct_solved=math.nan, distinct_solved_inconclusive="inconclusive (n=10 < 20)",
        distinct_unsolved=2.5, distinct_unsolved_inconclusive=None)
    md = summary_markdown(summary)
    assert "distinct outcomes per problem, on problems the base solved" in md
    assert "| mcq / correctness | inconclusive (n=10 < 20) |" in md
    assert "fewer than evaluation.transfer_min_split" in md  # the caption says what n is
    console = Console(width=400, record=True)
    console.print(render_table(summary))
    text = console.export_text()
    assert "distinct, solved: rl" in text and "inconclusive (n=10 < 20)" in text
