"""GRPO with TRL under a diversity-aware reward spec. Customised through config, reward
functions and callbacks, plus one override: terms placed on the advantage (the outcome-based
exploration bonuses, as published) are added after TRL normalises the rewards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from breadth.config import RLConfig
from breadth.training.checkpointing import (
    CHECKPOINT_COMPLETE,
    newest_whole_checkpoint,
    write_marker,
)
from breadth.training.trainer_setup import MetricsCallback, device_arguments, show_progress
from breadth.training.trl_vllm import trl_vllm_server_arguments

# Columns the reward functions read; everything else (e.g. `target`) stays out of TRL's way.
REWARD_COLUMNS = ("problem_id", "answer", "format", "task", "options", "letter", "meta", "split")


def newest_checkpoint(output_dir: Path) -> Path | None:
    """The highest-step `checkpoint-N` folder whose files all match its completion marker.

    transformers writes trainer_state.json before the `on_save` callbacks write the reward
    state: a kill between the two leaves a folder without the marker, which is skipped; a
    damaged folder is named in a warning and set aside (see `breadth.training.checkpointing`).
    """
    return newest_whole_checkpoint(output_dir)[0]


def add_advantage_terms(
    advantages: Any, terms: Sequence[tuple[Any, float]]
) -> tuple[Any, dict[str, float]]:
    """`advantages + sum(weight * term values)` for the terms placed on the advantage, and the
    std of each term's added values (`breadth/<name>/advantage_std`: 0 means it shaped nothing).

    Each term left its values for exactly these completions (this process's slice, in order)
    when TRL called it during scoring; a missing or misaligned array is a bug, not a no-op.
    """
    import torch

    stats = {}
    for term, weight in terms:
        values = term.take_pending_advantage()
        if values is None or len(values) != advantages.shape[0]:
            raise RuntimeError(
                f"reward {term.__name__}: expected {advantages.shape[0]} advantage-placed values "
                f"from the scoring of this batch, got {None if values is None else len(values)}"
            )
        bonus = weight * torch.as_tensor(values, dtype=advantages.dtype, device=advantages.device)
        advantages = advantages + bonus.reshape(-1, *([1] * (advantages.dim() - 1)))
        stats[f"breadth/{term.__name__}/advantage_std"] = float(bonus.std(unbiased=False))
    return advantages, stats


def _trainer_class(advantage_terms: Sequence[tuple[Any, float]]) -> Any:
    from trl import GRPOTrainer

    if not advantage_terms:
        return GRPOTrainer

    class AdvantageShapedGRPOTrainer(GRPOTrainer):
        # TRL 1.16 has no hook between its advantage computation and the loss; this wraps the
        # one method that returns the advantages of a generation batch.
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            output["advantages"], stats = add_advantage_terms(output["advantages"],
                                                              advantage_terms)  # fmt: skip
            mode = "train" if self.model.training else "eval"
            for key, value in stats.items():  # logged with TRL's own metrics, per step
                self._metrics[mode][key].append(value)
            return output

    return AdvantageShapedGRPOTrainer


def build_grpo_config(config: RLConfig, *, output_dir: Path, seed: int, overrides: dict) -> Any:
    """The one place a `trl.GRPOConfig` is built from breadth's config.

    TRL's defaults (beta, loss_type, scale_rewards, learning rate, ...) are all set explicitly:
    an experiment must mean what its config says, not what a TRL release defaults to.
    """
    import torch
    from trl import GRPOConfig

    batch = config.prompts_per_step * config.num_generations
    values: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        top_p=1.0,
        beta=config.beta,
        loss_type=config.loss_type,
        scale_rewards=config.scale_rewards,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high if config.epsilon_high is not None else config.epsilon,
        top_entropy_quantile=config.top_entropy_quantile,
        entropy_coef=config.entropy_coef,
        use_adaptive_entropy=config.adaptive_entropy,
        entropy_target=config.entropy_target,
        save_strategy="steps",
        save_steps=config.save_steps,
        seed=seed,
        data_seed=seed,
        shuffle_dataset=True,
        log_completions=False,
        **device_arguments(),
    )
    values.update(trl_vllm_server_arguments(config, cuda_available=torch.cuda.is_available()))
    # Reward terms whose formulas need it (darling, passk) override e.g. scale_rewards.
    values.update(overrides)
    return GRPOConfig(**values)


def train_grpo(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    config: RLConfig,
    *,
    output_dir: Path,
    seed: int,
    log_metric: Callable[[str, float, int], None] | None = None,
    on_checkpoint: Callable[[Path, int], None] | None = None,
    resume_from: Path | None = None,
) -> Any:
    """Train `model` with GRPO on the rendered `rows`; returns the trained model (also saved).

    `on_checkpoint(path, step)` is called after each checkpoint is written (the pipeline uploads
    it to S3); `resume_from` is a local checkpoint folder to continue from (trainer state,
    optimizer, RNG, data order and reward state).
    """
    from datasets import Dataset
    from transformers import TrainerCallback

    from breadth.rewards.callback import RewardStateCallback, load_reward_state
    from breadth.rewards.trl_adapter import build_trl_rewards

    rewards = build_trl_rewards(config.reward, seed=seed, num_generations=config.num_generations)
    if any(row.get("format") == "free_form" for row in rows):
        from breadth.data.verifiers import warm_up_symbolic

        warm_up_symbolic()  # the verifier's one-time imports, before the first timed step
    args = build_grpo_config(config, output_dir=output_dir, seed=seed,
                             overrides={**rewards.grpo_overrides,
                                        "reward_weights": rewards.reward_weights})  # fmt: skip
    dataset = Dataset.from_list(
        [{"prompt": row["prompt"], **{c: row[c] for c in REWARD_COLUMNS}} for row in rows]
    )

    class _FinishCheckpoint(TrainerCallback):
        # Runs after RewardStateCallback: mark the folder complete, then upload it (marker
        # included, so a downloaded copy is resumable too).
        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if args.should_save:
                write_marker(folder, CHECKPOINT_COMPLETE, step=state.global_step)
            if on_checkpoint is not None:
                on_checkpoint(folder, state.global_step)

    callbacks: list[Any] = [RewardStateCallback(rewards.stateful), _FinishCheckpoint()]
    if log_metric:
        callbacks.insert(0, MetricsCallback(log_metric, "train/"))
    trainer = _trainer_class(rewards.advantage_terms)(
        model=model, reward_funcs=rewards.reward_funcs, args=args, train_dataset=dataset,
        processing_class=tokenizer, callbacks=callbacks,
    )  # fmt: skip
    show_progress(trainer, "rl", output_dir)
    if resume_from is not None:
        load_reward_state(rewards.stateful, resume_from)
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    trainer.save_model(str(output_dir / "final"))
    tokenizer.save_pretrained(str(output_dir / "final"))
    return trainer.model
