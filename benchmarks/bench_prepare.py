"""Benchmark: prepare N synthetic problems in each format; print rows/second and peak memory.

    .venv/bin/python benchmarks/bench_prepare.py [--num 100000] [--tasks arithmetic,countdown]

Each (task, format) case runs in a fresh process, so its peak resident memory (ru_maxrss) is
its own. The case first times prepare_dataset end to end (generate, render, parquet, hash,
manifest), then times the phases separately on the same problems.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from side_by_side import load_line

EVAL_SHARE = 0.1
# Difficulty 3 has the largest problem spaces (about 150k train problems for either task).
DIFFICULTY = 3


def _peak_rss_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def run_case(task: str, fmt: str, num: int) -> dict[str, float]:
    import pyarrow.parquet  # noqa: F401 - imported up front so its load time is not timed

    from breadth.data.formats import render
    from breadth.data.prepare import content_hash, prepare_dataset, write_rows
    from breadth.data.synthetic import generate_arithmetic, generate_countdown

    generate = {"arithmetic": generate_arithmetic, "countdown": generate_countdown}[task]
    num_eval = int(num * EVAL_SHARE)
    num_train = num - num_eval
    baseline = _peak_rss_mib()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        manifest = prepare_dataset(
            f"synthetic:{task}",
            fmt=fmt,
            out_dir=out,
            seed=0,
            num_train=num_train,
            num_eval=num_eval,
            difficulty=DIFFICULTY,
        )
        total = time.perf_counter() - start
        size = sum(f["bytes"] for f in manifest.files.values())

        start = time.perf_counter()
        records = generate(num_train, seed=0, difficulty=DIFFICULTY, split="train")
        generated = time.perf_counter() - start
        start = time.perf_counter()
        rows = [render(record, fmt) for record in records]
        rendered = time.perf_counter() - start
        start = time.perf_counter()
        write_rows(rows, Path(out) / "again.parquet")
        written = time.perf_counter() - start
        start = time.perf_counter()
        content_hash(rows, [])
        hashed = time.perf_counter() - start
    rows_total = manifest.counts["train"] + manifest.counts["eval"]
    return {
        "rows": rows_total,
        "seconds": total,
        "rows_per_s": rows_total / total,
        "generate_rows_per_s": num_train / generated,
        "render_rows_per_s": num_train / rendered,
        "write_rows_per_s": num_train / written,
        "hash_rows_per_s": num_train / hashed,
        "parquet_mib": size / 2**20,
        "baseline_mib": baseline,
        "peak_mib": _peak_rss_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num", type=int, default=100_000, help="problems per case")
    parser.add_argument("--tasks", default="arithmetic,countdown")
    parser.add_argument("--formats", default="mcq,free_form")
    args = parser.parse_args()

    print(load_line())
    print(
        f"prepare_dataset, {args.num:,} synthetic problems per case "
        f"(train {args.num - int(args.num * EVAL_SHARE):,} / eval {int(args.num * EVAL_SHARE):,}, "
        f"difficulty {DIFFICULTY})"
    )
    header = (
        f"{'task':<11}{'format':<10}{'rows':>8}{'seconds':>9}{'rows/s':>9} | "
        f"{'gen/s':>8}{'render/s':>10}{'write/s':>9}{'hash/s':>9} | "
        f"{'parquet':>8}{'peak RSS':>10}{'(start)':>9}"
    )
    print(header)
    print("-" * len(header))
    context = multiprocessing.get_context("spawn")
    for task in args.tasks.split(","):
        for fmt in args.formats.split(","):
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                stats = pool.submit(run_case, task, fmt, args.num).result()
            print(
                f"{task:<11}{fmt:<10}{stats['rows']:>8,}{stats['seconds']:>9.2f}"
                f"{stats['rows_per_s']:>9,.0f} | {stats['generate_rows_per_s']:>8,.0f}"
                f"{stats['render_rows_per_s']:>10,.0f}{stats['write_rows_per_s']:>9,.0f}"
                f"{stats['hash_rows_per_s']:>9,.0f} | {stats['parquet_mib']:>5.1f}MiB"
                f"{stats['peak_mib']:>7.0f}MiB{stats['baseline_mib']:>6.0f}MiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
    print(load_line())
