"""Benchmark: evaluation of 10,000 problems x 16 samples with text (target: <= 0.3 s).

Run: .venv/bin/python benchmarks/bench_evaluation.py [--problems P] [--samples N] [--words W]
     [--entropy] [--pairs 3] [--against main]

Each part side by side (`side_by_side.compare`): a warm-up, then A B A B for --pairs rounds,
min/median/max of each arm and of the per-pair ratio B / A, wall and CPU time, and the load:
  1. the per-problem table: the per-problem loop evaluation used before (kept as the tests'
     reference; our own earlier code, not a raw engine) against the vectorised
     `per_problem_table`;
  2. the whole `evaluate_rollouts` (table with the text diversity metrics, pass@k, maj@k,
     best-of-k, 500 bootstrap resamples of every per-problem metric), side by side with a
     plain pandas evaluation a user would write (`plain_pandas_evaluation`): groupby per
     problem for n, correct count and distinct outcomes, pass@k by the Codex paper's product
     per problem and k, and 500 bootstrap resamples of their means with percentile intervals.
     That is part of B's work, not all of it: A has no maj@k, best-of-k or text metrics. So
     the ratio B / A says what the whole evaluation costs over the headline numbers done
     plainly; the two must agree on those (pass@k and distinct outcomes, estimates and
     interval ends, printed as the largest difference). The target <= 0.3 s (median wall of
     B) is printed after it.
  3. with --against REF: `evaluate_rollouts` of git ref REF (its src/ exported to a temporary
     folder) against the working tree's, interleaved, after checking that both return the
     same result, every value exactly equal.
Texts are W words drawn from a 2,000-word vocabulary (a skewed draw, so n-grams repeat).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from side_by_side import compare

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' reference loop

from breadth.evaluation.summary import evaluate_rollouts, per_problem_table
from tests.unit.evaluation.loop_reference import per_problem_loop

TARGET_SECONDS = 0.3
REPO = Path(__file__).resolve().parents[1]


def evaluate_rollouts_of(ref: str, folder: str):
    """`evaluate_rollouts` as git ref `ref` has it, beside this tree's: `src/` of the ref is
    exported into `folder` and imported with the `breadth` modules swapped out meanwhile, so
    its functions keep their own module globals."""
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=REPO, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    ours = {n: m for n, m in sys.modules.items() if n == "breadth" or n.startswith("breadth.")}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, f"{folder}/src")
    try:
        return importlib.import_module("breadth.evaluation.summary").evaluate_rollouts
    finally:
        sys.path.remove(f"{folder}/src")
        for name in [n for n in sys.modules if n == "breadth" or n.startswith("breadth.")]:
            del sys.modules[name]
        sys.modules.update(ours)


def check_same(reference, result) -> None:
    """Every value of the two results equal (NaN where NaN), per-problem table included."""
    if reference.to_dict(include_per_problem=True) != result.to_dict(include_per_problem=True):
        raise SystemExit("the two evaluate_rollouts results differ")
    pd.testing.assert_frame_equal(reference.per_problem, result.per_problem, check_exact=True)


def plain_pandas_evaluation(frame: pd.DataFrame, ks: list[int], num_bootstrap: int = 500,
                            seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """{metric: (estimate, low, high)} for pass@k at each k and distinct outcomes, by pandas
    groupby, the Codex product per problem and a resampling loop (seeded like ours)."""
    groups = frame.groupby("problem_id")
    n = groups.size().to_numpy()
    c = groups["correct"].sum().to_numpy()
    columns = {"distinct_outcomes": groups["outcome"].nunique().to_numpy(dtype=float)}
    for k in ks:
        columns[f"pass@{k}"] = np.array([
            1.0 if nn - cc < k else 1.0 - np.prod(1.0 - k / np.arange(nn - cc + 1, nn + 1))
            for nn, cc in zip(n.tolist(), c.tolist())
        ])
    values = np.column_stack(list(columns.values()))
    draws = np.random.default_rng(seed).integers(0, len(values), size=(num_bootstrap, len(values)))
    means = np.array([values[drawn].mean(axis=0) for drawn in draws])
    low, high = np.quantile(means, [0.025, 0.975], axis=0)
    return {name: (float(values[:, j].mean()), float(low[j]), float(high[j]))
            for j, name in enumerate(columns)}


def largest_difference(plain: dict[str, tuple[float, float, float]], result) -> float:
    """The largest difference between the plain evaluation's figures and ours."""
    ours = {f"pass@{p.k}": (p.estimate, p.low, p.high) for p in result.pass_at_k}
    interval = result.diversity["distinct_outcomes"]
    ours["distinct_outcomes"] = (interval.estimate, interval.low, interval.high)
    return max(abs(a - b) for name, figures in plain.items() for a, b in zip(figures, ours[name]))


def make_rollouts(problems: int, samples: int, words: int, entropy: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{i}" for i in range(2000)], dtype=object)
    drawn = (rng.random((problems * samples, words)) ** 3 * len(vocabulary)).astype(int)
    texts = [" ".join(row) for row in vocabulary[drawn]]
    outcome = (rng.random(problems * samples) ** 2 * 6).astype(int).astype(str)
    frame = pd.DataFrame({
        "problem_id": np.repeat(np.arange(problems), samples),
        "sample_index": np.tile(np.arange(samples), problems),
        "outcome": outcome, "correct": outcome == "0",
        "score": rng.random(problems * samples), "text": texts,
    })
    if entropy:
        frame["entropy"] = list(rng.random((problems * samples, words)) * 2)
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--words", type=int, default=8, help="words per sampled text")
    parser.add_argument("--entropy", action="store_true", help="add per-token entropies")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--against", metavar="REF", help="also time evaluate_rollouts of git REF")
    args = parser.parse_args()

    frame = make_rollouts(args.problems, args.samples, args.words, args.entropy)
    threshold = 1.6 if args.entropy else None
    print(f"{args.problems:,} problems x {args.samples} samples, {args.words} words per text"
          f"{', with token entropies' if args.entropy else ''}")
    table = compare(
        ("per-problem loop (before)", lambda: per_problem_loop(frame, entropy_threshold=threshold)),
        ("vectorised table", lambda: per_problem_table(frame, entropy_threshold=threshold)),
        pairs=args.pairs,
    )
    print(table.report("1. per-problem table", clocks=("wall", "cpu")))

    ks = evaluate_rollouts(frame).ks
    whole = compare(
        ("plain pandas (part of the work)", lambda: plain_pandas_evaluation(frame, ks)),
        ("evaluate_rollouts", lambda: evaluate_rollouts(frame)),
        pairs=args.pairs,
    )
    print(whole.report("2. evaluate_rollouts beside a plain pandas evaluation of pass@k and "
                       "distinct outcomes only", clocks=("wall", "cpu")))
    difference = largest_difference(plain_pandas_evaluation(frame, ks), evaluate_rollouts(frame))
    print(f"  agreement on pass@k and distinct outcomes (estimates, 95% interval ends): largest "
          f"difference {difference:.2e}")
    median = statistics.median(whole.wall["evaluate_rollouts"])
    verdict = "met" if median <= TARGET_SECONDS else "MISSED"
    print(f"  target <= {TARGET_SECONDS} s (median wall of evaluate_rollouts, "
          f"{median:.3f} s): {verdict}")
    if args.against:
        with tempfile.TemporaryDirectory() as folder:
            before_fn = evaluate_rollouts_of(args.against, folder)
            check_same(before_fn(frame), evaluate_rollouts(frame))
            print(f"3. identical results from {args.against} and the working tree")
            table = compare(
                (f"evaluate_rollouts {args.against}", lambda: before_fn(frame)),
                ("evaluate_rollouts here", lambda: evaluate_rollouts(frame)),
                pairs=args.pairs,
            )
            print(
                table.report(
                    f"3. evaluate_rollouts, {args.against} vs here", clocks=("wall", "cpu")
                )
            )


if __name__ == "__main__":
    main()
