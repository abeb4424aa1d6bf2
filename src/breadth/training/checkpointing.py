"""Checkpoint folders that prove they are whole: a completion marker lists every file's size and
sha256, and resuming trusts only folders whose files still match it.

A kill can land mid-save, and a disk or a copy can cut a file short; resuming from such a
folder crashed deep inside safetensors with an error that named no file. Here the damaged
folder is named, set aside, and training falls back to the next older whole checkpoint.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from breadth.tracking.objects import sha256_file

# Written last into a checkpoint folder, after the trainer state and the reward state.
CHECKPOINT_COMPLETE = "breadth_checkpoint_complete"
# Marks a finished stage output (e.g. `final/`), so a second run of the same stage reuses it.
OUTPUT_COMPLETE = "breadth_output_complete"

log = logging.getLogger("breadth.checkpoints")


def _listed_files(folder: Path, marker_name: str) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != marker_name)


def write_marker(folder: Path, marker_name: str = CHECKPOINT_COMPLETE, **extra: object) -> Path:
    """Record every file of `folder` (size, sha256); written last, so its presence means whole."""
    folder = Path(folder)
    files = {
        path.relative_to(folder).as_posix(): {"size": path.stat().st_size,
                                              "sha256": sha256_file(path)}
        for path in _listed_files(folder, marker_name)
    }
    marker = folder / marker_name
    temporary = marker.with_suffix(".tmp")
    temporary.write_text(json.dumps({**extra, "files": files}, indent=1, sort_keys=True))
    temporary.replace(marker)  # atomic: a reader sees no marker or a whole one
    return marker


def marker_files(folder: Path, marker_name: str = CHECKPOINT_COMPLETE) -> dict[str, dict] | None:
    """The marker's file table, or None when the folder has no readable marker."""
    try:
        return json.loads((Path(folder) / marker_name).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def damage(folder: Path, marker_name: str = CHECKPOINT_COMPLETE) -> str | None:
    """Why `folder` cannot be trusted (naming the file), or None when every file matches."""
    folder = Path(folder)
    files = marker_files(folder, marker_name)
    if files is None:
        return f"{folder / marker_name} is missing or unreadable (the save was cut short)"
    for name, expected in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            return f"{path} is missing"
        size = path.stat().st_size
        if size != expected["size"]:
            return f"{path} has {size} bytes, the completion marker recorded {expected['size']}"
        if sha256_file(path) != expected["sha256"]:
            return f"{path} does not match the sha256 in the completion marker"
    return None


def checkpoint_step(folder: Path) -> int | None:
    suffix = Path(folder).name.removeprefix("checkpoint-")
    return int(suffix) if suffix.isdigit() else None


def checkpoint_folders(output_dir: Path) -> list[Path]:
    """`checkpoint-N` folders with a completion marker, newest first (not yet verified)."""
    found = [path for path in Path(output_dir).glob("checkpoint-*")
             if checkpoint_step(path) is not None and (path / CHECKPOINT_COMPLETE).exists()]
    return sorted(found, key=lambda path: checkpoint_step(path) or 0, reverse=True)


def newest_whole_checkpoint(output_dir: Path, set_aside: bool = True) -> tuple[Path | None, list[str]]:
    """The newest checkpoint whose files match its marker, and a note per damaged one skipped.

    A damaged folder is renamed `checkpoint-N.damaged-<time>` (kept for inspection), so that
    training writes checkpoint-N afresh when it gets there again.
    """
    notes: list[str] = []
    for folder in checkpoint_folders(output_dir):
        problem = damage(folder)
        if problem is None:
            return folder, notes
        note = f"checkpoint {folder.name} is damaged: {problem}"
        if set_aside:
            aside = folder.with_name(f"{folder.name}.damaged-{int(time.time())}")
            folder.rename(aside)
            note += f"; moved to {aside.name}"
        notes.append(note + "; falling back to the next older complete checkpoint")
        log.warning(notes[-1])
    return None, notes


@contextmanager
def hold_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file` for the block.

    Two runs of the same config share one content-keyed work dir: without a lock, both
    trained into it at once. The second now waits, then finds the first's finished output.
    The lock dies with its process, so a killed run never leaves it held.
    """
    import fcntl

    lock_file = Path(lock_file)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s is held by another run of the same stage; waiting for it", lock_file)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_complete_output(folder: Path) -> bool:
    """A stage output (e.g. `final/`) with a marker and every file still matching it."""
    return (Path(folder) / OUTPUT_COMPLETE).exists() and damage(folder, OUTPUT_COMPLETE) is None


def remote_checkpoints(store: Any, prefix: str) -> list[str]:
    """Names of the `checkpoint-N` folders under `prefix/` in S3, newest first."""
    prefix = prefix.rstrip("/")
    names = {key[len(prefix) + 1 :].split("/", 1)[0] for key in store.list(prefix + "/")}
    return sorted((n for n in names if checkpoint_step(Path(n)) is not None),
                  key=lambda n: checkpoint_step(Path(n)) or 0, reverse=True)


def fetch_newest_checkpoint(store: Any, prefix: str, output_dir: Path) -> tuple[Path | None, list[str]]:
    """Download the newest whole checkpoint under `prefix/` (a fresh worker, empty work dir).

    Each candidate is verified against its own completion marker after download; a damaged or
    partial one (e.g. its upload was cut short) is removed and the next older one is tried.
    """
    import shutil

    notes: list[str] = []
    for name in remote_checkpoints(store, prefix):
        target = Path(output_dir) / name
        store.download_dir(f"{prefix.rstrip('/')}/{name}", target)
        problem = damage(target)
        if problem is None:
            notes.append(f"resuming from {store.uri(prefix.rstrip('/') + '/' + name)} (no whole "
                         f"checkpoint in the local work dir {output_dir})")
            log.warning(notes[-1])
            return target, notes
        shutil.rmtree(target)
        notes.append(f"the S3 copy of {name} is not whole ({problem}); trying the next older one")
        log.warning(notes[-1])
    return None, notes


def logged_history(checkpoint: Path, prefix: str = "train/") -> list[tuple[str, float, int]]:
    """Every metric the trainer logged up to `checkpoint`, as `(name, value, step)`.

    A resumed run replays these into its own MLflow run, so its history starts at step 1 even
    when the killed run's last metrics never reached MLflow.
    """
    state = json.loads((Path(checkpoint) / "trainer_state.json").read_text())
    return [
        (prefix + name.replace("@", "_at_"), float(value), int(entry["step"]))
        for entry in state.get("log_history", [])
        for name, value in entry.items()
        if name != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
