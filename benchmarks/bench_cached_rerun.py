"""Benchmark: `breadth run` when every stage is cached (target <= 2 s), beside its import floor.

Run: .venv/bin/python benchmarks/bench_cached_rerun.py [--preset default] [--set key=value ...]
     [--pairs 3] [--profile FILE]

The stack is brought up and the pipeline run once first (not timed: it fills the cache, or
finds it filled). Then two arms alternate, each a fresh process as a user would start it:
  A  the raw engine: `benchmarks/bare_cached_flow.py`, a bare Prefect flow with as many cached
     tasks as the pipeline has stages, run in-process with the same settings against the same
     server: what Prefect itself costs (its import, ~1.2 s here, and its engine's API calls);
  B  `breadth run` with the same preset and overrides: every stage a cache hit.
Each prints min/median/max wall seconds, the ratio B / A per pair and the load average.
With --profile, one more cached run is made under cProfile and its top 30 entries by
cumulative time are written to FILE (what the remaining seconds are spent on).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from side_by_side import compare

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 2.0


def breadth_command(preset: str, overrides: list[str]) -> list[str]:
    sets = [arg for value in overrides for arg in ("--set", value)]
    return [str(Path(sys.executable).parent / "breadth"), "run", "--preset", preset, *sets]


def run(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}"
                         f"\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="default")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--profile", type=Path, help="write a cProfile summary of one cached run")
    args = parser.parse_args()

    from breadth_tasks.stage_keys import stage_keys

    from breadth.config import load_config
    from breadth.stack.local import LocalStack

    stack = LocalStack()
    stack.up()
    env = {**os.environ, **stack.settings.client_env()}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")])
    command = breadth_command(args.preset, args.overrides)
    run(command, env)  # fills the cache (or finds it filled): not timed
    tasks = len(stage_keys(load_config(args.preset, args.overrides)))
    bare = [sys.executable, str(REPO / "benchmarks" / "bare_cached_flow.py"), str(tasks)]
    result = compare((f"bare Prefect, {tasks} cached tasks", lambda: run(bare, env)),
                     ("cached breadth run", lambda: run(command, env)), pairs=args.pairs)
    print(f"preset {args.preset} {' '.join(args.overrides)}")
    print(result.report("cached re-run, seconds"))
    median = sorted(result.wall["cached breadth run"])[len(result.wall["cached breadth run"]) // 2]
    verdict = "met" if median <= TARGET_SECONDS else "MISSED"
    print(f"cached re-run median {median:.2f} s: target <= {TARGET_SECONDS} s {verdict}")
    if args.profile:
        profiled = [sys.executable, "-m", "cProfile", "-o", f"{args.profile}.prof", *command]
        run(profiled, env)
        import pstats

        with args.profile.open("w") as out:
            stats = pstats.Stats(f"{args.profile}.prof", stream=out)
            stats.sort_stats("cumulative").print_stats(30)
        print(f"profile of one cached run: {args.profile}")


if __name__ == "__main__":
    main()
