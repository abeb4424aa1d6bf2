"""Benchmark: prepare N synthetic problems in each format; rows/second, peak memory, and two
side-by-side ratios against bare pyarrow.

    .venv/bin/python benchmarks/bench_prepare.py [--num 100000] [--tasks arithmetic,countdown]
        [--formats mcq,free_form] [--pairs 3] [--side-num 10000]

Each (task, format) case runs in a fresh process, so its peak resident memory (ru_maxrss) is
its own. The case first times prepare_dataset end to end (generate, render, parquet, hash,
manifest), then times the phases separately on the same problems (one run each; the peak
memory is read here, before the side-by-side arms run). Then, through `side_by_side.compare`
(a warm-up, then A B A B for --pairs rounds, min/median/max of each arm and of the per-pair
ratio B / A, the load average):
  write:       A = `pq.write_table(pa.Table.from_pylist(rows))`, a bare pyarrow write of the
               N train rows, B = our `write_rows` of the same rows (fixed schema, column by
               column, plus the file's sha256);
  end to end:  A = a bare pipeline of --side-num problems: the same generator and renderer,
               each split written by the bare pyarrow write (no duplicate or bad-row checks,
               no content hash, no manifest), B = prepare_dataset of the same problems. The
               rows both write are checked equal first. --side-num (default 10,000) keeps
               this under a minute per case: prepare_dataset took ~4.7 s for 20,000 mcq
               problems here (so ~25 s at 100,000), and the comparison runs each arm
               pairs + 1 times.
Ratios below 1 mean ours is faster than the bare arm.
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

from side_by_side import compare, load_line

EVAL_SHARE = 0.1
# Difficulty 3 has the largest problem spaces (about 150k train problems for either task).
DIFFICULTY = 3


def _peak_rss_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def bare_write(rows: list[dict], path: Path) -> None:
    """What a user would write without `write_rows`: pyarrow infers the schema from the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def run_case(task: str, fmt: str, num: int, pairs: int, side_num: int) -> dict:
    import pyarrow.parquet as pq  # imported up front so its load time is not timed

    from breadth.data.formats import render
    from breadth.data.generators import generate_arithmetic, generate_countdown
    from breadth.data.prepare import content_hash, prepare_dataset, write_rows

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
        peak = _peak_rss_mib()  # before the side-by-side arms, whose rows are held at once

        folder = Path(out)
        write = compare(("bare pyarrow write", lambda: bare_write(rows, folder / "bare.parquet")),
                        ("write_rows", lambda: write_rows(rows, folder / "ours.parquet")),
                        pairs=pairs)
        side_eval = int(side_num * EVAL_SHARE)
        sizes = {"train": side_num - side_eval, "eval": side_eval}

        def bare_pipeline() -> None:
            for split, count in sizes.items():
                problems = generate(count, seed=0, difficulty=DIFFICULTY, split=split)
                bare_write([render(record, fmt) for record in problems],
                           folder / f"bare-{split}.parquet")

        def prepare() -> None:
            prepare_dataset(f"synthetic:{task}", fmt=fmt, out_dir=folder / "prepared", seed=0,
                            num_train=sizes["train"], num_eval=sizes["eval"],
                            difficulty=DIFFICULTY)

        bare_pipeline()
        prepare()
        same = all(pq.read_table(folder / f"bare-{split}.parquet").to_pylist()
                   == pq.read_table(folder / "prepared" / f"{split}.parquet").to_pylist()
                   for split in sizes)
        end_to_end = compare(("bare generate+render+pyarrow", bare_pipeline),
                             ("prepare_dataset", prepare), pairs=pairs)
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
        "peak_mib": peak,
        "write": write.report(f"{task} {fmt}, write {num_train:,} train rows, seconds"),
        "end_to_end": end_to_end.report(
            f"{task} {fmt}, end to end, {side_num:,} problems, seconds (same rows written: "
            f"{'yes' if same else 'NO'})"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num", type=int, default=100_000, help="problems per case")
    parser.add_argument("--tasks", default="arithmetic,countdown")
    parser.add_argument("--formats", default="mcq,free_form")
    parser.add_argument("--pairs", type=int, default=3, help="side-by-side pairs per comparison")
    parser.add_argument("--side-num", type=int, default=10_000,
                        help="problems per case in the end-to-end side by side")
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
    reports = []
    for task in args.tasks.split(","):
        for fmt in args.formats.split(","):
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                stats = pool.submit(
                    run_case, task, fmt, args.num, args.pairs, args.side_num
                ).result()
            print(
                f"{task:<11}{fmt:<10}{stats['rows']:>8,}{stats['seconds']:>9.2f}"
                f"{stats['rows_per_s']:>9,.0f} | {stats['generate_rows_per_s']:>8,.0f}"
                f"{stats['render_rows_per_s']:>10,.0f}{stats['write_rows_per_s']:>9,.0f}"
                f"{stats['hash_rows_per_s']:>9,.0f} | {stats['parquet_mib']:>5.1f}MiB"
                f"{stats['peak_mib']:>7.0f}MiB{stats['baseline_mib']:>6.0f}MiB",
                flush=True,
            )
            reports += [stats["write"], stats["end_to_end"]]
    print("\nside by side: ratio B / A below 1 means ours is faster than the bare arm")
    print("\n".join(reports))


if __name__ == "__main__":
    main()
    print(load_line())
