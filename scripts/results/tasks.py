"""Measure each task and format on a preset's model and write docs/results/tasks.md.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/results/tasks.py
        [--rows chain:free_form,chain:mcq,pairs:free_form:sft.epochs=4] [--num-eval 64]
        [--n 64] [--grpo-steps 3] [--out FILE]

For every row TASK:FORMAT[:KEY=VALUE;...] (the overrides say where a row deviates from its
preset, e.g. fewer SFT epochs to fit the time): prepare the task's preset (`PRESETS`) in that format, build its
model, SFT it (seconds per step), sample n completions per evaluation problem (pass@1, pass@n,
share of problems with 0 < p < 1, mean completion tokens), sample G completions for the first
`--signal-problems` training problems GRPO draws from (share of groups whose rewards differ),
and run `--grpo-steps` GRPO steps (seconds per step, and TRL's frac_reward_zero_std). Valid
answers per problem come from the task's own enumeration (`Task.valid_answers`). The targets
of issue #25 are checked against the figures and printed as met or as a shortfall. Every
registered synthetic task and format also gets a data-only row (no model): target tokens and
valid answers per problem.
Stage functions (`breadth.stages`) only: no stack, no tracking. Each row's work folder is
keyed by its config's hash and its prepared problems' bytes: a re-run reuses the SFT model and
its eval rollouts (SFT's seconds per step come from the trainer's own log, `train_log.jsonl`,
either way).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from breadth import stages
from breadth.config import load_config
from breadth.data.generators import get_task
from breadth.data.records import Record
from breadth.evaluation.metrics import pass_at_k
from breadth.training.grpo import grpo_rows
from breadth.training.trainer_setup import TRAIN_LOG

PRESETS = {"chain": ["reasoning"], "pairs": ["multi"], "arithmetic": ["study"],
           "countdown": ["study", "data.source=synthetic:countdown",
                         "rl.max_completion_length=16", "rollout.max_new_tokens=16"]}
"""Each task's preset (and overrides): the study model on the task."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="chain:free_form,chain:mcq,pairs:free_form",
                        help="TASK:FORMAT[:KEY=VALUE;...] rows to train and sample, comma-separated")
    parser.add_argument("--num-eval", type=int, default=64)
    parser.add_argument("--n", type=int, default=64, help="samples per evaluation problem")
    parser.add_argument("--signal-problems", type=int, default=64)
    parser.add_argument("--grpo-steps", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--work", type=Path, default=Path(".breadth/measure-tasks"))
    parser.add_argument("--out", type=Path, default=Path("docs/results/tasks.md"))
    args = parser.parse_args()
    started = time.monotonic()
    load_before = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    data = data_rows()
    results: list[dict[str, Any]] = []
    for spec in args.rows.split(","):
        task, fmt, *rest = spec.split(":", 2)
        extra = [item for item in (rest[0].split(";") if rest else []) if item]
        print(f"== {task} {fmt} {extra}", flush=True)
        results.append(measure(task, fmt, extra, args))
        print(json.dumps(results[-1]), flush=True)
        # Written after every row, so a run cut short still leaves what it measured.
        wall = time.monotonic() - started
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report(results, data, args, wall, commit, load_before,
                                   os.getloadavg()), encoding="utf-8")
    print(f"wrote {args.out} in {(time.monotonic() - started) / 60:.1f} min")


def measure(task: str, fmt: str, extra: list[str], args: argparse.Namespace) -> dict[str, Any]:
    preset, *overrides = PRESETS[task]
    config = load_config(preset, [*overrides, f"data.format={fmt}",
                                  f"data.num_eval={args.num_eval}",
                                  f"rollout.num_samples={args.n}", *args.overrides, *extra])
    # Keyed by the prepared problems as well as the config: a change to the data code (a new
    # split) must train afresh, not reuse an SFT model of the old problems. Preparing takes
    # seconds.
    prepared = args.work / "prepared" / f"{task}-{fmt}-{config.content_hash()[:10]}"
    shutil.rmtree(prepared, ignore_errors=True)
    problems = stages.prepare_stage(config, prepared).content_hash[:10]
    work = args.work / f"{task}-{fmt}-{config.content_hash()[:10]}-{problems}"
    policy = work / "sft" / "final"
    reused = (policy / "model.safetensors").exists()
    if not reused:
        shutil.rmtree(work / "data", ignore_errors=True)
        shutil.copytree(prepared, work / "data")
        stages.init_model_stage(config, work / "base")
        stages.sft_stage(config, work / "data", work / "base", work / "sft")
    sft_steps, sft_seconds = _sft_runtime(work / "sft" / TRAIN_LOG)
    if not (work / "eval.parquet").exists():
        stages.rollout_stage(config, work / "data", policy, "sft", work / "eval.parquet",
                             progress=False)
    rollouts = pd.read_parquet(work / "eval.parquet")
    per_problem = rollouts.groupby("problem_id")["correct"].agg(["count", "sum"])
    n, c = per_problem["count"].to_numpy(), per_problem["sum"].to_numpy()
    share = c / n

    signal = _signal(config, work, policy, args.signal_problems)
    grpo = _grpo(config, work, policy, args.grpo_steps)
    eval_rows = stages.read_rows(work / "data" / "eval.parquet")
    answers = [_valid_answers(row) for row in eval_rows]
    known = [a for a in answers if a is not None]
    return {
        "task": task, "format": fmt, "preset": " ".join([*PRESETS[task], *extra]),
        "problems": len(n), "n": int(n.min()),
        "chance": 1 / config.data.num_options if fmt == "mcq" else 0.0,
        "pass1": float(np.mean(pass_at_k(n, c, 1))),
        "passn": float(np.mean(pass_at_k(n, c, int(n.min())))),
        "share_mixed": float(np.mean((share > 0) & (share < 1))),
        "mean_tokens": float(rollouts["token_ids"].map(len).mean()),
        "max_tokens": int(rollouts["token_ids"].map(len).max()),
        "cut_share": float((rollouts["finish_reason"] == "length").mean()),
        "signal": signal,
        "valid_answers_median": statistics.median(known) if known else None,
        "valid_answers_2plus": float(np.mean([a >= 2 for a in known])) if known else None,
        "sft_s_per_step": sft_seconds / max(1, sft_steps),
        "sft_steps": sft_steps,
        "reused": reused,
        **grpo,
    }


def _sft_runtime(log: Path) -> tuple[int, float]:
    """(steps, seconds) of the SFT run, from the trainer's closing line in its log."""
    for line in reversed(log.read_text().splitlines()):
        entry = json.loads(line)
        if "train_runtime" in entry:
            return int(entry["step"]), float(entry["train_runtime"])
    raise ValueError(f"{log} has no train_runtime line: the SFT run did not finish; delete "
                     f"{log.parent.parent} and re-run")


def _signal(config: Any, work: Path, policy: Path, problems: int) -> float:
    """Share of GRPO groups (G = rl.num_generations samples of one training problem, at the
    start of RL) whose correctness rewards differ."""
    rows = grpo_rows(config.rl, work / "data")[:problems]
    pool = work / "signal-data"
    pool.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(pool / "eval.parquet", index=False)
    group = config.model_copy(deep=True)
    group.rollout.num_samples = config.rl.num_generations
    frame = pd.read_parquet(stages.rollout_stage(group, pool, policy, "sft",
                                                 work / "signal.parquet", progress=False))
    differs = frame.groupby("problem_id")["correct"].agg(lambda s: s.nunique() > 1)
    return float(differs.mean())


def _grpo(config: Any, work: Path, policy: Path, steps: int) -> dict[str, Any]:
    if steps <= 0:
        return {"grpo_s_per_step": None, "trl_signal": None}
    # A fresh folder: rl_stage resumes from a checkpoint it finds, and one left by an earlier
    # invocation would make these steps a continuation (and their time a different thing).
    shutil.rmtree(work / "grpo", ignore_errors=True)
    short = config.model_copy(deep=True)
    short.rl.max_steps = steps
    short.rl.save_steps = steps
    logged: dict[str, list[float]] = {}
    started = time.monotonic()
    stages.rl_stage(short, work / "data", policy, work / "grpo",
                    log_metric=lambda name, value, step: logged.setdefault(name, []).append(value))
    seconds = time.monotonic() - started
    zero_std = next((v for k, v in logged.items() if k.endswith("frac_reward_zero_std")), None)
    return {"grpo_s_per_step": seconds / steps,
            "trl_signal": 1 - float(np.mean(zero_std)) if zero_std else None}


def _valid_answers(row: dict[str, Any]) -> int | None:
    record = Record.create(source=row["source"], split=row["split"], question=row["question"],
                           answer=row["answer"], solution=row["solution"],
                           difficulty=row["difficulty"], task=row["task"],
                           meta=json.loads(row["meta"]))
    answers = get_task(record.task).valid_answers(record)
    return None if answers is None else len(answers)


def _targets(r: dict[str, Any]) -> list[str]:
    """Issue #25's targets for this row, each met or a measured shortfall."""
    def verdict(ok: bool, text: str) -> str:
        return f"{'met' if ok else 'SHORTFALL'}: {text}"

    out = []
    if r["task"] == "chain" and r["format"] == "free_form":
        out.append(verdict(0.2 <= r["pass1"] <= 0.6, f"SFT pass@1 {r['pass1']:.3f} in [0.2, 0.6]"))
        out.append(verdict(r["share_mixed"] >= 0.5,
                           f"0<p<1 at n={r['n']} on {r['share_mixed']:.0%} of problems (>= 50%)"))
        out.append(verdict(r["signal"] >= 0.5,
                           f"{r['signal']:.0%} of GRPO groups with signal (>= 50%)"))
        out.append(verdict(10 <= r["mean_tokens"] and r["max_tokens"] <= 40,
                           f"completions {r['mean_tokens']:.1f} tokens on average, at most "
                           f"{r['max_tokens']} (10-40)"))
    if r["task"] == "pairs" and r["format"] == "free_form":
        share = r["valid_answers_2plus"] or 0.0
        out.append(verdict(share >= 0.8, f">= 2 valid answers on {share:.0%} of problems "
                                         "(>= 80%)"))
    if r["format"] == "mcq" and r["task"] in ("chain", "pairs"):
        corrected = (r["pass1"] - r["chance"]) / (1 - r["chance"])
        out.append(verdict(corrected >= 0.15, f"chance-corrected mcq pass@1 {corrected:.3f} "
                                              "(>= 0.15)"))
    return out


def data_rows(num: int = 300) -> list[dict[str, Any]]:
    """Per synthetic task, format and level, from `num` generated eval problems (no model):
    target tokens (one per character, plus EOS) and valid answers per problem."""
    from breadth.data.formats import RenderError, render
    from breadth.data.generators import TASKS
    from breadth.data.records import FORMATS
    from breadth.data.synthetic import draw_level

    rows = []
    for name, task in TASKS.items():
        for level in task.levels:
            records = draw_level(task, num, seed=0, level=level, split="eval")
            answers = [task.valid_answers(r) for r in records]
            counts = [len(a) for a in answers if a is not None]
            for fmt in FORMATS:
                tokens = []
                for record in records:
                    try:
                        tokens.append(len(render(record, fmt, reasoning=True)["target"]) + 1)
                    except RenderError:
                        pass  # counted below: a problem this format cannot show
                rows.append({
                    "task": name, "format": fmt, "level": level, "problems": len(records),
                    "unrenderable": len(records) - len(tokens),
                    "tokens": (min(tokens), statistics.mean(tokens), max(tokens)),
                    "answers": (statistics.median(counts), float(np.mean([c >= 2 for c in counts])),
                                max(counts)) if counts else None,
                })
    return rows


def report(results: list[dict[str, Any]], data: list[dict[str, Any]], args: argparse.Namespace,
           wall: float, commit: str, load_before: tuple[float, ...],
           load_after: tuple[float, ...]) -> str:
    command = ("OMP_NUM_THREADS=1 .venv/bin/python scripts/results/tasks.py "
               f"--rows {args.rows} --num-eval {args.num_eval} "
               f"--n {args.n} --signal-problems {args.signal_problems} "
               f"--grpo-steps {args.grpo_steps}"
               + "".join(f" --set {o}" for o in args.overrides))
    lines = [
        "# Tasks, measured",
        "",
        ("Written by `scripts/results/tasks.py` (do not edit by hand). Each row: the task's "
         "preset, SFT from scratch, then the SFT model sampled; the study model "
         "(presets/study.yaml: hidden 192, 3 layers, ~1.3M parameters) throughout."),
        "",
        f"- command: `{command}`",
        (f"- commit: {commit}; machine: {platform.machine()}, `nproc` = {os.cpu_count()}, "
         f"load average {load_before[0]:.1f} before / {load_after[0]:.1f} after (shared "
         f"machine); wall time {wall / 60:.1f} min"),
        (f"- eval problems per row: {args.num_eval} (the study evaluates 128; fewer here to fit "
         f"the time), n = {args.n} samples each; GRPO signal from G = rl.num_generations "
         f"samples of the first {args.signal_problems} training problems GRPO draws; "
         f"{args.grpo_steps} GRPO steps for the timing and TRL's `frac_reward_zero_std`."),
        "",
        ("| task | format | preset | SFT pass@1 | pass@n | 0<p<1 | groups with signal (G "
         "samples) | groups with signal (TRL, GRPO steps) | mean / max completion tokens | cut "
         "at the limit | valid answers per problem (median; share >= 2) | s/step SFT | s/step "
         "GRPO |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        answers = ("not enumerated" if r["valid_answers_median"] is None else
                   f"{r['valid_answers_median']:g}; {r['valid_answers_2plus']:.0%}")
        trl = "-" if r["trl_signal"] is None else f"{r['trl_signal']:.0%}"
        grpo = "-" if r["grpo_s_per_step"] is None else f"{r['grpo_s_per_step']:.2f}"
        chance = f" (chance {r['chance']:.2f})" if r["format"] == "mcq" else ""
        # A reused SFT ran in an earlier invocation: its time is not in this page's wall time.
        reused = "; SFT and its rollouts reused from an earlier run" if r.get("reused") else ""
        lines.append(
            f"| {r['task']} | {r['format']} | {r['preset']} | {r['pass1']:.3f}{chance} | "
            f"{r['passn']:.3f} (n={r['n']}) | {r['share_mixed']:.0%} | {r['signal']:.0%} | {trl} | "
            f"{r['mean_tokens']:.1f} / {r['max_tokens']} | {r['cut_share']:.1%} | {answers} | "
            f"{r['sft_s_per_step']:.2f} ({r['sft_steps']} steps{reused}) | {grpo} |")
    lines += ["", "## Targets (issue #25)", ""]
    for r in results:
        lines += [f"- {r['task']} {r['format']}: {t}" for t in _targets(r)]
    lines += ["", "## Every task's data (no model)", "",
              ("Targets with a trace (`data.reasoning=true`), up to 300 generated eval "
               "problems per level (fewer where a level holds fewer: the problems column), "
               "seed 0; a token is a character, plus EOS."), "",
              ("| task | format | level | problems | target tokens min / mean / max "
               "| valid answers per problem: median; share >= 2; max |"),
              "|---|---|---|---|---|---|"]
    for d in data:
        low, mean, high = d["tokens"]
        answers = ("not enumerated" if d["answers"] is None else
                   f"{d['answers'][0]:g}; {d['answers'][1]:.0%}; {d['answers'][2]}")
        cannot = f" ({d['unrenderable']} cannot render)" if d["unrenderable"] else ""
        lines.append(f"| {d['task']} | {d['format']} | {d['level']} | {d['problems']}{cannot} | "
                     f"{low} / {mean:.1f} / "
                     f"{high} | {answers} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
