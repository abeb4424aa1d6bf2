"""What SFT and GRPO share: CPU-safe TrainingArguments defaults and a metrics callback."""

from __future__ import annotations

from typing import Any

import torch
from transformers import TrainerCallback


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
