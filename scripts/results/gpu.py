"""GPU evidence in one run (issue #27): GPU tests, reward path, 0.5B-shape throughput, scale.

    python3 scripts/results/gpu.py --out $OUT [--deadline 450] [--dry-run]

Run from the repository root on a CUDA machine; it writes `gpu.md` (the page
docs/results/gpu.md is), `gpu.json` and `logs.tar.gz` to `--out`. Its parts run as
processes on the one machine, several at a time, under one deadline (a part still running then
is stopped, and the page says so); each uses the GPU, except the scale part's sizes named in
`--scale-on-cpu`, which run on the host's CPU cores:

1. `pytest -m gpu tests/gpu`;
2. the reward path: `benchmarks/bench_reward_gpu.py` for correctness, correctness+batch and
   darling, each against a bare TRL GRPOTrainer, 300 steps after a 20-step warm-up, 3 pairs;
3. and 4. `scripts/results/gpu_big_model.py`: rollouts and GRPO on a model of Qwen2.5-0.5B's
   shape, each beside its bare engine;
5. the study task (the chain task, `reasoning` preset) at two sizes: SFT per (size, seed), then
   correctness@unscaled and darling from that start (`scripts/results/gpu_scale_cell.py`),
   compared paired by problem per seed.

`--dry-run` runs each kind of part's process once with tiny counts on whatever device there is
(a CPU here): the GPU tests, the big model, the scale part's SFT and darling's RL at one size
(`study`), and the reward path for one spec (`correctness+batch`). It checks the script end
to end, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent  # scripts/results/: the parts and the page's writer
# The driver reads the parts' results with the library and the scripts beside it, where breadth
# is not installed (the GPU machine runs the working tree).
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks"), str(HERE)]

from gpu_scale_cell import OBJECTIVES, SIZES, cell_config  # after the path above

PARTS = ("gpu-tests", "big-model", "scale", "reward")
REWARD_SPECS = ("correctness", "correctness+batch", "darling")


class Scope(NamedTuple):
    """What a run covers: the scale part's sizes and RL objectives, the reward part's specs."""

    sizes: tuple[str, ...]
    objectives: tuple[str, ...]
    specs: tuple[str, ...]


# A dry run runs each kind of part's process once: every process is a fresh Python that imports
# torch and transformers (~20 CPU s on its own), and all eleven cost the dry run's test about
# 2.5 times the CPU of these five (scripts/tools/cpu_of.py, issue #48 item 7). The sizes all
# shrink to one tiny model there (gpu_scale_cell.DRY_RUN), and the objectives and specs differ
# only in the reward spec rl_stage gets (tests/integration/test_grpo_rewards_on_cpu.py trains
# every preset). tests/unit/scripts/test_gpu.py checks the rest: the GPU run's plan, every
# size's config, the comparison of two arms' rollouts and the page's layout.
DRY_RUN = Scope(sizes=("study",), objectives=("darling",), specs=("correctness+batch",))
SCALE_CELL = "scripts/results/gpu_scale_cell.py"


@dataclass
class Job:
    """One part's process: started once its `after` jobs have succeeded."""

    name: str
    part: str  # one of PARTS
    argv: list[str]
    after: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # over the driver's environment
    process: subprocess.Popen | None = None
    started: float | None = None
    start_offset: float | None = None  # seconds after the first job started: shows the overlap
    seconds: float | None = None
    state: str = "waiting"  # waiting, running, ok, failed (rc), stopped at the deadline, skipped


def scope(dry: bool) -> Scope:
    return DRY_RUN if dry else Scope(tuple(SIZES), tuple(OBJECTIVES), REWARD_SPECS)


def python(script: str, *args: str) -> list[str]:
    return [sys.executable, str(ROOT / script), *args]


def plan(out: Path, work: Path, seeds: list[int], dry: bool, parts: list[str],
         scale_on_cpu: tuple[str, ...] = ()) -> list[Job]:
    """The chosen parts as jobs, in the order they should start. The scale part's sizes named in
    `scale_on_cpu` run with CUDA hidden: on the host's CPU cores, one single-threaded process
    per cell (`OMP_NUM_THREADS=1`, as every job), all started when their SFT is done."""
    dry_flag = ["--dry-run"] if dry else []
    tests = [sys.executable, "-m", "pytest", "-m", "gpu", "tests/gpu", "-q",
             "-p", "no:cacheprovider", "-o", "addopts="]
    big = python("scripts/results/gpu_big_model.py", "--json", str(out / "big.json"),
                 "--work", str(work / "big"), *dry_flag)
    jobs = [Job("gpu-tests", "gpu-tests", tests), Job("big-model", "big-model", big)]
    covered = scope(dry)
    for size in covered.sizes:
        for seed in seeds:
            # A folder per size: the sizes share their data's cache key, and two processes
            # preparing one folder at once raced (a dry run's SFT failed on it).
            cell = ["--size", size, "--seed", str(seed), "--work", str(work / f"scale-{size}"),
                    *dry_flag]
            place = {"CUDA_VISIBLE_DEVICES": ""} if size in scale_on_cpu else {}
            sft = f"sft-{size}-s{seed}"
            jobs.append(Job(sft, "scale", python(SCALE_CELL, "sft", *cell,
                                                 "--json", str(work / f"{sft}.json")), env=place))
            for objective in covered.objectives:
                name = f"rl-{size}-s{seed}-{objective}"
                rl = python(SCALE_CELL, "rl", *cell, "--objective", objective,
                            "--json", str(work / f"{name}.json"))
                jobs.append(Job(name, "scale", rl, after=[sft], env=place))
    bench = (["--cpu-smoke", "--steps", "2", "--pairs", "3", "--warm-up-steps", "0"] if dry
             else ["--steps", "300", "--pairs", "3", "--warm-up-steps", "20"])
    for spec in covered.specs:
        # From the start, beside the others: 3 x 2 x 300 timed steps need the whole deadline.
        # Their ratios are side by side in one process, so the sharing is in both arms.
        reward = python("benchmarks/bench_reward_gpu.py", "--spec", spec, *bench,
                        "--json", str(work / f"reward-{spec}.json"))
        jobs.append(Job(f"reward-{spec}", "reward", reward))
    return [job for job in jobs if job.part in parts]


def run_jobs(jobs: list[Job], logs: Path, origin: float, deadline: float,
             max_running: int | None = None) -> None:
    """Start each job once its `after` jobs are ok, at most `max_running` at a time (None: no
    limit); stop what still runs at the deadline."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), str(ROOT / "benchmarks"), str(HERE),
         os.environ.get("PYTHONPATH", "")]), "PYTHONUNBUFFERED": "1",
           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    by_name = {job.name: job for job in jobs}
    while any(job.state in ("waiting", "running") for job in jobs):
        now = time.monotonic()
        for job in jobs:
            if job.state == "running" and job.process.poll() is not None:
                job.seconds = now - job.started
                rc = job.process.returncode
                job.state = "ok" if rc == 0 else f"failed (rc {rc})"
                print(f"{job.name}: {job.state} after {job.seconds:.0f} s", flush=True)
            elif job.state == "waiting":
                if any(by_name[a].state not in ("waiting", "running", "ok") for a in job.after):
                    job.state = "skipped (a part it needs did not finish)"
                elif all(by_name[a].state == "ok" for a in job.after) and (
                        max_running is None
                        or sum(j.state == "running" for j in jobs) < max_running):
                    log = (logs / f"{job.name}.log").open("w")
                    job.process = subprocess.Popen(job.argv, cwd=ROOT, env={**env, **job.env},
                                                   stdout=log,
                                                   stderr=subprocess.STDOUT,
                                                   start_new_session=True)
                    job.started, job.state = now, "running"
                    job.start_offset = now - origin
        if now > deadline:
            for job in jobs:
                if job.state == "running":
                    os.killpg(job.process.pid, signal.SIGKILL)
                    job.seconds, job.state = now - job.started, "stopped at the deadline"
                elif job.state == "waiting":
                    job.state = "not started before the deadline"
            break
        time.sleep(1)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def scale_comparisons(work: Path, seeds: list[int], dry: bool) -> list[dict[str, Any]]:
    """darling − correctness@unscaled per (size, seed), paired by problem (demo.compare
    with the control in the base's place; where both arms ran), beside each arm's own RL − SFT."""
    import pandas as pd
    from demo import compare

    rows = []
    covered = scope(dry)
    for size in covered.sizes:
        for seed in seeds:
            sft = read_json(work / f"sft-{size}-s{seed}.json")
            arms = {o: read_json(work / f"rl-{size}-s{seed}-{o}.json") for o in covered.objectives}
            row: dict[str, Any] = {"size": size, "seed": seed,
                                   "parameters": sft and sft["parameters"],
                                   "sft_stages": sft and sft["stages"],
                                   "arms": {o: a and {k: a[k] for k in ("per_model", "paired_delta",
                                                                       "sft_p", "grpo", "stages")}
                                            for o, a in arms.items()}}
            if all(arms.get(o) for o in OBJECTIVES):
                control, diverse = (pd.read_parquet(arms[o]["rollouts"]["rl"]) for o in OBJECTIVES)
                config = cell_config(size, seed, next(iter(OBJECTIVES)), dry)
                row["darling_minus_control"] = compare({"sft": control, "rl": diverse}, config)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-evidence")))
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpu-evidence"))
    parser.add_argument("--deadline", type=float, default=450.0, help="seconds for all parts")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="run only these parts (a second run after a deadline, say)")
    parser.add_argument("--scale-on-cpu", nargs="*", choices=list(SIZES), default=[],
                        help=("the scale part's sizes to run on the host's CPU cores (one "
                              "single-threaded process per cell) instead of the GPU (default: "
                              "none). Measured once on an H200 host: the study model's SFT took "
                              "355 s on one core against 109-129 s on the shared GPU "
                              "(docs/results/gpu.note.md, run 3)"))
    parser.add_argument("--big-model-from", type=Path, default=None,
                        help="without the big-model part: an earlier run's big.json to report")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--max-jobs", type=int, default=None,
                        help=("at most this many parts' processes at once (default: all that "
                              "are ready, as on the GPU machine). A dry run on a small CPU "
                              "machine runs best at its core count: eleven processes at once "
                              "on 2 cores cost more CPU in all than the same run 2 at a time"))
    args = parser.parse_args()
    from gpu_report import markdown  # the page's writer, beside this script

    started = time.monotonic()
    logs = args.work / "logs"
    for folder in (args.out, logs):
        folder.mkdir(parents=True, exist_ok=True)
    covered = scope(args.dry_run)
    jobs = plan(args.out, args.work, args.seeds, args.dry_run, args.parts, tuple(args.scale_on_cpu))
    run_jobs(jobs, logs, started, started + args.deadline, args.max_jobs)
    wall = time.monotonic() - started
    with tarfile.open(args.out / "logs.tar.gz", "w:gz") as tar:  # first: it outlives a crash
        tar.add(logs, arcname="logs")
    import torch

    big_model = read_json(args.out / "big.json")
    if big_model is None and args.big_model_from is not None:
        big_model = {**read_json(args.big_model_from), "from": str(args.big_model_from)}
    tests_log = logs / "gpu-tests.log"

    evidence = {
        "command": shlex.join(["python3", "scripts/results/gpu.py", *sys.argv[1:]]),
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device",
        "host": f"{platform.node()}, {os.cpu_count()} CPU cores", "torch": torch.__version__,
        "dry_run": args.dry_run, "deadline_s": args.deadline, "wall_s": round(wall, 1),
        "jobs": {j.name: {"state": j.state, "seconds": j.seconds and round(j.seconds, 1),
                          "started_at_s": j.start_offset and round(j.start_offset, 1)}
                 for j in jobs},
        "gpu_tests": tests_log.read_text()[-2000:] if tests_log.exists() else None,
        "reward": {s: read_json(args.work / f"reward-{s}.json") for s in covered.specs},
        "big_model": big_model,
        "scale_placement": {size: "CPU cores" if size in args.scale_on_cpu
                            else "GPU" if torch.cuda.is_available() else "CPU (no CUDA device)"
                            for size in covered.sizes},
        "scale": (scale_comparisons(args.work, args.seeds, args.dry_run)
                  if "scale" in args.parts else []),
    }
    (args.out / "gpu.json").write_text(json.dumps(evidence, indent=1, default=str))
    (args.out / "gpu.md").write_text(markdown(evidence))
    print((args.out / "gpu.md").read_text())


if __name__ == "__main__":
    main()
