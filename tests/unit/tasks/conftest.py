"""Fixtures the Prefect tasks' tests share."""

from __future__ import annotations

import pytest


@pytest.fixture()
def s3(monkeypatch):
    """An ObjectStore on moto's in-process S3, returned by `ObjectStore.from_env`."""
    moto = pytest.importorskip("moto")
    from breadth.tracking.objects import ObjectStore

    with moto.mock_aws():
        store = ObjectStore("https://s3.amazonaws.com", "breadth-test", "key", "secret")
        store.endpoint = None  # moto intercepts the default AWS endpoint
        store.ensure_bucket()
        monkeypatch.setattr(ObjectStore, "from_env", classmethod(lambda cls, env=None: store))
        yield store
