"""kill -9 in the middle of GRPO (re-run on a fresh worker with an empty work dir), and a stage
that raises (re-run with its newest checkpoint truncated): the re-run finishes from the right
checkpoint, and no run record is left open.

The stage that raises and the truncated checkpoint share one failed pipeline run (the `raised`
fixture, once per module): one pipeline process fewer than a run killed for the truncation.
The kill is re-run on a fresh worker only, not also on the killed one's work dir: that second
pair of pipeline processes (about 50 CPU s) showed nothing the others do not. The resume from
a local checkpoint after a kill -9 is tests/integration/test_grpo_resume_on_cpu.py's (bitwise,
optimizer, RNG and reward state included), and from a local checkpoint in a pipeline run the
truncated test's here."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from tests.faults.helpers import (
    MAX_STEPS,
    environment,
    experiment_runs,
    finish,
    flow_run_state,
    metric_steps,
    overrides,
    run,
    stage_dir,
    start,
    wait_for,
)

# torch is imported where it is used: at the top it cost about 2.4 CPU s while every xdist
# worker collected the suite, this module's tests deselected or not.
if TYPE_CHECKING:
    import torch

pytestmark = [pytest.mark.faults, pytest.mark.integration]
# Paused, then killed, inside step 5: checkpoints 2 and 4 are on disk, step 5 is in progress.
KILL_DURING_STEP = 5
# The stage raises inside step 5 too: checkpoints 2 and 4 are on disk for the truncated test.
RAISE_AT_STEP = 5
RAISES_SEED = 303


def _kill_during_step(
    values: list[str], stack_env: dict, tmp_path: Path,
    before_kill: Callable[[Path], bool] = lambda work: True,
) -> Path:
    """Start the pipeline, SIGKILL it inside GRPO step KILL_DURING_STEP (once `before_kill`
    holds); returns the work dir."""
    work, signals, log = tmp_path / "work", tmp_path / "signals", tmp_path / "killed.log"
    signals.mkdir()
    env = environment(stack_env, work, pause_at_step=KILL_DURING_STEP, signals=signals)
    process = start(values, env, log)
    wait_for(lambda: (signals / "paused").exists() and before_kill(work), process, log,
             f"step {KILL_DURING_STEP}")
    os.kill(process.pid, signal.SIGKILL)
    assert finish(process, log)[0] == -signal.SIGKILL
    return work


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from breadth.models.tiny import load_policy

    return {name: t.detach().clone() for name, t in load_policy(folder)[0].state_dict().items()}


def _by_name(runs: list, name: str) -> list:
    return [r for r in runs if r.info.run_name == name]


class Raised(NamedTuple):
    code: int
    output: str
    work: Path
    runs: list[Any]  # its MLflow experiment's runs, read as soon as it ended


@pytest.fixture(scope="module")
def raised(live_stack, tmp_path_factory) -> Raised:
    """A pipeline whose GRPO stage raises inside step RAISE_AT_STEP: the raises test's subject
    (its records read before anything else runs), and the work dir whose checkpoint-4 the
    truncated test damages before running the same config again."""
    folder = tmp_path_factory.mktemp("raises")
    env = environment(live_stack, folder / "work", raise_at_step=RAISE_AT_STEP)
    code, output = run(overrides("raises", seed=RAISES_SEED), env, folder / "raises.log")
    return Raised(code, output, folder / "work", experiment_runs(live_stack, "raises"))


def test_kill_9_mid_grpo_then_a_fresh_worker_resumes_from_s3_closes_records_and_matches(
    live_stack, tmp_path
):
    """The run is killed on one host; a second host, its work dir empty, runs it again: the
    finished stages come from the cache, GRPO resumes from checkpoint-4 in S3, the killed run's
    records are closed, and the weights are bitwise those of an uninterrupted training."""
    import torch

    from breadth.config import load_config
    from breadth.stages import rl_stage
    from breadth.tracking.objects import ObjectStore

    store = ObjectStore.from_env(live_stack)

    def checkpoint_4_in_s3(work: Path) -> bool:
        local = stage_dir(work, "rl") / "checkpoint-4"
        return store.missing_or_different(local, f"checkpoints/{local.parent.name}/checkpoint-4") == []

    values = overrides("kill", seed=301)
    killed = _kill_during_step(values, live_stack, tmp_path, before_kill=checkpoint_4_in_s3)
    left_open = [r for r in experiment_runs(live_stack, "kill") if r.info.status == "RUNNING"]
    assert {r.info.run_name for r in left_open} >= {"rl"}, "the kill should leave runs open"
    rl_key = stage_dir(killed, "rl").name

    # The second host shares nothing local with the first (its work dir is new and empty);
    # the killed host's folder stays only as the reference training's inputs below.
    fresh = tmp_path / "fresh"
    code, output = run(values, environment(live_stack, fresh), tmp_path / "rerun.log")
    assert code == 0, output[-4000:]

    runs = experiment_runs(live_stack, "kill")
    assert [r.info.run_name for r in runs if r.info.status == "RUNNING"] == []
    killed_parents = [r for r in runs if r.info.status == "KILLED" and "mlflow.parentRunId" not in r.data.tags]
    assert len(killed_parents) == 1
    assert flow_run_state(live_stack, killed_parents[0].data.tags["prefect.flow_run_id"]) == "CRASHED"

    (resumed,) = [r for r in _by_name(runs, "rl") if r.info.status == "FINISHED"]
    assert resumed.data.tags["checkpoint.resumed_from"] == "checkpoint-4"
    assert f"checkpoints/{rl_key}/checkpoint-4" in resumed.data.tags["checkpoint.notes"]
    # The whole history in the resumed run, including steps the killed run trained.
    assert metric_steps(live_stack, resumed.info.run_id, "train/reward") == list(range(1, MAX_STEPS + 1))

    # Bitwise the same weights as an uninterrupted training of the same stage inputs.
    config = load_config("default", values)
    reference = rl_stage(config, stage_dir(killed, "prepare"), stage_dir(killed, "init") / "model",
                         tmp_path / "reference")
    expected, got = _weights(reference), _weights(fresh / rl_key / "final")
    assert all(torch.equal(expected[name], got[name]) for name in expected)
    # ... and not merely the weights it resumed from: the steps after the resume changed the
    # policy (at this seed most steps' groups have equal rewards, so a zero gradient), else the
    # comparison would hold however those steps were trained.
    resumed_from = _weights(stage_dir(killed, "rl") / "checkpoint-4")
    assert not all(torch.equal(resumed_from[name], got[name]) for name in got), (
        "GRPO did not change the policy after checkpoint-4: choose a seed whose later steps do")


def test_a_truncated_newest_checkpoint_falls_back_one_and_says_so(live_stack, raised, tmp_path):
    assert raised.code != 0, raised.output[-4000:]
    work = raised.work
    weights = stage_dir(work, "rl") / "checkpoint-4" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])

    # The failed run's config and seed (so its rl work dir and checkpoints), its records in an
    # experiment of its own (the experiment is in no stage's cache key).
    values = overrides("truncated", seed=RAISES_SEED)
    code, output = run(values, environment(live_stack, work), tmp_path / "rerun.log")
    assert code == 0, output[-4000:]
    flat = " ".join(output.split())
    assert "checkpoint-4 is damaged" in flat and "model.safetensors" in flat
    assert "falling back" in flat
    finished_rl = [r for r in experiment_runs(live_stack, "truncated")
                   if r.info.run_name == "rl" and r.info.status == "FINISHED"]
    assert [r.data.tags["checkpoint.resumed_from"] for r in finished_rl] == ["checkpoint-2"]
    assert (stage_dir(work, "rl") / f"checkpoint-{MAX_STEPS}").exists()


def test_a_stage_that_raises_leaves_no_running_record(live_stack, raised):
    code, output, _, runs = raised
    assert code != 0 and f"fault injected inside training at step {RAISE_AT_STEP}" in output

    assert [r.info.run_name for r in runs if r.info.status == "RUNNING"] == []
    (rl_run,) = _by_name(runs, "rl")
    assert rl_run.info.status == "FAILED"
    assert "fault injected" in rl_run.data.tags["breadth.error"]
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert parent.info.status == "FAILED"
    assert flow_run_state(live_stack, parent.data.tags["prefect.flow_run_id"]) == "FAILED"
