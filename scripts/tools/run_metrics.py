"""Every metric of every run in a stack's MLflow, and two such dumps compared: is a refactor's
`breadth run` the same run as before it?

    eval "$(breadth env)"                        # the stack that ran the pipeline
    python scripts/tools/run_metrics.py dump before.json
    ... the other commit's `breadth run`, with a BREADTH_HOME of its own ...
    python scripts/tools/run_metrics.py compare before.json after.json --tolerance 1e-9 \
        [--ignore 'transfer/']                   # metrics a commit between them meant to change

A run is keyed by experiment and run name (the part before a `·`, so a cached re-run's name
matches); each metric by its whole history, step by step. Timing metrics (runtimes, steps per
second, step times) differ between any two runs and are left out unless `--with-timings`;
`--ignore` leaves out the metrics a regular expression finds.
`compare` prints the series that are equal within the tolerance, those that differ, and the
metrics only one side has, and exits 1 when any differ.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

TIMING = re.compile(r"runtime|per_second|step_time|seconds|wall")


def dump(out: Path) -> None:
    from mlflow import MlflowClient  # the stack's client, from MLFLOW_* in the environment

    client, runs = MlflowClient(), {}
    for experiment in client.search_experiments():
        for run in client.search_runs([experiment.experiment_id], max_results=5000):
            name = f"{experiment.name}/{run.info.run_name.split('·')[0]}"
            if name in runs:
                sys.exit(f"two runs are named {name}: dump a stack that ran the pipeline once")
            runs[name] = {key: sorted((m.step, m.value) for m in
                                      client.get_metric_history(run.info.run_id, key))
                          for key in run.data.metrics}
    out.write_text(json.dumps(runs, indent=0, sort_keys=True))
    print(f"{len(runs)} runs, {sum(map(len, runs.values()))} metrics -> {out}")


def same_series(a: list, b: list, tolerance: float) -> bool:
    """Same steps, and values equal within `tolerance` (relative, absolute below 1).

    >>> same_series([[1, 0.5], [2, 1e6]], [[1, 0.5 + 1e-12], [2, 1e6 + 1e-4]], 1e-9)
    True
    >>> same_series([[1, 0.5]], [[1, 0.5001]], 1e-9), same_series([[1, 0.5]], [[2, 0.5]], 1e-9)
    (False, False)
    """
    return len(a) == len(b) and all(
        step_a == step_b and abs(x - y) <= tolerance * max(1.0, abs(x), abs(y))
        for (step_a, x), (step_b, y) in zip(a, b))


def compare(before: dict, after: dict, tolerance: float, with_timings: bool = False,
            ignore: str | None = None) -> bool:
    """Prints what is equal, what differs and what one side lacks; True when nothing differs."""
    equal, differ, one_sided = 0, [], []
    for run in sorted(set(before) | set(after)):
        a, b = before.get(run, {}), after.get(run, {})
        for metric in sorted(set(a) | set(b)):
            if (TIMING.search(metric) and not with_timings) or (ignore and re.search(ignore, metric)):
                continue
            if metric not in a or metric not in b:
                one_sided.append(f"{run}: {metric} (only {'after' if metric in b else 'before'})")
            elif same_series(a[metric], b[metric], tolerance):
                equal += 1
            else:
                differ.append(f"{run}: {metric} {a[metric][-1]} -> {b[metric][-1]} (last step)")
    print(f"{equal} metric series equal within {tolerance:g}; {len(differ)} differ; "
          f"{len(one_sided)} on one side only")
    for line in differ + one_sided:
        print("  " + line)
    return not differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("dump", help="write the stack's runs' metrics").add_argument(
        "out", type=Path)
    comparing = commands.add_parser("compare", help="two dumps, series by series")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    comparing.add_argument("--tolerance", type=float, default=1e-9)
    comparing.add_argument("--with-timings", action="store_true")
    comparing.add_argument("--ignore", default=None, help="a regular expression of metrics")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out)
    else:
        before, after = (json.loads(path.read_text()) for path in (args.before, args.after))
        sys.exit(0 if compare(before, after, args.tolerance, args.with_timings, args.ignore)
                 else 1)


if __name__ == "__main__":
    main()
