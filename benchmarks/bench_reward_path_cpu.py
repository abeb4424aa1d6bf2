"""CPU proxy of the GRPO reward path's fixed cost: breadth's rl_stage vs a bare TRL GRPOTrainer
on a micro model (goal <= 1.05).

Run: .venv/bin/python benchmarks/bench_reward_path_cpu.py [--rounds 6] [--steps 30]
    [--start sft|init] [--profile FILE] [--json FILE] [--before FILE] [--markdown FILE]

On the GPU (docs/results/gpu.md) breadth's reward path took 1.32-1.44x a bare GRPOTrainer at
the default tiny model: work per step that does not shrink with the model. A micro model on
the CPU makes such work visible here too. The two arms are `bench_reward_gpu.py`'s (its
`bare_trl` and `breadth_path`), on a Qwen3-style model of `MICRO_MODEL`'s size with breadth's
character tokenizer, with the same weights, data, GRPOConfig (`build_grpo_config`: G = 8,
8 prompts a step, 8 new tokens), steps and seed:
  A  bare TRL: a GRPOTrainer with one plain correctness function (the completion ends with the
     answer) and TRL's own callbacks, nothing else;
  B  breadth: `rl_stage` under the default preset's reward spec (correctness), as the pipeline
     runs it: the verifier, the reward terms, breadth's trainer class and callbacks, metrics
     to a sink (a list here; the pipeline's buffers them for MLflow).

The learning rate is ~0 (`--learning-rate`), so both arms sample from the same weights all
along and differ only in the path around the model. `--start sft` (the default) trains both
from a short SFT of the micro model, as the pipeline does; `--start init` from the untrained
model, as the GPU figure did (its noise sends completions to the verifier's symbolic check).

The arms run in one process and take turns step by step (`lockstep`: bare TRL in a thread,
breadth on the main thread, one waiting while the other steps), so load from other processes
on a shared machine falls on both alike. A step is one loop iteration, from a step's begin to
the next (generation, rewards, loss, backward, optimizer, logging, every callback), less the
wait; the first `--skip` of each run are dropped. Both clocks: the arm's thread CPU time
(torch on one thread; what the load moves least) and wall time. Each of `--rounds` rounds
trains both arms afresh; the ratio is breadth / bare of the round's median steps, reported as
min / median / max over the rounds, with a 95% CI of the median from 6 rounds. The console
output of both arms (TRL's log printer, progress bars) goes to /dev/null.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_reward_gpu import bare_trl, breadth_path
from side_by_side import REWARD_BENCH_SETTINGS, load_line, median_interval
from transformers import TrainerCallback

TARGET_RATIO = 1.05
# Qwen3-style, 2 layers of width 64 (head dim 32, the least vLLM takes): ~0.1M parameters,
# small enough that a step's fixed work shows beside the model's.
MICRO_MODEL = ["model.hidden_size=64", "model.num_layers=2", "model.num_heads=2",
               "model.intermediate_size=128"]
# Short SFT of the micro model: enough for it to write "Answer: <number>" lines, as the
# pipeline's GRPO start does (`--start sft`).
MICRO_DATA = ["data.num_train=2000", "data.num_eval=8", "sft.epochs=4", "sft.batch_size=32"]
REPO = Path(__file__).resolve().parents[1]
BARE, BREADTH = "bare TRL GRPOTrainer", "breadth rl_stage"
WAIT_LIMIT_S = 600.0
"""Longest an arm waits for the other's step before the benchmark gives up (a stuck arm)."""


class Baton:
    """Two trainers in one process taking turns, one loop iteration each: while one runs a
    step, the other waits, so the load of other processes falls on both arms alike, step by
    step. An arm passes the baton at each step begin (`pass_and_wait`) and for good at its
    train end (`finish`)."""

    def __init__(self, first: str) -> None:
        self.turn = first
        self.finished: set[str] = set()
        self.cond = threading.Condition()

    def pass_and_wait(self, me: str, other: str) -> None:
        with self.cond:
            self.turn = other
            self.cond.notify_all()
            while self.turn != me and other not in self.finished:
                if not self.cond.wait(timeout=WAIT_LIMIT_S):
                    raise RuntimeError(f"{other} did not hand back the turn in {WAIT_LIMIT_S} s")

    def wait_for(self, me: str) -> None:
        with self.cond:
            while self.turn != me:
                if not self.cond.wait(timeout=WAIT_LIMIT_S):
                    raise RuntimeError(f"no turn for {me} in {WAIT_LIMIT_S} s")

    def finish(self, me: str) -> None:
        with self.cond:
            self.finished.add(me)
            self.cond.notify_all()


class StepIntervals(TrainerCallback):
    """Each loop iteration's wall and CPU seconds (this thread's), from the step's begin to
    the next step's begin, less the time spent waiting for the other arm: generation, rewards,
    loss, backward, optimizer, logging and every callback. `times` is wall (as
    `bench_reward_gpu.median_step` reads it)."""

    def __init__(self, baton: Baton | None = None, me: str = "", other: str = "") -> None:
        self.baton, self.me, self.other = baton, me, other
        self.times: list[float] = []
        self.cpu: list[float] = []
        self._resumed: tuple[float, float] | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        now = (time.perf_counter(), time.thread_time())
        if self._resumed is not None:
            self.times.append(now[0] - self._resumed[0])
            self.cpu.append(now[1] - self._resumed[1])
        if self.baton is not None:
            self.baton.pass_and_wait(self.me, self.other)
        self._resumed = (time.perf_counter(), time.thread_time())

    def on_train_end(self, args, state, control, **kwargs):
        if self.baton is not None:
            self.baton.finish(self.me)


def lockstep(bare_run, ours_run, steps: int) -> tuple[StepIntervals, StepIntervals]:
    """Both arms trained `steps` steps, taking turns step by step: bare TRL in a worker
    thread, breadth on the main thread (the verifier's time limit uses signals there, as in a
    pipeline run). Breadth starts once the bare trainer is built and waits at its first step."""
    baton = Baton(first=BARE)
    bare = StepIntervals(baton, BARE, BREADTH)
    ours = StepIntervals(baton, BREADTH, BARE)
    failed: list[BaseException] = []

    def run_bare() -> None:
        try:
            bare_run(steps, bare)
        except BaseException as error:  # noqa: BLE001 - re-raised on the main thread
            failed.append(error)
        finally:
            baton.finish(BARE)

    worker = threading.Thread(target=run_bare, name="bare-trl")
    worker.start()
    try:
        baton.wait_for(BREADTH)  # the bare trainer is built and at its first step
        if not failed:
            ours_run(steps, ours)
    finally:
        baton.finish(BREADTH)
        worker.join()
    if failed:
        raise failed[0]
    return bare, ours


def prepare(config, root: Path, start: str) -> tuple[Path, Path]:
    """(dataset dir, policy dir): the micro model untrained (`init`) or after its SFT."""
    from breadth.stages import init_model_stage, prepare_stage, sft_stage

    prepare_stage(config, root / "data")
    policy = init_model_stage(config, root / "base")
    if start == "sft":
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            policy = sft_stage(config, root / "data", policy, root / "sft")
    return root / "data", policy


def breadth_hotspots(stats_file: Path, top: int = 25) -> list[str]:
    """The functions of breadth (and of the trainer's callbacks) with the most cumulative time
    in a cProfile dump, one line each: what breadth's arm spends beyond TRL's own loop."""
    stats = pstats.Stats(str(stats_file))
    rows = []
    for (path, line, name), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "/breadth/" in path or "trainer_callback" in path or "bench_" in path:
            rows.append((cumulative, calls, f"{Path(path).name}:{line}({name})"))
    rows.sort(reverse=True)
    return [f"{cum:8.3f} s {calls:>7} calls  {where}" for cum, calls, where in rows[:top]]


def git_state() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=False).stdout
    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    dirty = git("status", "--porcelain", "--", "src/breadth/rewards", "src/breadth/training",
                "src/breadth/data/verifiers.py", "src/breadth/data/symbolic.py").strip()
    return f"{commit}{' + uncommitted edits to the reward path' if dirty else ''}"


def round_figures(rounds: list[tuple[StepIntervals, StepIntervals]], skip: int) -> dict:
    """Per round, each arm's median step (ms, both clocks) over its steps after `skip`, and
    breadth / bare; and over all rounds' steps pooled, the median of the per-step ratios
    (step k of breadth over step k of bare, run back to back)."""
    out: dict = {"arms": {BARE: {"cpu_ms": [], "wall_ms": []},
                          BREADTH: {"cpu_ms": [], "wall_ms": []}},
                 "cpu_ratios": [], "wall_ratios": [], "cpu_step_ratios": []}
    for bare, ours in rounds:
        for clock in ("cpu", "wall"):
            a = getattr(bare, "cpu" if clock == "cpu" else "times")[skip:]
            b = getattr(ours, "cpu" if clock == "cpu" else "times")[skip:]
            out["arms"][BARE][f"{clock}_ms"].append(1000 * statistics.median(a))
            out["arms"][BREADTH][f"{clock}_ms"].append(1000 * statistics.median(b))
            out[f"{clock}_ratios"].append(statistics.median(b) / statistics.median(a))
        out["cpu_step_ratios"] += [b / a for a, b in zip(bare.cpu[skip:], ours.cpu[skip:])]
    for clock in ("cpu", "wall"):
        out[f"{clock}_ratio_ci95"] = median_interval(out[f"{clock}_ratios"])
    out["cpu_step_ratio_median"] = statistics.median(out["cpu_step_ratios"])
    out["cpu_step_ratio_ci95"] = median_interval(out["cpu_step_ratios"])
    return out


def spread(values: list[float], fmt: str = "{:.3f}") -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def verdict(result: dict) -> str:
    return "met" if statistics.median(result["cpu_ratios"]) <= TARGET_RATIO else "not met"


def table_rows(result: dict, label: str) -> list[str]:
    bare, ours = result["arms"][BARE], result["arms"][BREADTH]
    rows = []
    for clock in ("cpu", "wall"):
        ci = result[f"{clock}_ratio_ci95"]
        ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a (< 6 rounds)"
        rows.append(f"| {label} | {clock} | {spread(bare[f'{clock}_ms'], '{:.1f}')} | "
                    f"{spread(ours[f'{clock}_ms'], '{:.1f}')} | "
                    f"{spread(result[f'{clock}_ratios'])} | {ci_text} |")
    return rows


def markdown(after: dict, before: dict | None) -> str:
    runs = ([("before", before)] if before else []) + [("after" if before else "this run", after)]
    lines = [
        "# The reward path's fixed cost, on the CPU (issue #51, part 1)",
        "",
        ("Written by `benchmarks/bench_reward_path_cpu.py` from its own output; nothing is "
         "typed in by hand. What it compares and how it times is in the script's docstring: "
         "breadth's `rl_stage` (default reward spec) against a bare TRL GRPOTrainer with one "
         "plain correctness function, on a micro Qwen3-style model, the two trainers taking "
         "turns step by step in one process."),
        "",
    ]
    for label, run in runs:
        lines += [
            (f"- **{label}**: commit {run['commit']}; {run['machine']}; micro model "
             f"{' '.join(run['model'])}; start `{run['start']}`; {run['rounds']} rounds of "
             f"{run['steps']} steps each (first {run['skip']} dropped); learning rate "
             f"{run['learning_rate']:g}; wall time {run['seconds']:.0f} s"),
            f"  - command: `{run['command']}`",
            f"  - {run['load_before']} before; {run['load_after'].split(' on ')[0]} after",
        ]
    lines += [
        "",
        (f"Each cell is min / median / max over the rounds of that round's median step. Goal: "
         f"breadth / bare <= {TARGET_RATIO} on the CPU clock (this thread's CPU time, which "
         "other processes on the shared cores move least); the wall clock beside it."),
        "",
        ("| run | clock | bare TRL ms/step | breadth ms/step | ratio breadth / bare | "
         "95% CI of the median ratio |"),
        "|---|---|---|---|---|---|",
    ]
    for label, run in runs:
        lines += table_rows(run, label)
    lines.append("")
    for label, run in runs:
        ci = run["cpu_step_ratio_ci95"]
        lines.append(
            f"- {label}: goal **{verdict(run)}** (median ratio "
            f"{statistics.median(run['cpu_ratios']):.3f}); per step, breadth's step k over "
            f"bare's step k (run back to back), median {run['cpu_step_ratio_median']:.3f} over "
            f"{len(run['cpu_step_ratios'])} steps"
            + (f", 95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""))
    for label, run in runs:
        if run.get("hotspots"):
            lines += ["", (f"Where breadth's arm spends its time ({label}: cProfile of one run "
                           f"of {run['steps']} steps alone, cumulative seconds; breadth's "
                           "functions and the trainer's callbacks):"),
                      "", "```", *run["hotspots"], "```"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="pairs of runs, taking turns")
    parser.add_argument("--steps", type=int, default=30, help="GRPO steps per run")
    parser.add_argument("--skip", type=int, default=5, help="first step intervals dropped")
    parser.add_argument("--start", choices=("sft", "init"), default="sft")
    parser.add_argument("--learning-rate", type=float, default=1e-12)
    parser.add_argument("--spec", default=None,
                        help="breadth's reward spec (default: the default preset's)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="after the rounds, profile one run of breadth's arm into FILE")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--before", type=Path, default=None,
                        help="an earlier run's --json (e.g. before a change), shown beside")
    parser.add_argument("--markdown", type=Path, default=None, help="write the page here")
    args = parser.parse_args()
    if args.steps <= args.skip + 2:
        parser.error(f"--steps {args.steps} leaves too few steps after --skip {args.skip}")
    if args.rounds < 3:
        parser.error(f"--rounds must be >= 3 for a min / median / max, got {args.rounds}")
    before = json.loads(args.before.read_text()) if args.before else None

    import logging

    import torch
    import transformers

    from breadth.config import load_config

    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    overrides = [*REWARD_BENCH_SETTINGS, *MICRO_DATA, *MICRO_MODEL,
                 f"rl.learning_rate={args.learning_rate}"]
    if args.spec:
        overrides.append(f"rl.reward.spec={args.spec}")
    config = load_config("default", overrides)
    load_before = load_line()
    print(f"micro model {' '.join(MICRO_MODEL)}; spec {config.rl.reward.spec}; start "
          f"{args.start}; {load_before}", flush=True)

    started = time.perf_counter()
    rounds: list[tuple[StepIntervals, StepIntervals]] = []
    hotspots: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-reward-path-") as scratch:
        root = Path(scratch)
        dataset, policy = prepare(config, root, args.start)
        print(f"data and policy ready in {time.perf_counter() - started:.0f} s", flush=True)
        runs = iter(range(10_000))
        metrics: list[tuple[str, float, int]] = []

        def sink(name: str, value: float, step: int) -> None:  # the pipeline's buffer, here
            metrics.append((name, value, step))

        def bare_run(steps: int, clock: StepIntervals) -> None:
            bare_trl(config, dataset, policy, root / f"run-{next(runs)}", steps, clock=clock)

        def ours_run(steps: int, clock: StepIntervals) -> None:
            breadth_path(config, dataset, policy, root / f"run-{next(runs)}", steps,
                         clock=clock, log_metric=sink)

        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), \
                contextlib.redirect_stderr(devnull):
            lockstep(bare_run, ours_run, args.skip + 3)  # warm-up: imports, first checks
            for index in range(args.rounds):
                rounds.append(lockstep(bare_run, ours_run, args.steps))
                print(f"round {index + 1}/{args.rounds}: breadth / bare (cpu) "
                      f"{round_figures(rounds[-1:], args.skip)['cpu_ratios'][0]:.3f}",
                      file=sys.__stdout__, flush=True)
            if args.profile:
                profiler = cProfile.Profile()
                profiler.enable()
                ours_run(args.steps, StepIntervals())
                profiler.disable()
                profiler.dump_stats(str(args.profile))
                hotspots = breadth_hotspots(args.profile)

    result = {
        "command": " ".join(["python", *sys.argv]), "commit": git_state(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"{platform.python_implementation()} {platform.python_version()}",
        "load_before": load_before, "load_after": load_line(),
        "seconds": time.perf_counter() - started, "start": args.start, "rounds": args.rounds,
        "steps": args.steps, "skip": args.skip, "learning_rate": args.learning_rate,
        "model": MICRO_MODEL, "spec": config.rl.reward.spec, "target_ratio": TARGET_RATIO,
        **round_figures(rounds, args.skip), "hotspots": hotspots,
    }
    print(f"{args.rounds} rounds of {args.steps} steps, the arms taking turns step by step; "
          f"min / median / max over the rounds of each round's median step")
    for clock in ("cpu", "wall"):
        ci = result[f"{clock}_ratio_ci95"]
        print(f"{clock:>4}: bare {spread(result['arms'][BARE][f'{clock}_ms'], '{:.1f}')} ms, "
              f"breadth {spread(result['arms'][BREADTH][f'{clock}_ms'], '{:.1f}')} ms; "
              f"ratio {spread(result[f'{clock}_ratios'])}"
              + (f", median's 95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""))
    print(f"per step (cpu): median breadth / bare {result['cpu_step_ratio_median']:.3f} over "
          f"{len(result['cpu_step_ratios'])} steps; goal <= {TARGET_RATIO}: {verdict(result)}")
    print(f"{result['load_before']} before; {result['load_after']} after")
    for line in hotspots:
        print(line)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.markdown:
        args.markdown.write_text(markdown(result, before))


if __name__ == "__main__":
    main()
