"""The prepare run logs what it counted as metrics and the settings its manifest restates
(seed, difficulty, eval share, manifest version) as params."""

from __future__ import annotations

from contextlib import contextmanager

from breadth.config import load_config


class _Run:
    run_id = "prep"

    def __init__(self):
        self.params, self.metrics, self.tags, self.inputs = {}, {}, {}, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def log_params(self, params):
        self.params.update(params)

    def log_metrics(self, metrics, step=0):
        self.metrics.update(metrics)

    def log_artifact(self, path, artifact_path=None):
        pass

    def set_tags(self, tags):
        self.tags.update(tags)

    def log_inputs(self, datasets):
        self.inputs.extend(datasets)


class _Store:
    bucket = "b"

    def upload_dir(self, folder, prefix):
        return []

    def uri(self, key):
        return f"s3://b/{key}"


def _prepared(tmp_path, monkeypatch, overrides):
    """The prepare task run on the default preset with `overrides`, its child run faked:
    (that run, the task's result, the config)."""
    import breadth_tasks.prepare

    run = _Run()

    @contextmanager
    def work_dir(key):
        yield tmp_path

    monkeypatch.setattr(breadth_tasks.prepare, "child_run", lambda parent, stage, key: run)
    monkeypatch.setattr(breadth_tasks.prepare, "exclusive_work_dir", work_dir)
    monkeypatch.setattr(breadth_tasks.prepare.ObjectStore, "from_env", classmethod(lambda cls: _Store()))
    config = load_config("default", overrides)
    return run, breadth_tasks.prepare.prepare.fn(config, "prepare-k", parent=None), config


def test_prepare_logs_counts_as_metrics_and_settings_as_params(tmp_path, monkeypatch):
    run, _, config = _prepared(tmp_path, monkeypatch,
                               ["data.num_train=8", "data.num_eval=4", "seed=3"])

    assert run.metrics == {"bad_rows_count": 0.0, "duplicates_dropped": 0.0, "rows/train": 8.0,
                           "rows/eval": 4.0, "available/train": 8.0, "available/eval": 4.0}
    assert run.params["manifest.seed"] == "3"
    assert run.params["manifest.difficulty"] == str(config.data.difficulty)
    assert {"manifest.eval_fraction", "manifest.version"} <= set(run.params)


def test_prepare_logs_train_and_eval_as_dataset_inputs_and_passes_them_on(tmp_path, monkeypatch):
    """The datasets travel in the cached result: the parent logs them on a cache hit too."""
    import json

    run, result, _ = _prepared(tmp_path, monkeypatch, ["data.num_train=8", "data.num_eval=4"])

    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert result.info["files"] == manifest["files"]
    by_context = {entry["tags"][0]["value"]: entry["dataset"] for entry in run.inputs}
    assert set(by_context) == {"train", "eval"}
    train = by_context["train"]
    assert train["name"] == "arithmetic·train"
    assert json.loads(train["profile"]) == {"num_rows": 8}
    assert train["digest"] == manifest["files"]["train.parquet"]["sha256"][:16]
    assert json.loads(train["source"]) == {
        "uri": f"s3://b/datasets/{manifest['content_hash']}/train.parquet"}
    assert json.loads(by_context["eval"]["profile"]) == {"num_rows": 4}
