"""write_report: four files, valid PNGs, JSON that loads, a markdown comparison table."""

from __future__ import annotations

import json
import math
import sys

import pandas as pd
import pytest

from breadth.evaluation.report import diversity_by_split, markdown_report, write_report
from breadth.evaluation.summary import evaluate_models


def _rows(model, spread, num_samples=8, problems=6):
    """`problems` problems x `num_samples` samples; p0-p2 solvable, `spread` distinct outcomes."""
    rows = []
    for p in range(problems):
        for s in range(num_samples):
            outcome = str((s % spread) + p)
            rows.append(
                {
                    "problem_id": f"p{p}",
                    "sample_index": s,
                    "model": model,
                    "outcome": outcome,
                    "correct": p < 3 and outcome == str(p),
                    "score": float(p < 3 and outcome == str(p)),
                    "format": "free_form",
                }
            )
    return rows


def _results(base_samples=8, rl_samples=8, **kwargs):
    rows = _rows("base", 4, base_samples) + _rows("rl", 1, rl_samples)
    return evaluate_models(pd.DataFrame(rows), base_model="base", num_bootstrap=50, **kwargs)


def _table(md: str, heading: str) -> list[list[str]]:
    """The cells of the first markdown table after `heading` (or from it, where `heading` is
    the start of a table's header row), header row first."""
    lines = md.split(heading, 1)[1].splitlines()
    if heading.startswith("|"):
        lines[0] = heading + lines[0]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_write_report_writes_the_report_files_and_per_problem_tables(tmp_path):
    import pandas as pd

    results = _results()
    paths = write_report(results, tmp_path / "out")
    assert [p.name for p in paths] == [
        "pass_at_k.png",
        "diversity.png",
        "report.md",
        "metrics.json",
        "paired.json",
        "per_problem_base.parquet",
        "per_problem_rl.parquet",
    ]
    table = pd.read_parquet(paths[6])
    expected = results["rl"].per_problem
    assert table["problem_id"].tolist() == expected.index.tolist()
    assert table["num_correct"].tolist() == expected["num_correct"].tolist()
    for png in paths[:2]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(paths[3].read_text())
    assert set(data) == {"base", "rl"}
    assert data["rl"]["metrics"]["eval/pass_at_1"] == results["rl"].metrics()["eval/pass_at_1"]
    md = paths[2].read_text()
    assert "| model |" in md and "| rl |" in md and "| base |" in md
    assert "crossover k" in md


def test_stale_report_files_are_an_earlier_reports_optional_files_only(tmp_path):
    from breadth.evaluation.report import stale_report_files

    for name in ("per_problem_base.parquet", "search.json", "search.png", "notes.txt",
                 "base.parquet"):
        (tmp_path / name).write_text("old")
    written = write_report({"rl": _results()["rl"]}, tmp_path)
    assert [p.name for p in stale_report_files(tmp_path, written)] == [
        "per_problem_base.parquet", "search.json", "search.png"]
    # A file this report wrote (here, as if its search comparison had) is never stale.
    also_search = [*written, tmp_path / "search.json"]
    assert [p.name for p in stale_report_files(tmp_path, also_search)] == [
        "per_problem_base.parquet", "search.png"]


def test_the_diversity_plot_draws_no_bar_for_an_inconclusive_split():
    # 3 problems a split: report.md says "inconclusive", but diversity.png drew the bars.
    from breadth.evaluation.report import _bars

    ticks, heights = _bars(_results(), "distinct_outcomes")
    assert ticks == ["solved\n(3 problems: inconclusive)", "unsolved\n(3 problems: inconclusive)"]
    assert all(math.isnan(h) for values in heights.values() for h in values)
    ticks, heights = _bars(_results(min_split=2), "distinct_outcomes")
    assert ticks == ["solved\n(3 problems)", "unsolved\n(3 problems)"]
    assert heights["rl"][1] == 1.0


def test_diversity_by_split_reads_base_values_from_the_trained_models_transfer():
    table = diversity_by_split(_results(), "distinct_outcomes")
    assert set(table) == {"solved", "unsolved"}
    assert table["unsolved"] == {"base": 4.0, "rl": 1.0}


def test_markdown_without_base_uses_the_all_split():
    results = _results()
    only = {
        "rl": results["rl"].__class__(
            **{**results["rl"].__dict__, "transfer": None, "base_model": None}
        )
    }
    md = markdown_report(only)
    assert "| model | all |" in md
    # The heading promised a base-solved / base-unsolved split that a lone model cannot have.
    assert "## Diversity (no base model, so no base-solved / base-unsolved split)" in md
    assert "## Diversity by base-solved" not in md


def test_pass_at_k_table_lines_up_when_models_have_different_sample_counts():
    # base has 4 samples per problem, rl 16: the columns are every k of either model, and a
    # model without a k shows "-" there instead of shifting its values under the wrong k.
    results = _results(base_samples=4, rl_samples=16)
    header, rule, *rows = _table(markdown_report(results), "## pass@k")
    assert header == ["model", "k=1", "k=2", "k=4", "k=8", "k=16"]
    assert len(rule) == len(header) and all(len(row) == len(header) for row in rows)
    cells = {row[0]: row[1:] for row in rows}
    assert cells["base"] == [f"{p.estimate:.3f}" for p in results["base"].pass_at_k] + ["-"] * 2
    assert cells["rl"] == [f"{p.estimate:.3f}" for p in results["rl"].pass_at_k]


def test_headline_values_at_unlike_n_say_their_n():
    """Base at 4 samples, rl at 16: the headline's pass@n column held pass@4 beside pass@16
    with nothing to tell them apart."""
    _, _, *rows = _table(markdown_report(_results(base_samples=4, rl_samples=16)),
                         "## Headline metrics")
    cells = {row[0]: row for row in rows}
    assert all(cell.endswith("(n=4)") for cell in cells["base"][2:5])
    assert all(cell.endswith("(n=16)") for cell in cells["rl"][2:5])
    even = _table(markdown_report(_results(base_samples=8, rl_samples=8)), "## Headline metrics")
    assert not any("(n=" in cell for row in even[2:] for cell in row)


def test_report_says_plainly_that_sample_counts_are_uneven():
    # p5 of rl has 2 of its 8 samples: the report must not claim "n = 2 samples each".
    rows = [r for r in _rows("rl", 1) if r["problem_id"] != "p5" or r["sample_index"] < 2]
    with pytest.warns(UserWarning):
        results = evaluate_models(pd.DataFrame(rows), num_bootstrap=50)
    md = " ".join(markdown_report(results).split())
    assert "samples each" not in md
    assert "- rl: 6 problems, 2 to 8 samples per problem." in md
    assert "1 of 6 problems have fewer than 8 samples ('p5' (n=2))" in md
    assert "stop at k = 2 for every problem" in md


def test_report_of_even_sample_counts_names_n_once():
    md = markdown_report(_results(base_samples=4, rl_samples=16))
    assert "- base: 6 problems, n = 4 samples each" in md
    assert "- rl: 6 problems, n = 16 samples each" in md
    assert "fewer than" not in md


def test_metrics_json_counts_the_problems_of_each_sample_count(tmp_path):
    """Only report.md said that some problems were short of samples: metrics.json, the file a
    script reads, gave n (the fewest) and no word of the problems above or below it."""
    kept = {"p4": 5, "p5": 2}  # of their 8 samples; the other four problems keep all 8
    rows = [r for r in _rows("rl", 1) if r["sample_index"] < kept.get(r["problem_id"], 8)]
    with pytest.warns(UserWarning):
        uneven = evaluate_models(pd.DataFrame(rows), num_bootstrap=50)
    counts = json.loads(write_report(uneven, tmp_path / "uneven")[3].read_text())["rl"]
    assert counts["sample_counts"] == {"fewest": 2, "most": 8, "problems_below_most": 2,
                                       "problems_by_count": {"2": 1, "5": 1, "8": 4}}
    assert counts["num_samples"] == 2  # the key that was there already: unchanged
    even = json.loads(write_report(_results(base_samples=4, rl_samples=16),
                                   tmp_path / "even")[3].read_text())
    assert even["base"]["sample_counts"] == {"fewest": 4, "most": 4, "problems_below_most": 0,
                                             "problems_by_count": {"4": 6}}
    assert even["rl"]["sample_counts"]["problems_by_count"] == {"16": 6}


def test_importing_evaluation_does_not_import_matplotlib_or_torch():
    import subprocess

    code = (
        "import sys, breadth.evaluation, breadth.evaluation.report; "
        "print(any(m.split('.')[0] in ('matplotlib', 'torch') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _notes(md: str) -> str:
    return " ".join(line for line in md.splitlines() if line.startswith("**Note:**"))


def test_report_says_plainly_that_the_problem_sets_differ():
    """rl saw 4 of base's 6 problems: the headline set base's mean over 6 beside rl's over 4,
    and only a log line said so."""
    rows = _rows("base", 4) + [r for r in _rows("rl", 1) if r["problem_id"] not in ("p4", "p5")]
    results = evaluate_models(pd.DataFrame(rows), base_model="base", num_bootstrap=50)
    notes = _notes(markdown_report(results))
    assert ("The models were evaluated on different problem sets: base on 6 problems, rl on 4 "
            "problems; 4 problems are in both sets.") in notes
    assert "not a paired comparison" in notes
    assert "on only the problems both have (4)" in notes
    assert "different problem sets" not in markdown_report(_results())


def test_diversity_at_unlike_n_says_its_n_and_why_it_is_not_comparable():
    """Base at 4 samples, rl at 16: distinct outcomes grow with n, and the diversity tables set
    them side by side unmarked."""
    # min_split 2: the 3-problem splits show numbers, not "inconclusive".
    md = markdown_report(_results(base_samples=4, rl_samples=16, min_split=2))
    header, _, *rows = _table(md, "| model | distinct outcomes |")
    assert header[:3] == ["model", "distinct outcomes", "outcome entropy"]
    cells = {row[0]: row for row in rows}
    assert all(cell.endswith("(n=4)") for cell in cells["base"][1:3])
    assert all(cell.endswith("(n=16)") for cell in cells["rl"][1:3])
    for metric in ("distinct_outcomes", "distinct_outcome_fraction", "outcome_entropy"):
        _, _, *split_rows = _table(md, f"**{metric}**")
        by_model = {row[0]: row[1:] for row in split_rows}
        assert len(by_model["base"]) == 2 and all(c.endswith("(n=4)") for c in by_model["base"])
        assert len(by_model["rl"]) == 2 and all(c.endswith("(n=16)") for c in by_model["rl"])
    assert ("Diversity is not comparable across unlike sample counts (base n = 4 and rl n = 16 "
            "samples per problem)") in _notes(md)
    even = markdown_report(_results(base_samples=8, rl_samples=8))
    assert "(n=" not in even and "not comparable" not in even


def test_an_inconclusive_split_names_its_threshold_and_key():
    # 3 problems per split, below the default 20 and below 5; at 2 the splits are numbers.
    def cell(**kwargs):
        rows = _rows("base", 4) + _rows("rl", 1)
        results = evaluate_models(pd.DataFrame(rows), base_model="base", num_bootstrap=50,
                                  **kwargs)
        _, _, *split_rows = _table(markdown_report(results), "**distinct_outcomes**")
        return {row[0]: row[1:] for row in split_rows}["rl"][0]

    assert cell() == "inconclusive (3 problems < evaluation.transfer_min_split = 20)"
    assert cell(min_split=5) == "inconclusive (3 problems < evaluation.transfer_min_split = 5)"
    assert cell(min_split=2) == "1.000"


def test_no_crossover_says_the_share_of_resamples_that_do_cross():
    """"none (in 37% of resamples)" read as "no crossover in 37%": the share is of resamples
    with a crossover."""
    from breadth.evaluation.report import _crossover_text
    from breadth.evaluation.transfer import Crossover

    text = _crossover_text(Crossover(k=None, low=None, high=None, share_with_crossover=0.368,
                                     ks=[1, 2, 4]))
    assert text == "none (a crossover in 37% of resamples)"


def test_report_says_which_maj_values_are_means_of_draws(monkeypatch):
    from breadth.evaluation import metrics

    exact = markdown_report(_results())
    assert "seeded draws" not in exact  # at this size every maj@k is exact
    monkeypatch.setattr(metrics, "MAJ_EXACT_WORK_LIMIT", 0.0)  # as if n and k were large
    results = _results(maj_resamples=40)
    assert results["rl"].settings["maj_resampled_ks"] == [2, 4]  # k = 1 and k = n stay exact
    assert json.loads(json.dumps(results["rl"].to_dict()))["settings"]["maj_resamples"] == 40
    md = " ".join(markdown_report(results).split())
    bound = 0.5 / math.sqrt(40 * 6)
    assert ("maj@k of rl at k = 2, 4 is the mean over 40 seeded draws of k samples per "
            "problem, not the exact expectation") in md
    assert f"at most {bound:.4f}" in md


def test_report_shows_distinct_correct_outcomes_beside_distinct_outcomes(tmp_path):
    # p0-p2 each have one right answer: base (4 distinct outcomes per problem) finds it once,
    # rl (1 distinct outcome) on p0-p2 only when its one outcome is the right one.
    results = _results()
    assert results["base"].per_problem["distinct_correct_outcomes"].tolist() == [1, 1, 1, 0, 0, 0]
    md = write_report(results, tmp_path / "out")[2].read_text()
    assert md.index("**distinct_outcomes**") < md.index("**distinct_correct_outcomes**") \
        < md.index("**distinct_outcome_fraction**")
    table = pd.read_parquet(tmp_path / "out" / "per_problem_rl.parquet")
    assert {"distinct_correct_outcomes", "split_num_correct", "heldout_distinct_outcomes",
            "graded_score"} <= set(table.columns)


def test_report_shows_pass_hat_g_pass_vendi_and_the_split_of_distinct_outcomes(tmp_path):
    """base: p0-p2 right on 2 of 8 samples, 4 outcomes twice each; rl: one outcome per problem,
    right on p0-p2 (8 of 8), wrong on p3-p5."""
    md = write_report(_results(), tmp_path / "out")[2].read_text()
    header, _, *rows = _table(md, "## pass^k, G-Pass@k and mG-Pass@k")
    assert header == ["model", "measure", "k=1", "k=2", "k=4", "k=8"]
    cells = {(row[0], row[1]): row[2:] for row in rows}
    # base pass^k: (2/8, C(2,2)/C(8,2), 0, 0) on half the problems.
    assert cells["base", "pass^k"] == ["0.125", "0.018", "0.000", "0.000"]
    # G-Pass@k at tau 0.5 needs 1, 1, 2, 4 right: 1/4, 1 - C(6,2)/C(8,2) = 13/28,
    # C(2,2) C(6,2) / C(8,4) = 3/14, 0, on half the problems.
    assert cells["base", "G-Pass@k"] == ["0.125", "0.232", "0.107", "0.000"]
    assert cells["rl", "pass^k"] == cells["rl", "G-Pass@k"] == ["0.500"] * 4
    assert cells["rl", "mG-Pass@k"] == ["0.000", "0.500", "0.500", "0.500"]
    # The Vendi scores beside distinct outcomes: base's 4 outcomes at 1/4 each, rl's one.
    header, _, *rows = _table(md, "| model | distinct outcomes |")
    assert header == ["model", "distinct outcomes", "outcome entropy", "Vendi (outcomes)",
                      "Vendi (text)", "crossover k"]
    vendi = {row[0]: row[3] for row in rows}
    assert vendi["base"].startswith("4.000") and vendi["rl"].startswith("1.000")
    assert {row[0]: row[4] for row in rows} == {"base": "-", "rl": "-"}  # no text column
    # Paired: distinct outcomes 4 -> 1 everywhere; base's wrong outcomes 3 (p0-p2) and 4
    # (p3-p5) -> 0 and 1: all -3 is wrong answers dropped, none narrowing among correct ones.
    header, _, row = _table(md, "The change in distinct outcomes, split")
    assert header == ["model − base", "problems", "Δ distinct outcomes",
                      "Δ distinct wrong outcomes", "Δ distinct correct outcomes"]
    assert row[:2] == ["rl − base", "6"]
    assert row[2] == row[3] == "-3.000 [-3.000, -3.000] (down)"
    assert row[4] == "+0.000 [+0.000, +0.000] (no clear difference)"
    paired = json.loads((tmp_path / "out" / "paired.json").read_text())["rl"]["differences"]
    assert [d["measure"] for d in paired][-2:] == ["distinct wrong outcomes",
                                                   "distinct correct outcomes"]
    # The split tables by base-solved / base-unsolved carry the new columns too.
    assert "**distinct_wrong_outcomes**" in md and "**vendi_outcomes**" in md
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())["rl"]["metrics"]
    assert metrics["eval/pass_hat_8"] == 0.5 and metrics["eval/vendi_outcomes"] == 1.0


def test_samples_with_no_answer_are_counted_apart_from_wrong_ones(tmp_path):
    # 2 problems x 4 samples: 2 right, 3 wrong, 3 with nothing the verifier could read.
    extracted = ["7", "8", None, None, "5", "9", "9", None]
    rows = pd.DataFrame({"problem_id": ["a"] * 4 + ["b"] * 4, "sample_index": [0, 1, 2, 3] * 2,
                         "model": "base", "extracted": extracted, "outcome": extracted,
                         "correct": [True, False, False, False, True, False, False, False]})
    result = evaluate_models(rows, num_bootstrap=50)["base"]
    assert result.per_problem["no_answer_rate"].tolist() == [0.5, 0.25]
    metrics = result.metrics()
    assert metrics["eval/no_answer_rate"] == pytest.approx(3 / 8)
    assert metrics["eval/pass_at_1"] == pytest.approx(2 / 8)
    header, _, row = _table(markdown_report({"base": result}), "## Headline metrics")[:3]
    assert header[-1] == "no answer" and row[-1].startswith("0.375 [")
    write_report({"base": result}, tmp_path)
    saved = json.loads((tmp_path / "metrics.json").read_text())["base"]
    assert saved["no_answer_rate"]["estimate"] == pytest.approx(3 / 8)


def test_without_an_extracted_column_no_outcome_is_no_answer():
    rows = pd.DataFrame({"problem_id": ["a"] * 4, "outcome": ["1", None, None, "2"],
                         "correct": [True, False, False, False]})
    result = evaluate_models(rows.assign(model="m"), num_bootstrap=20)["m"]
    assert result.metrics()["eval/no_answer_rate"] == 0.5
