"""Benchmark: SFT of the default model with torch's OpenMP threads spinning or waiting passively,
on an idle machine and with one core taken by another process.

Run: .venv/bin/python benchmarks/bench_torch_threads.py [--pairs 3] [--epochs 1]

Each arm is a fresh process (OpenMP reads OMP_WAIT_POLICY when torch loads it) that trains
the default preset's SFT for --epochs and prints its seconds (data preparation and the base
model are made once, and each process first trains briefly to pay its imports; all untimed). Arms: ACTIVE (OpenMP's spinning wait, what torch does unless
told otherwise) and PASSIVE (what `import breadth` sets by default); each pair runs both, first
on the machine as it is, then beside a busy-looping process started here. Ratios PASSIVE /
ACTIVE per pair, min/median/max and the load come from benchmarks/side_by_side.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from side_by_side import compare

REPO = Path(__file__).resolve().parents[1]

ARM = """
import sys, time
from pathlib import Path
from breadth import stages
from breadth.config import load_config
config = load_config("default", [f"sft.epochs={sys.argv[2]}"])
root = Path(sys.argv[1])
short = config.model_copy(update={"sft": config.sft.model_copy(update={"epochs": 0.05})})
stages.sft_stage(short, root / "data", root / "base", root / f"warm-{time.time_ns()}")  # imports
started = time.perf_counter()
stages.sft_stage(config, root / "data", root / "base", root / f"sft-{time.time_ns()}")
print(time.perf_counter() - started)
"""


def sft_seconds(policy: str, root: Path, epochs: float) -> float:
    env = {**os.environ, "OMP_WAIT_POLICY": policy, "TRANSFORMERS_VERBOSITY": "error",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", ARM, str(root), str(epochs)], env=env,
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--epochs", type=float, default=1.0)
    args = parser.parse_args()

    from breadth import stages
    from breadth.config import load_config

    config = load_config("default")
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as scratch:
        root = Path(scratch)
        stages.prepare_stage(config, root / "data")
        stages.init_model_stage(config, root / "base")
        for busy in (False, True):
            burner = (subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      if busy else None)
            try:
                result = compare(
                    ("ACTIVE", lambda: sft_seconds("ACTIVE", root, args.epochs)),
                    ("PASSIVE", lambda: sft_seconds("PASSIVE", root, args.epochs)),
                    pairs=args.pairs, self_timed=True,
                )
            finally:
                if burner is not None:
                    burner.kill()
                    burner.wait()
            where = "beside a busy-looping process" if busy else "on the machine as it is"
            print(result.report(f"SFT {args.epochs} epoch(s), seconds, {where}"), flush=True)


if __name__ == "__main__":
    main()
