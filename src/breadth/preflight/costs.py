"""What a pipeline run will compute, before it computes: the samples each stage trains on or
generates, the training steps, a time estimate from rates measured on this machine, and a
warning when evaluation generates far more than training did.

Rates are measured, never assumed: each stage that computes appends its throughput to
`$BREADTH_HOME/rates.jsonl` (`record_rate`), keyed by what sets its pace (the stage, the model,
the backend or the training processes). A stage without a record of the same key has no
estimate, and says so.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from breadth.config import PipelineConfig
from breadth.display.grid_progress import duration

log = logging.getLogger("breadth.preflight.costs")

RATES_FILE = "rates.jsonl"
"""Under $BREADTH_HOME: one JSON object per stage that computed (its work and seconds)."""
RATE_HISTORY = 5
"""A rate is the pace of the last this many records of its key (work over seconds, pooled)."""
EVAL_TO_TRAIN_WARNING = 10.0
"""Warn when evaluation generates more than this many times GRPO's completions."""


@dataclass(frozen=True)
class StageWork:
    """One stage's work, from the config and the problem counts alone."""

    stage: str
    """The stage as the pipeline names it: sft, rl, rollout-<model>, search-<model>."""
    what: str
    """How the count comes about, e.g. `100 steps x 8 prompts x 8 generations`."""
    samples: int
    """Examples trained on (sft) or completions generated (the other stages)."""
    steps: int | None
    """Optimisation steps (training stages), else None."""
    work: int
    """What a rate is measured in: examples for sft; for the generating stages completions x
    their maximum new tokens, so a longer completion limit scales the estimate."""
    at_most: bool = False
    """`samples` is an upper bound (search stops a problem once it is solved)."""

    @property
    def kind(self) -> str:
        return self.stage.split("-", 1)[0]


def evaluated_models(config: PipelineConfig) -> list[str]:
    """The models the pipeline rolls out and searches with, in its order."""
    models = ["sft" if config.sft.enabled else "base"]
    return models + (["rl"] if config.rl.enabled else [])


def plan(config: PipelineConfig, num_train: int, num_eval: int) -> list[StageWork]:
    """Every computing stage's work, for `num_train` training and `num_eval` evaluation
    problems (after data limits).

    >>> from breadth.config import load_config
    >>> for w in plan(load_config("default", []), num_train=9000, num_eval=256):
    ...     print(f"{w.stage}: {w.what} = {w.samples}")
    sft: 1,692 steps x batch 64 (12 epochs of 9,000 problems) = 108000
    rl: 300 steps x 32 prompts x 8 generations = 76800
    rollout-sft: 256 problems x 16 samples = 4096
    rollout-rl: 256 problems x 16 samples = 4096
    search-sft: 256 problems x budget 16, evolution + independent = 8192
    search-rl: 256 problems x budget 16, evolution + independent = 8192
    """
    stages = []
    if config.sft.enabled:
        sft = config.sft
        # transformers' Trainer: ceil(batches per epoch x epochs) steps, the last batch short.
        steps = math.ceil(math.ceil(num_train / sft.batch_size) * sft.epochs)
        examples = round(num_train * sft.epochs)
        epochs = f"{sft.epochs:g} epoch{'' if sft.epochs == 1 else 's'}"
        stages.append(StageWork("sft", f"{steps:,} steps x batch {sft.batch_size} ({epochs} of "
                                f"{num_train:,} problems)", examples, steps, examples))
    if config.rl.enabled:
        rl = config.rl
        completions = rl.max_steps * rl.prompts_per_step * rl.num_generations
        stages.append(StageWork(
            "rl", f"{rl.max_steps:,} steps x {rl.prompts_per_step} prompts x "
            f"{rl.num_generations} generations", completions, rl.max_steps,
            completions * rl.max_completion_length))
    rollout, budget = config.rollout, config.evaluation.search_budget
    for model in evaluated_models(config):
        samples = num_eval * rollout.num_samples
        stages.append(StageWork(f"rollout-{model}", f"{num_eval:,} problems x "
                                f"{rollout.num_samples} samples", samples, None,
                                samples * rollout.max_new_tokens))
    if budget > 0:
        for model in evaluated_models(config):
            samples = 2 * num_eval * budget
            stages.append(StageWork(f"search-{model}", f"{num_eval:,} problems x budget {budget}"
                                    ", evolution + independent", samples, None,
                                    samples * rollout.max_new_tokens, at_most=True))
    return stages


def eval_heavy_warning(config: PipelineConfig, stages: list[StageWork]) -> str | None:
    """A warning when evaluation (rollouts and search) generates more than
    EVAL_TO_TRAIN_WARNING times GRPO's completions, naming the keys that lower it; None
    otherwise, and when GRPO is off (then nothing trained by generating)."""
    trained = sum(w.samples for w in stages if w.kind == "rl")
    evaluated = sum(w.samples for w in stages if w.kind in ("rollout", "search"))
    if not trained or evaluated <= EVAL_TO_TRAIN_WARNING * trained:
        return None
    num_eval = next((w.samples // config.rollout.num_samples for w in stages
                     if w.kind == "rollout"), 0)
    keys = [f"data.num_eval (now {num_eval:,} problems)",
            f"rollout.num_samples (now {config.rollout.num_samples})"]
    if config.evaluation.search_budget:
        keys.append(f"evaluation.search_budget (now {config.evaluation.search_budget}; 0 skips "
                    "search)")
    bound = "up to " if any(w.at_most for w in stages if w.kind == "search") else ""
    return (f"evaluation generates {bound}{evaluated:,} samples, {evaluated / trained:.0f}x the "
            f"{trained:,} completions GRPO trains on (more than {EVAL_TO_TRAIN_WARNING:g}x): "
            f"most of the run's time goes to evaluating. To lower it, set " + ", ".join(keys)
            + ".")


# ---------------------------------------------------------------------------------------------
# Measured rates


def rates_path(home: Path | None = None) -> Path:
    return Path(home or os.environ.get("BREADTH_HOME", ".breadth")) / RATES_FILE


def rate_key(config: PipelineConfig, kind: str) -> str:
    """What sets a stage's pace: its kind, the model (a hub model's name, or the tiny model's
    shape), and the rollout backend (generation) or the number of training processes (rl).

    >>> from breadth.config import load_config
    >>> rate_key(load_config("default", []), "rollout")
    'rollout | tiny h128 l2 a4 i256 ctx96 | transformers'
    """
    model = config.model
    name = model.name_or_path or (f"tiny h{model.hidden_size} l{model.num_layers} "
                                  f"a{model.num_heads} i{model.intermediate_size} "
                                  f"ctx{model.max_length}")
    processes = config.rl.num_processes if kind == "rl" else 1
    pace = f"{processes} process{'es' if processes > 1 else ''}" if kind in ("sft", "rl") else (
        config.rollout.backend)
    return f"{kind} | {name} | {pace}"


def record_rate(config: PipelineConfig, work: StageWork, seconds: float, *,
                samples: int | None = None, home: Path | None = None) -> None:
    """Append a stage's measured pace to the rates file. `samples`: what it really drew, when
    the plan's count is an upper bound (search)."""
    if seconds <= 0:
        return
    done = work.samples if samples is None else samples
    units = work.work * done // work.samples if work.samples else 0
    record = {"key": rate_key(config, work.kind), "stage": work.stage, "work": units,
              "samples": done, "seconds": round(seconds, 3),
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = rates_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:  # one short line: appends do not interleave
        handle.write(json.dumps(record) + "\n")


@dataclass(frozen=True)
class Rate:
    per_second: float
    """Work units (see StageWork.work) per second."""
    runs: int
    """How many recorded stages it pools."""


def measured_rates(home: Path | None = None) -> dict[str, Rate]:
    """{rate key: the pooled pace of its last RATE_HISTORY records}; unreadable lines are
    skipped (a file cut by a crash must not stop a dry run)."""
    path = rates_path(home)
    if not path.is_file():
        return {}
    history: dict[str, list[tuple[float, float]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            entry = (float(record["work"]), float(record["seconds"]))
            key = str(record["key"])
        except (ValueError, KeyError, TypeError):
            continue
        if entry[0] > 0 and entry[1] > 0:
            history.setdefault(key, []).append(entry)
    rates = {}
    for key, entries in history.items():
        last = entries[-RATE_HISTORY:]
        rates[key] = Rate(sum(w for w, _ in last) / sum(s for _, s in last), len(last))
    return rates


def estimate_seconds(config: PipelineConfig, work: StageWork,
                     rates: dict[str, Rate]) -> float | None:
    """The stage's time at its measured pace, or None without a measurement."""
    rate = rates.get(rate_key(config, work.kind))
    return None if rate is None else work.work / rate.per_second


def rate_text(config: PipelineConfig, work: StageWork, rates: dict[str, Rate]) -> str:
    """How an estimate was made: the pace and how many runs measured it."""
    rate = rates.get(rate_key(config, work.kind))
    if rate is None:
        return "no measured rate"
    unit = "examples" if work.kind == "sft" else "sample-tokens"
    return f"{rate.per_second:,.0f} {unit}/s over {rate.runs} earlier run(s)"


def dataset_counts(dataset_dir: Path) -> tuple[int, int]:
    """(training, evaluation) problems of a prepared data set, from its manifest."""
    counts = json.loads((Path(dataset_dir) / "manifest.json").read_text())["counts"]
    return int(counts["train"]), int(counts["eval"])


def stage_work(config: PipelineConfig, stage: str, dataset_dir: Path) -> StageWork:
    """The plan of one stage of a run on a prepared data set."""
    works = {w.stage: w for w in plan(config, *dataset_counts(dataset_dir))}
    return works[stage]


@contextmanager
def measured(config: PipelineConfig, stage: str, dataset_dir: Path,
             record: bool = True) -> Iterator[dict[str, int]]:
    """Time the body and record the stage's pace when it finishes (not when it fails, nor
    with `record=False`, e.g. a training resumed half-way). Set `drawn["samples"]` in the
    body where the plan's count is an upper bound (search)."""
    started = time.monotonic()
    drawn: dict[str, int] = {}
    yield drawn
    if not record:
        return
    try:
        record_rate(config, stage_work(config, stage, dataset_dir),
                    time.monotonic() - started, samples=drawn.get("samples"))
    except (OSError, KeyError, ValueError) as error:  # a rate is a nicety: never fail a stage
        log.warning("could not record the pace of %s in %s: %s", stage, rates_path(), error)


def log_plan(config: PipelineConfig, dataset_dir: Path) -> None:
    """The run's work and estimate on the `breadth.preflight.costs` logger (the Prefect run's log),
    with the evaluation warning: said once the data is prepared, before any training. A
    data set without a readable manifest gets a warning instead: a plan never stops a run."""
    try:
        stages = plan(config, *dataset_counts(dataset_dir))
    except (OSError, KeyError, ValueError) as error:
        log.warning("no plan of the run's work: the data set's manifest in %s cannot be read "
                    "(%s)", dataset_dir, error)
        return
    rates = measured_rates()
    for work in stages:
        seconds = estimate_seconds(config, work, rates)
        guess = "no measured rate" if seconds is None else f"about {duration(seconds)}"
        bound = "up to " if work.at_most else ""
        steps = f", {work.steps:,} steps" if work.steps else ""
        log.info("%s: %s = %s%s samples%s; %s", work.stage, work.what, bound,
                 f"{work.samples:,}", steps, guess)
    if warning := eval_heavy_warning(config, stages):
        log.warning(warning)
