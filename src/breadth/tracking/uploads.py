"""Uploads and MLflow writes off the training loop, retried through outages.

A checkpoint upload inside the trainer's `on_save`, with the S3 client's two quick tries, would
abort GRPO on a 30 s S3 outage. So each job goes to a background lane (one thread,
jobs in order) and is retried with exponential backoff for minutes; training goes on, and the
stage joins the lane at its end, failing then (naming every job that never went through) only
if the service stayed down past the retry window.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

log = logging.getLogger("breadth.uploads")


class UploadsFailed(RuntimeError):
    """Jobs that still failed after the retry window; the message lists them and the fix."""


# Errors a second try cannot fix: bad input or arguments, a file or folder that is not there (a
# network outage is an OSError too, but not one of these), and code that cannot do what it was
# asked (NotImplementedError: a background model upload retried one for 10 minutes).
PERMANENT_ERRORS = (TypeError, ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError,
                    NotImplementedError)


def is_permanent(error: BaseException) -> bool:
    """Errors no retry can fix: bad input, a missing file, or an object store refusing to
    overwrite a key. An error's own `permanent` attribute decides first (a hub source's
    network failure is a ValueError that a retry may fix)."""
    marked = getattr(error, "permanent", None)
    return bool(marked) if marked is not None else isinstance(error, PERMANENT_ERRORS)


def with_retries(
    what: str, job: Callable[[], Any], *, give_up_after_s: float, first_wait_s: float = 1.0,
    max_wait_s: float = 30.0, sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """Run `job` until it succeeds, waiting 1, 2, 4 ... `max_wait_s` s between tries, for up
    to `give_up_after_s` s; then the last error is raised."""
    started, wait, attempt = clock(), first_wait_s, 1
    while True:
        try:
            return job()
        except Exception as error:
            elapsed = clock() - started
            if is_permanent(error) or elapsed + wait > give_up_after_s:
                raise
            log.warning("%s failed (try %d, %.0f s so far), retrying in %.0f s: %s",
                        what, attempt, elapsed, wait, error)
            sleep(wait)
            wait, attempt = min(wait * 2, max_wait_s), attempt + 1


class BackgroundLane:
    """One worker thread running submitted jobs in order, each with `with_retries`.

    Use as a context manager: leaving the block joins the lane; on a clean exit, jobs that
    failed for good raise `UploadsFailed`.
    """

    def __init__(self, name: str, give_up_after_s: float = 600.0, **retry: Any):
        self.name = name
        self.give_up_after_s = give_up_after_s
        self.retry = retry
        self.failures: list[str] = []
        self._jobs: queue.Queue[tuple[str, Callable[[], Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name=f"breadth-{name}", daemon=True)
        self._thread.start()

    def submit(self, what: str, job: Callable[[], Any]) -> None:
        self._jobs.put((what, job))

    def _work(self) -> None:
        while (item := self._jobs.get()) is not None:
            what, job = item
            try:
                with_retries(what, job, give_up_after_s=self.give_up_after_s, **self.retry)
            except Exception as error:  # noqa: BLE001 - reported together at join()
                self.failures.append(f"{what}: {type(error).__name__}: {error}")
            finally:
                self._jobs.task_done()

    def join(self) -> None:
        """Wait for every submitted job; raise `UploadsFailed` if any failed for good."""
        self._jobs.join()
        if self.failures:
            raise UploadsFailed(
                f"{len(self.failures)} {self.name} job(s) still failed after retrying for "
                f"{self.give_up_after_s:.0f} s:\n  " + "\n  ".join(self.failures) + "\nThe "
                "local files are kept: bring the service back and run the same command again."
            )

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                self.join()
            elif issubclass(kind, Exception):
                # The stage failed: still let queued uploads go through (what a resume needs),
                # but do not hide the original error behind an upload error. (An interrupt
                # does not wait.)
                self._jobs.join()
        finally:
            self.close()
