"""Report files for one or more evaluated models: plots, a markdown summary and metrics JSON.

matplotlib is imported inside the plotting functions (Agg backend, no display) so importing
breadth.evaluation stays light.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from breadth.evaluation.paired import DIVERSITY_SPLIT, PAIRED_MEASURES, paired_against_base
from breadth.evaluation.summary import EvaluationResult
from breadth.evaluation.transfer import SPLITS

__all__ = [
    "REPORT_DIVERSITY_METRICS",
    "comparability_notes",
    "markdown_report",
    "plot_diversity",
    "plot_pass_at_k",
    "stale_report_files",
    "write_report",
]

# The bars of diversity.png: the outcome metrics that answer "does diversity fall on the
# unsolved split too?".
# Distinct correct outcomes beside distinct outcomes: on a task with several right answers,
# the diversity that costs no accuracy; distinct wrong outcomes the rest (the two sum to
# distinct outcomes); the exact-match Vendi score the effective number of outcomes.
REPORT_DIVERSITY_METRICS = ("distinct_outcomes", "distinct_correct_outcomes",
                            "distinct_wrong_outcomes", "vendi_outcomes",
                            "distinct_outcome_fraction", "outcome_entropy")


def write_report(results: Mapping[str, EvaluationResult], out_dir: str | Path) -> list[Path]:
    """Write pass_at_k.png, diversity.png, report.md, metrics.json, paired.json (each model
    against its base, `breadth.evaluation.paired`) and one
    per_problem_<name>.parquet per model (what a study's claims are computed from); return
    their paths.

    `results` maps a display name (e.g. "base", "sft", "rl") to its EvaluationResult.
    """
    if not results:
        raise ValueError("write_report needs at least one EvaluationResult")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [
        plot_pass_at_k(results, out / "pass_at_k.png"),
        plot_diversity(results, out / "diversity.png"),
    ]
    md = out / "report.md"
    md.write_text(markdown_report(results), encoding="utf-8")
    js = out / "metrics.json"
    js.write_text(
        json.dumps({name: r.to_dict() for name, r in results.items()}, indent=2, allow_nan=False),
        encoding="utf-8",
    )
    paired = out / "paired.json"
    paired.write_text(json.dumps({name: {"base": base, "differences": [d.to_dict() for d in diffs]}
                                  for name, (base, diffs) in paired_against_base(results).items()},
                                 indent=2, allow_nan=False), encoding="utf-8")
    tables = []
    for name, result in results.items():
        if result.per_problem is not None:
            tables.append(out / f"per_problem_{name}.parquet")
            result.per_problem.reset_index().to_parquet(tables[-1], index=False)
    return [*paths, md, js, paired, *tables]


# Report files that not every report writes: one per model, and the search comparison's.
_OPTIONAL_REPORT_FILES = ("per_problem_*.parquet", "search.png", "search.json")


def stale_report_files(out_dir: str | Path, written: list[Path]) -> list[Path]:
    """Files in `out_dir` named as a report's optional files (per_problem_<model>.parquet,
    search.png, search.json) that this report did not write: an earlier report's, left in a
    reused folder, where they would be read as this one's. Only those names: any other file
    there is the user's."""
    out, kept = Path(out_dir), {Path(path).resolve() for path in written}
    found = {path for pattern in _OPTIONAL_REPORT_FILES for path in out.glob(pattern)}
    return sorted(path for path in found if path.is_file() and path.resolve() not in kept)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_pass_at_k(results: Mapping[str, EvaluationResult], path: str | Path) -> Path:
    """pass@k of every model on one plot, log2 k axis, bootstrap CIs shaded; pass^k (all k
    correct) dashed in the model's colour, so reliability and coverage read off one figure."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    try:
        for name, r in results.items():
            ks = [p.k for p in r.pass_at_k]
            line = ax.plot(ks, [p.estimate for p in r.pass_at_k], marker="o", label=name)[0]
            ax.fill_between(
                ks,
                [p.low for p in r.pass_at_k],
                [p.high for p in r.pass_at_k],
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
            if r.pass_hat_k:
                hat = r.pass_hat_k
                ax.plot([p.k for p in hat], [p.estimate for p in hat], linestyle="--",
                        marker=".", color=line.get_color(), label=f"{name}: pass^k")
                ax.fill_between([p.k for p in hat], [p.low for p in hat],
                                [p.high for p in hat], color=line.get_color(), alpha=0.1,
                                linewidth=0)
            if r.chance:
                ax.plot(
                    [c.k for c in r.chance],
                    [c.chance for c in r.chance],
                    linestyle=":",
                    color=line.get_color(),
                    label=f"{name}: chance",
                )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("k (samples)")
        ax.set_ylabel("pass@k (solid), pass^k (dashed)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return Path(path)


def write_search_report(searches: Mapping[str, Any], out_dir: str | Path) -> Path:
    """Success against samples spent, evolutionary vs independent, one line per model
    (`searches`: model -> SearchComparison) -> search.png and search.json."""
    out_dir = Path(out_dir)
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for name, comparison in searches.items():
        for result, style in ((comparison.evolutionary, "-"), (comparison.independent, "--")):
            points = result.success_curve()
            axis.plot([p[0] for p in points], [p[1] for p in points], style, marker="o",
                      label=f"{name} {result.method}")
    axis.set_xscale("log", base=2)
    axis.set(xlabel="samples per problem", ylabel="share of problems solved",
             title="Evolutionary search vs independent sampling (same budget)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out_dir / "search.png", dpi=120)
    plt.close(figure)
    (out_dir / "search.json").write_text(
        json.dumps({name: c.to_dict() for name, c in searches.items()}, indent=1)
    )
    return out_dir / "search.png"


def diversity_by_split(
    results: Mapping[str, EvaluationResult], metric: str
) -> dict[str, dict[str, float]]:
    """{split: {model: value}} for one metric; splits solved/unsolved where a transfer exists
    (a base model's values are read from the transfer section of a model compared to it),
    else "all"."""
    table: dict[str, dict[str, float]] = {}
    for name, r in results.items():
        splits = _splits_of(name, r, results)
        if splits is None:
            ci = r.diversity.get(metric)
            table.setdefault("all", {})[name] = ci.estimate if ci else math.nan
            continue
        for split, values in splits.items():
            ci = values.get(metric)
            table.setdefault(split, {})[name] = ci.estimate if ci else math.nan
    return table


def _splits_of(name, r, results):
    if r.transfer is not None:
        return {s: r.transfer.splits[s].trained for s in SPLITS if s in r.transfer.splits}
    for other in results.values():
        if other.transfer is not None and other.base_model == r.model:
            return {s: other.transfer.splits[s].base for s in SPLITS if s in other.transfer.splits}
    return None


def _split_sizes(results: Mapping[str, EvaluationResult]) -> dict[str, int]:
    for r in results.values():
        if r.transfer is not None:
            return {name: split.num_problems for name, split in r.transfer.splits.items()}
    return {}


def _conclusive_splits(results: Mapping[str, EvaluationResult]) -> dict[str, bool]:
    for r in results.values():
        if r.transfer is not None:
            return {name: split.conclusive for name, split in r.transfer.splits.items()}
    return {}


def plot_diversity(results: Mapping[str, EvaluationResult], path: str | Path) -> Path:
    """Grouped bars: one panel per outcome-diversity metric, splits on x, one bar per model."""
    plt = _pyplot()
    metrics = REPORT_DIVERSITY_METRICS
    columns = min(len(metrics), 3)
    rows = -(-len(metrics) // columns)
    fig, grid = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False)
    axes = grid.ravel()
    try:
        names = list(results)
        width = 0.8 / max(len(names), 1)
        marks = _n_marks(results)
        for ax, metric in zip(axes, metrics):
            ticks, heights = _bars(results, metric)
            for j, name in enumerate(names):
                xs = [i + (j - (len(names) - 1) / 2) * width for i in range(len(ticks))]
                ax.bar(xs, heights[name], width, label=name + marks[name])
            ax.set_xticks(range(len(ticks)), ticks)
            ax.set_xlim(-0.5, len(ticks) - 0.5)  # an inconclusive split's empty slot stays
            ax.set_title(metric.replace("_", " "))
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return Path(path)


def _bars(
    results: Mapping[str, EvaluationResult], metric: str
) -> tuple[list[str], dict[str, list[float]]]:
    """One diversity panel's tick labels and each model's bar heights. An inconclusive split
    has no bars (NaN), as report.md and metrics.json give it no number, and its tick says so."""
    table = diversity_by_split(results, metric)
    splits = [s for s in (*SPLITS, "all") if s in table]
    sizes, conclusive = _split_sizes(results), _conclusive_splits(results)
    ticks = [s if s not in sizes else f"{s}\n({_problems(sizes[s])}"
             + (")" if conclusive.get(s, True) else ": inconclusive)") for s in splits]
    heights = {name: [table[s].get(name, math.nan) if conclusive.get(s, True) else math.nan
                      for s in splits] for name in results}
    return ticks, heights


def markdown_report(results: Mapping[str, EvaluationResult]) -> str:
    """A comparison table of headline metrics, the diversity per split, and crossovers."""
    names = list(results)
    # Two narrow tables rather than one of ten columns: Prefect's artifact page and MLflow's
    # markdown preview cut a wide table off at the page's width.
    lines = ["# breadth evaluation report", "",
             "## Headline metrics (95% bootstrap CI over problems)", "",
             *(_samples_line(name, results[name]) for name in names), ""]
    lines += [line for note in comparability_notes(results) for line in (f"**Note:** {note}", "")]
    # "no answer": the share of samples the verifier read nothing from (no answer line, no
    # number), apart from the wrong answers: a model that does not follow the answer format
    # is told from one that answers wrongly.
    lines += [_row(["model", "pass@1", "pass@n", "maj@n", "best-of-n", "no answer"]),
              _row(["---"] * 6)]
    # n is each model's own sample count: where the models' differ (base 4, trained 16), each
    # value says its n, so pass@4 is not read as comparable with pass@16 beside it.
    uneven = len({results[name].pass_at_k[-1].k for name in names}) > 1
    for name in names:
        r = results[name]
        at_n = [_ci_text(curve[-1]) + (f" (n={curve[-1].k})" if uneven else "")
                for curve in (r.pass_at_k, r.maj_at_k, r.best_of_k)]
        lines.append(_row([name, _ci_text(r.pass_at_k[0]), *at_n, _ci_text(r.no_answer_rate)]))
    # The Vendi scores beside distinct outcomes: the effective number of outcomes (exact
    # match) and of texts (n-gram kernel), which weigh an outcome by how often it is sampled.
    lines += ["", _row(["model", "distinct outcomes", "outcome entropy", "Vendi (outcomes)",
                        "Vendi (text)", "crossover k"]),
              _row(["---"] * 6)]
    # Diversity counts grow with the sample count: at unlike n each value says its n, as the
    # headline's pass@n does (marks are empty when every model has the same n).
    marks = _n_marks(results)
    for name in names:
        r = results[name]
        cross = r.transfer.crossover if r.transfer is not None else None
        lines.append(_row([name, *(_ci_text(r.diversity.get(metric)) + marks[name]
                                   for metric in ("distinct_outcomes", "outcome_entropy",
                                                  "vendi_outcomes", "vendi_text")),
                           _crossover_text(cross)]))
    lines += _paired_lines(results)
    # Models may have different sample counts (base 4, trained 16): the columns are every k of
    # any model, and a model shows "-" where it has no value, so each number sits under its k.
    ks = sorted({k for r in results.values() for k in r.ks})
    lines += ["", "## pass@k", "", _row(["model", *[f"k={k}" for k in ks]]),
              _row(["---"] * (len(ks) + 1))]
    for name in names:
        at = {p.k: p.estimate for p in results[name].pass_at_k}
        lines.append(_row([name, *[f"{at[k]:.3f}" if k in at else "-" for k in ks]]))
    lines += _reliability_lines(results, ks)
    has_base = any(r.transfer is not None for r in results.values())
    lines += ["", "## Diversity by base-solved / base-unsolved split" if has_base
              else "## Diversity (no base model, so no base-solved / base-unsolved split)", ""]
    if note := _split_samples_note(results):
        lines += [note, ""]
    sizes, conclusive = _split_sizes(results), _conclusive_splits(results)
    for metric in REPORT_DIVERSITY_METRICS:
        table = diversity_by_split(results, metric)
        splits = [s for s in (*SPLITS, "all") if s in table]
        lines += [f"**{metric}**", "", _row(["model", *splits]), _row(["---"] * (len(splits) + 1))]
        for name in names:
            lines.append(_row([name, *[
                _num(table[s].get(name, math.nan)) + marks[name] if conclusive.get(s, True)
                else _inconclusive_text(sizes[s], results) for s in splits]]))
        lines.append("")
    for name in names:
        r = results[name]
        if r.chance:
            lines += [
                f"Multiple-choice chance level for {name}: "
                + ", ".join(
                    f"k={c.k}: {c.chance:.3f} (corrected pass@k {c.corrected.estimate:.3f})"
                    for c in r.chance
                ),
                "",
            ]
    lines += ["Files: pass_at_k.png, diversity.png, metrics.json, paired.json.", ""]
    return "\n".join(lines)


def _reliability_lines(results: Mapping[str, EvaluationResult], ks: list[int]) -> list[str]:
    """pass^k, G-Pass@k and mG-Pass@k per model and k (each a mean over problems): the
    reliability end of the pass@k table, or nothing for results without them."""
    measured = [name for name, r in results.items() if r.pass_hat_k]
    if not measured:
        return []
    taus = {results[name].settings.get("g_pass_tau") for name in measured}
    tau = f"{taus.pop():g}" if len(taus) == 1 else "each model's tau"
    lines = ["", "## pass^k, G-Pass@k and mG-Pass@k", "",
             (f"pass^k: all k samples correct; G-Pass@k: at least ceil({tau} k) of k correct "
              "(tau = evaluate_rollouts' g_pass_tau); mG-Pass@k: G-Pass@k averaged over tau in "
              "(0.5, 1], 0 at k = 1 by its definition. Each the unbiased estimate from the n "
              "samples, averaged over problems."), "",
             _row(["model", "measure", *[f"k={k}" for k in ks]]),
             _row(["---"] * (len(ks) + 2))]
    for name in measured:
        r = results[name]
        for label, curve in (("pass^k", r.pass_hat_k), ("G-Pass@k", r.g_pass_at_k),
                             ("mG-Pass@k", r.mg_pass_at_k)):
            at = {p.k: p.estimate for p in curve}
            lines.append(_row([name, label, *[f"{at[k]:.3f}" if k in at else "-" for k in ks]]))
    return lines


def comparability_notes(results: Mapping[str, EvaluationResult]) -> list[str]:
    """Plain sentences on what the report's side-by-side values are not: a paired comparison
    when the models saw different problems, a diversity comparison at unlike sample counts,
    and exact where maj@k was estimated from draws. Empty when none holds; `breadth evaluate`
    prints the same sentences."""
    notes = [note for name, r in results.items() if (note := _maj_draws_note(name, r))]
    sets = _problem_sets_note(results)
    if sets:
        notes.append(sets)
    counts = {name: _samples_text(r) for name, r in results.items()}
    if len(set(counts.values())) > 1:
        said = " and ".join(f"{name} n = {n}" for name, n in counts.items())
        notes.append(
            f"Diversity is not comparable across unlike sample counts ({said} samples per "
            "problem): distinct outcomes, outcome entropy and the distinct-outcome fraction "
            "all depend on n (more samples show more distinct outcomes), so a gap between the "
            "models here is partly their sample counts, not a change in diversity; each "
            "diversity value says its n. Compare diversity between rollouts of equal n "
            "(rollout.num_samples)."
        )
    return notes


def _maj_draws_note(name: str, result: EvaluationResult) -> str | None:
    """A sentence when some of the model's maj@k values are means of seeded draws (the exact
    expectation cost too much at that n and k: `maj_at_k_estimates`), with the bound on
    their Monte Carlo error, else None."""
    ks = result.settings.get("maj_resampled_ks") or []
    if not ks:
        return None
    draws = int(result.settings["maj_resamples"])
    bound = 0.5 / math.sqrt(draws * result.num_problems)
    return (
        f"maj@k of {name} at k = {', '.join(map(str, ks))} is the mean over {draws} seeded "
        f"draws of k samples per problem, not the exact expectation (too costly at this n and "
        f"k); its Monte Carlo standard error on the mean over problems is at most {bound:.4f}, "
        "and its bootstrap interval includes that noise. More draws: "
        "evaluation.maj_resamples."
    )


def _problem_sets_note(results: Mapping[str, EvaluationResult]) -> str | None:
    """A sentence when the models were evaluated on different problems, else None."""
    if len(results) < 2:
        return None
    tables = [r.per_problem for r in results.values()]
    transfers = [r.transfer for r in results.values() if r.transfer is not None]
    if all(t is not None for t in tables):
        ids = [set(t.index) for t in tables]
        if all(i == ids[0] for i in ids[1:]):
            return None
        shared: int | None = len(set.intersection(*ids))
    elif transfers:
        # No per-problem tables (a result built by hand): the transfer sections count the
        # problems each model shares with the base.
        shared = min(t.num_problems for t in transfers)
        if all(r.num_problems == shared for r in results.values()):
            return None
    else:
        if len({r.num_problems for r in results.values()}) == 1:
            return None  # same counts, and nothing to tell whether the problems differ
        shared = None
    each = ", ".join(f"{name} on {_problems(r.num_problems)}" for name, r in results.items())
    sets = "both sets" if len(results) == 2 else "every set"
    common = ("how many are in every set is not known" if shared is None
              else f"{_problems(shared)} {'is' if shared == 1 else 'are'} in {sets}")
    paired = ""
    if transfers:
        in_both = {t.num_problems for t in transfers}
        only = f" ({in_both.pop()})" if len(in_both) == 1 else ""
        paired = (" The split tables and the crossover compare each model with the base on "
                  f"only the problems both have{only}.")
    return (f"The models were evaluated on different problem sets: {each}; {common}. "
            "Each model's headline values and pass@k curve average over its own problems, so "
            f"they are not a paired comparison.{paired}")


def _problems(count: int) -> str:
    return f"{count} problem{'' if count == 1 else 's'}"


def _samples_text(r: EvaluationResult) -> str:
    """A model's samples per problem: "16", or "2-8" when its problems' counts differ (each
    problem's diversity counts all of its own samples)."""
    if r.uneven_samples is None:
        return str(r.num_samples)
    return f"{r.uneven_samples.fewest}-{r.uneven_samples.most}"


def _n_marks(results: Mapping[str, EvaluationResult]) -> dict[str, str]:
    """" (n=16)" per model where the models' sample counts differ, else "" for every model."""
    counts = {name: _samples_text(r) for name, r in results.items()}
    unlike = len(set(counts.values())) > 1
    return {name: f" (n={n})" if unlike else "" for name, n in counts.items()}


def _paired_lines(results: Mapping[str, EvaluationResult]) -> list[str]:
    """The paired differences against each model's base: a table, or nothing without a base."""
    paired = paired_against_base(results)
    if not paired:
        return []
    labels = [label for _, label, _ in PAIRED_MEASURES if label not in DIVERSITY_SPLIT[1:]]
    lines = ["", "## Against the base, paired by problem (95% bootstrap CI of the difference)", "",
             ("Per-model intervals above can overlap while the difference is clear: the "
              "problems' difficulty is shared by both models and cancels in it. pass@n and "
              "distinct outcomes are compared only at equal n."), "",
             *_paired_table(paired, labels)]
    split = {name: (base, diffs) for name, (base, diffs) in paired.items()
             if {d.measure for d in diffs} >= set(DIVERSITY_SPLIT)}
    if split:
        lines += ["", ("The change in distinct outcomes, split: Δ distinct wrong outcomes (below 0: "
                       "wrong answers dropped) + Δ distinct correct outcomes (below 0: narrowing "
                       "among correct answers) = Δ distinct outcomes, problem by problem. An "
                       "outcome is correct when some sample of it was."), "",
                  *_paired_table(split, list(DIVERSITY_SPLIT))]
    return lines


def _paired_table(paired, labels: list[str]) -> list[str]:
    lines = [_row(["model − base", "problems", *(f"Δ {label}" for label in labels)]),
             _row(["---"] * (len(labels) + 2))]
    for name, (base, differences) in paired.items():
        by_label = {d.measure: d for d in differences}
        cells = [f"{_signed_ci_text(by_label[label].difference)} ({by_label[label].direction})"
                 if label in by_label else "-" for label in labels]
        lines.append(_row([f"{name} − {base}", str(differences[0].num_problems), *cells]))
    return lines


def _signed_ci_text(p) -> str:
    return f"{p.estimate:+.3f} [{p.low:+.3f}, {p.high:+.3f}]"


def _split_samples_note(results: Mapping[str, EvaluationResult]) -> str | None:
    """Which samples the split read and which it measured, where a transfer section exists."""
    transfers = [r.transfer for r in results.values() if r.transfer is not None]
    if not transfers:
        return None
    if all(t.held_out for t in transfers):
        return ("The split reads the base model's first half of samples per problem; the "
                "split columns measure every model on its other half (n/2 samples: counts such "
                "as distinct outcomes are lower there than over all n), so the split never "
                "selects the draw it measures.")
    return ("**The split reads the same samples it measures** (some problem has under 2 x "
            "evaluation.transfer_split_k base samples): a problem whose draw went "
            "badly is both called base-unsolved and measured on that draw, a bias toward "
            "narrowing. Sample the base at least 2 x transfer_split_k times per problem.")


def _inconclusive_text(num_problems: int, results: Mapping[str, EvaluationResult]) -> str:
    """Why a split shows no number: its size, the threshold, and the key that sets it."""
    least = next((r.transfer_min_split for r in results.values()
                  if r.transfer is not None and r.transfer_min_split is not None), None)
    if least is None:
        return f"inconclusive ({num_problems} problems, below evaluation.transfer_min_split)"
    return f"inconclusive ({num_problems} problems < evaluation.transfer_min_split = {least})"


def _samples_line(name: str, r: EvaluationResult) -> str:
    """How many problems and samples a model's numbers rest on. Uneven counts are said plainly:
    n is then the fewest samples of any problem, not every problem's count."""
    k_max = r.ks[-1]
    if r.uneven_samples is None:
        return f"- {name}: {r.num_problems} problems, n = {k_max} samples each"
    u = r.uneven_samples
    return (f"- {name}: {r.num_problems} problems, {u.fewest} to {u.most} samples per problem. "
            f"**Warning: uneven sample counts.** {u.describe()} (n = {k_max} below); no sample "
            "is dropped, but a short problem's diversity counts fewer samples. Re-run the short "
            "problems' rollouts, or drop them, to get the full curve.")


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def _num(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _ci_text(p) -> str:
    if p is None:
        return "-"
    return f"{_num(p.estimate)} [{_num(p.low)}, {_num(p.high)}]"


def _crossover_text(c) -> str:
    if c is None:
        return "-"
    if c.k is None:
        # The share is of resamples that do cross: "none (in 37% ...)" read as its opposite.
        return f"none (a crossover in {c.share_with_crossover:.0%} of resamples)"
    hi = "beyond" if c.high is None else str(c.high)
    return f"{c.k} [{c.low}, {hi}]"
