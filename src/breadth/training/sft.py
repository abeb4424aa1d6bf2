"""SFT warm start: teach the base policy the output format on the rendered targets (TRL)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from breadth.config import ModelConfig, SFTConfig
from breadth.models.chat import as_messages, render_conversation, uses_chat
from breadth.models.tiny import model_context
from breadth.preflight.sequence_fit import (
    check_rows_fit,
    count_tokens,
    split_lengths,
    tokenizer_counter,
)


def train_sft(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    config: SFTConfig,
    *,
    output_dir: Path,
    seed: int,
    log_metric: Callable[[str, float, int], None] | None = None,
    chat: ModelConfig | None = None,
) -> Any:
    """Fine-tune `model` on (prompt, target) pairs; returns the trained model (also saved).

    `chat` (the run's `model` section; None: its defaults) says whether the prompts go through
    the tokenizer's chat template (`breadth.models.chat`): then TRL gets conversational rows,
    the prompt as messages and the target as the assistant's message, and the loss is on the
    assistant's turn only (its text and the template's end of turn).

    Every prompt + target + eos must fit the model's context: a longer one is refused here,
    never cut (TRL would cut it at `max_length` without a word, and without a `max_length` it
    ran positions past the model's context).
    """
    from datasets import Dataset
    from trl import SFTConfig as TrlSFTConfig
    from trl import SFTTrainer

    # Imported on use: trainer_setup loads torch and transformers, which the tests that
    # import this module but train nothing do not need (grpo.build_grpo_config's reason).
    from breadth.training.trainer_setup import MetricsCallback, device_arguments, show_progress

    max_length = model_context(model.config) or tokenizer.model_max_length
    chat_on = uses_chat(tokenizer, chat)
    if chat_on:  # the whole conversation as TRL tokenizes it, the template's turns included
        totals = count_tokens([render_conversation(tokenizer, row["prompt"], row["target"], chat)
                               for row in rows], tokenizer, special=False)
    else:
        totals = split_lengths("train", rows, tokenizer_counter(tokenizer)).sequence
    check_rows_fit(totals, max_length,
                   what="SFT's conversation" if chat_on else "SFT's prompt + target + <eos>",
                   rows=rows,
                   fix="raise model.max_length (the tiny model) or give shorter problems; "
                       "`breadth run` names every limit and the values that fit")

    # TRL's prompt-completion format, loss on the completion only (completion_only_loss):
    # plain text, eos appended by TRL; or conversational, which TRL renders with the chat
    # template, the completion being the assistant's turn with the template's end of turn
    # (assistant_only_loss would need {% generation %} markers in the template).
    dataset = Dataset.from_list(
        [{"prompt": as_messages(row["prompt"], chat),
          "completion": [{"role": "assistant", "content": row["target"]}]} if chat_on
         else {"prompt": row["prompt"], "completion": row["target"]} for row in rows]
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
        completion_only_loss=True,
        assistant_only_loss=False,
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
