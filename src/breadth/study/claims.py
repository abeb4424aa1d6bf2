"""The study's claims: each literature claim, its measured effect, its interval and a verdict.

Input is a *study frame*: one row per (format, objective, seed, model, problem_id), where
model is "sft" (the shared warm start of that format and seed) or "rl" (the cell's trained
policy), with the per-problem columns of `breadth.evaluation.summary.per_problem_table`
(`num_samples`, `num_correct`, `distinct_outcomes`, `distinct_correct_outcomes`,
`distinct_reasoning`, `reasoning_forking_share`, the split's halves, `graded_score`,
`num_options` for mcq) and, where search ran, `search_evolutionary` / `search_independent`
(1 when the method solved the problem within the search budget).

Every effect is a paired per-problem difference, averaged within each seed (problems are
nested in seeds), then over seeds, with a t interval over the per-seed means (S - 1 degrees
of freedom: `breadth.stats.seed_interval`), the method the calibration simulation kept
(`docs/results/calibration.md`). The measured rows form one family: their verdicts read
Holm-adjusted intervals, the unadjusted 95% interval is shown beside. Each row pre-registers
its smallest effect of interest δ (`claim_registry.DELTAS`). Each verdict reads two tests:
whether the effect differs from 0 (the Holm-adjusted interval excludes 0) and whether it lies
within ±δ (the equivalence interval, Bonferroni, level 1 - 2α/m: two one-sided tests, lies
inside ±δ); the row keeps both (`differs_from_zero`, `within_delta`, and `beyond_delta`: the
adjusted interval clears δ) and a sentence of them (`wording`). Verdicts:

- *reproduced*: not 0, on the claimed side, and not within ±δ;
- *refuted*: not 0, on the other side, and not within ±δ;
- *smaller than δ, but not zero*: not 0, and within ±δ (either side);
- *no effect*: within ±δ, and 0 not excluded;
- *inconclusive*: neither test passes (too wide to say), or the row cannot be read (one
  seed, a split pooled over seeds below `min_split` a seed, an mcq start at chance);
- *not run*: the grid lacks an arm or a measurement the claim needs, and the row says which.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from breadth.evaluation.metrics import chance_pass_at_k, largest_k_above_chance, pass_at_k
from breadth.evaluation.transfer import (
    first_crossing,
    leader,
    options_of,
    solved_by_base,
)
from breadth.stats.bootstrap import hierarchical_bootstrap_means
from breadth.stats.seed_interval import seed_means, seed_t_interval
from breadth.study.budget import NightlyBudget
from breadth.study.claim_registry import DELTAS, paper_of
from breadth.study.claim_table import (
    INCONCLUSIVE,
    MEASURED,
    NOT_RUN,
    REFUTED,
    REPRODUCED,
    VERDICTS,
    Claim,
    claims_markdown,
    decide_family,
    effect_text,
    interval_text,
    unadjusted_text,
    verdict,
)
from breadth.study.grid_design import (
    BATCH,
    CORRECTNESS,
    DARLING,
    PASSK,
    UCB,
    UNSCALED_CONTROL,
    VECTOR,
)
from breadth.study.grid_settings import ClaimSettings
from breadth.study.power import PilotSizing
from breadth.study.reference import ReferenceTable, with_reference

__all__ = [
    "CORRECT_ANSWER_ROWS",
    "NOT_RUN",
    "VERDICTS",
    "Claim",
    "claims_markdown",
    "decide_family",
    "effect_text",
    "evaluate_claims",
    "unadjusted_text",
    "verdict",
]

# Every arm is named by the grid's own constants (`breadth.study.grid_design`), never a string that
# must match them. The objectives that set rl.scale_rewards=none themselves are compared with
# UNSCALED_CONTROL (correctness at none), so that the objective, not the step size, differs.
UNSCALED_OBJECTIVES = (DARLING, PASSK)
CORRECT_ANSWER_ROWS = (("batch", BATCH), ("pass@k objective", PASSK), ("pass@k objective", VECTOR),
                       ("darling", DARLING))
"""(claim, objective) of the rows of distinct correct answers, each against its control."""
PerProblem = Callable[[pd.DataFrame], np.ndarray]
SFT = ("", "sft")
# Renamed by #52 item 4 to what they measure (`claim_registry.RENAMED`: "transfer", "forking").
UNSOLVED, FORKING = "diversity on unsolved", "forking share"


def pass_metric(k: int | None, above_chance: bool = True) -> PerProblem:
    """Per-problem pass@k (k=None: the problem's n), above chance for rows with options
    unless `above_chance` is False (raw pass@k at k or n, no cap).

    Above chance *on the mean*: each problem contributes (p - chance) / (1 - mean chance of
    the rows given), so the rows' mean is (mean p - mean chance) / (1 - mean chance), and a
    problem with no correct sample weighs as much as any other. The rows are one seed's
    problems (`Study.aligned`). k=None is capped where chance pass@k reaches 0.99
    (`largest_k_above_chance`); an explicit k beyond that cap gives NaN.
    """

    def per_problem(rows: pd.DataFrame) -> np.ndarray:
        n, c = rows["num_samples"].to_numpy(), rows["num_correct"].to_numpy()
        options = options_of(rows) if above_chance else None
        kk = int(n.min()) if k is None else k
        if options is not None and k is None:
            kk = largest_k_above_chance(options, kk)
        if options is not None and (kk < 1 or kk > largest_k_above_chance(options, int(n.min()))):
            return np.full(len(rows), np.nan)
        value = pass_at_k(n, c, kk)
        if options is not None:
            chance = chance_pass_at_k(options, kk)
            value = (value - chance) / (1.0 - chance.mean())
        return value

    return per_problem


def column(name: str) -> PerProblem:
    return lambda rows: rows[name].to_numpy(dtype=np.float64)


def search_gain(rows: pd.DataFrame) -> np.ndarray:
    return (rows["search_evolutionary"] - rows["search_independent"]).to_numpy(np.float64)


class Study:
    """Aligned (seeds x problems) matrices of one format's arms."""

    def __init__(self, frame: pd.DataFrame, fmt: str, settings: ClaimSettings):
        self.frame = frame[frame["format"] == fmt]
        self.fmt = fmt
        self.settings = settings
        # Each arm's rows, each seed's of them by problem, and the rows a metric reads, worked
        # out once: the claims read the same few arms dozens of times (each k of the
        # crossover, each δ), and filtering the frame again each time was most of
        # `evaluate_claims`' time.
        self._arms: dict[tuple[str, str], pd.DataFrame | None] = {}
        self._seeds: dict[tuple[str, str], dict] = {}
        self._rows: dict[tuple, pd.DataFrame] = {}

    def has(self, name: str) -> bool:
        """Whether the frame measured `name` (a column with a value)."""
        return name in self.frame and self.frame[name].notna().any()

    def arm(self, objective: str, model: str) -> pd.DataFrame | None:
        if (objective, model) in self._arms:
            return self._arms[objective, model]
        if model == "sft":  # the warm start is shared: read each seed's from any of its cells
            rows = self.frame[self.frame["model"] == "sft"]
            rows = rows.drop_duplicates(["seed", "problem_id"])
        else:
            rows = self.frame[(self.frame["model"] == "rl") & (self.frame["objective"] == objective)]
        self._arms[objective, model] = rows if len(rows) else None
        return self._arms[objective, model]

    def _by_seed(self, arm: tuple[str, str]) -> dict:
        """The arm's rows per seed, indexed by problem_id ({} without the arm)."""
        if arm not in self._seeds:
            rows = self.arm(*arm)
            self._seeds[arm] = {} if rows is None else {
                s: rows[rows["seed"] == s].set_index("problem_id") for s in set(rows["seed"])}
        return self._seeds[arm]

    def _of_seed(self, arm: tuple[str, str], seed, problems: list) -> pd.DataFrame:
        """`_of_seed` of the arm's rows (its rows of `seed`, one per problem of `problems`), as
        a shallow copy: a metric that added a column would not change the next one's rows."""
        key = (arm, seed, tuple(problems))
        if key not in self._rows:
            by_seed = self._by_seed(arm)
            # No such seed or arm: the frame's own rows fail as they always did.
            self._rows[key] = (by_seed[seed].loc[problems] if seed in by_seed
                               else _of_seed(self.arm(*arm), seed, problems))
        return self._rows[key].copy(deep=False)

    def missing(self, arms: list[tuple[str, str]]) -> list[str]:
        """The arms the grid did not run ("sft" for the warm start)."""
        return [objective or "sft" for objective, model in arms if self.arm(objective, model) is None]

    def aligned(self, arms: list[tuple[str, str]], metric: PerProblem,
                mask: Callable[[pd.DataFrame], np.ndarray] | None = None):
        """(seeds x problems x arms) of metric, NaN outside `mask`; or (None, reason).

        Problems are nested in seeds (each seed prepares its own): row s holds seed s's
        problems that every arm evaluated, NaN-padded to the longest row.
        """
        frames = [self.arm(*arm) for arm in arms]
        missing = [objective or "sft" for (objective, _), f in zip(arms, frames) if f is None]
        if missing:
            return None, f"arm not in the grid: {', '.join(missing)}"
        seeds = self.shared_seeds(arms)
        if not seeds:
            return None, "the arms share no seed"
        rows = []
        for seed in seeds:
            problems = sorted(set.intersection(*(set(self._by_seed(tuple(arm))[seed].index)
                                                 for arm in arms)))
            values = np.stack([np.asarray(metric(self._of_seed(tuple(arm), seed, problems)),
                                          np.float64) for arm in arms], axis=-1)  # (P, A)
            if mask is not None:
                keep = mask(self._of_seed(SFT, seed, problems))
                values[~np.asarray(keep, bool)] = np.nan
            rows.append(values)
        width = max(len(r) for r in rows)
        matrix = np.stack([np.pad(r, ((0, width - len(r)), (0, 0)), constant_values=np.nan)
                           for r in rows])
        return matrix, f"seeds: {len(seeds)}, problems per seed: {[len(r) for r in rows]}"

    def shared_seeds(self, arms: list[tuple[str, str]]) -> list:
        """The seeds every arm ran, in the order of `aligned`'s rows."""
        frames = [self.arm(*arm) for arm in arms]
        return sorted(set.intersection(*(set(f["seed"]) for f in frames if f is not None)))

    def paired(self, a: tuple[str, str], b: tuple[str, str], metric: PerProblem,
               mask: Callable[[pd.DataFrame], np.ndarray] | None = None):
        """(seeds x problems) of metric(a) - metric(b) on the problems both evaluated."""
        values, detail = self.aligned([a, b], metric, mask)
        return (None, detail) if values is None else (values[..., 0] - values[..., 1], detail)

    def effect(self, claim: str, measure: str, a, b, metric: PerProblem, sign: int,
               delta: str, mask=None, min_split: bool = False) -> Claim:
        """The row of metric(a) - metric(b) (b=None: metric(a) alone), in the family; a δ
        rule reads SFT's level of `metric` on the row's problems (`with_delta`)."""
        arms = [a] if b is None else [a, b]
        base = _not_run(claim, self.fmt, measure, "", delta)
        base = replace(base, sign=sign, objectives=_objectives(arms))
        if missing := self.missing(arms):
            return replace(base, detail=f"arm not in the grid: {', '.join(missing)}")
        row = self._measured(base, a, b, metric, mask, min_split)
        return self.with_delta(row, metric, mask) if DELTAS[delta].is_rule else row

    def _measured(self, base: Claim, a, b, metric: PerProblem, mask, min_split: bool) -> Claim:
        if b is None:
            values, detail = self.aligned([a], metric, mask)
            matrix = None if values is None else values[..., 0]
        else:
            matrix, detail = self.paired(a, b, metric, mask)
        if matrix is None:
            return replace(base, verdict=INCONCLUSIVE, detail=detail)
        if min_split:
            matrix, detail, short = self._pooled(matrix, [a] if b is None else [a, b])
            if short:
                # No estimate: a mean of a handful of problems, shown bare in the claims table,
                # reads as a finding (the grid summary and the run's report show none either).
                return replace(base, verdict=INCONCLUSIVE, detail=f"{short}; {detail}")
        if not np.isfinite(matrix).any():
            return replace(base, verdict=INCONCLUSIVE, detail=f"no finite values ({detail})")
        ci = seed_t_interval(matrix, self.settings.confidence)
        base = replace(base, estimate=ci.estimate, low=_float(ci.low), high=_float(ci.high),
                       standard_error=_float(ci.standard_error), num_seeds=ci.num_seeds,
                       p_value=_float(ci.p_value))
        if ci.num_seeds < 2:
            return replace(base, verdict=INCONCLUSIVE,
                           detail=f"inconclusive: one seed has no run-to-run spread; {detail}")
        return replace(base, verdict=MEASURED, detail=detail)

    def _pooled(self, matrix: np.ndarray, arms) -> tuple[np.ndarray, str, str]:
        """A split row's (seeds x problems) under the pooled rule (`ClaimSettings.min_split`,
        `min_seed_split`): the seeds whose split holds fewer than `min_seed_split` problems
        left out, and why the rest cannot be read ('' where it can: at least `min_split`
        problems per seed read, on average)."""
        s = self.settings
        sizes = (~np.isnan(matrix)).sum(axis=1)
        kept = sizes >= s.min_seed_split
        pooled, read = int(sizes[kept].sum()), int(kept.sum())
        detail = f"seeds: {matrix.shape[0]}, split sizes per seed: {sizes.tolist()}"
        if not kept.all():
            seeds = [seed for seed, k in zip(self.shared_seeds(arms), kept) if not k]
            detail += (f"; seed(s) {', '.join(map(str, seeds))} left out (split under "
                       f"{s.min_seed_split})")
        need = s.min_split * max(read, 1)
        detail += f"; pooled split {pooled} over {read} seed(s) (rule: {s.min_split} a seed)"
        short = "" if pooled >= need else (
            f"inconclusive (pooled n = {pooled} < {need}: {s.min_split} a seed x {read})")
        return matrix[kept], detail, short

    def with_delta(self, row: Claim, metric: PerProblem, mask=None) -> Claim:
        """`row` with the δ its rule gives at SFT's level of `metric` on the row's problems
        (the mean over seeds of SFT's per-seed means), the level and δ named in its detail."""
        values, _ = self.aligned([SFT], metric, mask)
        means = None if values is None else seed_means(values[..., 0])
        level = float(means.mean()) if means is not None and means.size else None
        smallest = DELTAS[row.delta_name]
        return replace(row, delta=smallest.of(level), sft_level=level,
                       detail=_join(row.detail, smallest.text(level)))


def _join(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _objectives(arms: list[tuple[str, str]]) -> tuple[str, ...]:
    """The grid objectives `arms` read: each RL arm's (the SFT start comes with any cell).

    >>> _objectives([(UCB, "rl"), SFT, (CORRECTNESS, "rl")])
    ('correctness+ucb', 'correctness')
    """
    return tuple(objective for objective, model in arms if model == "rl")


def _float(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _of_seed(rows: pd.DataFrame, seed, problems) -> pd.DataFrame:
    return rows[rows["seed"] == seed].set_index("problem_id").loc[problems]


def evaluate_claims(frame: pd.DataFrame, settings: ClaimSettings | None = None,
                    pilot: PilotSizing | None = None,
                    budget: NightlyBudget | None = None,
                    reference: ReferenceTable | None = None) -> list[Claim]:
    """Every named claim, per format, with family-wise verdicts and each measured row's power;
    a claim whose arms or measurements the frame lacks is *not run*. With a power `pilot`
    (`breadth.study.power.read_pilot_sizing`), the rows it sized cite its numbers; with a
    `budget` (`breadth.study.budget.nightly_budget`), inconclusive rows price their seeds as a
    nightly of their arms; with a `reference` (`breadth.study.reference.read_reference`), a
    fuller grid's table, the rows of formats this grid left out are *not run* rows that cite
    what it measured, as do this grid's not-run rows it measured."""
    settings = settings or ClaimSettings()
    claims: list[Claim] = []
    formats = sorted(frame["format"].unique())
    guessing = {}
    for fmt in formats:
        study = Study(frame, fmt, settings)
        guessing[fmt] = _at_chance(study)
        claims += [_guessing(c, guessing[fmt]) for c in _format_claims(study)]
    # Always a row, as every claim: a grid of one format lacks an arm of this one, and a row
    # left out would not say that the comparison was never made.
    claim = _format_claim(frame, settings)
    claims.append(_guessing(claim, guessing.get("mcq", "") or guessing.get("free_form", "")))
    return with_reference(decide_family(claims, settings.confidence, pilot, budget), formats,
                          reference)


def _at_chance(study: Study) -> str:
    """Why the format's claims cannot be read (its SFT start is not above chance), or ''.

    With options, a model that guesses samples every option and "solves" everything at large
    k; its diversity and pass@k then measure the guessing, not the policy.
    """
    sft = study.arm(*SFT)
    if sft is None or options_of(sft) is None:
        return ""
    values, _ = study.aligned([SFT], pass_metric(1))
    ci = seed_t_interval(values[..., 0], 0.95)
    if ci.num_seeds < 2 or ci.low > 0:  # one seed: the rows say so themselves
        return ""
    return (f"the SFT start is not above chance: pass@1 above chance "
            f"{ci.estimate:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]")


def _guessing(claim: Claim, reason: str) -> Claim:
    """An unreadable format's measured row: inconclusive, out of the family."""
    if not reason or claim.verdict == NOT_RUN:  # nothing measured: nothing to discount
        return claim
    return replace(claim, verdict=INCONCLUSIVE, wording="",  # a crossover's wording is gone too
                   detail=f"inconclusive: {reason}; {claim.detail}")


def _not_run(claim: str, fmt: str, measure: str, reason: str, delta: str | None = None) -> Claim:
    """A row with nothing measured; a δ rule shows its formula (no SFT level read)."""
    smallest = DELTAS[delta] if delta else None
    return Claim(claim, fmt, measure, None, None, None, NOT_RUN, reason,
                 delta=None if smallest is None else smallest.delta,
                 delta_rule=smallest.formula() if smallest and smallest.is_rule else "",
                 paper=paper_of(claim), delta_name=delta or "")


def _format_claims(study: Study) -> list[Claim]:
    rl = (CORRECTNESS, "rl")
    # pass@n raw, not above chance: in a difference of two models on the same options chance
    # cancels, and the correction only rescales it by 1 / (1 - chance pass@k), x100 at k = 16
    # of 4 options, which put a raw Δ of -0.06 at -6 against δ = 0.05.
    p1, pn = pass_metric(1), pass_metric(None, above_chance=False)
    raw = "" if options_of(study.frame) is None else " (raw: chance cancels in the difference)"
    ucb = (UCB, "rl")
    claims = [
        study.effect("sharpening", "Δ pass@1, RL − SFT (correctness)", rl, SFT, p1, +1, "pass@1"),
        study.effect("sharpening", f"Δ pass@n{raw}, RL − SFT (correctness)", rl, SFT, pn, -1,
                     "pass@n"),
        _crossover(study),
        *_coverage(study),
        _diversity_on_unsolved(study),
        # Song, Kempe, Munos claim gains in accuracy and in diversity: pass@1, pass@n (raw, as
        # sharpening's) and distinct outcomes on all n samples, each against correctness.
        study.effect("historical", "Δ pass@1, ucb − correctness", ucb, rl, p1, +1, "pass@1"),
        study.effect("historical", f"Δ pass@n{raw}, ucb − correctness", ucb, rl, pn, +1,
                     "ucb pass@n"),
        study.effect("historical", "Δ distinct outcomes, ucb − correctness", ucb, rl,
                     column("distinct_outcomes"), +1, "ucb distinct"),
    ]
    claims += [_correct_answers(study, claim, objective)
               for claim, objective in CORRECT_ANSWER_ROWS]
    claims.append(_forking(study))
    claims += _search(study)
    return claims


def heldout_solved(rows: pd.DataFrame) -> np.ndarray:
    """1 where some sample of the problem's held-out half (the samples after the split's first
    half, `claim_columns`) is right, else 0; NaN where that half is empty."""
    heldout = (rows["num_samples"] - rows["split_num_samples"]).to_numpy(np.float64)
    right = (rows["num_correct"] - rows["split_num_correct"]).to_numpy(np.float64)
    return np.where(heldout > 0, (right > 0).astype(np.float64), np.nan)


def _sft_solved(rows: pd.DataFrame) -> np.ndarray:
    return rows["split_num_correct"].to_numpy() > 0


def _coverage(study: Study) -> list[Claim]:
    """Yue et al.'s coverage: of the problems SFT solves (some right sample in its first half
    of n), the share RL no longer solves; of the rest, the share RL solves. Both are read on
    each model's held-out half, against SFT's own held-out half, so each is 0 where RL is SFT
    drawn again: a split and a measurement on the same samples would read every problem SFT
    solved by luck as one RL "lost" (regression to the mean, as `_diversity_on_unsolved`).

    lost = mean over SFT-solved problems of (SFT solves its other half) − (RL solves its own),
    claimed > 0; gained = mean over the rest of (RL solves) − (SFT solves), where Yue et al.
    find few: no gain or a fall agrees with them, a rise refutes (claimed sign −). Each seed's
    split is its own; the pooled rule reads both (`Study._pooled`)."""
    rl = (CORRECTNESS, "rl")
    rows = [(("share RL no longer solves of the problems SFT solves (≥ 1 right in SFT's first "
             "half of n): SFT − RL solved in each one's other half (correctness)"), SFT, rl, +1,
             _sft_solved),
            (("share RL solves of the problems SFT does not (none right in SFT's first half of "
             "n): RL − SFT solved in each one's other half (correctness)"), rl, SFT, -1,
             lambda base: ~_sft_solved(base))]
    needed = ("split_num_samples", "split_num_correct")
    reason = ""
    if absent := [name for name in needed if not study.has(name)]:
        reason = (f"the per-problem tables lack the split halves ({', '.join(absent)}): "
                  "re-run the cells' evaluation")
    elif (sft := study.arm(*SFT)) is not None and options_of(sft) is not None:
        reason = ("with options a guess solves a problem within n/2 samples (at 4 options, "
                  "chance pass@16 is 0.99): solved within n says nothing of the policy; the "
                  "coverage rows are free form's")
    if reason:
        return [_not_run("coverage", study.fmt, measure, reason, "coverage")
                for measure, *_ in rows]
    return [study.effect("coverage", measure, a, b, heldout_solved, sign, "coverage",
                         mask=mask, min_split=True) for measure, a, b, sign, mask in rows]


def _diversity_on_unsolved(study: Study) -> Claim:
    """Δ distinct outcomes on base-unsolved problems, the split made on other samples (named
    "transfer" before #52 item 4: Yue et al.'s transfer is coverage, `_coverage`).

    Splitting on the samples that are then measured selects problems where SFT's draw
    happened to go badly, and those same samples hold more distinct wrong answers
    (regression to the mean): a bias toward "RL narrows" even when RL is SFT. The split reads
    SFT's first half of samples (`split_num_samples`, `split_num_correct`); both models are
    measured on their held-out second half (`heldout_distinct_outcomes`).
    """
    s = study.settings
    measure = (f"Δ distinct outcomes (held-out half), RL − SFT, base-unsolved "
               f"({_split_rule(study)}, on SFT's other half)")
    needed = ("split_num_samples", "split_num_correct", "heldout_distinct_outcomes")
    if absent := [name for name in needed if not study.has(name)]:
        return _not_run(UNSOLVED, study.fmt, measure,
                        f"the per-problem tables lack the held-out halves ({', '.join(absent)}): "
                        "a split on the measured samples is biased toward narrowing; re-run the "
                        "cells' evaluation", "distinct")
    sft = study.arm(*SFT)
    fewest = int(sft["split_num_samples"].min()) if sft is not None else 0
    if sft is not None and s.split_k > fewest:
        return _not_run(UNSOLVED, study.fmt, measure,
                        f"split budget split_k={s.split_k} exceeds the split half's {fewest} "
                        "samples: lower evaluation.transfer_split_k", "distinct")

    def unsolved(base_rows: pd.DataFrame) -> np.ndarray:
        return ~solved_by_base(base_rows["split_num_samples"], base_rows["split_num_correct"],
                               s.split_k, s.split_threshold, options_of(base_rows))

    return study.effect(UNSOLVED, measure, (CORRECTNESS, "rl"), SFT,
                        column("heldout_distinct_outcomes"), -1, "distinct", mask=unsolved,
                        min_split=True)


def _split_rule(study: Study) -> str:
    """The transfer split's rule as `unsolved` applies it: above chance with options."""
    s, sft = study.settings, study.arm(*SFT)
    above = " above chance" if sft is not None and options_of(sft) is not None else ""
    return f"SFT pass@{s.split_k}{above} < {s.split_threshold}"


def _single_answer(study: Study) -> str:
    """Why distinct *correct* answers cannot vary on this format's task, or ''."""
    if "num_answers" in study.frame and study.frame["num_answers"].notna().any():
        return "" if (study.frame["num_answers"] > 1).any() else (
            "the task has one right answer per problem (num_answers = 1)")
    if study.frame["distinct_correct_outcomes"].max() <= 1:
        return ("no problem had two distinct correct outcomes in any arm: the task looks "
                "single-answer (the claim needs the several-right-answers task)")
    return ""


def _correct_answers(study: Study, claim: str, objective: str) -> Claim:
    """Δ distinct correct outcomes of a diversity objective against correctness at the same
    `rl.scale_rewards`, with its pass@1 cost (and the other control) beside it."""
    return replace(_correct_answers_row(study, claim, objective), paper=paper_of(claim, objective))


def _correct_answers_row(study: Study, claim: str, objective: str) -> Claim:
    unscaled = objective in UNSCALED_OBJECTIVES
    control = UNSCALED_CONTROL if unscaled else CORRECTNESS
    measure = f"Δ distinct correct outcomes, {objective} − {control}"
    if not study.has("distinct_correct_outcomes"):
        return _not_run(claim, study.fmt, measure, "the per-problem tables lack "
                        "distinct_correct_outcomes: re-run the cells' evaluation",
                        "distinct_correct")
    if reason := _single_answer(study):
        return _not_run(claim, study.fmt, measure, reason, "distinct_correct")
    arm, correct = (objective, "rl"), column("distinct_correct_outcomes")
    if study.arm(*arm) is not None and study.arm(control, "rl") is None and unscaled:
        confounded = study.effect(claim, "", arm, (CORRECTNESS, "rl"), correct, +1,
                                  "distinct_correct")
        return _not_run(claim, study.fmt, measure,
                        f"arm not in the grid: {control} ({objective} runs at "
                        "rl.scale_rewards=none; against correctness at group the objective and "
                        f"the step size change together: that confounded Δ is "
                        f"{interval_text(confounded)})", "distinct_correct")
    row = study.effect(claim, measure, arm, (control, "rl"), correct, +1, "distinct_correct")
    cost = study.effect(claim, "", arm, (control, "rl"), pass_metric(1), +1, "pass@1")
    notes = [f"pass@1 cost {interval_text(cost)}"]
    if unscaled:
        other = study.effect(claim, "", arm, (CORRECTNESS, "rl"), correct, +1, "distinct_correct")
        notes.append(f"against correctness at scale_rewards=group {interval_text(other)}")
    distinct = study.effect(claim, "", arm, (control, "rl"), column("distinct_outcomes"), +1,
                            "distinct")
    notes.append(f"Δ distinct outcomes {interval_text(distinct)}")
    return _with_note(row, "; ".join(notes))


def _forking(study: Study) -> Claim:
    """Whether RL changes the share of high-entropy (forking) tokens: two-sided, since no paper
    claims a direction (the 80/20 paper's claim is about training on those tokens; named
    "forking" with a claimed rise before #52 item 4)."""
    rl = (CORRECTNESS, "rl")
    measure = ("Δ share of reasoning tokens above SFT's 80th-percentile reasoning entropy, "
               "RL − SFT (answer line excluded)")
    if not study.has("reasoning_forking_share"):
        return _not_run(FORKING, study.fmt, measure,
                        "no token entropies of the reasoning (reasoning_forking_share): needs "
                        "a trace task and per-token entropies aligned with the text", "forking")
    forks = study.effect(FORKING, measure, rl, SFT, column("reasoning_forking_share"), 0,
                         "forking")
    answers = study.effect(FORKING, "", rl, SFT, column("distinct_outcomes"), -1, "distinct")
    return _with_note(forks, f"Δ distinct outcomes {interval_text(answers)}")


def _search(study: Study) -> list[Claim]:
    """Evolutionary search on the graded score against independent sampling at equal budget,
    and the diversity-trained model's gain in it over correctness."""
    s = study.settings
    # The child prompts show earlier attempts with their scores, a format no stage trains on
    # (SFT and GRPO see the problem prompt alone): the rows say so (docs/design/algorithms.md).
    rows = [(("evolutionary − independent success at equal budget (correctness; child prompts "
             "out of distribution)"), None),
            ((f"Δ (evolutionary − independent success), {s.diversity_arm} − correctness, "
              "equal budget (child prompts out of distribution)"), (CORRECTNESS, "rl"))]
    arm = (CORRECTNESS, "rl")
    reason = ""
    if not (study.has("search_evolutionary") and study.has("search_independent")):
        reason = "no search results in the grid"
    elif not study.has("graded_score") or not (study.frame["graded_score"] > 0).any():
        reason = ("no signal to climb: one right answer and a binary score (no graded_score "
                  "strictly between 0 and 1)")
    if reason:
        return [_not_run("search", study.fmt, measure, reason, "search") for measure, _ in rows]
    return [study.effect("search", rows[0][0], arm, None, search_gain, +1, "search"),
            study.effect("search", rows[1][0], (s.diversity_arm, "rl"), rows[1][1], search_gain,
                         +1, "search")]


def _crossover(study: Study) -> Claim:
    """Smallest k at which SFT's pass@k catches up with RL's, with a bootstrap interval of k.

    "Catches up" is the transfer analysis's rule (`transfer.first_crossing`): SFT level with or
    ahead of RL, after RL led at a smaller k, or strictly ahead. Curves tied at every k never
    cross, and a tie at k = 1 is no lead for RL. Not in the Holm family: its estimate is a k,
    not a mean with a p-value.
    """
    rl_arm = (CORRECTNESS, "rl")
    rl, sft = study.arm(*rl_arm), study.arm(*SFT)
    measure = "k where SFT pass@k catches up with RL (correctness)"
    if rl is None or sft is None:
        return _not_run("crossover", study.fmt, measure,
                        f"arm not in the grid: {', '.join(study.missing([rl_arm, SFT]))}")
    n = int(min(rl["num_samples"].min(), sft["num_samples"].min()))
    options = options_of(sft)
    top = n if options is None else largest_k_above_chance(options, n)
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= top]
    stacked = np.stack([study.paired(rl_arm, SFT, pass_metric(k))[0] for k in ks],
                       axis=-1)  # (S, P, K) of RL - SFT
    s = study.settings
    # SFT - RL: transfer's base - trained, so the crossing rule is read the same way.
    boot = -hierarchical_bootstrap_means(stacked, s.num_resamples, s.seed)  # (B, K)
    point = -np.nanmean(stacked, axis=(0, 1))
    index = int(first_crossing(point[None, :])[0])
    first = first_crossing(boot)
    # A resample tied at k = 1 is neither "RL ahead at k = 1" nor "RL behind at k = 1": it
    # counts against both ends, as the lowest k for the lower bound and as "beyond" for the
    # upper, so identical curves give [1, beyond] and no verdict.
    tied = leader(boot[:, 0]) == 0
    alpha = (1 - s.confidence) / 2
    low_i = int(np.quantile(np.where(tied, 0, first), alpha, method="inverted_cdf"))
    high_i = int(np.quantile(np.where(tied, len(ks), first), 1 - alpha, method="inverted_cdf"))
    k_of = lambda i: float(ks[i]) if i < len(ks) else None
    # The literature's crossover: RL ahead at small k, behind at large k (Yue et al.: k in the
    # tens to hundreds). Reproduced when, in (1 - alpha) of resamples, RL is strictly ahead at
    # k = 1 and SFT catches up within the ks tried; refuted when SFT is strictly ahead already
    # at k = 1. RL strictly ahead at every k tried (in 1 - alpha) is no crossover *up to the
    # largest k tried*, which says nothing of larger k: inconclusive, and the wording says up
    # to which k (before #52 item 4 it read refuted). A tie at k = 1 is neither.
    top = ks[-1]
    if 1 <= low_i and high_i < len(ks):
        result, wording = REPRODUCED, f"reproduced (SFT catches up within k ≤ {top} examined)"
    elif high_i == 0:
        result, wording = REFUTED, f"refuted (SFT ahead already at k = 1; k ≤ {top} examined)"
    elif low_i >= len(ks):
        result, wording = INCONCLUSIVE, (f"no crossover up to k = {top} (RL ahead at every k "
                                         "examined)")
    else:
        result, wording = INCONCLUSIVE, f"inconclusive (k ≤ {top} examined)"
    tie = "; RL and SFT are level at k = 1" if leader(point[:1])[0] == 0 else ""
    return Claim("crossover", study.fmt, measure, k_of(index), k_of(low_i), k_of(high_i), result,
                 f"not in the Holm family (a k, not a mean): two-level bootstrap of the curves; "
                 f"ks tried: {ks} (n = {n} samples); 'beyond' means past k = {top}; k = 1 "
                 f"means RL is not ahead even at k = 1{tie}", paper=paper_of("crossover"),
                 wording=wording)


def _format_claim(frame: pd.DataFrame, settings: ClaimSettings) -> Claim:
    """mcq vs free-form: the fall of distinct reasoning paths from SFT to RL, per format.

    A measure both formats share and mcq's options do not cap: distinct reasoning paths (the
    text before the answer line), relative (1 - RL / SFT) per seed. Seed s's falls of the two
    formats are paired by seed (each format's seed s starts from its own SFT run), and the
    per-seed differences get the seed t interval: each format's problems are averaged within
    its own seed, so nothing is resampled (the two formats are not drawn with one seed).
    """
    measure = "Δ relative fall of distinct reasoning paths (1 − RL / SFT), mcq − free_form"
    if absent := [fmt for fmt in ("mcq", "free_form") if not (frame["format"] == fmt).any()]:
        return _not_run("format", "both", measure, f"format not in the grid: {', '.join(absent)}",
                        "format")
    falls = {}
    studies = {fmt: Study(frame, fmt, settings) for fmt in ("mcq", "free_form")}
    for fmt, study in studies.items():
        if missing := study.missing([(CORRECTNESS, "rl"), SFT]):
            return _not_run("format", "both", measure,
                            f"arm not in the grid for {fmt}: {', '.join(missing)}", "format")
    for fmt, study in studies.items():
        if not study.has("distinct_reasoning"):
            return _not_run("format", "both", measure,
                            f"no distinct_reasoning for {fmt}: the per-problem tables need "
                            "the sample texts of a trace task", "format")
        stacked, _ = study.aligned([(CORRECTNESS, "rl"), SFT], column("distinct_reasoning"))
        seeds = sorted(set(study.arm(*SFT)["seed"]) & set(study.arm(CORRECTNESS, "rl")["seed"]))
        rl_means, sft_means = seed_means(stacked[..., 0]), seed_means(stacked[..., 1])
        falls[fmt] = dict(zip(seeds, 1.0 - rl_means / sft_means))
    shared = sorted(set(falls["mcq"]) & set(falls["free_form"]))
    diff = np.array([[falls["mcq"][s] - falls["free_form"][s]] for s in shared])
    base = Claim("format", "both", measure, None, None, None, INCONCLUSIVE, "",
                 delta=DELTAS["format"].delta, sign=0, paper=paper_of("format"),
                 delta_name="format", objectives=(CORRECTNESS,))
    if len(shared) < 2:
        return replace(base, detail=f"inconclusive: {len(shared)} seed(s) in both formats")
    ci = seed_t_interval(diff, 0.95)
    mean_fall = {fmt: float(np.mean(list(v.values()))) for fmt, v in falls.items()}
    # Two-sided: the claim is that the exploration profiles differ, not which way.
    return replace(base, estimate=ci.estimate, low=ci.low, high=ci.high, verdict=MEASURED,
                   standard_error=ci.standard_error, num_seeds=ci.num_seeds, p_value=ci.p_value,
                   detail=f"fall mcq {mean_fall['mcq']:+.3f}, free_form "
                          f"{mean_fall['free_form']:+.3f}; seeds: {len(shared)}; two-sided: "
                          "reproduced when the formats' falls differ")


def _with_note(claim: Claim, note: str) -> Claim:
    return replace(claim, detail=f"{note}; {claim.detail}")


