"""Completion markers with sizes and sha256: damaged checkpoints are named and skipped, the
lock serialises two runs of one stage, a fresh worker resumes from S3."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from breadth.training.checkpointing import (
    CHECKPOINT_COMPLETE,
    damage,
    fetch_newest_checkpoint,
    hold_lock,
    logged_history,
    newest_whole_checkpoint,
    write_marker,
)


def _checkpoint(root: Path, step: int) -> Path:
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(bytes(range(200)) * step)
    (folder / "trainer_state.json").write_text(json.dumps({
        "global_step": step,
        "log_history": [{"reward": 0.1 * s, "loss": 1.0 / s, "step": s} for s in range(1, step + 1)],
    }))
    write_marker(folder, CHECKPOINT_COMPLETE, step=step)
    return folder


def test_the_marker_records_every_file_and_a_whole_folder_passes(tmp_path):
    folder = _checkpoint(tmp_path, 2)
    files = json.loads((folder / CHECKPOINT_COMPLETE).read_text())["files"]
    assert set(files) == {"model.safetensors", "trainer_state.json"}
    assert files["model.safetensors"]["size"] == 400
    assert damage(folder) is None


@pytest.mark.parametrize("harm", ["truncate", "flip", "delete", "no marker"])
def test_each_kind_of_damage_is_named(tmp_path, harm):
    folder = _checkpoint(tmp_path, 2)
    weights = folder / "model.safetensors"
    if harm == "truncate":
        weights.write_bytes(weights.read_bytes()[:10])
    elif harm == "flip":
        weights.write_bytes(b"\xff" + weights.read_bytes()[1:])
    elif harm == "delete":
        weights.unlink()
    else:
        (folder / CHECKPOINT_COMPLETE).unlink()
    problem = damage(folder)
    assert problem is not None
    assert str(folder / (CHECKPOINT_COMPLETE if harm == "no marker" else "model.safetensors")) in problem


def test_a_truncated_newest_checkpoint_falls_back_one_and_says_so(tmp_path, caplog):
    _checkpoint(tmp_path, 2)
    newest = _checkpoint(tmp_path, 4)
    (newest / "model.safetensors").write_bytes(b"cut")
    with caplog.at_level("WARNING", logger="breadth.checkpoints"):
        chosen, notes = newest_whole_checkpoint(tmp_path)
    assert chosen == tmp_path / "checkpoint-2"
    assert len(notes) == 1 and "model.safetensors" in notes[0] and "falling back" in notes[0]
    assert "model.safetensors" in caplog.text
    # Set aside, so that training writes checkpoint-4 afresh.
    assert not newest.exists() and len(list(tmp_path.glob("checkpoint-4.damaged-*"))) == 1


def test_no_whole_checkpoint_means_start_from_scratch(tmp_path):
    only = _checkpoint(tmp_path, 2)
    (only / "trainer_state.json").write_text("{}")
    assert newest_whole_checkpoint(tmp_path)[0] is None


def test_the_history_up_to_a_checkpoint_is_replayable(tmp_path):
    history = logged_history(_checkpoint(tmp_path, 3))
    assert sorted(step for name, _, step in history if name == "train/reward") == [1, 2, 3]
    assert ("train/loss", 0.5, 2) in history


class _FolderStore:
    """An S3 stand-in over a local folder (list/download_dir/uri), enough for resume."""

    def __init__(self, root: Path):
        self.root = root

    def list(self, prefix: str) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*")
                      if p.is_file() and p.relative_to(self.root).as_posix().startswith(prefix))

    def download_dir(self, prefix: str, folder: Path) -> None:
        import shutil

        shutil.copytree(self.root / prefix, folder)

    def uri(self, key: str) -> str:
        return f"s3://test/{key}"


def test_a_fresh_worker_resumes_from_the_newest_whole_copy_in_s3(tmp_path):
    bucket = tmp_path / "bucket" / "checkpoints" / "rl-abc"
    _checkpoint(bucket, 2)
    partial = _checkpoint(bucket, 4)
    (partial / "model.safetensors").unlink()  # its upload was cut short
    work = tmp_path / "work"
    chosen, notes = fetch_newest_checkpoint(_FolderStore(tmp_path / "bucket"), "checkpoints/rl-abc", work)
    assert chosen == work / "checkpoint-2" and damage(chosen) is None
    assert not (work / "checkpoint-4").exists()
    assert "checkpoint-4" in notes[0] and "s3://test/checkpoints/rl-abc/checkpoint-2" in notes[1]


def test_the_lock_makes_a_second_holder_wait(tmp_path):
    lock, order = tmp_path / "locks" / "rl.lock", []

    def second() -> None:
        with hold_lock(lock):
            order.append("second")

    with hold_lock(lock):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.3)
        order.append("first done")
    thread.join(timeout=10)
    assert order == ["first done", "second"]
