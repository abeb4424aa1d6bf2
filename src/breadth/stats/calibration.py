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

By default q ~ Beta(0.3, 2.96) (the old arithmetic task) and the seed sd is a bracket. A real
run can supply both instead (`pilot_variances`): q resampled from the pilot's per-problem SFT
pass rates, and the seed sd its per-seed Δ pass@1 spread less the problem noise inside each
seed's mean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from breadth.stats.bootstrap import hierarchical_bootstrap_ci, percentile_interval
from breadth.stats.seed_interval import seed_means, seed_t_interval

__all__ = ["METHODS", "PilotVariances", "Rate", "Scenario", "bootstrap_over_pooled_problems",
           "calibration_grid", "hierarchical_bootstrap", "pilot_variances", "read_pilot",
           "score_methods", "seed_bootstrap", "seed_t", "simulate_study"]

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
    shift = rng.normal(0.0, s.seed_sd, size=(s.num_seeds, 1)) if s.seed_sd > 0 else 0.0
    return (a - b) / s.num_samples + shift + s.effect


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
}


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
                     seed: int, resamples: int = 400,
                     template: Scenario | None = None) -> list[dict]:
    """One row per (S, seed sd, method): false positives (mu = 0), coverage and power (mu =
    effect), half-width; each scenario simulated with its own seed derived from `seed`.
    `template` gives the problems, samples and pass-rate distribution (default: Beta's)."""
    template = template or Scenario(1, 0.0)
    rows = []
    for i, num_seeds in enumerate(seeds):
        for j, sd in enumerate(seed_sds):
            base = seed + 1000 * i + 100 * j
            null = score_methods(replace(template, num_seeds=num_seeds, seed_sd=sd, effect=0.0),
                                 reps, base, resamples=resamples)
            planted = score_methods(replace(template, num_seeds=num_seeds, seed_sd=sd,
                                            effect=effect),
                                    reps, base + 50, resamples=resamples)
            for name in METHODS:
                rows.append({"seeds": num_seeds, "seed_sd": sd, "method": name,
                             "false_positives": null[name]["excludes_zero"],
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
