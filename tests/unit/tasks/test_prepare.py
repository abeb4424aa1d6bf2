"""The prepare run logs what it counted as metrics and the settings its manifest restates
(seed, difficulty, eval share, manifest version) as params."""

from __future__ import annotations

from contextlib import contextmanager

from breadth.config import load_config


class _Run:
    run_id = "prep"

    def __init__(self):
        self.params, self.metrics, self.tags = {}, {}, {}

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


class _Store:
    bucket = "b"

    def upload_dir(self, folder, prefix):
        return []

    def uri(self, key):
        return f"s3://b/{key}"


def test_prepare_logs_counts_as_metrics_and_settings_as_params(tmp_path, monkeypatch):
    import tasks.prepare

    run = _Run()

    @contextmanager
    def work_dir(key):
        yield tmp_path

    monkeypatch.setattr(tasks.prepare, "child_run", lambda parent, stage, key: run)
    monkeypatch.setattr(tasks.prepare, "exclusive_work_dir", work_dir)
    monkeypatch.setattr(tasks.prepare.ObjectStore, "from_env", classmethod(lambda cls: _Store()))
    monkeypatch.setattr(tasks.prepare, "log_dataset_input", lambda *args, **kwargs: None)
    config = load_config("default", ["data.num_train=8", "data.num_eval=4", "seed=3"])
    tasks.prepare.prepare.fn(config, "prepare-k", parent=None)

    assert run.metrics == {"bad_rows_count": 0.0, "duplicates_dropped": 0.0, "rows/train": 8.0,
                           "rows/eval": 4.0, "available/train": 8.0, "available/eval": 4.0}  # fmt: skip
    assert run.params["manifest.seed"] == "3"
    assert run.params["manifest.difficulty"] == str(config.data.difficulty)
    assert {"manifest.eval_fraction", "manifest.version"} <= set(run.params)
