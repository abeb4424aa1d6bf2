"""Parent runs are named by what tells them apart in MLflow's legends and tables."""

from breadth.config import load_config
from tasks.tracking import run_name


def test_grid_cells_are_named_by_format_objective_and_seed():
    config = load_config("default", ["data.format=mcq", "seed=2"])
    assert run_name(config, {"grid.objective": "correctness@entropy"}) == "mcq·correctness@entropy·s2"


def test_lone_runs_differ_by_config_hash():
    a, b = load_config("default"), load_config("default", ["rl.max_steps=7"])
    assert run_name(a, {}).startswith("default·") and run_name(a, {}) != run_name(b, {})


def test_stage_origins_are_read_from_each_stage_run_and_tagged_on_the_parent(monkeypatch):
    from breadth.tracking.rest import RunRecord
    from breadth.tracking.runs import RunHandle
    from tasks.tracking import tag_stage_origins

    produced_by = {"c-prep": "earlier", "c-eval": "this"}
    tagged = {}

    class FakeClient:
        def get_run(self, run_id):
            return RunRecord(run_id, "3", "", "FINISHED", "",
                             {"mlflow.parentRunId": produced_by[run_id]})  # fmt: skip

        def log_batch(self, run_id, tags=()):  # RunHandle.set_tags sends tags in batches
            tagged.update(dict(tags))

    monkeypatch.setattr(RunHandle, "tracking", property(lambda self: FakeClient()))
    parent = RunHandle("this", "3", "http://user:pw@mlflow:5000")
    # A model created from scratch has no stage run: left out, not looked up.
    tag_stage_origins(parent, {"prepare": "c-prep", "init-model": "", "evaluate": "c-eval"})
    assert tagged["breadth.cached_stages"] == "prepare"
    assert tagged["breadth.cached_from"] == "earlier"
    assert "http://mlflow:5000/#/experiments/3/runs/c-prep" in tagged["mlflow.note.content"]
    assert "pw" not in tagged["mlflow.note.content"]
