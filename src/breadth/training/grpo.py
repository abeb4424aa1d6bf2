"""GRPO with TRL under a diversity-aware reward spec. Customised through config, reward
functions and callbacks, plus one override: terms placed on the advantage (the outcome-based
exploration bonuses, as published) are added after TRL normalises the rewards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from breadth.config import ModelConfig, RLConfig
from breadth.data.prepare import read_rows
from breadth.data.verifiers import warm_up_symbolic
from breadth.models.chat import as_messages, render_prompts, uses_chat
from breadth.models.tiny import model_context
from breadth.preflight.sequence_fit import check_rows_fit, count_tokens
from breadth.rewards.trl_adapter import build_trl_rewards
from breadth.training.checkpointing import (
    CHECKPOINT_COMPLETE,
    checkpoint_step,
    newest_whole_checkpoint,
    write_marker,
)
from breadth.training.distributed import (
    gather_objects,
    launched_world_size,
    process_rank,
    wait_for_all_processes,
)
from breadth.training.trl_vllm import (
    TRLVLLMModeError,
    trl_vllm_arguments,
    trl_vllm_refusal_here,
)

# Columns the reward functions read; everything else (e.g. `target`) stays out of TRL's way.
REWARD_COLUMNS = ("problem_id", "answer", "format", "task", "options", "letter", "meta", "split")
ROW_INDEX_COLUMN = "reward_row"
"""The dataset's column naming each prompt's row: TRL's data loader fetches and copies this one
integer at every step instead of the eight reward columns, which join the batch after it
(`with_reward_columns`); about 1 ms a step (benchmarks/bench_reward_path_cpu.py)."""


def grpo_rows(config: RLConfig, dataset_dir: Path) -> list[dict[str, Any]]:
    """The training rows GRPO draws its prompts from (the first rl.num_problems, if set)."""
    rows = read_rows(Path(dataset_dir) / "train.parquet")
    return rows[: config.num_problems] if config.num_problems else rows


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


def with_reward_columns(inputs: Sequence[dict[str, Any]],
                        reward_rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A generation batch's inputs with each row's reward columns in place of its index
    (`ROW_INDEX_COLUMN`): what the reward functions get, as if the dataset carried them.

    >>> with_reward_columns([{"prompt": "1+1=", "reward_row": 1}], [{"answer": "3"}, {"answer": "2"}])
    [{'prompt': '1+1=', 'answer': '2'}]
    """
    return [{**{key: value for key, value in example.items() if key != ROW_INDEX_COLUMN},
             **reward_rows[example[ROW_INDEX_COLUMN]]} for example in inputs]


def _trainer_class(advantage_terms: Sequence[tuple[Any, float]]) -> Any:
    from trl import GRPOTrainer

    class BreadthGRPOTrainer(GRPOTrainer):
        reward_rows: Sequence[dict[str, Any]] = ()
        """Each training row's reward columns, in the dataset's order (set by `train_grpo`)."""

        # TRL 1.16 has no hook between its advantage computation and the loss; this wraps the
        # one method that returns the advantages of a generation batch.
        def _generate_and_score_completions(self, inputs):
            inputs = with_reward_columns(inputs, self.reward_rows)
            output = super()._generate_and_score_completions(inputs)
            if not advantage_terms:
                return output
            output["advantages"], stats = add_advantage_terms(output["advantages"],
                                                              advantage_terms)
            mode = "train" if self.model.training else "eval"
            for key, value in stats.items():  # logged with TRL's own metrics, per step
                self._metrics[mode][key].append(value)
            return output

        # With several processes transformers loads the optimizer state onto args.device,
        # which on CPU is "cpu:<rank>": torch.load cannot restore there, and a resumed
        # multi-process CPU run would fail. The state belongs on "cpu" anyway.
        def _load_optimizer_and_scheduler(self, checkpoint):
            import torch

            if self.args.world_size == 1 or self.args.device.type != "cpu":
                return super()._load_optimizer_and_scheduler(checkpoint)
            load = torch.load
            torch.load = lambda *args, **kwargs: load(*args, **{**kwargs, "map_location": "cpu"})
            try:
                return super()._load_optimizer_and_scheduler(checkpoint)
            finally:
                torch.load = load

    return BreadthGRPOTrainer


def build_grpo_config(config: RLConfig, *, output_dir: Path, seed: int, overrides: dict) -> Any:
    """The one place a `trl.GRPOConfig` is built from breadth's config.

    TRL's defaults (beta, loss_type, scale_rewards, learning rate, ...) are all set explicitly:
    an experiment must mean what its config says, not what a TRL release defaults to. The
    settings a reward's formula needs (`RewardPlan.grpo_settings`, e.g. scale_rewards='none')
    are on `config` already: its validation set them. `overrides` go over everything (the
    reward weights).
    """
    from trl import GRPOConfig

    # Imported on use: trainer_setup loads torch and transformers (about 4.6 CPU s), which
    # the tests that import this module for its pure helpers do not need.
    from breadth.training.trainer_setup import device_arguments

    # prompts_per_step is global: each of the num_processes processes generates for an equal
    # share of whole groups (the config refuses a share that is not whole).
    batch = config.prompts_per_step // config.num_processes * config.num_generations
    values: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        # TRL's scheduler (linear decay to 0) is stated, not inherited, like the rest.
        lr_scheduler_type="linear",
        warmup_steps=config.warmup_steps,
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
        # "correctness + bonus" is a sum of reward functions before group normalisation.
        multi_objective_aggregation="sum_then_normalize",
        **device_arguments(),
    )
    # The preflight refused this already; here again for callers that skip it.
    if refusal := trl_vllm_refusal_here(config):
        raise TRLVLLMModeError(refusal)
    values.update(trl_vllm_arguments(config))
    values.update(overrides)
    return GRPOConfig(**values)


def _check_prompts_fit(model: Any, tokenizer: Any, rows: Sequence[dict[str, Any]],
                       completion: int, chat: ModelConfig | None = None) -> None:
    """Every prompt, as the model sees it, + rl.max_completion_length within the model's
    context: past it, TRL generates and trains at positions the model does not have, without
    a word."""
    limit = model_context(model.config)
    if limit is None:
        return
    texts = render_prompts(tokenizer, [str(row["prompt"]) for row in rows], chat)
    # TRL tokenizes a plain prompt with the special tokens, a rendered one without (the
    # template holds its own).
    prompts = count_tokens(texts, tokenizer, special=not uses_chat(tokenizer, chat))
    check_rows_fit([n + completion for n in prompts], limit,
                   what=f"GRPO's prompt + rl.max_completion_length={completion}", rows=rows,
                   fix="raise model.max_length (the tiny model), lower "
                       "rl.max_completion_length, or give shorter problems")


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
    chat: ModelConfig | None = None,
) -> Any:
    """Train `model` with GRPO on the rendered `rows`; returns the trained model (also saved).

    `chat` (the run's `model` section; None: its defaults) says whether prompts go through
    the tokenizer's chat template (`breadth.models.chat`): then TRL gets conversational
    prompts (messages), applies the template with the generation prompt, and hands the reward
    functions the completions as assistant messages (`breadth.rewards.scoring.completion_text`
    reads their text).

    `on_checkpoint(path, step)` is called after each checkpoint is written (the pipeline uploads
    it to S3); `resume_from` is a local checkpoint folder to continue from (trainer state,
    optimizer, RNG, data order and reward state).
    """
    from datasets import Dataset
    from transformers import TrainerCallback

    # Imported on use: these load torch and transformers (build_grpo_config's reason).
    from breadth.rewards.callback import RewardStateCallback, load_reward_state
    from breadth.training.trainer_setup import MetricsCallback, show_progress

    check_process_count(config)
    if resume_from is not None and (checkpoint_step(resume_from) or 0) >= config.max_steps:
        return _finished_run(resume_from, model, tokenizer, output_dir)
    _check_prompts_fit(model, tokenizer, rows, config.max_completion_length, chat)
    rewards = build_trl_rewards(config.reward_plan, seed=seed,
                                num_generations=config.num_generations,
                                gather_objects=gather_objects)
    if any(row.get("format") == "free_form" for row in rows):
        warm_up_symbolic()  # the verifier's one-time imports, before the first timed step
    args = build_grpo_config(config, output_dir=output_dir, seed=seed,
                             overrides={"reward_weights": rewards.reward_weights})
    chat_on = uses_chat(tokenizer, chat)
    dataset = Dataset.from_list(
        [{"prompt": as_messages(row["prompt"], chat) if chat_on else row["prompt"],
          ROW_INDEX_COLUMN: index} for index, row in enumerate(rows)]
    )
    reward_rows = [{c: row[c] for c in REWARD_COLUMNS} for row in rows]

    class _FinishCheckpoint(TrainerCallback):
        # Runs after RewardStateCallback: mark the folder complete, then upload it (marker
        # included, so a downloaded copy is resumable too).
        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            # Each process writes its own RNG state into the folder: all must be done before
            # process 0 lists the folder's files in the marker.
            wait_for_all_processes()
            # should_save: process 0, the one that wrote the folder (one upload, not N).
            if args.should_save:
                write_marker(folder, CHECKPOINT_COMPLETE, step=state.global_step)
                if on_checkpoint is not None:
                    on_checkpoint(folder, state.global_step)

    callbacks: list[Any] = [RewardStateCallback(rewards.stateful, gather_objects),
                            _FinishCheckpoint()]
    if log_metric:
        callbacks.insert(0, MetricsCallback(log_metric, "train/"))
    trainer = _trainer_class(rewards.advantage_terms)(
        model=model, reward_funcs=rewards.reward_funcs, args=args, train_dataset=dataset,
        processing_class=tokenizer, callbacks=callbacks,
    )
    trainer.reward_rows = reward_rows
    seed_sampling_per_process(seed)
    show_progress(trainer, "rl", output_dir)
    if resume_from is not None:
        load_reward_state(rewards.stateful, resume_from)  # every process: the counts are global
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    trainer.save_model(str(output_dir / "final"))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(output_dir / "final"))
    return trainer.model


def _finished_run(checkpoint: Path, model: Any, tokenizer: Any, output_dir: Path) -> Any:
    """The final model of a run whose newest checkpoint is at its last step (killed after that
    save, before the stage ended): the checkpoint's weights, with nothing trained.

    transformers resumes such a run by training one step past max_steps: its loop checks the
    step count only after a step (a night-of-faults test's rerun logged `rl: 3/2 steps` and a
    train/reward at step 3 of 2).
    """
    model = type(model).from_pretrained(str(checkpoint))
    # No barrier: no trainer was built, so no process group; with rl.num_processes > 1 the
    # launcher waits for every process, rank 0's save included.
    if process_rank() == 0:
        model.save_pretrained(str(output_dir / "final"))
        tokenizer.save_pretrained(str(output_dir / "final"))
    return model


def check_process_count(config: RLConfig) -> None:
    """The launcher started as many processes as `rl.num_processes` says, or ValueError.

    The per-process batch is `rl.prompts_per_step / rl.num_processes` groups: under a launcher
    that started a different number, every step would train on a different number of prompts
    than the config names.
    """
    launched = launched_world_size()
    if launched != config.num_processes:
        raise ValueError(
            f"this GRPO run was launched with {launched} process(es) (WORLD_SIZE) but "
            f"rl.num_processes={config.num_processes}, so each step would not train on "
            f"rl.prompts_per_step={config.prompts_per_step} prompts. Set "
            f"rl.num_processes={launched}, or run breadth without `accelerate launch`/torchrun: "
            "with rl.num_processes > 1 the rl stage launches its processes itself"
        )


def seed_sampling_per_process(seed: int) -> None:
    """Give each process its own sampling stream, derived from (seed, rank).

    transformers seeds every process with the same seed: the processes would then draw the
    same random numbers for their different prompts, so their samples would be correlated.
    The data order has its own seeded generator, shared by all processes, and is unaffected.
    """
    import numpy as np
    import torch

    if launched_world_size() > 1:
        torch.manual_seed(int(np.random.SeedSequence([seed, process_rank()]).generate_state(1)[0]))
