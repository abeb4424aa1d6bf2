"""Fixtures shared by the data tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """A temporary folder for hub-style sources, with `datasets` offline and its cache inside."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return tmp_path
