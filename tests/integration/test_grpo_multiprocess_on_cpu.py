"""GRPO in two processes (torch.distributed with gloo, on CPU) scores as one process would.

One run of the rl stage with rl.num_processes=2 (it launches its two workers itself), resumed
from its last checkpoint for two more steps, and one run with a single process, same data and
seed, reward `vector+ucb+batch`: a set-level reward seeded per (step, problem), the
outcome-count UCB bonus and the repetition penalty, the last two on the advantage. Each process
records every reward term call (what it scored and gave).

Proven here:
- rl.prompts_per_step is the global number: the two processes together train on the same
  problems, in the same order, as the single process at each of its steps, each process on
  half of them as whole groups (at every step, the resumed ones too);
- the same rewards for the same completions: each step's completions, gathered from both
  processes in rank order and re-scored in one process by a fresh reward setup, get every
  term's values as the two processes computed them (float tolerance);
- the same UCB counts: after every step both processes hold the counts of that one-process
  re-scoring, also after the resume (both restored them), and the checkpoint holds them once
  (process 0's file, no per-process files);
- darling and passk, which need whole groups too, score each process's slice as they score
  the gathered batch;
- the advantages: TRL's group normalisation of the rewards gathered from both processes, each
  process's slice plus its advantage-placed values (recomputed here from the recorded values);
- the launcher stops every worker when one fails, when the run outlives its timeout, and when
  the launching process is killed.

Not proven: equal trajectories. The two runs sample different completions (each process draws
from its own stream, seeded by seed and rank), so the 1-process run is compared on the data
order and the count totals, and the reward computation on the completions the processes drew.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from breadth.config import load_config

pytestmark = pytest.mark.integration

STEPS, PROMPTS, GENERATIONS = 2, 4, 4
RESUMED_STEPS = 4  # the 2-process run then resumes from its last checkpoint for two more
# Eight problems, four per step: an epoch is two steps, so after the resume every problem
# recurs and the restored UCB counts shape the bonuses.
OVERRIDES = [
    "data.num_train=8", "data.num_eval=2", "data.difficulty=1", f"rl.max_steps={STEPS}",
    "rl.save_steps=2", f"rl.num_generations={GENERATIONS}", f"rl.prompts_per_step={PROMPTS}",
    "rl.max_completion_length=4", "rl.reward.spec=vector+ucb+batch",
]
RECORDING_WORKER = "tests.integration.grpo_multiprocess_worker"
STUCK_WORKER = "tests.integration.stuck_grpo_worker"
TIMEOUT_S = 240


def _config(processes: int, *extra: str) -> Any:
    return load_config("default", [*OVERRIDES, f"rl.num_processes={processes}", *extra])


@pytest.fixture(scope="module")
def stage_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(dataset dir, base policy dir) from the pipeline's own stages."""
    from breadth.stages import init_model_stage, prepare_stage

    root = tmp_path_factory.mktemp("multiprocess-inputs")
    prepare_stage(_config(1), root / "data")
    init_model_stage(_config(1), root / "base")
    return root / "data", root / "base"


def _records(path: Path) -> dict[tuple[int, str], dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return {(line["step"], line["term"]): line for line in lines}


def _groups(record: dict[str, Any]) -> list[str]:
    ids = record["columns"]["problem_id"]
    return ids[::GENERATIONS]


def _running(marker: str) -> list[int]:
    """Pids of live processes whose command line mentions `marker` (a test's own folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(
                errors="replace"
            ) and ") Z " not in (entry / "stat").read_text():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _score(setup: Any, step: int, texts: list[str], columns: dict[str, list]) -> dict[str, list]:
    """Every term's values for one batch, called as TRL calls them."""
    values = {}
    for term in setup.reward_funcs:
        returned = term(prompts=[""] * len(texts), completions=texts, completion_ids=None,
                        trainer_state=SimpleNamespace(global_step=step - 1), **columns)
        pending = term.take_pending_advantage() if term.placement == "advantage" else None
        values[term.__name__] = list(pending if pending is not None else returned)
    return values


def test_two_processes_score_and_count_as_one(
    stage_inputs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from breadth.rewards.terms import RewardTermFunc
    from breadth.rewards.trl_adapter import build_trl_rewards
    from breadth.stages import rl_stage
    from breadth.training import launch
    from breadth.training.checkpointing import damage, marker_files
    from tests.integration.grpo_multiprocess_worker import recording_call

    dataset, policy = stage_inputs
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(launch, "WORKER_MODULE", RECORDING_WORKER)
    two, one = tmp_path / "two", tmp_path / "one"
    forwarded: list[tuple[str, float, int]] = []
    checkpoints: list[int] = []
    rl_stage(_config(2), dataset, policy, two, log_metric=lambda *m: forwarded.append(m),
             on_checkpoint=lambda folder, step: checkpoints.append(step))
    assert not _running(str(two)), "a training process outlived the run"
    assert (two / "final" / "model.safetensors").exists()
    # Process 0's metrics and checkpoints reached the launching process, once each.
    assert checkpoints == [STEPS]
    assert sorted({step for name, _, step in forwarded if name == "train/reward"}) == [1, 2]

    # The single-process run, in this process, recording the same way.
    monkeypatch.setattr(RewardTermFunc, "__call__",
                        recording_call(RewardTermFunc.__call__, one / "scored.rank0.jsonl"))
    one.mkdir()
    rl_stage(_config(1), dataset, policy, one)
    monkeypatch.undo()

    # The 2-process run again, same folder, two more steps: it resumes from checkpoint-4, and
    # every process restores the counts from the one file (checked again by the re-scoring).
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(launch, "WORKER_MODULE", RECORDING_WORKER)
    rl_stage(_config(2, f"rl.max_steps={RESUMED_STEPS}"), dataset, policy, two,
             on_checkpoint=lambda folder, step: checkpoints.append(step))
    assert checkpoints == [STEPS, RESUMED_STEPS]

    ranks = [_records(two / f"scored.rank{rank}.jsonl") for rank in (0, 1)]
    single = _records(one / "scored.rank0.jsonl")
    terms = ["vector", "ucb", "batch"]
    assert sorted(single) == [(step, term) for step in range(1, STEPS + 1) for term in sorted(terms)]
    assert sorted(ranks[0]) == sorted(ranks[1]) == [
        (step, term) for step in range(1, RESUMED_STEPS + 1) for term in sorted(terms)
    ]
    rescoring = build_trl_rewards(_config(1).rl.reward_plan, seed=0, num_generations=GENERATIONS)
    for step in range(1, RESUMED_STEPS + 1):
        first = [r[(step, "vector")] for r in ranks]
        # Global prompts per step, whole groups per process, the 1-process data order.
        assert [len(_groups(r)) for r in first] == [PROMPTS // 2] * 2
        if step <= STEPS:
            assert _groups(first[0]) + _groups(first[1]) == _groups(single[(step, "vector")])
        # The completions both processes drew, gathered in rank order, re-scored in one.
        texts = first[0]["texts"] + first[1]["texts"]
        columns = {k: first[0]["columns"][k] + first[1]["columns"][k] for k in first[0]["columns"]}
        expected = _score(rescoring, step, texts, columns)
        for term in terms:
            got = ranks[0][(step, term)]["values"] + ranks[1][(step, term)]["values"]
            np.testing.assert_allclose(got, expected[term], rtol=1e-9, atol=1e-12,
                                       err_msg=f"step {step}, reward {term}")
        counts = rescoring.stateful[0].state_dict()
        assert ranks[0][(step, "ucb")]["ucb_state"] == counts
        assert ranks[1][(step, "ucb")]["ucb_state"] == counts, f"rank 1 counts at step {step}"

    # The advantages: TRL normalises the rewards it gathered from both processes per group
    # (TRL 1.16, scale_rewards="group": (r - group mean) / (Bessel group std + 1e-4)), each
    # process keeps its slice, and breadth adds the advantage-placed terms (weights 1) to it.
    advantages = [[json.loads(line) for line in (two / f"advantages.rank{rank}.jsonl")
                   .read_text().splitlines()] for rank in (0, 1)]
    assert [len(lines) for lines in advantages] == [RESUMED_STEPS] * 2
    assert any(abs(v) > 0.1 for lines in advantages for line in lines for v in line["trl"])
    for step in range(1, RESUMED_STEPS + 1):
        def gathered(term: str, step: int = step) -> np.ndarray:
            return np.array(ranks[0][(step, term)]["values"] + ranks[1][(step, term)]["values"])

        rewards = gathered("vector").reshape(-1, GENERATIONS)
        centred = rewards - rewards.mean(axis=1, keepdims=True)
        expected = (centred / (rewards.std(axis=1, ddof=1, keepdims=True) + 1e-4)).ravel()
        trl = np.array(advantages[0][step - 1]["trl"] + advantages[1][step - 1]["trl"])
        np.testing.assert_allclose(trl, expected, rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
        shaped = advantages[0][step - 1]["shaped"] + advantages[1][step - 1]["shaped"]
        np.testing.assert_allclose(shaped, trl + gathered("ucb") + gathered("batch"), atol=1e-5)

    # Checkpointed once, with the global counts: what each run counted in total.
    last = two / f"checkpoint-{RESUMED_STEPS}"
    assert [p.name for p in last.glob("breadth_reward_state*")] == ["breadth_reward_state.json"]
    # The completion marker covers both processes' files (written after a barrier) and holds.
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= set(marker_files(last) or {})
    assert damage(last) is None
    saved = json.loads((last / "breadth_reward_state.json").read_text())
    assert saved["states"]["ucb"] == rescoring.stateful[0].state_dict()
    for run, steps in ((two, RESUMED_STEPS), (one, STEPS)):
        state = json.loads((run / f"checkpoint-{steps}" / "breadth_reward_state.json").read_text())
        total = sum(n for pairs in state["states"]["ucb"]["counts"].values() for _, n in pairs)
        assert total == steps * PROMPTS * GENERATIONS

    # darling and passk: each process's slice scores as the gathered batch does.
    for spec in ("darling", "passk:k=2"):
        reward = _config(1, f"rl.reward.spec={spec}").rl.reward_plan
        whole = build_trl_rewards(reward, num_generations=GENERATIONS)
        for step in range(1, RESUMED_STEPS + 1):
            first = [r[(step, "vector")] for r in ranks]
            gathered = _score(whole, step, first[0]["texts"] + first[1]["texts"],
                              {k: first[0]["columns"][k] + first[1]["columns"][k]
                               for k in first[0]["columns"]})
            sliced = []
            for record in first:
                part = build_trl_rewards(reward, num_generations=GENERATIONS)
                sliced += next(iter(_score(part, step, record["texts"], record["columns"]).values()))
            np.testing.assert_allclose(sliced, next(iter(gathered.values())), atol=1e-12)


@pytest.mark.parametrize("mode", ["fail", "hang"])
def test_launcher_stops_every_worker_when_one_fails_or_the_run_times_out(
    stage_inputs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    from breadth.training.launch import run_grpo_processes

    dataset, policy = stage_inputs
    monkeypatch.setenv("STUCK_WORKER_MODE", mode)
    expected = "exit status" if mode == "fail" else "still running after"
    with pytest.raises(RuntimeError, match=expected) as raised:
        run_grpo_processes(_config(2), dataset, policy, tmp_path, worker_module=STUCK_WORKER,
                           # Long enough for both workers to start (import torch) on a
                           # loaded machine before the launcher gives up on them.
                           timeout_s=None if mode == "fail" else 30)
    if mode == "fail":
        assert "rank 1 gives up" in str(raised.value)
    pids = [int((tmp_path / f"pid.rank{rank}").read_text()) for rank in (0, 1)]
    assert not _running(str(tmp_path)), "a worker outlived the launcher"
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or ") Z " in Path(f"/proc/{pid}/stat").read_text()
    assert os.environ.get("WORLD_SIZE") is None  # the test process itself was never a rank


def test_workers_stop_when_the_launching_process_is_killed(
    stage_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    dataset, policy = stage_inputs
    launcher = (
        "import sys; from pathlib import Path; from breadth.config import load_config; "
        "from breadth.training.launch import run_grpo_processes; "
        f"run_grpo_processes(load_config('default', {OVERRIDES + ['rl.num_processes=2']!r}), "
        f"Path({str(dataset)!r}), Path({str(policy)!r}), Path({str(tmp_path)!r}), "
        f"worker_module={STUCK_WORKER!r})"
    )
    env = {**os.environ, "STUCK_WORKER_MODE": "hang"}
    stage = subprocess.Popen([sys.executable, "-c", launcher], env=env)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("pid.rank*"))) < 2:
            assert stage.poll() is None and time.monotonic() < deadline, "workers never started"
            time.sleep(0.2)
        stage.send_signal(signal.SIGKILL)  # no finally block runs in the launcher
        stage.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _running(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(str(tmp_path)), "workers outlived their killed launcher"
    finally:
        if stage.poll() is None:
            stage.kill()
            stage.wait(timeout=10)
        for pid in _running(str(tmp_path)):  # only this test's own workers name its folder
            os.kill(pid, signal.SIGKILL)
