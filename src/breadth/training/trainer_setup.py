"""What SFT and GRPO share: CPU-safe TrainingArguments defaults, a metrics callback, and the
progress display (one bar per stage; every log line to a file)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from breadth.display.progress import StageBar


def device_arguments() -> dict[str, Any]:
    """TRL defaults bf16=True and gradient checkpointing on; neither works on a CPU."""
    on_gpu = torch.cuda.is_available()
    return {
        "use_cpu": not on_gpu,
        "bf16": on_gpu and torch.cuda.is_bf16_supported(),
        "fp16": False,
        "gradient_checkpointing": False,
        "report_to": "none",
        "dataloader_num_workers": 0,
        "disable_tqdm": False,
        "logging_steps": 1,
        "save_only_model": False,
    }


class MetricsCallback(TrainerCallback):
    """Forward trainer logs to a sink `(name, value, step)` under a prefix (e.g. `train/`).

    We log ourselves instead of transformers' MLflowCallback: it would log every
    TrainingArgument as a param of whatever run is active and drop long values.
    """

    def __init__(self, sink: Any, prefix: str = "train/"):
        self.sink = sink
        self.prefix = prefix

    def on_log(self, args, state, control, logs=None, **kwargs):
        for name, value in (logs or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.sink(self.prefix + name.replace("@", "_at_"), float(value), state.global_step)


# The stage's full training log, one JSON object per logging step, in its work dir.
TRAIN_LOG = "train_log.jsonl"
# What the bar shows (log key -> label): the rest is in the log file and in MLflow.
KEY_FIGURES = {"loss": "loss", "reward": "reward", "mean_token_accuracy": "acc",
               "entropy": "entropy"}


class StageProgress(TrainerCallback):
    """One progress bar for a training stage, with its key figures and ETA, instead of
    transformers' bar that prints every step's log dict under itself (it floods terminals and
    worker logs); a log line at every tenth of the steps (`breadth.display.progress.StageBar`).

    Every log dict is appended, whole, to `log_file` (JSON lines with the step); MLflow gets
    the numbers from `MetricsCallback`. Only the main process draws and writes.
    """

    def __init__(self, stage: str, log_file: Path):
        self.stage = stage
        self.log_file = Path(log_file)
        self.bar: Any = None
        self.step = 0

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        self.step = state.global_step  # a resumed run starts at its checkpoint's step
        self.bar = StageBar(self.stage, state.max_steps, "step", initial=self.step)

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(state.global_step - self.step)
            self.step = state.global_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": state.global_step, **logs}, default=str) + "\n")
        figures = {label: f"{logs[key]:.3g}" for key, label in KEY_FIGURES.items()
                   if isinstance(logs.get(key), (int, float)) and math.isfinite(logs[key])}
        if self.bar is not None and figures:
            self.bar.set_postfix(figures)

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def show_progress(trainer: Any, stage: str, work_dir: Path) -> None:
    """Replace the trainer's progress output (transformers' bar and log printer) by
    `StageProgress`, logging to `work_dir / TRAIN_LOG`."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(StageProgress(stage, Path(work_dir) / TRAIN_LOG))
