"""The study's claims: each literature claim, its measured effect with a CI, and a verdict.

Input is a *study frame*: one row per (format, objective, seed, model, problem_id), where
model is "sft" (the shared warm start of that format and seed) or "rl" (the cell's trained
policy), with the per-problem columns `num_samples`, `num_correct`, `distinct_outcomes`, and
where available `forking_token_share`, `num_options` (mcq) and `search_evolutionary` /
`search_independent` (1 when the method solved the problem within the search budget).

Every effect is a mean over seeds x problems of a paired per-problem difference, with a
two-level bootstrap interval (`hierarchical_bootstrap_ci`: seeds, then problems within each seed,
widened by sqrt(S / (S - 1)) for S seeds, the same interval as the grid summary's). pass@k of mcq cells is taken
above chance, `(p - chance) / (1 - chance)`, so a format comparison is not a comparison with
guessing. A verdict is *reproduced* when the interval excludes zero on the claimed side,
*refuted* when it excludes zero on the other side, and *inconclusive* otherwise, or when a
split holds fewer than `min_split` problems. A claim whose arm (or measurement: token
entropies, search) the grid lacks is *not run*: nothing was measured, which is no null result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from breadth.evaluation.bootstrap import (
    hierarchical_bootstrap_ci,
    hierarchical_bootstrap_means,
    percentile_interval,
)
from breadth.evaluation.metrics import chance_corrected_pass_at_k, pass_at_k
from breadth.evaluation.transfer import (
    DEFAULT_MIN_SPLIT,
    DEFAULT_SPLIT_K,
    DEFAULT_SPLIT_THRESHOLD,
    _options_of,
    first_crossing,
    leader,
    solved_by_base,
)

__all__ = [
    "NOT_RUN",
    "TRANSFER_SETTINGS",
    "VERDICTS",
    "Claim",
    "ClaimSettings",
    "claims_markdown",
    "effect_text",
    "evaluate_claims",
    "verdict",
]

REPRODUCED, REFUTED, INCONCLUSIVE = "reproduced", "refuted", "inconclusive"
# Not "inconclusive": that reads as "measured, no clear effect"; here nothing was measured.
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, REFUTED, INCONCLUSIVE, NOT_RUN)
NOT_RUN_MEANING = (f"*{NOT_RUN}*: the grid lacks an arm (or a measurement) the claim needs, so "
                   "nothing was measured: no evidence either way.")  # fmt: skip
CORRECTNESS = "correctness"
PerProblem = Callable[[pd.DataFrame], np.ndarray]


@dataclass(frozen=True)
class ClaimSettings:
    split_k: int = DEFAULT_SPLIT_K
    """Base budget of the transfer split (`breadth.evaluation.transfer.solved_by_base`)."""
    split_threshold: float = DEFAULT_SPLIT_THRESHOLD
    min_split: int = DEFAULT_MIN_SPLIT
    """A split with fewer problems (in any seed) makes its claim inconclusive."""
    diversity_arm: str = "correctness+batch"
    """The diversity-trained arm of the search claim."""
    num_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0

    @classmethod
    def of_evaluation(cls, evaluation: Mapping[str, Any]) -> ClaimSettings:
        """The settings whose transfer split is the cells' own: `evaluation.transfer_*` values
        by their name in the evaluation config (`EvaluationConfig.model_dump()`, or a run's
        logged params, which are strings); a name absent keeps its default.

        >>> s = ClaimSettings.of_evaluation({"transfer_split_k": "16", "transfer_min_split": 1})
        >>> s.split_k, s.split_threshold, s.min_split
        (16, 0.5, 1)
        """
        default = cls()
        values = {field: type(getattr(default, field))(evaluation[key])
                  for key, field in TRANSFER_SETTINGS.items() if evaluation.get(key) is not None}  # fmt: skip
        return replace(default, **values)


# The evaluation config's keys (`evaluation.<key>`) that the claims must share with the cells'
# own transfer analysis, and their ClaimSettings fields: the one place the two are matched.
TRANSFER_SETTINGS = {
    "transfer_split_k": "split_k",
    "transfer_split_threshold": "split_threshold",
    "transfer_min_split": "min_split",
}


@dataclass(frozen=True)
class Claim:
    """One row of the claims table."""

    claim: str
    format: str
    measure: str
    estimate: float | None
    low: float | None
    high: float | None
    verdict: str
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def verdict(low: float | None, high: float | None, expected_sign: int) -> str:
    """reproduced / refuted / inconclusive from an interval and the claimed sign (+1 or -1).

    >>> verdict(0.01, 0.05, +1), verdict(-0.05, -0.01, +1), verdict(-0.01, 0.02, -1)
    ('reproduced', 'refuted', 'inconclusive')
    """
    if low is None or high is None or not np.isfinite([low, high]).all():
        return INCONCLUSIVE
    if expected_sign * low > 0 and expected_sign * high > 0:
        return REPRODUCED
    if expected_sign * low < 0 and expected_sign * high < 0:
        return REFUTED
    return INCONCLUSIVE


def pass_metric(k: int | None) -> PerProblem:
    """Per-problem pass@k (k=None: the problem's n), above chance for rows with options."""

    def per_problem(rows: pd.DataFrame) -> np.ndarray:
        n, c = rows["num_samples"].to_numpy(), rows["num_correct"].to_numpy()
        kk = int(n.min()) if k is None else k
        value = pass_at_k(n, c, kk)
        if "num_options" in rows and rows["num_options"].fillna(0).gt(0).all():
            value = chance_corrected_pass_at_k(value, rows["num_options"].to_numpy(), kk)
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

    def arm(self, objective: str, model: str) -> pd.DataFrame | None:
        if model == "sft":  # the warm start is shared: read each seed's from any of its cells
            rows = self.frame[self.frame["model"] == "sft"]
            rows = rows.drop_duplicates(["seed", "problem_id"])
        else:
            rows = self.frame[(self.frame["model"] == "rl") & (self.frame["objective"] == objective)]
        return rows if len(rows) else None

    def missing(self, arms: list[tuple[str, str]]) -> list[str]:
        """The arms the grid did not run ("sft" for the warm start)."""
        return [objective or "sft" for objective, model in arms if self.arm(objective, model) is None]

    def aligned(self, arms: list[tuple[str, str]], metric: PerProblem,
                mask: Callable[[pd.DataFrame], np.ndarray] | None = None):  # fmt: skip
        """(seeds x problems x arms) of metric, NaN outside `mask`; or (None, reason).

        Problems are nested in seeds (each seed prepares its own): row s holds seed s's
        problems that every arm evaluated, NaN-padded to the longest row.
        """
        frames = [self.arm(*arm) for arm in arms]
        missing = [objective or "sft" for (objective, _), f in zip(arms, frames) if f is None]
        if missing:
            return None, f"arm not in the grid: {', '.join(missing)}"
        seeds = sorted(set.intersection(*(set(f["seed"]) for f in frames)))
        if not seeds:
            return None, "the arms share no seed"
        rows = []
        for seed in seeds:
            by_seed = [f[f["seed"] == seed] for f in frames]
            problems = sorted(set.intersection(*(set(f["problem_id"]) for f in by_seed)))
            values = np.stack([np.asarray(metric(_of_seed(f, seed, problems)), np.float64)
                               for f in by_seed], axis=-1)  # (P, A)  # fmt: skip
            if mask is not None:
                keep = mask(_of_seed(self.arm("", "sft"), seed, problems))
                values[~np.asarray(keep, bool)] = np.nan
            rows.append(values)
        width = max(len(r) for r in rows)
        matrix = np.stack([np.pad(r, ((0, width - len(r)), (0, 0)), constant_values=np.nan)
                           for r in rows])  # fmt: skip
        return matrix, f"seeds: {len(seeds)}, problems per seed: {[len(r) for r in rows]}"

    def paired(self, a: tuple[str, str], b: tuple[str, str], metric: PerProblem,
               mask: Callable[[pd.DataFrame], np.ndarray] | None = None):  # fmt: skip
        """(seeds x problems) of metric(a) - metric(b) on the problems both evaluated."""
        values, detail = self.aligned([a, b], metric, mask)
        return (None, detail) if values is None else (values[..., 0] - values[..., 1], detail)

    def effect(self, claim, measure, a, b, metric, sign, mask=None, min_split=False) -> Claim:
        if missing := self.missing([a, b]):
            return Claim(claim, self.fmt, measure, None, None, None, NOT_RUN,
                         f"arm not in the grid: {', '.join(missing)}")  # fmt: skip
        matrix, detail = self.paired(a, b, metric, mask)
        if matrix is None:
            return Claim(claim, self.fmt, measure, None, None, None, INCONCLUSIVE, detail)
        if min_split:
            sizes = (~np.isnan(matrix)).sum(axis=1)
            detail = f"seeds: {matrix.shape[0]}, split sizes per seed: {sizes.tolist()}"
            if sizes.min() < self.settings.min_split:
                # No estimate: a mean of a handful of problems, shown bare in the claims table,
                # reads as a finding (the grid summary and the run's report show none either).
                return Claim(claim, self.fmt, measure, None, None, None, INCONCLUSIVE,
                             f"inconclusive (n = {int(sizes.min())} < {self.settings.min_split}); "
                             + detail)  # fmt: skip
        if not np.isfinite(matrix).any():
            return Claim(claim, self.fmt, measure, None, None, None, INCONCLUSIVE,
                         f"no finite values ({detail})")  # fmt: skip
        s = self.settings
        ci = hierarchical_bootstrap_ci(matrix, s.num_resamples, s.seed, s.confidence)
        return Claim(claim, self.fmt, measure, ci.estimate, ci.low, ci.high,
                     verdict(ci.low, ci.high, sign), detail)  # fmt: skip


def _of_seed(rows: pd.DataFrame, seed, problems) -> pd.DataFrame:
    return rows[rows["seed"] == seed].set_index("problem_id").loc[problems]


def evaluate_claims(frame: pd.DataFrame, settings: ClaimSettings | None = None) -> list[Claim]:
    """Every named claim, per format; a claim whose arms the frame lacks is *not run*."""
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
    return claims


def _at_chance(study: Study) -> str:
    """Why the format's claims cannot be read (its SFT start is not above chance), or ''.

    With options, a model that guesses samples every option and "solves" everything at large
    k; its diversity and pass@k then measure the guessing, not the policy.
    """
    sft = study.arm("", "sft")
    if sft is None or "num_options" not in sft or not sft["num_options"].notna().all():
        return ""
    values, _ = study.aligned([("", "sft")], pass_metric(1))
    s = study.settings
    ci = hierarchical_bootstrap_ci(values[..., 0], s.num_resamples, s.seed, s.confidence)
    if ci.low > 0:
        return ""
    return (f"the SFT start is not above chance: pass@1 above chance "
            f"{ci.estimate:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]")  # fmt: skip


def _guessing(claim: Claim, reason: str) -> Claim:
    if not reason or claim.verdict == NOT_RUN:  # nothing measured: nothing to discount
        return claim
    return Claim(**{**claim.to_dict(), "verdict": INCONCLUSIVE,
                    "detail": f"inconclusive: {reason}; {claim.detail}"})  # fmt: skip


def _format_claims(study: Study) -> list[Claim]:
    rl, sft = (CORRECTNESS, "rl"), ("", "sft")
    p1, pn = pass_metric(1), pass_metric(None)
    s = study.settings

    def unsolved(base_rows: pd.DataFrame) -> np.ndarray:
        return ~solved_by_base(base_rows["num_samples"], base_rows["num_correct"], s.split_k,
                               s.split_threshold, _options_of(base_rows))  # fmt: skip

    claims = [
        study.effect("sharpening", "Δ pass@1, RL − SFT (correctness)", rl, sft, p1, +1),
        study.effect("sharpening", "Δ pass@n, RL − SFT (correctness)", rl, sft, pn, -1),
        _crossover(study),
        study.effect("transfer", f"Δ distinct outcomes, RL − SFT, base-unsolved "
                     f"({_split_rule(study)})", rl, sft,
                     column("distinct_outcomes"), -1, mask=unsolved, min_split=True),
        study.effect("historical", "Δ pass@1, ucb − correctness", ("correctness+ucb", "rl"),
                     rl, p1, +1),
        study.effect("batch", "Δ pass@n, batch − correctness", ("correctness+batch", "rl"),
                     rl, pn, +1),
    ]  # fmt: skip
    for arm in ("passk", "vector"):
        kept = study.effect("pass@k objective", f"Δ pass@n, {arm} − correctness", (arm, "rl"),
                            rl, pn, +1)  # fmt: skip
        cost = study.effect("pass@k objective", f"Δ pass@1, {arm} − correctness", (arm, "rl"),
                            rl, p1, +1)  # fmt: skip
        claims.append(_with_note(kept, f"pass@1 cost {_interval(cost)}"))
    darling = study.effect("darling", "Δ distinct outcomes, darling − correctness",
                           ("darling", "rl"), rl, column("distinct_outcomes"), +1)
    quality = study.effect("darling", "Δ pass@1", ("darling", "rl"), rl, p1, +1)
    claims.append(_with_note(darling, f"Δ pass@1 {_interval(quality)}"))
    if "forking_token_share" in study.frame and study.frame["forking_token_share"].notna().any():
        forks = study.effect("forking", "Δ share of tokens above the SFT 80th-percentile "
                             "entropy, RL − SFT", rl, sft, column("forking_token_share"), +1)
        answers = study.effect("forking", "", rl, sft, column("distinct_outcomes"), -1)
        claims.append(_with_note(forks, f"Δ distinct outcomes {_interval(answers)}"))
    else:
        claims.append(Claim("forking", study.fmt, "token entropy at forks", None, None, None,
                            NOT_RUN, "no per-token entropies in the rollouts"))  # fmt: skip
    if "search_evolutionary" in study.frame and study.frame["search_evolutionary"].notna().any():
        claims.append(study.effect(
            "search", f"Δ (evolutionary − independent success), {s.diversity_arm} − "
            "correctness, equal budget", (s.diversity_arm, "rl"), rl, search_gain, +1))
    else:
        claims.append(Claim("search", study.fmt, "evolutionary search gain", None, None, None,
                            NOT_RUN, "no search results in the grid"))  # fmt: skip
    return claims


def _split_rule(study: Study) -> str:
    """The transfer split's rule as `unsolved` applies it: above chance with options."""
    s, sft = study.settings, study.arm("", "sft")
    above = " above chance" if sft is not None and _options_of(sft) is not None else ""
    return f"SFT pass@{s.split_k}{above} < {s.split_threshold}"


def _crossover(study: Study) -> Claim:
    """Smallest k at which SFT's pass@k catches up with RL's, with a bootstrap interval of k.

    "Catches up" is the transfer analysis's rule (`transfer.first_crossing`): SFT level with or
    ahead of RL, after RL led at a smaller k, or strictly ahead. Curves tied at every k never
    cross, and a tie at k = 1 is no lead for RL.
    """
    rl_arm, sft_arm = (CORRECTNESS, "rl"), ("", "sft")
    rl, sft = study.arm(*rl_arm), study.arm(*sft_arm)
    if rl is None or sft is None:
        return Claim("crossover", study.fmt, "k where SFT catches up with RL", None, None, None,
                     NOT_RUN, f"arm not in the grid: {', '.join(study.missing([rl_arm, sft_arm]))}")  # fmt: skip
    n = int(min(rl["num_samples"].min(), sft["num_samples"].min()))
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= n]
    stacked = np.stack([study.paired((CORRECTNESS, "rl"), ("", "sft"), pass_metric(k))[0]
                        for k in ks], axis=-1)  # (S, P, K) of RL - SFT  # fmt: skip
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
    # The literature's crossover: RL ahead at small k, behind at large k. Reproduced when, in
    # (1 - alpha) of resamples, RL is strictly ahead at k = 1 and SFT catches up within the
    # ks tried; refuted when SFT is strictly ahead already at k = 1, or RL strictly ahead at
    # k = 1 and at every k (in 1 - alpha); a tie at k = 1 is neither.
    if 1 <= low_i and high_i < len(ks):
        result = REPRODUCED
    elif high_i == 0 or low_i >= len(ks):
        result = REFUTED
    else:
        result = INCONCLUSIVE
    tie = "; RL and SFT are level at k = 1" if leader(point[:1])[0] == 0 else ""
    return Claim("crossover", study.fmt, "k where SFT pass@k catches up with RL (correctness)",
                 k_of(index), k_of(low_i), k_of(high_i), result,
                 f"ks tried: {ks}; 'beyond' means past k = {ks[-1]}; k = 1 means RL is not "
                 f"ahead even at k = 1{tie}")  # fmt: skip


def _format_claim(frame: pd.DataFrame, settings: ClaimSettings) -> Claim:
    """mcq vs free-form: how much RL narrows answers, relative to SFT, in each format.

    Relative (RL / SFT - 1) because mcq caps distinct answers at the number of options.
    """
    measure = "relative Δ distinct outcomes (RL / SFT − 1), mcq − free_form"
    if absent := [fmt for fmt in ("mcq", "free_form") if not (frame["format"] == fmt).any()]:
        return Claim("format", "both", measure, None, None, None, NOT_RUN,
                     f"format not in the grid: {', '.join(absent)}")  # fmt: skip
    narrowing = {}
    for fmt in ("mcq", "free_form"):
        study = Study(frame, fmt, settings)
        if missing := study.missing([(CORRECTNESS, "rl"), ("", "sft")]):
            return Claim("format", "both", measure, None, None, None, NOT_RUN,
                         f"arm not in the grid for {fmt}: {', '.join(missing)}")  # fmt: skip
        # (S, P, 2): RL's distinct outcomes and SFT's, paired per problem.
        stacked = study.aligned([(CORRECTNESS, "rl"), ("", "sft")], column("distinct_outcomes"))[0]
        means = hierarchical_bootstrap_means(stacked, settings.num_resamples, settings.seed)
        narrowing[fmt] = (means[:, 0] / means[:, 1] - 1, stacked)
    point = {fmt: np.nanmean(m[..., 0]) / np.nanmean(m[..., 1]) - 1
             for fmt, (_, m) in narrowing.items()}  # fmt: skip
    # The formats' problems are resampled independently (their rollouts are separate).
    diff = narrowing["mcq"][0] - narrowing["free_form"][0]
    low, high = percentile_interval(diff[np.isfinite(diff)], settings.confidence)
    # Two-sided: the claim is that the exploration profiles differ, not which way.
    result = REPRODUCED if low > 0 or high < 0 else INCONCLUSIVE
    return Claim("format", "both", measure, float(point["mcq"] - point["free_form"]),
                 float(low), float(high), result,
                 f"mcq {point['mcq']:+.3f}, free_form {point['free_form']:+.3f}; two-sided: "
                 "reproduced when the formats' narrowing differs")  # fmt: skip


def _interval(claim: Claim) -> str:
    if claim.low is None or claim.high is None or claim.estimate is None:
        return "n/a"
    return f"{claim.estimate:+.3f} [{claim.low:+.3f}, {claim.high:+.3f}]"


def _k(value: float | None) -> str:
    return "beyond" if value is None else f"{value:g}"


def _with_note(claim: Claim, note: str) -> Claim:
    return Claim(**{**claim.to_dict(), "detail": f"{note}; {claim.detail}"})


def effect_text(c: Claim) -> str:
    """A claim's effect with its interval, as the claims table shows it.

    >>> effect_text(Claim("batch", "mcq", "m", 0.1, 0.02, 0.2, "reproduced", ""))
    '+0.100 [+0.020, +0.200]'
    >>> effect_text(Claim("crossover", "mcq", "m", 4.0, 2.0, None, "inconclusive", ""))
    'k = 4 [2, beyond]'
    """
    if c.claim == "crossover":
        return " ".join(["none" if c.estimate is None else f"k = {c.estimate:g}",
                         f"[{_k(c.low)}, {_k(c.high)}]"])  # fmt: skip
    if c.estimate is None:
        return "n/a"
    return _interval(c) if c.low is not None else f"{c.estimate:+.3f}"


def claims_markdown(claims: list[Claim], header: str = "") -> str:
    """The claims table: one row per claim and format, interval and verdict."""
    lines = [header, ""] if header else []
    lines += ["| claim | format | measure | effect [95% CI] | verdict |",
              "|---|---|---|---|---|"]  # fmt: skip
    for c in claims:
        lines.append(f"| **{c.claim}** | {c.format} | {c.measure} | {effect_text(c)} | "
                     f"{c.verdict} |")  # fmt: skip
    if any(c.verdict == NOT_RUN for c in claims):
        lines += ["", NOT_RUN_MEANING]
    lines += ["", "Details:", ""] + [f"- {c.claim} ({c.format}): {c.detail}" for c in claims]
    return "\n".join(lines) + "\n"
