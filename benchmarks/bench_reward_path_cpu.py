"""CPU proxy of the GRPO reward path's fixed cost: breadth's rl_stage vs a bare TRL GRPOTrainer
on a micro model (goal <= 1.05).

Run: .venv/bin/python benchmarks/bench_reward_path_cpu.py [--rounds 6] [--steps 30]
    [--start sft init] [--calibrate] [--before-src DIR] [--profile DIR] [--json FILE]
    [--markdown FILE]

docs/results/reward_path_cpu.md is this script's `--markdown`, run with `--calibrate` and
`--before-src` the src/ of a worktree at the commit before the cuts it reports.

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

The learning rate is ~0 (`--learning-rate`), so both arms sample the same completions from the
same weights all along (their logged lengths and token counts agree step by step) and differ
only in the path around the model. Two starts, each measured in turn: `sft`, the pipeline's
(GRPO after a short SFT of the micro model), and `init`, the GPU figure's (the untrained model,
whose noise sends completions to the verifier's symbolic check).

Each arm trains in its own worker process, on its main thread (breadth's verifier bounds its
symbolic check with signals there, as in `bench_reward_gpu.py`), and the arms take turns step
by step (`lockstep`: while one steps, the others wait at their step begin), so load from other
processes on a shared machine falls on all alike. The arms: bare TRL, breadth, and with
`--calibrate` a second bare TRL (the harness's own bias, about 1.00), with `--before-src DIR`
a second breadth importing breadth from DIR (a change's before and after in the same rounds).
A step is one loop iteration, from a step's begin to the next (generation, rewards, loss,
backward, optimizer, logging, every callback), less the wait; the first `--skip` of each run
are dropped. Both clocks: the worker's CPU time (torch on one thread; what the load moves
least) and wall time. Each of `--rounds` rounds trains every arm afresh; a ratio is of the
round's median steps, reported as min / median / max over the rounds, with a 95% CI of the
median from 6 rounds, and per step (step k over step k, run back to back) pooled over the
rounds. The workers' console output (TRL's log printer, progress bars) goes to /dev/null.
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
import time
from pathlib import Path
from typing import TextIO

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
BARE, BREADTH = "bare TRL GRPOTrainer", "breadth rl_stage"
BARE_AGAIN, BREADTH_BEFORE = "bare TRL (again)", "breadth before"


class StepIntervals(TrainerCallback):
    """Each loop iteration's wall and CPU seconds (this process's), from a step's begin to the
    next step's begin, less any time spent waiting for the other arm's turn: generation,
    rewards, loss, backward, optimizer, logging and every callback. `times` is wall (as
    `bench_reward_gpu.median_step` reads it). With `turns`, a pipe pair to the coordinating
    process: at each step begin the arm says so and waits for its turn ("go")."""

    def __init__(self, turns: tuple[TextIO, TextIO] | None = None) -> None:
        self.turns = turns
        self.times: list[float] = []
        self.cpu: list[float] = []
        self._resumed: tuple[float, float] | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        now = (time.perf_counter(), time.process_time())
        if self._resumed is not None:
            self.times.append(now[0] - self._resumed[0])
            self.cpu.append(now[1] - self._resumed[1])
        if self.turns is not None:
            tell, hear = self.turns
            tell.write(json.dumps({"step": state.global_step}) + "\n")
            tell.flush()
            if hear.readline().strip() != "go":
                raise RuntimeError("the coordinating process went away")
        self._resumed = (time.perf_counter(), time.process_time())


def worker(arm: str, overrides: list[str], dataset: Path, policy: Path) -> None:
    """A worker process (`--worker ARM`): trains its arm once per `train FOLDER STEPS` line on
    stdin, waiting at every step begin for "go", and answers each run with its step intervals.
    Its own output (TRL's printer, progress bars) goes to /dev/null, its errors to stderr."""
    import logging

    import torch
    import transformers

    from breadth.config import load_config

    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    config = load_config("default", overrides)
    channel = os.fdopen(os.dup(1), "w")  # the protocol's; fd 1 itself goes to /dev/null
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the process's lifetime
    metrics: list[tuple[str, float, int]] = []
    for line in iter(sys.stdin.readline, ""):
        _, folder, steps = line.split()
        clock = StepIntervals((channel, sys.stdin))
        if arm == BREADTH:
            breadth_path(config, dataset, policy, Path(folder), int(steps), clock=clock,
                         log_metric=lambda name, value, step: metrics.append((name, value, step)))
        else:
            bare_trl(config, dataset, policy, Path(folder), int(steps), clock=clock)
        metrics.clear()
        channel.write(json.dumps({"done": True, "wall": clock.times, "cpu": clock.cpu}) + "\n")
        channel.flush()


class Worker:
    """The coordinator's end of one worker process."""

    def __init__(self, arm: str, label: str, overrides: list[str], dataset: Path, policy: Path,
                 log: Path, source: Path | None = None) -> None:
        self.arm, self.label, self.log = arm, label, log
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", arm,
                   "--dataset", str(dataset), "--policy", str(policy),
                   "--overrides", json.dumps(overrides)]
        env = dict(os.environ)
        if source is not None:  # this worker imports breadth from another tree's src/
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source),
                                                              env.get("PYTHONPATH")]))
        with open(log, "w") as errors:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, env=env,
                                            stdout=subprocess.PIPE, stderr=errors, text=True)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            tail = "\n".join(self.log.read_text().splitlines()[-20:])
            raise RuntimeError(f"the {self.label} worker stopped:\n{tail}")
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def lockstep(workers: list[Worker], folder: Path, steps: int) -> list[dict]:
    """One run of `steps` steps per worker, the workers taking turns one step each (while one
    steps, the other waits at its step begin). Returns each worker's step intervals."""
    for index, w in enumerate(workers):
        w.send(f"train {folder / str(index)} {steps}")
    said = [w.read() for w in workers]  # each built its trainer and waits at its first step
    while not all(message.get("done") for message in said):
        for index, w in enumerate(workers):
            if not said[index].get("done"):
                w.send("go")
                said[index] = w.read()
    return said


def prepare(config, root: Path, start: str) -> tuple[Path, Path]:
    """(dataset dir, policy dir): the micro model untrained (`init`) or after its SFT."""
    from breadth.stages import init_model_stage, prepare_stage, sft_stage

    prepare_stage(config, root / "data")
    policy = init_model_stage(config, root / "base")
    if start == "sft":
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            policy = sft_stage(config, root / "data", policy, root / "sft")
    return root / "data", policy


class ProfiledSteps(StepIntervals):
    """Profiles the steps from `first` to the end of training (set-up and warm-up left out)."""

    def __init__(self, profiler: cProfile.Profile, first: int) -> None:
        super().__init__()
        self.profiler, self.first, self.steps = profiler, first, 0

    def on_step_begin(self, args, state, control, **kwargs):
        super().on_step_begin(args, state, control, **kwargs)
        if state.global_step == self.first:
            self.profiler.enable()
        self.steps += state.global_step >= self.first

    def on_train_end(self, args, state, control, **kwargs):
        self.profiler.disable()


def breadth_hotspots(stats_file: Path, steps: int, top: int = 10) -> list[str]:
    """The functions of breadth and the trainer's callbacks with the most cumulative time per
    step in a cProfile dump of `steps` steps, one line each."""
    stats = pstats.Stats(str(stats_file))
    rows = []
    for (path, line, name), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "/breadth/" in path or "trainer_callback" in path:
            rows.append((cumulative, calls, f"{Path(path).name}:{line}({name})"))
    rows.sort(reverse=True)
    return [f"{1000 * cum / steps:7.2f} ms/step {calls / steps:7.1f} calls/step  {where}"
            for cum, calls, where in rows[:top]]


def source_state(src: Path | None = None) -> str:
    """The commit of a breadth source tree (`src`, default the one this process imports) and
    whether its reward path has uncommitted edits."""
    if src is None:
        import breadth

        src = Path(breadth.__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=src, capture_output=True, text=True,
                              check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "breadth/rewards", "breadth/training",
                "breadth/data")
    return f"{commit}{' + uncommitted edits to the reward path' if dirty else ''}"


def ratio_figures(rounds: list[dict[str, dict]], arm: str, over: str, skip: int) -> dict:
    """`arm` over `over`: per round, the ratio of their median steps (both clocks), its min /
    median / max and 95% CI; and per step, step k over step k (run back to back), pooled."""
    out: dict = {}
    for clock in ("cpu", "wall"):
        key = "cpu" if clock == "cpu" else "wall"
        out[clock] = [statistics.median(said[arm][key][skip:])
                      / statistics.median(said[over][key][skip:]) for said in rounds]
        out[f"{clock}_ci95"] = median_interval(out[clock])
    steps = [b / a for said in rounds
             for a, b in zip(said[over]["cpu"][skip:], said[arm]["cpu"][skip:])]
    out["cpu_steps"] = len(steps)
    out["cpu_step_median"] = statistics.median(steps)
    out["cpu_step_ci95"] = median_interval(steps)
    return out


def spread(values: list[float], fmt: str = "{:.3f}") -> str:
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def ci_text(ci: list[float] | None) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "n/a (< 6)"


STARTS = {"sft": "the pipeline's start: GRPO after a short SFT of the micro model",
          "init": "the GPU figure's start: the untrained micro model, whose noise goes to the "
                  "verifier's symbolic check"}


def markdown(runs: list[dict]) -> str:
    lines = [
        "# The reward path's fixed cost, on the CPU (issue #51, part 1)",
        "",
        ("Written by `benchmarks/bench_reward_path_cpu.py` from its own output (`--markdown`); "
         "nothing is typed in by hand. breadth's `rl_stage` under the default reward spec "
         "against a bare TRL GRPOTrainer with one plain correctness function, the same "
         "GRPOConfig, weights, data and seed, on a micro Qwen3-style model; every arm trains "
         "in its own process and the arms take turns step by step; the script's docstring says "
         "how it times."),
        "",
        (f"Goal: breadth / bare <= {TARGET_RATIO} on the CPU clock (each worker's CPU time, "
         "which other processes on the shared cores move least), the wall clock beside it. "
         "Each cell is min / median / max over the rounds of the round's median step (ms) or "
         "of the round's ratio. `bare TRL (again)` is a second bare worker: the harness's own "
         "bias. `breadth before` imports breadth from another tree (the commit before the "
         "cuts), in the same rounds."),
    ]
    run = runs[0]
    lines += [
        "",
        f"- command: `{run['command']}`",
        (f"- {run['machine']}; micro model {' '.join(run['model'])}; {run['rounds']} rounds "
         f"of {run['steps']} steps per start (first {run['skip']} dropped); learning rate "
         f"{run['learning_rate']:g}"),
        "- breadth: " + "; ".join(f"`{arm}` at commit {source}"
                                   for arm, source in run["sources"].items()),
    ]
    for run in runs:
        lines += ["", f"## Start `{run['start']}`: {STARTS[run['start']]}", "",
                  (f"{run['seconds']:.0f} s; {run['load_before']} before, "
                   f"{run['load_after'].split(' on ')[0]} after."), "",
                  "| arm | clock | ms/step | ratio over bare | 95% CI of the median ratio |",
                  "|---|---|---|---|---|"]
        for arm, times in run["arms"].items():
            for clock in ("cpu", "wall"):
                ratio = run["ratios"].get(arm)
                cells = ([spread(ratio[clock]), ci_text(ratio[f"{clock}_ci95"])] if ratio
                         else ["", ""])
                lines.append(f"| {arm} | {clock} | {spread(times[f'{clock}_ms'], '{:.1f}')} | "
                             + " | ".join(cells) + " |")
        lines.append("")
        for arm, ratio in run["ratios"].items():
            median = statistics.median(ratio["cpu"])
            goal = (f"goal **{'met' if median <= TARGET_RATIO else 'not met'}**, "
                    if arm == BREADTH else "")
            lines.append(
                f"- {arm} / bare: {goal}median ratio {median:.3f}; per step (step k over "
                f"bare's step k, run back to back) {ratio['cpu_step_median']:.3f} over "
                f"{ratio['cpu_steps']} steps, 95% CI {ci_text(ratio['cpu_step_ci95'])}")
        if run.get("after_over_before"):
            change = run["after_over_before"]
            lines.append(
                f"- {BREADTH} / {BREADTH_BEFORE} (the cuts): median ratio "
                f"{statistics.median(change['cpu']):.3f} ({spread(change['cpu'])} over the "
                f"rounds); per step {change['cpu_step_median']:.3f}, 95% CI "
                f"{ci_text(change['cpu_step_ci95'])}")
        if run.get("hotspots"):
            lines += ["", (f"Where `{BREADTH}` spends its time: cProfile of one run alone, "
                           f"steps {run['skip'] + 1}..{run['steps']}, the profiler's own cost "
                           "included (it inflates many small calls: the symbolic check's most); "
                           "breadth's functions and the trainer's callbacks, cumulative:"),
                      "", "```", *run["hotspots"], "```"]
    return "\n".join(lines) + "\n"


def measure(args: argparse.Namespace, start: str, base_overrides: list[str]) -> dict:
    """One start's rounds (and profile): its figures, as written to --json."""
    from breadth.config import load_config

    config = load_config("default", base_overrides)
    load_before = load_line()
    print(f"start {start}: micro model {' '.join(MICRO_MODEL)}; spec {config.rl.reward.spec}; "
          f"{load_before}", flush=True)
    started = time.perf_counter()
    rounds: list[dict[str, dict]] = []
    hotspots: list[str] = []
    arms: list[tuple[str, str, Path | None]] = [(BARE, BARE, None)]
    if args.calibrate:
        arms.append((BARE, BARE_AGAIN, None))
    if args.before_src:
        arms.append((BREADTH, BREADTH_BEFORE, args.before_src))
    arms.append((BREADTH, BREADTH, None))
    with tempfile.TemporaryDirectory(prefix="bench-reward-path-") as scratch:
        root = Path(scratch)
        dataset, policy = prepare(config, root, start)
        print(f"data and policy ready in {time.perf_counter() - started:.0f} s", flush=True)
        workers = [Worker(arm, label, base_overrides, dataset, policy, root / f"worker-{i}.log",
                          source) for i, (arm, label, source) in enumerate(arms)]
        try:
            lockstep(workers, root / "warm-up", args.skip + 3)  # imports, first checks
            for index in range(args.rounds):
                said = dict(zip((w.label for w in workers),
                                lockstep(workers, root / f"round-{index}", args.steps)))
                rounds.append(said)
                print(f"round {index + 1}/{args.rounds}: " + ", ".join(
                    f"{label} / bare (cpu) {ratio_figures([said], label, BARE, args.skip)['cpu'][0]:.3f}"
                    for label in said if label != BARE), flush=True)
        finally:
            for w in workers:
                w.close()
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            stats_file = args.profile / f"breadth-{start}.prof"
            profiler = cProfile.Profile()
            clock = ProfiledSteps(profiler, first=args.skip + 1)
            with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), \
                    contextlib.redirect_stderr(devnull):
                breadth_path(config, dataset, policy, root / "profiled", args.steps,
                             clock=clock, log_metric=lambda *metric: None)
            profiler.dump_stats(str(stats_file))
            hotspots = breadth_hotspots(stats_file, clock.steps)
    labels = [label for _, label, _ in arms]
    result = {
        "command": " ".join(
            [*([f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []),
             "python", *sys.argv]),
        "sources": {BREADTH: source_state(),
                    **({BREADTH_BEFORE: " ".join(filter(None, [source_state(args.before_src),
                                                               args.before_note]))}
                       if args.before_src else {})},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"{platform.python_implementation()} {platform.python_version()}",
        "load_before": load_before, "load_after": load_line(),
        "seconds": time.perf_counter() - started, "start": start, "rounds": args.rounds,
        "steps": args.steps, "skip": args.skip, "learning_rate": args.learning_rate,
        "model": MICRO_MODEL, "spec": config.rl.reward.spec, "target_ratio": TARGET_RATIO,
        "arms": {label: {f"{clock}_ms": [1000 * statistics.median(said[label][clock][args.skip:])
                                         for said in rounds] for clock in ("cpu", "wall")}
                 for label in labels},
        "ratios": {label: ratio_figures(rounds, label, BARE, args.skip)
                   for label in labels if label != BARE},
        "after_over_before": (ratio_figures(rounds, BREADTH, BREADTH_BEFORE, args.skip)
                              if args.before_src else None),
        "hotspots": hotspots,
        "raw": rounds,
    }
    print(f"start {start}: {args.rounds} rounds of {args.steps} steps, the arms taking turns "
          "step by step; min / median / max over the rounds")
    for label in labels:
        for clock in ("cpu", "wall"):
            ratio = result["ratios"].get(label)
            print(f"  {label:<28} {clock:>4} {spread(result['arms'][label][f'{clock}_ms'], '{:.1f}')} "
                  "ms" + (f"; over bare {spread(ratio[clock])}, median's 95% CI "
                          f"{ci_text(ratio[f'{clock}_ci95'])}" if ratio else ""))
    for label, ratio in result["ratios"].items():
        print(f"  {label} / bare per step (cpu): median {ratio['cpu_step_median']:.3f}, 95% CI "
              f"{ci_text(ratio['cpu_step_ci95'])}")
    if result["after_over_before"]:
        change = result["after_over_before"]
        print(f"  {BREADTH} / {BREADTH_BEFORE} (cpu): {spread(change['cpu'])}; per step "
              f"{change['cpu_step_median']:.3f}, 95% CI {ci_text(change['cpu_step_ci95'])}")
    print(f"  {result['load_before']} before; {result['load_after']} after")
    for line in hotspots:
        print(line)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="pairs of runs, taking turns")
    parser.add_argument("--steps", type=int, default=30, help="GRPO steps per run")
    parser.add_argument("--skip", type=int, default=5, help="first step intervals dropped")
    parser.add_argument("--start", nargs="+", choices=tuple(STARTS), default=list(STARTS))
    parser.add_argument("--learning-rate", type=float, default=1e-12)
    parser.add_argument("--spec", default=None,
                        help="breadth's reward spec (default: the default preset's)")
    parser.add_argument("--calibrate", action="store_true",
                        help="add a second bare TRL worker: the harness's own bias, ~1.00")
    parser.add_argument("--before-src", type=Path, default=None,
                        help="add a breadth worker importing breadth from this src/ folder "
                             "(a worktree of the commit before a change), in the same rounds")
    parser.add_argument("--before-note", default="",
                        help="what the --before-src tree is, for the page (e.g. which commits "
                             "it lacks)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="after the rounds, profile one run of breadth's arm into this folder")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the page here")
    # A worker process's arguments (the coordinator starts it; not for the command line).
    parser.add_argument("--worker", choices=(BARE, BREADTH), help=argparse.SUPPRESS)
    parser.add_argument("--dataset", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--policy", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--overrides", type=json.loads, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.overrides, args.dataset, args.policy)
        return
    if args.steps <= args.skip + 2:
        parser.error(f"--steps {args.steps} leaves too few steps after --skip {args.skip}")
    if args.rounds < 3:
        parser.error(f"--rounds must be >= 3 for a min / median / max, got {args.rounds}")
    if args.before_src is not None and not (args.before_src / "breadth").is_dir():
        parser.error(f"--before-src {args.before_src} holds no breadth package (give a src/ "
                     "folder, e.g. of `git worktree add`)")

    import torch
    import transformers

    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    overrides = [*REWARD_BENCH_SETTINGS, *MICRO_DATA, *MICRO_MODEL,
                 f"rl.learning_rate={args.learning_rate}"]
    if args.spec:
        overrides.append(f"rl.reward.spec={args.spec}")
    runs = [measure(args, start, overrides) for start in args.start]
    if args.json:
        args.json.write_text(json.dumps({"runs": runs}, indent=2))
    if args.markdown:
        args.markdown.write_text(markdown(runs))


if __name__ == "__main__":
    main()
