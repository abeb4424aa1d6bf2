"""StageProgress: one bar per training stage with its key figures, every log dict in a file,
nothing printed per step; driven here through the callback hooks the Trainer calls. And
device_arguments' CPU settings (the CUDA ones are checked in tests/gpu)."""

from __future__ import annotations

import json

# torch, transformers and breadth.training.trainer_setup (which loads both) are imported in each
# test: at the top they cost about 4.6 CPU s while every xdist worker collected the suite.


def test_device_arguments_on_cpu_turn_off_bf16_and_gradient_checkpointing(monkeypatch):
    import torch

    from breadth.training.trainer_setup import device_arguments

    # TRL defaults bf16=True and gradient checkpointing on; neither works on a CPU. Pretend
    # there is no CUDA device so this holds on a GPU machine too.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    arguments = device_arguments()
    assert arguments["use_cpu"] is True
    assert arguments["bf16"] is False
    assert arguments["fp16"] is False
    assert arguments["gradient_checkpointing"] is False


def _train(progress, state, logs_per_step):
    progress.on_train_begin(None, state, None)
    for logs in logs_per_step:
        state.global_step += 1
        progress.on_step_end(None, state, None)
        progress.on_log(None, state, None, logs=dict(logs))


def test_every_log_goes_to_the_file_and_the_bar_shows_key_figures(tmp_path, capsys):
    from transformers import TrainerState

    from breadth.training.trainer_setup import StageProgress

    progress = StageProgress("rl", tmp_path / "work" / "train_log.jsonl")
    state = TrainerState(max_steps=3, is_world_process_zero=True)
    logs = [{"loss": 0.5 - i / 10, "reward": i / 4, "grad_norm": 1.0, "note": "x"} for i in range(3)]
    _train(progress, state, logs)
    bar = progress.bar.bar  # the tqdm bar under breadth.display.progress.StageBar
    assert (bar.n, bar.total, bar.desc) == (3, 3, "rl")
    assert bar.postfix == "loss=0.3, reward=0.5"  # the last step's figures, not grad_norm
    progress.on_train_end(None, state, None)
    written = [json.loads(line) for line in (tmp_path / "work" / "train_log.jsonl").read_text().splitlines()]
    assert written == [{"step": i + 1, **logs[i]} for i in range(3)]
    captured = capsys.readouterr()
    assert "grad_norm" not in captured.out + captured.err  # no log dict under the bar


def test_a_resumed_stage_counts_from_its_checkpoint_and_appends(tmp_path):
    from transformers import TrainerState

    from breadth.training.trainer_setup import StageProgress

    log = tmp_path / "train_log.jsonl"
    log.write_text(json.dumps({"step": 1, "loss": 1.0}) + "\n")
    progress = StageProgress("rl", log)
    state = TrainerState(max_steps=4, global_step=2, is_world_process_zero=True)
    _train(progress, state, [{"loss": 0.25}])
    assert progress.bar.done == progress.bar.bar.n == 3
    progress.on_train_end(None, state, None)
    assert [json.loads(line)["step"] for line in log.read_text().splitlines()] == [1, 3]


def test_only_the_main_process_draws_and_writes(tmp_path):
    from transformers import TrainerState

    from breadth.training.trainer_setup import StageProgress

    progress = StageProgress("sft", tmp_path / "train_log.jsonl")
    _train(progress, TrainerState(max_steps=2, is_world_process_zero=False), [{"loss": 1.0}] * 2)
    assert progress.bar is None and not (tmp_path / "train_log.jsonl").exists()
