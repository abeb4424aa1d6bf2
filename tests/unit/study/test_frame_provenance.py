"""A claims report's header states the code and the hardware its cells ran on, from the
parent runs' tags, and says so when a run did not record them."""

from __future__ import annotations

import pandas as pd

from breadth.study.frame import grid_provenance, provenance_header
from breadth.tracking.rest import RunRecord


def _provenance(monkeypatch, tags: list[dict[str, str]]) -> dict:
    ids = [f"r{i}" for i in range(len(tags))]
    runs = pd.DataFrame({"run_id": ids, "format": "mcq", "reward": "correctness",
                         "seed": range(len(ids))})  # fmt: skip
    records = {run_id: RunRecord(run_id, "1", run_id, "FINISHED", "", {"host.name": "box",
                                 "host.cpus": "16", "git.sha": "a" * 40, **tag},
                                 start_time=0, end_time=60000)
               for run_id, tag in zip(ids, tags)}  # fmt: skip

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
