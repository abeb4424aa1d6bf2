"""The launcher of multi-process GRPO, without starting processes: its commands (checked by
accelerate's own launch parser against the config files in infra/accelerate/), the events it
forwards, and the refusals that keep the process count honest. The launch itself runs in
tests/integration/test_grpo_multiprocess_on_cpu.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from breadth.config import RLConfig, load_config
from breadth.training.launch import (
    WORKER_MODULE,
    EventForwarder,
    EventWriter,
    launch_command,
    run_grpo_processes,
)

REPO = Path(__file__).resolve().parents[3]
ACCELERATE_CONFIGS = sorted((REPO / "infra" / "accelerate").glob("*.yaml"))


def test_torch_distributed_launch_on_loopback():
    command = launch_command(RLConfig(num_processes=2), Path("job.json"), 29555, WORKER_MODULE)
    assert command[1:] == [
        "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2",
        "--master-addr=127.0.0.1", "--master-port=29555", "-m", WORKER_MODULE, "job.json",
    ]


@pytest.mark.parametrize("config_file", ACCELERATE_CONFIGS, ids=lambda path: path.name)
def test_accelerate_configs_launch_the_worker_with_the_configured_process_count(config_file):
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    ClusterConfig.from_yaml_file(config_file)  # unknown keys or values raise
    rl = RLConfig(num_processes=4, prompts_per_step=8, accelerate_config=str(config_file))
    command = launch_command(rl, Path("job.json"), 29555, WORKER_MODULE)
    args, _, _ = _validate_launch_command(launch_command_parser().parse_args(command[3:]))
    assert (args.num_processes, args.module, args.training_script) == (4, True, WORKER_MODULE)
    assert (args.training_script_args, args.main_process_ip) == (["job.json"], "127.0.0.1")
    assert args.use_deepspeed == ("deepspeed" in config_file.name)
    if args.use_deepspeed:
        assert int(args.zero_stage) == 2


def test_the_accelerate_configs_are_there():
    assert [path.name for path in ACCELERATE_CONFIGS] == ["deepspeed-zero2.yaml", "multi-gpu.yaml"]


def test_a_missing_accelerate_config_names_the_key(tmp_path):
    rl = RLConfig(num_processes=2, accelerate_config=str(tmp_path / "nope.yaml"))
    with pytest.raises(ValueError, match="rl.accelerate_config=.*nope.yaml' is not a file"):
        launch_command(rl, Path("job.json"), 29555, WORKER_MODULE)


def test_events_are_forwarded_once_and_a_line_being_written_waits(tmp_path):
    path = tmp_path / "events.jsonl"
    metrics, checkpoints = [], []
    forwarder = EventForwarder(path, lambda *m: metrics.append(m),
                               lambda folder, step: checkpoints.append((folder, step)))
    forwarder.forward()  # no file yet
    writer = EventWriter(path)
    writer.metric("train/loss", 0.5, 1)
    writer.checkpoint(tmp_path / "checkpoint-2", 2)
    with path.open("a") as handle:
        handle.write(json.dumps({"metric": "train/reward", "value": 1.0, "step": 2})[:10])
    forwarder.forward()
    forwarder.forward()
    assert metrics == [("train/loss", 0.5, 1)]
    assert checkpoints == [(tmp_path / "checkpoint-2", 2)]
    with path.open("a") as handle:
        handle.write(json.dumps({"metric": "train/reward", "value": 1.0, "step": 2})[10:] + "\n")
    forwarder.forward()
    assert metrics == [("train/loss", 0.5, 1), ("train/reward", 1.0, 2)]


def test_the_stage_refuses_to_run_under_a_launcher(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    config = load_config("default", ["rl.num_processes=2"])
    with pytest.raises(RuntimeError, match="running under a launcher"):
        run_grpo_processes(config, tmp_path, tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # refused before writing anything


@pytest.mark.parametrize(
    "overrides", [["rl.num_processes=2"], ["rl.accelerate_config=infra/accelerate/multi-gpu.yaml"]]
)
def test_rl_stage_launches_processes_when_asked(tmp_path, monkeypatch, overrides):
    from breadth import stages
    from breadth.training import launch

    calls = []
    monkeypatch.setattr(launch, "run_grpo_processes", lambda *a, **kw: calls.append((a, kw)))
    config = load_config("default", overrides)
    final = stages.rl_stage(config, tmp_path / "data", tmp_path / "base", tmp_path / "out")
    assert final == tmp_path / "out" / "final"
    ((args, kwargs),) = calls
    assert args == (config, tmp_path / "data", tmp_path / "base", tmp_path / "out")
    assert kwargs["resume_from"] is None  # no checkpoint in the fresh folder
