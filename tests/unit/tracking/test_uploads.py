"""Retries with backoff, and a background lane that reports what never went through."""

from __future__ import annotations

import pytest

from breadth.tracking.objects import ObjectConflict
from breadth.tracking.uploads import BackgroundLane, UploadsFailed, with_retries


class _Flaky:
    def __init__(self, failures: int, error: Exception | None = None):
        self.failures, self.calls = failures, 0
        self.error = error or ConnectionError("S3 down")

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "done"


class _Clock:
    def __init__(self):
        self.now, self.waits = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_a_job_is_retried_with_growing_waits_until_it_succeeds():
    clock, job = _Clock(), _Flaky(failures=6)
    result = with_retries("upload", job, give_up_after_s=600, sleep=clock.sleep,
                          clock=lambda: clock.now)
    assert result == "done" and job.calls == 7
    assert clock.waits == [1, 2, 4, 8, 16, 30]


def test_it_gives_up_after_the_window_with_the_last_error():
    clock, job = _Clock(), _Flaky(failures=1000)
    with pytest.raises(ConnectionError):
        with_retries("upload", job, give_up_after_s=120, sleep=clock.sleep, clock=lambda: clock.now)
    assert sum(clock.waits) <= 120 and job.calls > 3


def test_a_permanent_error_is_not_retried():
    job = _Flaky(failures=5, error=ObjectConflict("different bytes"))
    with pytest.raises(ObjectConflict):
        with_retries("upload", job, give_up_after_s=600, sleep=lambda s: None)
    assert job.calls == 1


def test_the_lane_runs_jobs_in_order_and_joins_them():
    done: list[int] = []
    with BackgroundLane("test", first_wait_s=0.01) as lane:
        for index in range(5):
            lane.submit(f"job {index}", lambda index=index: done.append(index))
    assert done == [0, 1, 2, 3, 4]


def test_the_lane_rides_out_a_short_outage():
    job = _Flaky(failures=2)
    with BackgroundLane("test", first_wait_s=0.01) as lane:
        lane.submit("upload", job)
    assert job.calls == 3


def test_a_job_that_never_succeeds_fails_the_stage_at_join_naming_it():
    lane = BackgroundLane("S3 upload", give_up_after_s=0.05, first_wait_s=0.01)
    lane.submit("upload of checkpoint-4", _Flaky(failures=10**6))
    with pytest.raises(UploadsFailed, match="upload of checkpoint-4"), lane:
        pass
