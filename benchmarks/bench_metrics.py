"""Benchmark: evaluation metrics over 10,000 problems x 1,024 samples (target: < 2 s, 2 cores).

Run: .venv/bin/python benchmarks/bench_metrics.py [--problems P] [--samples N] [--repeats R]

Outcomes are integer codes per sample (what `outcome_codes` / pandas.factorize produce from
the rollouts' `outcome` column); the time to factorize string outcomes is printed apart, since
it depends on how the rollouts are stored. The reported time of each metric is the best of
`--repeats` runs; the total is the sum of those.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from breadth.evaluation.diversity import outcome_diversity
from breadth.evaluation.metrics import (
    best_of_k_curve,
    default_ks,
    maj_at_k,
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
    """(best seconds, first-run seconds, result) over `repeats` runs."""
    times = []
    result = None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), times[0], result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1_024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--maj-k", type=int, default=16)
    parser.add_argument("--maj-resamples", type=int, default=32)
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
        f"maj@{args.maj_k} ({args.maj_resamples} resamples)": lambda: maj_at_k(
            codes, correct, args.maj_k, args.maj_resamples, seed=0
        ),
        f"maj@{args.samples} (full vote)": lambda: maj_at_k(codes, correct, args.samples),
        "distinct outcomes + entropy": lambda: outcome_diversity(codes),
    }
    total = total_first = 0.0
    results = {}
    print(f"  {'metric':<36} {'best':>8}   {'first run':>9}")
    for name, fn in steps.items():
        seconds, first, results[name] = timed(fn, args.repeats)
        total += seconds
        total_first += first
        print(f"  {name:<36} {seconds:8.3f} s {first:9.3f} s")
    verdict = "met" if max(total, total_first) < TARGET_SECONDS else "MISSED"
    print(
        f"  {'total':<36} {total:8.3f} s {total_first:9.3f} s   (target < {TARGET_SECONDS:.1f} s: {verdict})"
    )

    # Factorizing string outcomes, on a 1/10 slice (building 10M Python strings dominates).
    rows = max(1, args.problems // 10)
    strings = np.asarray([str(v) for v in codes[:rows].ravel()], dtype=object).reshape(rows, -1)
    seconds, _, _ = timed(lambda: outcome_codes(strings), 1)
    print(
        f"  (outcome_codes on {strings.size / 1e6:.1f}M string outcomes: {seconds:.3f} s, "
        f"~{seconds * args.problems / rows:.2f} s at full size; not in the total)"
    )
    curve = results[f"pass@k curve ({len(ks)} ks)"]
    print("  mean pass@k:", {k: round(float(v.mean()), 4) for k, v in curve.items()})


if __name__ == "__main__":
    main()
