"""Calibration by simulation of the claims' interval methods (`scripts/results/calibration.py`).

A simulated study has the nightly grid's structure: S training seeds, P eval problems nested
in each seed, and per problem a paired difference of pass rates read from n samples of each
model. Each problem's true pass rate q is drawn from Beta(a, b); the two models' correct counts
are Binomial(n, q) each (the same q: no per-problem effect), so the problem-level noise is
that of real pass rates, many exactly 0. A seed-level shift u_s ~ N(0, seed_sd^2), shared by
every problem of seed s, stands for run-to-run training noise, and a planted effect mu is
added to every difference:

    d[s, i] = (Binomial(n, q_i) - Binomial(n, q_i')) / n + u_s + mu

The estimand is mu (the differences' expectation, over seeds and problems). A method is
scored on many such studies by its false-positive rate (mu = 0: the share of intervals that
exclude 0) and its coverage (mu != 0: the share that contain mu).

The seed shift need not be normal (`Scenario.seed_effects`, `SEED_EFFECTS`): heavy-tailed
(Student's t with 3 df), skewed (a centred exponential, skewness 2; a centred lognormal,
skewness 6.2), or a *transition*: with probability `jump_rate` a seed's SFT crosses a
transition the others do not, and its shift is `jump` seed sds larger (normal run-to-run noise
beside it). Every kind is centred (mean 0, so mu stays the estimand) and, but the transition,
scaled to sd `seed_sd`; a centred transition puts the seeds without one at -jump_rate x jump.

By default q ~ Beta(0.3, 2.96) (the old arithmetic task) and the seed sd is a bracket. A real
run can supply both instead (`pilot_variances`): q resampled from the pilot's per-problem SFT
pass rates, and the seed sd its per-seed Δ pass@1 spread less the problem noise inside each
seed's mean.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from breadth.stats.bootstrap import hierarchical_bootstrap_ci, percentile_interval
from breadth.stats.seed_interval import seed_means, seed_t_interval

__all__ = [
    "METHODS",
    "SEED_EFFECTS",
    "CommittedStructure",
    "PilotVariances",
    "Rate",
    "Scenario",
    "bootstrap_over_pooled_problems",
    "calibration_grid",
    "committed_variances",
    "fit_beta_to_pass_at_k",
    "hierarchical_bootstrap",
    "pilot_variances",
    "read_pilot",
    "score_methods",
    "seed_bootstrap",
    "seed_bootstrap_t",
    "seed_shifts",
    "seed_sign_flip",
    "seed_t",
    "simulate_study",
]

Interval = tuple[float, float]
Method = Callable[[np.ndarray, int, float, int], Interval]
"""(seeds x problems matrix, bootstrap resamples, confidence, seed) -> (low, high)."""


@dataclass(frozen=True)
class Scenario:
    num_seeds: int
    seed_sd: float
    effect: float = 0.0
    num_problems: int = 128
    num_samples: int = 32
    beta_a: float = 0.3
    beta_b: float = 2.96
    """Beta(0.3, 2.96): mean pass rate 0.092, the nightly's mid SFT pass@1 (power.json)."""
    pass_rates: tuple[float, ...] = ()
    """Per-problem pass rates to resample q from (a real run's); empty: Beta(beta_a, beta_b)."""
    seed_effects: str = "normal"
    """The seed shift's distribution, a key of `SEED_EFFECTS`."""
    jump: float = 0.0
    """A transition's shift, in seed sds (`seed_effects="transition"`)."""
    jump_rate: float = 1 / 15
    """The chance that a seed crosses the transition: one seed in the nightly's 15."""

    def __post_init__(self):
        if self.seed_effects not in SEED_EFFECTS:
            raise ValueError(f"seed_effects={self.seed_effects!r}: choose one of "
                             f"{', '.join(SEED_EFFECTS)}")

    @property
    def label(self) -> str:
        """The seed effects as the calibration page names them."""
        if self.seed_effects == "transition":
            return f"transition ({self.jump:g} sd, p = 1/{round(1 / self.jump_rate)})"
        return SEED_EFFECTS[self.seed_effects]


SEED_EFFECTS = {
    "normal": "normal",
    "t3": "heavy-tailed (t, 3 df)",
    "skewed": "skewed (exponential, skewness 2)",
    "lognormal": "strongly skewed (lognormal, skewness 6.2)",
    "transition": "transition",
}
"""The seed shift's distributions (`Scenario.seed_effects`): key -> the page's name."""


def seed_shifts(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """(seeds, 1) seed-level shifts of mean 0 (see the module docstring).

    >>> rng = np.random.default_rng(0)
    >>> kinds = ("normal", "t3", "skewed", "lognormal")
    >>> [round(float(seed_shifts(Scenario(200_000, 2.0, seed_effects=k), rng).std()), 1)
    ...  for k in kinds]
    [2.0, 2.0, 2.0, 2.0]
    >>> u = seed_shifts(Scenario(15, 1.0, seed_effects="transition", jump=10.0), rng)
    >>> u.shape, bool(np.all(u < 10))
    ((15, 1), True)
    """
    s, shape = scenario, (scenario.num_seeds, 1)
    if s.seed_sd <= 0:
        return np.zeros(shape)
    if s.seed_effects == "t3":  # variance 3: scaled to 1
        return s.seed_sd * rng.standard_t(3, size=shape) / math.sqrt(3.0)
    if s.seed_effects == "skewed":  # Exp(1): mean 1, sd 1
        return s.seed_sd * (rng.exponential(1.0, size=shape) - 1.0)
    if s.seed_effects == "lognormal":  # lognormal(0, 1): mean e^0.5, variance (e - 1) e
        mean, sd = math.exp(0.5), math.sqrt((math.e - 1.0) * math.e)
        return s.seed_sd * (rng.lognormal(0.0, 1.0, size=shape) - mean) / sd
    # A transition: each seed crosses with chance jump_rate, and the shift is centred.
    crossed = rng.random(shape) < s.jump_rate if s.seed_effects == "transition" else None
    shifts = rng.normal(0.0, s.seed_sd, size=shape)
    if crossed is not None:
        shifts = shifts + s.jump * s.seed_sd * (crossed - s.jump_rate)
    return shifts


def simulate_study(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """One simulated (seeds x problems) matrix of paired per-problem differences."""
    s = scenario
    shape = (s.num_seeds, s.num_problems)
    if s.pass_rates:
        q = rng.choice(np.asarray(s.pass_rates, dtype=np.float64), size=shape)
    else:
        q = rng.beta(s.beta_a, s.beta_b, size=shape)
    a = rng.binomial(s.num_samples, q)
    b = rng.binomial(s.num_samples, q)
    return (a - b) / s.num_samples + seed_shifts(s, rng) + s.effect


def hierarchical_bootstrap(matrix: np.ndarray, resamples: int, confidence: float,
                           seed: int) -> Interval:
    """Today's grid-summary interval: seeds, then problems, widened by sqrt(S / (S - 1))."""
    ci = hierarchical_bootstrap_ci(matrix, resamples, seed, confidence)
    return ci.low, ci.high


def seed_t(matrix: np.ndarray, resamples: int, confidence: float, seed: int) -> Interval:
    """The claims' interval: t over per-seed means, S - 1 degrees of freedom."""
    ci = seed_t_interval(matrix, confidence)
    return ci.low, ci.high


def seed_bootstrap(matrix: np.ndarray, resamples: int, confidence: float,
                   seed: int) -> Interval:
    """Percentile bootstrap of the per-seed means (S of them, drawn with replacement)."""
    means = seed_means(matrix)
    draws = np.random.default_rng(seed).integers(0, means.size, size=(resamples, means.size))
    low, high = percentile_interval(means[draws].mean(axis=1), confidence)
    return float(low), float(high)


def seed_bootstrap_t(matrix: np.ndarray, resamples: int, confidence: float,
                     seed: int) -> Interval:
    """Bootstrap-t of the per-seed means: the t statistic's own resampled quantiles in place
    of Student's (resamples with no spread are dropped)."""
    means = seed_means(matrix)
    n = means.size
    estimate, se = means.mean(), means.std(ddof=1) / math.sqrt(n)
    draws = means[np.random.default_rng(seed).integers(0, n, size=(resamples, n))]
    spread = draws.std(axis=1, ddof=1) / math.sqrt(n)
    keep = spread > 0
    if not keep.any() or se == 0:
        return math.nan, math.nan
    t = (draws.mean(axis=1)[keep] - estimate) / spread[keep]
    low_q, high_q = np.quantile(t, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(estimate - high_q * se), float(estimate - low_q * se)


def seed_sign_flip(matrix: np.ndarray, resamples: int, confidence: float,
                   seed: int) -> Interval:
    """The sign-flip randomisation test of the per-seed means' centre, inverted (exact, over
    all 2^S sign patterns; valid where the seed means are symmetric about it).

    Inverting the test of the sum gives Hartigan's (1969) interval: the 2^S - 1 means of the
    non-empty subsets of seeds cut the line into 2^S pieces, each holding the centre with
    chance 2^-S, so the k-th smallest and k-th largest subset means, k = floor(2^S α / 2),
    bound a (1 - 2k / 2^S) interval. Infinite where k = 0 (at 5 seeds or fewer, 95% is out of
    reach: 2 / 2^S > 0.05).

    >>> seed_sign_flip(np.array([[1.0], [2.0], [3.0], [4.0]]), 0, 0.95, 0)
    (-inf, inf)
    >>> low, high = seed_sign_flip(np.arange(1.0, 9.0)[:, None], 0, 0.95, 0)
    >>> round(low, 4), round(high, 4)
    (2.3333, 6.6667)
    """
    means = seed_means(matrix)
    n = means.size
    if n > 20:
        raise ValueError(f"the exact sign-flip interval enumerates 2^S subsets: S = {n} > 20")
    k = math.floor(2 ** n * (1 - confidence) / 2)
    if k == 0:
        return -math.inf, math.inf
    weights = _subset_weights(n)
    subset_means = np.partition(weights @ means, (k - 1, weights.shape[0] - k))
    return float(subset_means[k - 1]), float(subset_means[-k])


@functools.cache
def _subset_weights(n: int) -> np.ndarray:
    """(2^n - 1, n): row j averages the seeds of the j-th non-empty subset (bits of j)."""
    subsets = ((np.arange(1, 2 ** n)[:, None] >> np.arange(n)) & 1).astype(np.float64)
    return subsets / subsets.sum(axis=1, keepdims=True)


def bootstrap_over_pooled_problems(matrix: np.ndarray, resamples: int, confidence: float,
                                   seed: int) -> Interval:
    """A wrong interval, kept as the simulation's negative control: every problem of every
    seed resampled as if independent, so run-to-run noise is not counted at all."""
    values = matrix[np.isfinite(matrix)]
    draws = np.random.default_rng(seed).integers(0, values.size, size=(resamples, values.size))
    low, high = percentile_interval(values[draws].mean(axis=1), confidence)
    return float(low), float(high)


METHODS: dict[str, Method] = {
    "hierarchical bootstrap, widened (before)": hierarchical_bootstrap,
    "t over per-seed means (kept)": seed_t,
    "bootstrap over per-seed means": seed_bootstrap,
    "sign-flip randomisation over per-seed means": seed_sign_flip,
    "bootstrap-t over per-seed means": seed_bootstrap_t,
}
ROBUSTNESS_METHODS = ("t over per-seed means (kept)",
                      "sign-flip randomisation over per-seed means",
                      "bootstrap-t over per-seed means")
"""The methods scored on the non-normal seed effects: the kept interval and the two that
might hold where it does not (the bootstraps of before fail already at normal ones)."""


@dataclass(frozen=True)
class Rate:
    """A Monte-Carlo share with its standard error."""

    value: float
    error: float

    @classmethod
    def of(cls, hits: np.ndarray) -> Rate:
        p = float(np.mean(hits))
        return cls(p, math.sqrt(p * (1.0 - p) / len(hits)))

    def __str__(self) -> str:
        return f"{100 * self.value:.1f}% ± {100 * self.error:.1f}"


def score_methods(scenario: Scenario, reps: int, seed: int,
                  methods: dict[str, Method] | None = None, resamples: int = 400,
                  confidence: float = 0.95) -> dict[str, dict[str, float | Rate]]:
    """{method: {"excludes_zero", "covers", "half_width"}} over `reps` simulated studies.

    Every method reads the same studies (common random numbers). Under mu = 0,
    "excludes_zero" is the false-positive rate; under mu != 0 it is the power, and "covers"
    the coverage of mu.
    """
    methods = METHODS if methods is None else methods
    rng = np.random.default_rng(seed)
    bounds = {name: np.empty((reps, 2)) for name in methods}
    for rep in range(reps):
        matrix = simulate_study(scenario, rng)
        for name, method in methods.items():
            bounds[name][rep] = method(matrix, resamples, confidence, seed + rep)
    out: dict[str, dict[str, float | Rate]] = {}
    for name, b in bounds.items():
        low, high = b[:, 0], b[:, 1]
        out[name] = {
            "excludes_zero": Rate.of((low > 0) | (high < 0)),
            "covers": Rate.of((low <= scenario.effect) & (scenario.effect <= high)),
            "half_width": float(np.mean((high - low) / 2.0)),
        }
    return out


def calibration_grid(seeds: Sequence[int], seed_sds: Sequence[float], effect: float, reps: int,
                     seed: int, resamples: int = 400, template: Scenario | None = None,
                     robustness: Sequence[Scenario] = (),
                     robustness_sds: Sequence[float] = ()) -> list[dict]:
    """One row per (S, seed effects, seed sd, method): false positives (mu = 0), coverage and
    power (mu = effect), half-width; each scenario simulated with its own seed derived from
    `seed`. `template` gives the problems, samples and pass-rate distribution (default:
    Beta's). Normal seed effects are scored at every sd of `seed_sds` with every method; each
    of `robustness` (its `seed_effects`, `jump`, `jump_rate` read) at `robustness_sds` with
    `ROBUSTNESS_METHODS`."""
    template = template or Scenario(1, 0.0)
    cases = [(template, sd, METHODS) for sd in seed_sds]
    kept = {name: METHODS[name] for name in ROBUSTNESS_METHODS}
    cases += [(replace(template, seed_effects=kind.seed_effects, jump=kind.jump,
                       jump_rate=kind.jump_rate), sd, kept)
              for kind in robustness for sd in robustness_sds]
    rows = []
    for i, num_seeds in enumerate(seeds):
        for j, (scenario, sd, methods) in enumerate(cases):
            base = seed + 1000 * i + 100 * j
            scenario = replace(scenario, num_seeds=num_seeds, seed_sd=sd)
            null = score_methods(replace(scenario, effect=0.0), reps, base, methods, resamples)
            planted = score_methods(replace(scenario, effect=effect), reps, base + 50, methods,
                                    resamples)
            for name in methods:
                rows.append({"seeds": num_seeds, "seed_effects": scenario.label, "seed_sd": sd,
                             "method": name, "false_positives": null[name]["excludes_zero"],
                             "coverage": planted[name]["covers"],
                             "power": planted[name]["excludes_zero"],
                             "half_width": null[name]["half_width"]})
    return rows


@dataclass(frozen=True)
class PilotVariances:
    """A real run's problem-level and seed-level variance, for `Scenario` (`pilot_variances`)."""

    pass_rates: tuple[float, ...]
    """Every seed's per-problem SFT pass rates (correct / samples), pooled."""
    num_problems: int
    """Problems per seed (the fewest of any seed)."""
    num_samples: int
    """Samples per problem and model (the fewest of any problem)."""
    seed_deltas: tuple[float, ...]
    """Per-seed mean Δ pass@1, RL - SFT, paired by problem."""
    within_seed_se: float
    """Root mean square over seeds of the standard error of a seed's mean Δ pass@1 (its
    problem noise)."""

    @property
    def delta_sd(self) -> float:
        """The spread of the per-seed Δ pass@1 (ddof 1): problem noise and run-to-run noise."""
        return float(np.std(self.seed_deltas, ddof=1))

    @property
    def seed_sd(self) -> float:
        """The run-to-run part, sqrt(delta_sd² - within_seed_se²) (0 when the problem noise
        alone explains the spread): the simulation adds the problem noise itself."""
        return math.sqrt(max(0.0, self.delta_sd ** 2 - self.within_seed_se ** 2))


def pilot_variances(seeds: Sequence[tuple[pd.DataFrame, pd.DataFrame]]) -> PilotVariances:
    """The variances of (SFT rollouts, RL rollouts) per seed, each with `problem_id` and
    `correct` per sample; RL is paired with SFT on SFT's problems.

    The problem-level distribution is the empirical one: the simulation resamples the pass
    rates themselves rather than a Beta fitted to their moments, because the chain task's
    rates are not Beta-shaped (atoms at 0 and 1 and a mass near the middle) and the tails of
    the per-problem differences are what a t interval's calibration depends on. An observed
    rate is c / n, not the true q: it is slightly over-dispersed (its atoms at 0 and 1 hold a
    few problems with q near, not at, 0 or 1), which, if anything, understates problem noise.
    """
    if len(seeds) < 2:
        raise ValueError(f"pilot_variances needs at least 2 seeds (got {len(seeds)}): one seed "
                         "has no run-to-run spread")
    rates, deltas, variances, problems, samples = [], [], [], [], []
    for sft, rl in seeds:
        sft_rate = sft.groupby("problem_id")["correct"].mean()
        rl_rate = rl.groupby("problem_id")["correct"].mean().reindex(sft_rate.index)
        if rl_rate.isna().any():
            raise ValueError(f"the RL rollouts lack {int(rl_rate.isna().sum())} of SFT's "
                             "problems: the pilot's RL and SFT must be evaluated on the same "
                             "problems")
        diff = (rl_rate - sft_rate).to_numpy(np.float64)
        rates.append(sft_rate.to_numpy(np.float64))
        deltas.append(float(diff.mean()))
        variances.append(float(diff.var(ddof=1) / diff.size))
        problems.append(diff.size)
        samples.append(int(min(sft.groupby("problem_id").size().min(),
                               rl.groupby("problem_id").size().min())))
    return PilotVariances(tuple(float(r) for r in np.concatenate(rates)), min(problems),
                          min(samples), tuple(deltas), math.sqrt(float(np.mean(variances))))


def read_pilot(folder: Path) -> PilotVariances:
    """`pilot_variances` of `scripts/results/pilot.py`'s work folder: one `<hash>-s<seed>`
    folder per seed, each with its `sft.parquet` and `rl.parquet` rollouts (read only)."""
    folder = Path(folder)
    by_seed: dict[int, list[Path]] = {}
    for root in sorted(folder.glob("*-s*")):
        match = re.fullmatch(r".+-s(\d+)", root.name)
        if match and (root / "sft.parquet").exists() and (root / "rl.parquet").exists():
            by_seed.setdefault(int(match.group(1)), []).append(root)
    if twice := {s: [r.name for r in roots] for s, roots in by_seed.items() if len(roots) > 1}:
        raise ValueError(f"{folder}: seeds with rollouts from more than one config {twice}; "
                         "point --from-pilot at a folder with one run per seed")
    if len(by_seed) < 2:
        raise FileNotFoundError(f"{folder}: fewer than 2 seed folders (<hash>-s<seed>) with "
                                "sft.parquet and rl.parquet; run scripts/results/pilot.py first")
    columns = ["problem_id", "correct"]
    return pilot_variances([(pd.read_parquet(roots[0] / "sft.parquet", columns=columns),
                             pd.read_parquet(roots[0] / "rl.parquet", columns=columns))
                            for _, roots in sorted(by_seed.items())])


def grid_variances(frame: pd.DataFrame, fmt: str = "free_form",
                   objective: str = "correctness") -> PilotVariances:
    """`pilot_variances` of a grid's study frame (`breadth.study.frame.load_study_frame`):
    per seed, the SFT start and the RL model of `objective` in `fmt`, from their per-problem
    counts (`num_correct` of `num_samples`), so the simulation takes the nightly's own cells'
    structure. Seeds without that RL cell are left out."""
    cells = frame[frame["format"] == fmt]
    seeds = []
    for _, rows in cells.groupby("seed"):
        rl = rows[(rows["model"] == "rl") & (rows["objective"] == objective)]
        if len(rl):
            sft = rows[rows["model"] == "sft"].drop_duplicates("problem_id")
            seeds.append((_samples_of_counts(sft), _samples_of_counts(rl)))
    if not seeds:
        raise ValueError(f"the grid has no {fmt} cell of {objective}: nothing to calibrate on")
    return pilot_variances(seeds)


def fit_beta_to_pass_at_k(ks: Sequence[int], pass_at_k: Sequence[float]) -> tuple[float, float]:
    """(a, b) of the Beta distribution of per-problem pass rates whose mean pass@k curve,
    1 - B(a, b + k) / B(a, b), fits `pass_at_k` at `ks` best (least squares, on log a, log b).

    The curve is what a committed table keeps of an arm's per-problem rates: pass@1 is their
    mean, and pass@k at large k the share of problems with a rate above ~1/k.

    >>> a, b = fit_beta_to_pass_at_k([1, 2, 4, 8, 16, 32], _beta_pass_at_k(0.4, 0.3, [1, 2, 4, 8, 16, 32]))
    >>> round(a, 3), round(b, 3)
    (0.4, 0.3)
    """
    ks = np.asarray(ks, dtype=np.float64)
    target = np.asarray(pass_at_k, dtype=np.float64)
    if ks.size < 2 or ks.size != target.size:
        raise ValueError(f"a Beta fit needs pass@k at 2 or more k (got k={ks.tolist()}, "
                         f"{target.size} values)")
    # Imported on use, as special in _beta_pass_at_k: scipy's optimize and special cost about
    # 1 CPU s to import, paid by each test worker's collection.
    from scipy import optimize

    fit = optimize.least_squares(
        lambda log_ab: _beta_pass_at_k(*np.exp(log_ab), ks) - target, x0=[0.0, 0.0])
    a, b = np.exp(fit.x)
    return float(a), float(b)


def _beta_pass_at_k(a: float, b: float, ks) -> np.ndarray:
    """Mean pass@k over problems whose pass rates are Beta(a, b): 1 - E[(1 - q)^k]."""
    from scipy import special

    ks = np.asarray(ks, dtype=np.float64)
    return 1.0 - np.exp(special.betaln(a, b + ks) - special.betaln(a, b))


@dataclass(frozen=True)
class CommittedStructure:
    """The simulation's structure from a grid's committed tables (`committed_variances`)."""

    beta_a: float
    beta_b: float
    """Per-problem SFT pass rates ~ Beta(beta_a, beta_b), fitted to SFT's pass@k curve."""
    ks: tuple[int, ...]
    pass_at_k: tuple[float, ...]
    """The committed SFT curve the Beta was fitted to."""
    num_samples: int
    """Samples per problem: the curve's largest k."""
    num_problems: int
    """Problems per seed (the fewest of any seed), from the Δ pass@1 row's detail."""
    num_seeds: int
    delta_sd: float
    """The Δ pass@1 row's per-seed spread: its standard error x sqrt(seeds)."""

    @property
    def fitted(self) -> np.ndarray:
        return _beta_pass_at_k(self.beta_a, self.beta_b, self.ks)

    @property
    def within_seed_se(self) -> float:
        """The problem noise of a seed's mean in the simulation: sqrt(2 E[q (1 - q)] / (n P)),
        E[q (1 - q)] = a b / ((a + b)(a + b + 1)) under Beta(a, b)."""
        a, b = self.beta_a, self.beta_b
        return math.sqrt(2 * a * b / ((a + b) * (a + b + 1)) / self.num_samples
                         / self.num_problems)

    @property
    def seed_sd(self) -> float:
        """The run-to-run part, sqrt(delta_sd² - within_seed_se²) (0 when problem noise alone
        explains the spread)."""
        return math.sqrt(max(0.0, self.delta_sd ** 2 - self.within_seed_se ** 2))

    def scenario(self) -> Scenario:
        return Scenario(1, 0.0, num_problems=self.num_problems, num_samples=self.num_samples,
                        beta_a=self.beta_a, beta_b=self.beta_b)


def committed_variances(pass_at_k_csv: Path, claims_json: Path, fmt: str = "free_form",
                        arm: str = "sft") -> CommittedStructure:
    """The structure of a grid whose MLflow stack is gone, from what it committed: SFT's pass@k
    curve (`pass_at_k_by_objective.csv`: format, arm, k, estimate) for the per-problem rates,
    and the sharpening row's Δ pass@1 (`claims.json`: standard error, seeds, problems per seed)
    for the per-seed spread."""
    curve = pd.read_csv(pass_at_k_csv)
    if missing := {"format", "arm", "k", "estimate"} - set(curve.columns):
        raise ValueError(f"{pass_at_k_csv}: lacks column(s) {sorted(missing)}; give a grid's "
                         "pass_at_k_by_objective.csv")
    curve = curve[(curve["format"] == fmt) & (curve["arm"] == arm)].sort_values("k")
    if len(curve) < 2:
        raise ValueError(f"{pass_at_k_csv}: fewer than 2 k of format {fmt!r}, arm {arm!r}")
    rows = json.loads(Path(claims_json).read_text())
    row = next((r for r in rows if r.get("claim") == "sharpening" and r.get("format") == fmt
                and str(r.get("measure", "")).startswith("Δ pass@1")), None)
    if row is None or row.get("standard_error") is None or (row.get("num_seeds") or 0) < 2:
        raise ValueError(f"{claims_json}: no measured sharpening Δ pass@1 row of {fmt} (with a "
                         "standard error and 2+ seeds) to take the seed spread from")
    problems = re.search(r"problems per seed: \[([\d, ]+)\]", row.get("detail", ""))
    if problems is None:
        raise ValueError(f"{claims_json}: the Δ pass@1 row's detail does not give its problems "
                         "per seed ('problems per seed: [...]')")
    ks = tuple(int(k) for k in curve["k"])
    values = tuple(float(v) for v in curve["estimate"])
    a, b = fit_beta_to_pass_at_k(ks, values)
    return CommittedStructure(a, b, ks, values, max(ks),
                              min(int(n) for n in problems.group(1).split(",")),
                              int(row["num_seeds"]),
                              float(row["standard_error"]) * math.sqrt(row["num_seeds"]))


def _samples_of_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per-sample rows (`problem_id`, `correct`) with each problem's counts: c correct of n.

    >>> _samples_of_counts(pd.DataFrame({"problem_id": ["a", "b"], "num_samples": [2, 1],
    ...                                  "num_correct": [1, 0]}))["correct"].tolist()
    [1.0, 0.0, 0.0]
    """
    counts = rows[["num_samples", "num_correct"]].astype(int).to_numpy()
    return pd.DataFrame({
        "problem_id": np.repeat(rows["problem_id"].to_numpy(), counts[:, 0]),
        "correct": np.concatenate([np.r_[np.ones(c), np.zeros(n - c)] for n, c in counts]),
    })
