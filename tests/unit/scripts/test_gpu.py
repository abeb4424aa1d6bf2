"""scripts/results/gpu.py's placement: the scale part's sizes named in `--scale-on-cpu` get
CUDA hidden in their jobs' environment, the others none, and `run_jobs` hands a job's own
environment to its process."""

from __future__ import annotations

import sys
import time

from tests.unit.scripts.helpers import load_script

gpu = load_script("results/gpu.py")


def test_only_the_named_size_has_cuda_hidden(tmp_path):
    jobs = gpu.plan(tmp_path, tmp_path, [0, 1], dry=True, parts=["scale"],
                             scale_on_cpu=("study",))
    env_by_size = {(job.name.split("-")[1], job.env.get("CUDA_VISIBLE_DEVICES")) for job in jobs}
    assert env_by_size == {("study", ""), ("27M", None)}
    assert len(jobs) == 2 * 2 * 3  # sizes x seeds x (SFT and two objectives' RL)
    assert all(job.env == {} for job in gpu.plan(tmp_path, tmp_path, [0], True, ["scale"]))


def test_a_job_runs_with_its_own_environment_over_the_drivers(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    show = [sys.executable, "-c", "import os; print(repr(os.environ['CUDA_VISIBLE_DEVICES']))"]
    hidden = gpu.Job("hidden", "scale", show, env={"CUDA_VISIBLE_DEVICES": ""})
    plain = gpu.Job("plain", "scale", show)
    start = time.monotonic()
    gpu.run_jobs([hidden, plain], tmp_path, start, start + 60)
    assert (hidden.state, plain.state) == ("ok", "ok")
    assert (tmp_path / "hidden.log").read_text().strip() == "''"
    assert (tmp_path / "plain.log").read_text().strip() == "'0'"


def test_max_running_holds_jobs_back_until_one_ends(tmp_path):
    nap = [sys.executable, "-c", "import time; time.sleep(0.3)"]
    jobs = [gpu.Job(f"nap-{i}", "scale", nap) for i in range(2)]
    start = time.monotonic()
    gpu.run_jobs(jobs, tmp_path, start, start + 60, max_running=1)
    assert [job.state for job in jobs] == ["ok"] * 2
    first, second = jobs  # one at a time: the second starts once the first has ended
    assert second.start_offset >= first.start_offset + first.seconds

    unlimited = [gpu.Job(f"free-{i}", "scale", nap) for i in range(2)]
    gpu.run_jobs(unlimited, tmp_path, start, start + 60)
    assert len({job.start_offset for job in unlimited}) == 1  # all started in one pass
