"""A claims report's header states the code and the hardware its cells ran on, from the
parent runs' tags, and says so when a run did not record them."""

from __future__ import annotations

import pandas as pd

from breadth.study.frame import grid_provenance, provenance_header
from breadth.tracking.rest import RunRecord


def _provenance(monkeypatch, tags: list[dict[str, str]], stage_minutes=None,
                seeds=None) -> dict:
    """Parent runs r0, r1, ... with `tags`, at `seeds` (default: one seed each);
    `stage_minutes` {run id: minutes} are the stage runs their `stage_run.*` tags may name."""
    ids = [f"r{i}" for i in range(len(tags))]
    runs = pd.DataFrame({"run_id": ids, "format": "mcq", "reward": "correctness",
                         "seed": seeds or range(len(ids))})
    records = {run_id: RunRecord(run_id, "1", run_id, "FINISHED", "", {"host.name": "box",
                                 "host.cpus": "16", "git.sha": "a" * 40, **tag},
                                 start_time=0, end_time=60000)
               for run_id, tag in zip(ids, tags)}
    records.update({run_id: RunRecord(run_id, "1", run_id, "FINISHED", "", {}, start_time=1000,
                                      end_time=1000 + int(minutes * 60000))
                    for run_id, minutes in (stage_minutes or {}).items()})

    class Client:
        def get_run(self, run_id):
            return records[run_id]

    monkeypatch.setattr("breadth.study.frame.fetch_runs", lambda uri, grid_id: runs)
    monkeypatch.setattr("breadth.study.frame.tracking_client", lambda uri: Client())
    return grid_provenance("http://mlflow", "g1")


def test_the_header_states_code_versions_and_runs_with_uncommitted_changes(monkeypatch):
    header = provenance_header(_provenance(monkeypatch, [
        {"code.version": "v1", "git.dirty": "false", "host.gpus": "1 x NVIDIA H100 80GB HBM3"},
        {"code.version": "v2", "git.dirty": "true", "host.gpus": "1 x NVIDIA H100 80GB HBM3"},
    ]))
    code = next(line for line in header.splitlines() if line.startswith("- code:"))
    assert "git aaaaaaaaaaaa" in code and "code versions v1, v2" in code
    assert "uncommitted changes in 1 of 2 runs" in code
    machine = next(line for line in header.splitlines() if line.startswith("- machine:"))
    assert machine == "- machine: box (16 CPU cores; GPU: 1 x NVIDIA H100 80GB HBM3)"


def test_runs_without_the_tags_are_not_reported_as_gpu_less_or_clean(monkeypatch):
    header = provenance_header(_provenance(monkeypatch, [{}, {"host.gpus": "0"}]))
    assert "no GPU" not in header
    assert "box (16 CPU cores; GPU: not recorded)" in header
    assert "box (16 CPU cores; GPU: none)" in header
    assert "code version not recorded" in header
    assert "uncommitted changes in 0 of 2 runs (2 not recorded or not a git checkout)" in header


def test_stage_work_counts_each_stage_run_once_wherever_it_ran(monkeypatch):
    """Two objectives of one seed share their SFT start (s-sft, 10 min); the second cell took
    its RL from an earlier grid's run (old-rl, 7 min): its parent run took a minute, its work
    did not. Each stage run counts once."""
    provenance = _provenance(monkeypatch, [
        {"stage_run.sft": "s-sft", "stage_run.rl": "a-rl"},
        {"stage_run.sft": "s-sft", "stage_run.rl": "old-rl"},
    ], stage_minutes={"s-sft": 10.0, "a-rl": 5.0, "old-rl": 7.0})
    assert provenance["compute_minutes"] == {"mcq": 22.0}
    assert provenance["format_cells"] == {"mcq": [2, 1]}  # seeds 0 and 1, one cell each
    header = provenance_header(provenance)
    assert "- minutes of stage work (each stage's run once" in header
    assert "mcq 22.0; 22.0 in all\n" in header
    assert "\n- cells per format (in all / a full seed): mcq 2 / 1\n" in header


def test_stage_work_splits_into_warm_starts_and_objectives_own_stages(monkeypatch):
    """Seed 0 runs two objectives, seed 1 one (thinned). Warm starts: prepare and SFT with its
    rollout (1 + 10 + 2 min at seed 0, 1 + 12 + 2 at seed 1: 28 min over 2 seeds = 14.0 a
    seed); the objectives' own stages: RL, its rollout and evaluate (5 + 1 + 0.5, 7 + 1 + 0.5
    at seed 0, 6 + 1 + 0.5 at seed 1: 22.5 min over 3 cells = 7.5 an objective)."""
    warm = {"prepare": 1.0, "sft": 10.0, "rollout-sft": 2.0}
    minutes = {f"{stage}-{seed}": m + (2.0 if seed and stage == "sft" else 0.0)
               for seed in (0, 1) for stage, m in warm.items()}
    own = {"a": 5.0, "b": 7.0, "c": 6.0}
    minutes.update({f"{stage}-{cell}": m for cell, rl in own.items()
                    for stage, m in (("rl", rl), ("rollout-rl", 1.0), ("evaluate", 0.5))})
    tags = [{**{f"stage_run.{stage}": f"{stage}-{seed}" for stage in warm},
             **{f"stage_run.{stage}": f"{stage}-{cell}" for stage in ("rl", "rollout-rl",
                                                                        "evaluate")}}
            for seed, cell in ((0, "a"), (0, "b"), (1, "c"))]
    provenance = _provenance(monkeypatch, tags, minutes, seeds=[0, 0, 1])
    assert provenance["compute_minutes"] == {"mcq": 50.5}  # 28 + 22.5
    assert provenance["format_cells"] == {"mcq": [3, 2]}
    assert provenance["stage_split"] == {"mcq": [14.0, 7.5]}
    assert provenance_header(provenance).endswith(
        "- minutes of stage work of a seed's warm start / of one objective's own stages: "
        "mcq 14.0 / 7.5")
