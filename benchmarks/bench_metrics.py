"""Benchmark: evaluation metrics over 10,000 problems x 1,024 samples (target: < 2 s, 2 cores).

Run: .venv/bin/python benchmarks/bench_metrics.py [--problems P] [--samples N] [--repeats R]

Outcomes are integer codes per sample (what `outcome_codes` / pandas.factorize produce from
the rollouts' `outcome` column); the time to factorize string outcomes is printed apart, since
it depends on how the rollouts are stored. Each metric runs once untimed (warm-up), then
`--repeats` (>= 3) times; min, median and max are printed, the total sums the medians, and the
load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from side_by_side import load_line

from breadth.evaluation.diversity import outcome_diversity
from breadth.evaluation.metrics import (
    DEFAULT_MAJ_RESAMPLES,
    best_of_k_curve,
    default_ks,
    maj_at_k,
    maj_at_k_estimates,
    outcome_codes,
    pass_at_k_curve,
)

TARGET_SECONDS = 2.0


def make_rollouts(num_problems: int, num_samples: int, seed: int = 0):
    """Synthetic (P, n) outcome codes, correctness and scores with a realistic spread:
    each problem has its own number of plausible answers, skewed towards a few."""
    rng = np.random.default_rng(seed)
    num_answers = rng.integers(1, 64, size=num_problems)
    # Skewed answer distribution: squaring a uniform draw favours small codes.
    u = rng.random((num_problems, num_samples))
    codes = (u * u * num_answers[:, None]).astype(np.int64)
    codes[rng.random((num_problems, num_samples)) < 0.05] = -1  # nothing extracted
    gold = rng.integers(0, 4, size=num_problems)  # gold answer code; >= num_answers: unsolvable
    correct = codes == gold[:, None]
    scores = np.where(correct, 1.0, rng.random((num_problems, num_samples)) * 0.9)
    return codes, correct, scores


def timed(fn, repeats: int):
    """(seconds of each of `repeats` runs after one untimed warm-up run, result)."""
    result = fn()
    times = []
    for _ in range(max(3, repeats)):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1_024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--maj-k", type=int, default=16)
    args = parser.parse_args()

    codes, correct, scores = make_rollouts(args.problems, args.samples)
    n = np.full(args.problems, args.samples)
    c = correct.sum(axis=1)
    ks = default_ks(args.samples)
    print(
        f"{args.problems:,} problems x {args.samples:,} samples "
        f"({codes.size / 1e6:.1f}M samples), ks={ks}, cpus={os.cpu_count()}"
    )

    steps = {
        f"pass@k curve ({len(ks)} ks)": lambda: pass_at_k_curve(n, c, ks),
        f"best-of-k curve ({len(ks)} ks)": lambda: best_of_k_curve(scores, ks),
        f"maj@{args.maj_k}": lambda: maj_at_k_estimates(codes, correct, [args.maj_k]),
        f"maj@{args.samples} (full vote)": lambda: maj_at_k(codes, correct, args.samples),
        "distinct outcomes + entropy": lambda: outcome_diversity(codes),
    }
    total = 0.0
    results = {}
    print(f"  before: {load_line()}")
    print(f"  {'metric':<36} {'min':>8}   {'median':>8}   {'max':>8}")
    for name, fn in steps.items():
        times, results[name] = timed(fn, args.repeats)
        total += statistics.median(times)
        print(f"  {name:<36} {min(times):8.3f} s {statistics.median(times):8.3f} s "
              f"{max(times):8.3f} s")  # fmt: skip
    verdict = "met" if total < TARGET_SECONDS else "MISSED"
    print(
        f"  {'total of medians':<36} {total:8.3f} s   (target < {TARGET_SECONDS:.1f} s: {verdict})"
    )
    print(f"  after:  {load_line()}")

    # Factorizing string outcomes, on a 1/10 slice (building 10M Python strings dominates).
    rows = max(1, args.problems // 10)
    strings = np.asarray([str(v) for v in codes[:rows].ravel()], dtype=object).reshape(rows, -1)
    times, _ = timed(lambda: outcome_codes(strings), 3)
    seconds = statistics.median(times)
    print(
        f"  (outcome_codes on {strings.size / 1e6:.1f}M string outcomes: {seconds:.3f} s, "
        f"~{seconds * args.problems / rows:.2f} s at full size; not in the total)"
    )
    # Which way maj@k went at this size: exact, or the mean of seeded draws past the work limit.
    _, resampled = results[f"maj@{args.maj_k}"]
    how = (f"the mean of {DEFAULT_MAJ_RESAMPLES} seeded draws per problem (its exact expectation "
           "passes MAJ_EXACT_WORK_LIMIT at this size)" if resampled else "exact")  # fmt: skip
    print(f"  maj@{args.maj_k} was {how}")
    curve = results[f"pass@k curve ({len(ks)} ks)"]
    print("  mean pass@k:", {k: round(float(v.mean()), 4) for k, v in curve.items()})


if __name__ == "__main__":
    main()
