"""Settings for flow runs started in the caller's own process (`breadth run`, `breadth grid`
with in-process cells), as opposed to runs a worker starts from a deployment."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from prefect.settings import temporary_settings


@contextmanager
def in_process_run() -> Iterator[None]:
    """Run flows here without Prefect's flow-run heartbeats.

    Why: heartbeats feed the dead-worker automation (tasks/dead_runs.py), which is for runs on
    workers elsewhere; a run in this process that dies is found by `reconcile_stale_runs` (its
    process is gone from this host) at the next run or `breadth stack up`. And they cost every run up to a
    second: Prefect's sync engine joins the heartbeat thread at the end of the run, which waits
    out the thread's current 1 s sleep. A cached re-run's median fell from 3.06 to 2.79 s
    without them (Prefect's events worker then drains at exit, which the wait had overlapped).
    Deployment runs keep them: their process may be on a host the reconciler cannot see.
    """
    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield
