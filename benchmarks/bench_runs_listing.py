"""Benchmark: `breadth runs` against the raw MLflow client doing the same query.

Run: .venv/bin/python benchmarks/bench_runs_listing.py [--pairs 7] [--limit 20]

Both arms are fresh processes, as a user starts them, against the stack's MLflow server
(brought up if needed; it should hold some pipeline runs, e.g. from `breadth run`):
  A  the raw engine: `MlflowClient` lists the experiments, then searches the newest pipeline
     runs with breadth's filter and order, and prints each run's id, status and metrics;
  B  `breadth runs --json --limit N`: the same query over MLflow's REST API, printed as
     breadth's JSON summaries (headline figures and links).
Both print the same runs (checked once before timing). Min/median/max, the ratio B / A per
pair with a 95% CI of its median, and the load come from benchmarks/side_by_side.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from side_by_side import compare

REPO = Path(__file__).resolve().parents[1]

RAW_CLIENT = """
import json, sys
from mlflow import MlflowClient
from breadth.tracking.recent import PIPELINE_RUNS
client = MlflowClient()
ids = [e.experiment_id for e in client.search_experiments()]
runs = client.search_runs(ids, PIPELINE_RUNS, order_by=["attributes.start_time DESC"],
                          max_results=int(sys.argv[1]))
print(json.dumps([[r.info.run_id, r.info.status, r.data.metrics] for r in runs]))
"""


def listed(command: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout)
    return [row["run_id"] if isinstance(row, dict) else row[0] for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--limit", type=int, default=20)
    args = parser.parse_args()

    from breadth.stack.local import LocalStack

    stack = LocalStack()
    stack.up()
    env = {**os.environ, **stack.settings.client_env()}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")])
    raw = [sys.executable, "-c", RAW_CLIENT, str(args.limit)]
    ours = [str(Path(sys.executable).parent / "breadth"), "runs", "--json", "--limit",
            str(args.limit)]
    raw_ids, our_ids = listed(raw, env), listed(ours, env)
    if raw_ids != our_ids:
        raise SystemExit(f"the arms list different runs:\n  raw    {raw_ids}\n  breadth {our_ids}")
    if not our_ids:
        raise SystemExit("no pipeline runs on this stack's MLflow: run `breadth run` first")
    result = compare(("raw MlflowClient", lambda: listed(raw, env)),
                     ("breadth runs", lambda: listed(ours, env)), pairs=args.pairs)
    print(result.report(f"listing the {len(our_ids)} newest pipeline runs, seconds"))


if __name__ == "__main__":
    main()
