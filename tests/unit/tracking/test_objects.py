"""ObjectStore against moto's in-process S3: verified uploads, immutable keys, clear errors."""

from __future__ import annotations

import socket

import pytest

from breadth.tracking.objects import ObjectStore, ObjectStoreError


@pytest.fixture()
def store():
    # Here, not at the top (as in tests/unit/tasks/conftest.py): moto and boto3 cost about
    # 0.7 CPU s, paid by each xdist worker's collection.
    moto = pytest.importorskip("moto")
    with moto.mock_aws():
        store = ObjectStore("https://s3.amazonaws.com", "breadth-test", "key", "secret")
        store.endpoint = None  # moto intercepts the default AWS endpoint
        store.ensure_bucket()
        yield store


def test_upload_verifies_and_is_idempotent(store, tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello")
    assert store.upload_file(path, "x/a.txt") == "s3://breadth-test/x/a.txt"
    assert store.upload_file(path, "x/a.txt") == "s3://breadth-test/x/a.txt"
    assert store.list("x/") == ["x/a.txt"]
    assert store.head("x/a.txt")["Metadata"]["sha256"]


def test_a_key_is_never_overwritten_with_different_bytes(store, tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello")
    store.upload_file(path, "x/a.txt")
    path.write_bytes(b"changed")
    with pytest.raises(ObjectStoreError, match="already holds different bytes"):
        store.upload_file(path, "x/a.txt")


def test_directory_round_trip(store, tmp_path):
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "a.bin").write_bytes(b"1")
    (source / "sub" / "b.bin").write_bytes(b"22")
    store.upload_dir(source, "runs/r1/model")
    target = tmp_path / "dst"
    store.download_dir("runs/r1/model", target)
    assert (target / "sub" / "b.bin").read_bytes() == b"22"


def test_stopped_s3_is_reported_with_the_fix(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    store = ObjectStore(f"http://127.0.0.1:{dead}", "breadth", "k", "s")
    path = tmp_path / "a.txt"
    path.write_bytes(b"x")
    with pytest.raises(ObjectStoreError) as caught:
        store.upload_file(path, "a.txt")
    assert f"127.0.0.1:{dead}" in str(caught.value) and "breadth stack up" in str(caught.value)


def test_missing_configuration_names_the_variables():
    with pytest.raises(ObjectStoreError, match="BREADTH_S3_ENDPOINT"):
        ObjectStore.from_env({})


def test_an_empty_prefix_is_refused_not_the_whole_bucket(store, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"a")
    store.upload_file(tmp_path / "a.txt", "datasets/h1/a.txt")
    with pytest.raises(ObjectStoreError, match="empty S3 prefix"):
        store.download_dir("", tmp_path / "stage")
    assert not (tmp_path / "stage").exists()


def test_a_prefix_downloads_only_its_own_folder_not_its_longer_namesakes(store, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"a")
    store.upload_file(tmp_path / "a.txt", "runs/r1/a.txt")
    store.upload_file(tmp_path / "a.txt", "runs/r10/other.txt")
    got = store.download_dir("runs/r1", tmp_path / "dst")
    assert got == [tmp_path / "dst" / "a.txt"] and (tmp_path / "dst" / "a.txt").read_bytes() == b"a"


def test_missing_or_different_names_what_s3_lacks(store, tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"1")
    (folder / "b.bin").write_bytes(b"22")
    store.upload_file(folder / "a.bin", "c/ckpt/a.bin")
    assert store.missing_or_different(folder, "c/ckpt") == ["b.bin"]
    store.upload_dir(folder, "c/ckpt")
    assert store.missing_or_different(folder, "c/ckpt") == []


def test_missing_or_different_trusts_known_hashes_over_the_files(store, tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"1")
    store.upload_dir(folder, "c/ckpt")
    stale = {"a.bin": {"size": 1, "sha256": "0" * 64}}  # what a marker of other bytes says
    assert store.missing_or_different(folder, "c/ckpt", stale) == ["a.bin"]
