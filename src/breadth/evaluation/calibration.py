"""Calibration by simulation of the claims' interval methods (`scripts/calibrate_intervals.py`).

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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from breadth.evaluation.bootstrap import hierarchical_bootstrap_ci, percentile_interval
from breadth.evaluation.seed_interval import seed_means, seed_t_interval

__all__ = ["METHODS", "Rate", "Scenario", "bootstrap_over_pooled_problems", "calibration_grid",
           "hierarchical_bootstrap", "score_methods", "seed_bootstrap", "seed_t",
           "simulate_study"]  # fmt: skip

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


def simulate_study(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """One simulated (seeds x problems) matrix of paired per-problem differences."""
    s = scenario
    shape = (s.num_seeds, s.num_problems)
    q = rng.beta(s.beta_a, s.beta_b, size=shape)
    a = rng.binomial(s.num_samples, q)
    b = rng.binomial(s.num_samples, q)
    shift = rng.normal(0.0, s.seed_sd, size=(s.num_seeds, 1)) if s.seed_sd > 0 else 0.0
    return (a - b) / s.num_samples + shift + s.effect


def hierarchical_bootstrap(matrix: np.ndarray, resamples: int, confidence: float,
                           seed: int) -> Interval:  # fmt: skip
    """Today's grid-summary interval: seeds, then problems, widened by sqrt(S / (S - 1))."""
    ci = hierarchical_bootstrap_ci(matrix, resamples, seed, confidence)
    return ci.low, ci.high


def seed_t(matrix: np.ndarray, resamples: int, confidence: float, seed: int) -> Interval:
    """The claims' interval: t over per-seed means, S - 1 degrees of freedom."""
    ci = seed_t_interval(matrix, confidence)
    return ci.low, ci.high


def seed_bootstrap(matrix: np.ndarray, resamples: int, confidence: float,
                   seed: int) -> Interval:  # fmt: skip
    """Percentile bootstrap of the per-seed means (S of them, drawn with replacement)."""
    means = seed_means(matrix)
    draws = np.random.default_rng(seed).integers(0, means.size, size=(resamples, means.size))
    low, high = percentile_interval(means[draws].mean(axis=1), confidence)
    return float(low), float(high)


def bootstrap_over_pooled_problems(matrix: np.ndarray, resamples: int, confidence: float,
                                   seed: int) -> Interval:  # fmt: skip
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
                  confidence: float = 0.95) -> dict[str, dict[str, float | Rate]]:  # fmt: skip
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
                     seed: int, resamples: int = 400) -> list[dict]:  # fmt: skip
    """One row per (S, seed sd, method): false positives (mu = 0), coverage and power (mu =
    effect), half-width; each scenario simulated with its own seed derived from `seed`."""
    rows = []
    for i, num_seeds in enumerate(seeds):
        for j, sd in enumerate(seed_sds):
            base = seed + 1000 * i + 100 * j
            null = score_methods(Scenario(num_seeds, sd), reps, base, resamples=resamples)
            planted = score_methods(Scenario(num_seeds, sd, effect), reps, base + 50,
                                    resamples=resamples)  # fmt: skip
            for name in METHODS:
                rows.append({"seeds": num_seeds, "seed_sd": sd, "method": name,
                             "false_positives": null[name]["excludes_zero"],
                             "coverage": planted[name]["covers"],
                             "power": planted[name]["excludes_zero"],
                             "half_width": null[name]["half_width"]})  # fmt: skip
    return rows
