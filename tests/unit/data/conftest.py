"""Fixtures shared by the data tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """A temporary folder for hub-style sources, with the `datasets` cache inside (tests/conftest.py
    keeps the hub offline)."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    return tmp_path
