"""training/grpo.py: the per-process batch under N processes and the process-count check."""

from __future__ import annotations

import pytest

from breadth.config import RLConfig
from breadth.training.grpo import build_grpo_config, check_process_count


@pytest.mark.parametrize("processes", [1, 2, 4])
def test_prompts_per_step_is_global(tmp_path, processes):
    rl = RLConfig(prompts_per_step=8, num_generations=4, num_processes=processes)
    args = build_grpo_config(rl, output_dir=tmp_path, seed=0, overrides={})
    # Each process generates its share of whole groups.
    assert args.per_device_train_batch_size == 8 // processes * 4
    assert args.per_device_train_batch_size % args.num_generations == 0


def test_warmup_steps_reach_the_trainer(tmp_path):
    for steps in (0, 10):
        args = build_grpo_config(RLConfig(warmup_steps=steps), output_dir=tmp_path, seed=0,
                                 overrides={})
        assert (args.warmup_steps, args.lr_scheduler_type) == (steps, "linear")
        assert args.get_warmup_steps(100) == steps


def test_a_launcher_with_another_process_count_is_refused(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match=r"launched with 2 process\(es\).*rl.num_processes=1"):
        check_process_count(RLConfig())
    check_process_count(RLConfig(num_processes=2))  # agrees: no error
    monkeypatch.delenv("WORLD_SIZE")
    check_process_count(RLConfig())


def test_each_process_samples_from_its_own_seeded_stream(monkeypatch):
    import torch

    from breadth.training.grpo import seed_sampling_per_process

    def draws(rank: int | None) -> list[float]:
        torch.manual_seed(123)  # what transformers does on every process
        if rank is None:
            monkeypatch.delenv("WORLD_SIZE", raising=False)
        else:
            monkeypatch.setenv("WORLD_SIZE", "2")
            monkeypatch.setenv("RANK", str(rank))
        seed_sampling_per_process(seed=0)
        return torch.rand(4).tolist()

    assert draws(0) != draws(1)
    assert draws(1) == draws(1)  # seeded: the same rank draws the same again
    torch.manual_seed(123)
    unseeded = torch.rand(4).tolist()
    assert draws(None) == unseeded  # one process: transformers' seed stands


def test_a_prompt_with_no_room_for_its_completion_is_refused_before_training(tmp_path):
    """Past the model's context TRL generated and trained at positions it does not have."""
    from breadth.config import ModelConfig
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model
    from breadth.training.grpo import train_grpo

    tokenizer = build_char_tokenizer(16)
    model = build_tiny_model(ModelConfig(max_length=16), tokenizer, seed=0)
    rows = [{"problem_id": "p", "prompt": "12+34+56+7=", "answer": "109"}]  # 11 + 8 > 16
    with pytest.raises(ValueError, match=r"GRPO's prompt \+ rl.max_completion_length=8 needs "
                                         r"up to 19 tokens, over the limit of 16 \(problem p"):
        train_grpo(model, tokenizer, rows, RLConfig(), output_dir=tmp_path, seed=0)
