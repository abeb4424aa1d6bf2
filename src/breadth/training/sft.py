"""SFT warm start: teach the base policy the output format on the rendered targets (TRL)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from breadth.config import SFTConfig
from breadth.models.tiny import model_context
from breadth.preflight.sequence_fit import check_rows_fit, split_lengths, tokenizer_counter
from breadth.training.trainer_setup import MetricsCallback, device_arguments, show_progress


def train_sft(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    config: SFTConfig,
    *,
    output_dir: Path,
    seed: int,
    log_metric: Callable[[str, float, int], None] | None = None,
) -> Any:
    """Fine-tune `model` on (prompt, target) pairs; returns the trained model (also saved).

    Every prompt + target + eos must fit the model's context: a longer one is refused here,
    never cut (TRL would cut it at `max_length` without a word, and without a `max_length` it
    ran positions past the model's context).
    """
    from datasets import Dataset
    from trl import SFTConfig as TrlSFTConfig
    from trl import SFTTrainer

    max_length = model_context(model.config) or tokenizer.model_max_length
    check_rows_fit(split_lengths("train", rows, tokenizer_counter(tokenizer)).sequence, max_length,
                   what="SFT's prompt + target + <eos>", rows=rows,
                   fix="raise model.max_length (the tiny model) or give shorter problems; "
                       "`breadth run` names every limit and the values that fit")

    # TRL's prompt-completion format: loss on the completion only, eos appended by TRL.
    dataset = Dataset.from_list(
        [{"prompt": row["prompt"], "completion": row["target"]} for row in rows]
    )
    args = TrlSFTConfig(
        output_dir=str(output_dir),
        num_train_epochs=config.epochs,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        lr_scheduler_type="cosine",
        warmup_steps=10,
        seed=seed,
        data_seed=seed,
        save_strategy="no",
        max_length=max_length,  # checked above: nothing reaches it, so nothing is cut
        **device_arguments(),
    )
    callbacks = [MetricsCallback(log_metric, "sft/")] if log_metric else []
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
        callbacks=callbacks,
    )
    show_progress(trainer, "sft", output_dir)
    trainer.train()
    trainer.save_model(str(output_dir / "final"))
    tokenizer.save_pretrained(str(output_dir / "final"))
    return trainer.model
