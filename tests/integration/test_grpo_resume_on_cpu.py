"""Kill-and-resume of GRPO training.

A GRPO run (UCB reward, so there is reward state to lose) is SIGKILLed after its first
checkpoint and one more finished step, in the middle of the step after that, then started again with the same config and out_dir
through `rl_stage`, which resumes from the newest complete checkpoint. Compared with an
uninterrupted reference run of the same config:

- the resumed run reaches the final step, and trains only the steps after the checkpoint (a
  later checkpoint folder cut short by the kill is skipped);
- every step sees the same problems in the same order (data order, across an epoch boundary);
- the UCB counts were restored: the final counts cover all steps, not just the resumed ones,
  and equal the reference run's;
- on CPU the resumed run is bitwise the reference run: same sampled completions at every step
  and the same final weights (optimizer, scheduler and RNG state restored too).

The work redone is the steps the killed run started after its last checkpoint. A run killed
after its last checkpoint trains nothing more on its rerun.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from breadth.config import load_config

# torch is imported where it is used: at the top it cost about 2.4 CPU s while every xdist
# worker collected the suite, this module's tests deselected or not.
if TYPE_CHECKING:
    import torch

pytestmark = pytest.mark.integration

WORKER = Path(__file__).with_name("grpo_resume_worker.py")
PRESET = "ucb"
MAX_STEPS, SAVE_STEPS, PROMPTS, GENERATIONS = 6, 2, 2, 4
# Eight problems, two per step: an epoch is four steps, so checkpoint-2 is mid-epoch and the
# resumed run crosses into a reshuffled second epoch.
OVERRIDES = [
    "data.num_train=8", "data.num_eval=2", "data.difficulty=1",
    f"rl.max_steps={MAX_STEPS}", f"rl.save_steps={SAVE_STEPS}",
    f"rl.num_generations={GENERATIONS}", f"rl.prompts_per_step={PROMPTS}",
    "rl.max_completion_length=4",
]
# The run to be killed stops mid-way through this step (after generation and scoring, before
# the update) and waits for the kill: one finished step after checkpoint-2, one in progress.
KILL_DURING_STEP = SAVE_STEPS + 2
TIMEOUT_S = 240


def _worker(
    out: Path, record: Path, dataset: Path, policy: Path, hang_at_step: int | None = None
) -> list[str]:
    command = [sys.executable, str(WORKER), "--preset", PRESET, "--dataset", str(dataset),
               "--policy", str(policy), "--out", str(out), "--record", str(record)]
    if hang_at_step is not None:
        command += ["--hang-at-step", str(hang_at_step)]
    for override in OVERRIDES:
        command += ["--set", override]
    return command


def _env() -> dict[str, str]:
    return {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TOKENIZERS_PARALLELISM": "false"}


def _run_to_end(command: list[str], log: Path) -> None:
    with log.open("w") as handle:
        done = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=_env(),
                              timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{command} failed:\n{log.read_text()[-4000:]}"


def _run_here(out: Path, record: Path, dataset: Path, policy: Path,
              monkeypatch: pytest.MonkeyPatch) -> None:
    """`rl_stage` in this process, recording as the worker does: for the runs nobody kills. A
    worker process costs its imports (torch, transformers, TRL): the module took 86 CPU s with
    four worker processes, 56 with two (both on one loaded 2-core machine; no servers).
    Only the killed run and its resume need processes of their own."""
    from breadth.rewards.scoring import BatchScorer
    from breadth.stages import rl_stage
    from tests.integration.grpo_resume_worker import recording_score

    with monkeypatch.context() as patch:
        patch.setenv("CUDA_VISIBLE_DEVICES", "")
        patch.setattr(BatchScorer, "score", recording_score(BatchScorer.score, record))
        rl_stage(load_config(PRESET, OVERRIDES), dataset, policy, out)


def _steps(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    # A kill can cut the last line short; only whole lines count.
    return [json.loads(line) for line in record.read_text().splitlines(keepends=True)
            if line.endswith("\n")]


def _tail(tmp_path: Path) -> str:
    return (tmp_path / "killed.log").read_text()[-4000:]


def _global_step(checkpoint: Path) -> int:
    return int(json.loads((checkpoint / "trainer_state.json").read_text())["global_step"])


def _ucb_counts(checkpoint: Path) -> dict[str, dict[str, int]]:
    state = json.loads((checkpoint / "breadth_reward_state.json").read_text())
    counts = state["states"]["ucb"]["counts"]
    return {pid: {json.dumps(outcome): n for outcome, n in pairs} for pid, pairs in counts.items()}


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from breadth.models.tiny import load_policy

    model, _ = load_policy(folder)
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


@pytest.fixture(scope="module")
def stage_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(dataset dir, base policy dir) from the pipeline's own stages."""
    from breadth.stages import init_model_stage, prepare_stage

    root = tmp_path_factory.mktemp("resume-inputs")
    config = load_config(PRESET, OVERRIDES)
    prepare_stage(config, root / "data")
    init_model_stage(config, root / "base")
    return root / "data", root / "base"


def test_killed_grpo_run_resumes_with_same_steps_data_and_reward_state(
    stage_inputs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from breadth.training.grpo import newest_checkpoint

    dataset, policy = stage_inputs

    # The uninterrupted reference, in this process (as the fault suite's kill test does: on
    # CPU a run is bitwise the same in any process).
    reference_out, reference_record = tmp_path / "reference", tmp_path / "reference.jsonl"
    _run_here(reference_out, reference_record, dataset, policy, monkeypatch)
    reference = _steps(reference_record)
    assert [s["step"] for s in reference] == list(range(1, MAX_STEPS + 1))

    # The run to kill: wait until it is inside step KILL_DURING_STEP, then SIGKILL.
    out, killed_record = tmp_path / "run", tmp_path / "killed.jsonl"
    command = _worker(out, killed_record, dataset, policy, hang_at_step=KILL_DURING_STEP)
    with (tmp_path / "killed.log").open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=_env())
        deadline = time.monotonic() + TIMEOUT_S
        try:
            while True:
                assert process.poll() is None, f"the run to kill ended:\n{_tail(tmp_path)}"
                assert time.monotonic() < deadline, f"step {KILL_DURING_STEP} not reached in time"
                if KILL_DURING_STEP in [s["step"] for s in _steps(killed_record)]:
                    break
                time.sleep(0.05)
            os.kill(process.pid, signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    resumed_from = newest_checkpoint(out)
    assert resumed_from is not None
    checkpoint_step = _global_step(resumed_from)
    killed = _steps(killed_record)
    redone = [s["step"] for s in killed if s["step"] > checkpoint_step]
    assert checkpoint_step == SAVE_STEPS and redone == [SAVE_STEPS + 1, KILL_DURING_STEP]
    assert not (out / "final").exists()

    # A kill can also land inside a save: transformers writes trainer_state.json before the
    # on_save callbacks write the reward state. Leave such a folder for the next checkpoint
    # step; resuming must skip it, not crash on the missing reward state.
    cut_short = out / f"checkpoint-{checkpoint_step + SAVE_STEPS}"
    shutil.copytree(resumed_from, cut_short, ignore=shutil.ignore_patterns("breadth_*"))
    state = json.loads((cut_short / "trainer_state.json").read_text())
    state["global_step"] = checkpoint_step + SAVE_STEPS
    (cut_short / "trainer_state.json").write_text(json.dumps(state))
    assert newest_checkpoint(out) == resumed_from

    # Start again, same config and out_dir: rl_stage picks the newest checkpoint by itself.
    resumed_record = tmp_path / "resumed.jsonl"
    _run_to_end(_worker(out, resumed_record, dataset, policy), tmp_path / "resumed.log")
    resumed = _steps(resumed_record)
    print(
        f"\nkilled during step {redone[-1]} with checkpoint-{checkpoint_step} on disk: "
        f"{len(redone) - 1} finished step(s) + the step in progress redone "
        f"({len(redone)} of {MAX_STEPS} steps generated twice)"
    )

    # Reaches the final step, training only the steps after the checkpoint.
    assert newest_checkpoint(out) == out / f"checkpoint-{MAX_STEPS}"
    assert _global_step(out / f"checkpoint-{MAX_STEPS}") == MAX_STEPS
    assert (out / "final" / "model.safetensors").exists()
    assert [s["step"] for s in resumed] == list(range(checkpoint_step + 1, MAX_STEPS + 1))

    # Same data order as the uninterrupted run, step by step.
    combined = [s for s in killed if s["step"] <= checkpoint_step] + resumed
    assert [s["problem_ids"] for s in combined] == [s["problem_ids"] for s in reference]
    assert all(len(s["problem_ids"]) == PROMPTS for s in combined)

    # The UCB counts were restored from the checkpoint: without that, the final counts would
    # cover only the resumed steps ((MAX_STEPS - checkpoint_step) * PROMPTS * GENERATIONS).
    final_counts = _ucb_counts(out / f"checkpoint-{MAX_STEPS}")
    total = sum(sum(by_outcome.values()) for by_outcome in final_counts.values())
    assert total == MAX_STEPS * PROMPTS * GENERATIONS
    restored = _ucb_counts(resumed_from)
    assert all(
        final_counts[pid][outcome] >= n
        for pid, by_outcome in restored.items()
        for outcome, n in by_outcome.items()
    )
    assert final_counts == _ucb_counts(reference_out / f"checkpoint-{MAX_STEPS}")

    # Bitwise the same run on CPU: same samples at every step, same final weights.
    assert [s["texts"] for s in combined] == [s["texts"] for s in reference]
    expected, got = _weights(reference_out / "final"), _weights(out / "final")
    assert all(torch.equal(expected[name], got[name]) for name in expected)

    # Killed after its last checkpoint, before the stage ended (no `final`): the rerun trains
    # nothing (transformers' loop would train one step past max_steps) and its final model is
    # that checkpoint's, the uninterrupted run's.
    shutil.rmtree(out / "final")
    again = tmp_path / "again.jsonl"
    _run_here(out, again, dataset, policy, monkeypatch)
    assert _steps(again) == [] and newest_checkpoint(out) == out / f"checkpoint-{MAX_STEPS}"
    got = _weights(out / "final")
    assert all(torch.equal(expected[name], got[name]) for name in expected)
