"""Share of problems the default preset's base (SFT) model solves at each synthetic difficulty.

    .venv/bin/python scripts/difficulty_shares.py [--set key=value ...] [--work DIR]

Trains (or reuses, from --work) the default SFT model on its training data (difficulty
`data.difficulty`), then samples `rollout.num_samples` completions for evaluation problems of
difficulty 1, 2 and 3 and prints pass@1 and pass@n with bootstrap CIs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from breadth import stages
from breadth.config import load_config
from breadth.evaluation.metrics import pass_at_k
from breadth.stats.bootstrap import bootstrap_ci


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--work", type=Path, default=Path(".breadth/difficulty-shares"))
    args = parser.parse_args()
    config = load_config("default", args.overrides)
    work = args.work
    sft_dir = work / "sft" / "final"
    if not sft_dir.exists():
        stages.prepare_stage(config, work / "data")
        stages.init_model_stage(config, work / "base")
        stages.sft_stage(config, work / "data", work / "base", work / "sft")
    print(f"SFT model: {sft_dir} (trained on difficulty {config.data.difficulty})")
    print("difficulty  problems  pass@1 [95% CI]          pass@n [95% CI]")
    for difficulty in (1, 2, 3):
        # Difficulty 1 has only ~15 distinct evaluation problems; ask for what exists.
        num_eval = 15 if difficulty == 1 else config.data.num_eval
        limit = [] if num_eval is None else [f"data.num_eval={num_eval}"]  # None: the default
        level = load_config("default", [*args.overrides, f"data.difficulty={difficulty}",
                                        *limit, "data.num_train=50"])
        data_dir = work / f"eval-d{difficulty}"
        stages.prepare_stage(level, data_dir)
        path = stages.rollout_stage(level, data_dir, sft_dir, "sft", work / f"d{difficulty}.parquet",
                                    progress=False)
        frame = pd.read_parquet(path)
        per_problem = frame.groupby("problem_id")["correct"].agg(["count", "sum"])
        n, c = per_problem["count"].to_numpy(), per_problem["sum"].to_numpy()
        p1 = bootstrap_ci(pass_at_k(n, c, 1), seed=0)
        pn = bootstrap_ci(pass_at_k(n, c, int(n.min())), seed=0)
        print(f"{difficulty:>10}  {len(n):>8}  {p1.estimate:.3f} [{p1.low:.3f}, {p1.high:.3f}]"
              f"     {pn.estimate:.3f} [{pn.low:.3f}, {pn.high:.3f}]  (n={int(np.min(n))})")


if __name__ == "__main__":
    main()
