"""A flow that only waits, deployed by tests/faults/test_dead_worker.py: its worker is killed
while it runs."""

from __future__ import annotations

import time

from prefect import flow


@flow(name="breadth-waits")
def waits(seconds: float = 900.0) -> None:
    time.sleep(seconds)
