"""What a pipeline run says in its log as it goes: the config at the start, then for each stage
whether it ran here or came from the cache, and its headline figures.

These lines go to the `breadth` logger (`breadth.run`); the flow attaches that logger to
Prefect's run log, so a run started from the UI shows them there, and `breadth run` prints
them. Prefect itself logged only "Finished in state Completed()".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from breadth.config import PipelineConfig
from breadth.tracking.names import cached_label, differences, preset_config, shown_value
from breadth.tracking.recent import headline
from breadth.tracking.rest import RunRecord
from breadth.tracking.runs import RunHandle

log = logging.getLogger("breadth.run")

# The figures each stage's line shows, those its run logged (the stage name without its
# model suffix: rollout-sft -> rollout).
STAGE_FIGURES = {
    "prepare": ("rows/train", "rows/eval"),
    "sft": ("sft/train_loss", "sft/mean_token_accuracy"),
    "rl": ("train/reward", "train/loss"),
    "search": ("search/evolutionary_success", "search/independent_success"),
    "evaluate": ("eval/pass_at_1", "eval/distinct_outcomes"),
}


def config_summary(config: PipelineConfig, run_name: str) -> str:
    """The run's config in a few lines: what it trains on, how, and what differs from its preset.

    >>> from breadth.config import load_config
    >>> print(config_summary(load_config("default", ["rl.max_steps=60", "sft.epochs=2"]),
    ...                      "x").splitlines()[-1])
      differs from preset default: sft.epochs=2, rl.max_steps=60
    """
    data, rl = config.data, config.rl
    model = config.model.name_or_path or "tiny model from scratch"
    counts = f"train {data.num_train or 'default'}, eval {data.num_eval or 'default'} problems"
    training = [f"SFT {config.sft.epochs:g} epochs" if config.sft.enabled else "no SFT",
                f"GRPO {rl.max_steps} steps, {rl.num_generations} per group, reward {rl.reward.spec}"
                if rl.enabled else "no GRPO"]
    lines = [
        (f"breadth run {run_name} (preset {config.preset}, seed {config.seed}, "
        f"config {config.content_hash()[:12]})"),
        f"  data: {data.source}"
        + (f", eval from {data.eval_source}" if data.eval_source else "")
        + f", {data.format}, {counts}",
        f"  model: {model}; {'; '.join(training)}",
        (f"  evaluation: {config.rollout.num_samples} samples per problem, search budget "
        f"{config.evaluation.search_budget}"),
    ]
    base = preset_config(config.preset)
    if base is not None:
        changed = differences(config, base)
        shown = ", ".join(f"{key}={shown_value(key, value)}" for key, value in changed.items())
        lines.append(f"  differs from preset {config.preset}: {shown or 'nothing'}")
    return "\n".join(lines)


def figures(stage: str, metrics: Mapping[str, float]) -> str:
    """The stage's headline figures from its run's metrics, e.g. `train/loss 1.23`.

    >>> figures("rollout-sft", {}), figures("sft", {"sft/train_loss": 1.2345, "other": 1.0})
    ('', 'sft/train_loss 1.23')
    """
    wanted = STAGE_FIGURES.get(stage.split("-", 1)[0], ())
    return ", ".join(f"{name} {metrics[name]:.3g}" for name in wanted if name in metrics)


class StageLog:
    """Logs each stage as the flow gets its result: a cache hit (and from which run) or a miss
    (computed here, in how long), with its headline figures. Keeps the stage runs it looked up
    ({stage: RunRecord}), so the parent's provenance tags need not look them up again."""

    def __init__(self, parent: RunHandle):
        self.parent = parent
        self.records: dict[str, RunRecord] = {}

    def finished(self, stage: str, stage_run_id: str, key: str) -> None:
        if not stage_run_id:  # no run of its own (the base model built from scratch)
            return
        try:
            record = self.parent.get_run(stage_run_id)
        except Exception as error:  # noqa: BLE001 - a log line is never a reason to fail a run
            log.warning("%s: could not read its MLflow run %s: %s", stage, stage_run_id, error)
            return
        self.records[stage] = record
        shown = figures(stage, record.metrics)
        producer = record.tags.get("mlflow.parentRunId", "")
        if producer and producer != self.parent.run_id:
            log.info("%s: cache hit (key %s), reused from pipeline run %s%s", stage, key,
                     producer, f"; {shown}" if shown else "")
            return
        took = ""
        if record.start_time and record.end_time:
            took = f" in {(record.end_time - record.start_time) / 1000:.1f} s"
        log.info("%s: cache miss, computed here%s%s", stage, took, f"; {shown}" if shown else "")

    def results(self, models: Mapping[str, Mapping[str, float]], cached: int, stages: int) -> None:
        """The run's headline: the final model's figures ({model: {metric: value}}, as the
        evaluate stage gives them) and how many of its stages came from the cache."""
        flat = {f"{model}/{name}": value for model, metrics in models.items()
                for name, value in metrics.items()}
        model, figures_ = headline(flat)
        shown = ", ".join(f"{name} {value:.3g}" for name, value in figures_.items())
        log.info("result: %s %s (stages from the cache: %s)", model or "no model",
                 shown or "no figures", cached_label(cached, stages))
