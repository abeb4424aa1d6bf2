"""Parent runs are named by what tells them apart in MLflow's legends and tables."""

from breadth_tasks.tracking import run_name

from breadth.config import load_config


def test_grid_cells_are_named_by_format_objective_and_seed():
    config = load_config("default", ["data.format=mcq", "seed=2"])
    assert run_name(config, {"grid.objective": "correctness@entropy"}) == "mcq·correctness@entropy·s2"


def test_lone_runs_differ_by_config_hash():
    a, b = load_config("default"), load_config("default", ["rl.max_steps=7"])
    assert run_name(a, {}).startswith("default·") and run_name(a, {}) != run_name(b, {})


def test_stage_origins_are_read_from_each_stage_run_and_tagged_on_the_parent(monkeypatch):
    from breadth_tasks.tracking import tag_stage_origins

    from breadth.tracking.rest import RunRecord
    from breadth.tracking.runs import RunHandle

    produced_by = {"c-prep": "earlier", "c-eval": "this"}
    tagged = {}

    class FakeClient:
        def get_run(self, run_id):
            return RunRecord(run_id, "3", "", "FINISHED", "",
                             {"mlflow.parentRunId": produced_by[run_id]})

        def log_batch(self, run_id, tags=()):  # RunHandle.set_tags sends tags in batches
            tagged.update(dict(tags))

    monkeypatch.setattr(RunHandle, "tracking", property(lambda self: FakeClient()))
    parent = RunHandle("this", "3", "http://user:pw@mlflow:5000")
    # A model created from scratch has no stage run: left out, not looked up.
    cached, name = tag_stage_origins(parent, {"prepare": "c-prep", "init-model": "",
                                              "evaluate": "c-eval"}, "default·1a2b3c4d")
    assert cached == {"prepare": "earlier"}  # what `breadth run` lists as kept elsewhere
    assert name == "default·1a2b3c4d" and "mlflow.runName" not in tagged  # one stage ran here
    assert tagged["breadth.cached"] == "1/2"
    assert tagged["breadth.cached_stages"] == "prepare"
    assert tagged["breadth.cached_from"] == "earlier"
    assert "http://mlflow:5000/#/experiments/3/runs/c-prep?workflowType=machine_learning" in tagged[
        "mlflow.note.content"]
    assert "pw" not in tagged["mlflow.note.content"]


def test_a_run_whose_every_stage_came_from_the_cache_is_renamed_and_not_read_twice(monkeypatch):
    """Six cached re-runs of the demo were six identical `default·0a124f08` rows."""
    from breadth_tasks.tracking import tag_stage_origins

    from breadth.tracking.rest import RunRecord
    from breadth.tracking.runs import RunHandle

    tagged, read = {}, []

    class FakeClient:
        def get_run(self, run_id):
            read.append(run_id)
            return RunRecord(run_id, "3", "", "FINISHED", "", {"mlflow.parentRunId": "earlier"})

        def log_batch(self, run_id, tags=()):
            tagged.update(dict(tags))

    monkeypatch.setattr(RunHandle, "tracking", property(lambda self: FakeClient()))
    parent = RunHandle("this", "3", "http://mlflow:5000")
    known = {"prepare": RunRecord("c-prep", "3", "", "FINISHED", "", {"mlflow.parentRunId": "earlier"})}
    cached, name = tag_stage_origins(parent, {"prepare": "c-prep", "sft": "c-sft"},
                                     "default·1a2b3c4d", known)
    assert read == ["c-sft"]  # the stage log's record of prepare is used
    assert cached == {"prepare": "earlier", "sft": "earlier"}
    assert name == tagged["mlflow.runName"] == "default·1a2b3c4d·cached"
    assert tagged["breadth.cached"] == "all"


def test_lone_runs_name_their_data_source_and_what_differs_from_the_preset():
    source = load_config("default", ["data.source=jsonl:/data/gsm8k/test.jsonl"])
    override = load_config("default", ["rl.max_steps=60"])
    both = load_config("default", ["rl.max_steps=60", "data.source=jsonl:/d/test.jsonl",
                                   "tracking.experiment=x"])
    plain = load_config("default", ["tracking.experiment=x"])
    assert run_name(source, {}) == f"default·test.jsonl·{source.content_hash()[:8]}"
    assert run_name(override, {}) == f"default·rl.max_steps=60·{override.content_hash()[:8]}"
    # The source first, then the other differences; tracking settings are not a difference.
    assert run_name(both, {}) == f"default·test.jsonl·rl.max_steps=60·{both.content_hash()[:8]}"
    assert run_name(plain, {}) == f"default·{plain.content_hash()[:8]}"
    # The preset's own values name nothing: `mcq` sets data.format=mcq itself.
    mcq = load_config("mcq")
    assert run_name(mcq, {}) == f"mcq·{mcq.content_hash()[:8]}"


def test_a_name_shows_three_differences_and_counts_the_rest():
    config = load_config("default", ["rl.max_steps=60", "seed=4", "sft.epochs=2",
                                     "rollout.num_samples=4", "rl.num_generations=4"])
    assert run_name(config, {}).split("·")[1:-1] == ["seed=4", "sft.epochs=2",
                                                     "rl.max_steps=60", "+2"]


def _git(repo, *args):
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)


def test_git_dirty_tells_uncommitted_code_from_a_clean_checkout(tmp_path):
    from breadth_tasks.tracking import git_dirty

    assert git_dirty(tmp_path) == "unknown"  # not a git checkout
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "one")
    assert git_dirty(tmp_path) == "false"
    # An untracked file outside the code folders (a worktree's .venv link, notes) runs nothing.
    (tmp_path / "notes.txt").write_text("n")
    assert git_dirty(tmp_path) == "false"
    (tmp_path / "src" / "new.py").write_text("y = 2\n")
    assert git_dirty(tmp_path) == "true"
    (tmp_path / "src" / "new.py").unlink()
    (tmp_path / "src" / "a.py").write_text("x = 2\n")
    assert git_dirty(tmp_path / "src") == "true"  # asked from a subfolder, as tasks/ is


def _fake_nvidia_smi(folder, monkeypatch, script):
    tool = folder / "nvidia-smi"
    folder.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


def test_gpus_are_described_from_nvidia_smi_and_narrowed_to_the_visible_ones(tmp_path,
                                                                             monkeypatch):
    from breadth_tasks.tracking import gpu_description

    _fake_nvidia_smi(tmp_path / "bin", monkeypatch, "cat <<'END'\n"
                     "0, GPU-aaa, NVIDIA H100 80GB HBM3\n"
                     "1, GPU-bbb, NVIDIA H100 80GB HBM3\n"
                     "2, GPU-ccc, NVIDIA A100-SXM4-40GB\nEND\n")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu_description() == "2 x NVIDIA H100 80GB HBM3, 1 x NVIDIA A100-SXM4-40GB"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,GPU-ccc")
    assert gpu_description() == "1 x NVIDIA H100 80GB HBM3, 1 x NVIDIA A100-SXM4-40GB"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bb")  # CUDA takes a unique UUID prefix
    assert gpu_description() == "1 x NVIDIA H100 80GB HBM3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_description() == "0"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert gpu_description() == "0"
    # A MIG UUID is not in --query-gpu's list: a GPU is there, which one is not known.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-4f1e2d3c-0000-0000-0000-000000000000")
    assert gpu_description() == "unknown"


def test_no_nvidia_driver_is_no_gpu_and_a_failing_one_is_unknown(tmp_path, monkeypatch):
    from breadth_tasks.tracking import gpu_description

    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert gpu_description() == "0"
    _fake_nvidia_smi(tmp_path / "none", monkeypatch, "echo 'No devices were found'; exit 6\n")
    assert gpu_description() == "0"
    _fake_nvidia_smi(tmp_path / "broken", monkeypatch, "echo 'NVIDIA-SMI has failed' >&2; exit 9\n")
    assert gpu_description() == "unknown"
    _fake_nvidia_smi(tmp_path / "hangs", monkeypatch, "exec sleep 5\n")
    assert gpu_description(timeout_s=0.2) == "unknown"


def test_the_parent_run_is_tagged_with_the_code_and_the_hardware_it_ran(monkeypatch):
    import sys

    from breadth_tasks import tracking

    from breadth.config import load_config

    opened = {}

    class Run:
        def log_params(self, params):
            pass

    def start_run(experiment, name, tags, wait_s):
        opened.update(tags, wait_s=wait_s)
        return Run()

    monkeypatch.setattr(tracking, "close_stale_runs", lambda: None)
    monkeypatch.setattr(tracking, "start_run", start_run)
    monkeypatch.setattr(tracking, "code_version", lambda: "c0de")
    monkeypatch.setattr(tracking, "git_dirty", lambda: "true")
    monkeypatch.setattr(tracking, "gpu_description", lambda: "1 x NVIDIA H100 80GB HBM3")
    torch_before = "torch" in sys.modules
    tracking.open_parent_run(load_config("default"))
    assert opened["code.version"] == "c0de" and opened["git.dirty"] == "true"
    assert opened["host.gpus"] == "1 x NVIDIA H100 80GB HBM3"
    assert opened["git.sha"] and opened["host.cpus"]
    assert opened["data.source"] == "synthetic:arithmetic"  # what tells a GSM8K run apart
    assert opened["wait_s"] == 0  # from the terminal: a server that is down fails it at once
    assert ("torch" in sys.modules) == torch_before  # a cached re-run never imports torch


def test_a_deployment_run_waits_for_a_restarting_mlflow(monkeypatch):
    """A worker's run has nobody at its terminal: its start waits out an MLflow restart."""
    from breadth_tasks.common import server_wait_s

    from breadth.tracking.runs import DEPLOYMENT_SERVER_WAIT_S

    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    assert server_wait_s() == 0
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "a-deployment")
    assert server_wait_s() == DEPLOYMENT_SERVER_WAIT_S > 60
