"""Settings for flow runs started in the caller's own process (`breadth run`, `breadth grid`
with in-process cells), as opposed to runs a worker starts from a deployment."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from prefect.settings import temporary_settings


@contextmanager
def in_process_run() -> Iterator[None]:
    """Run flows here without Prefect's flow-run heartbeats.

    Why: heartbeats only feed a zombie-detection automation, which breadth's stack does not
    create; a run in this process that dies is found by `reconcile_stale_runs` (its process is
    gone from this host) at the next run or `breadth stack up`. And they cost every run up to a
    second: Prefect's sync engine joins the heartbeat thread at the end of the run, which waits
    out the thread's current 1 s sleep (0.9 s of a 2.9 s cached re-run, the profile said).
    Deployment runs keep them: their process may be on a host the reconciler cannot see.
    """
    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield
