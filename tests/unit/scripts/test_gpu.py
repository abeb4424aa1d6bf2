"""scripts/results/gpu.py's placement: the scale part's sizes named in `--scale-on-cpu` get
CUDA hidden in their jobs' environment, the others none, and `run_jobs` hands a job's own
environment to its process."""

from __future__ import annotations

import json
import signal
import sys
import time

import pandas as pd
import pytest

from tests.unit.scripts.helpers import load_script

gpu = load_script("results/gpu.py")


def test_only_the_named_size_has_cuda_hidden(tmp_path):
    jobs = gpu.plan(tmp_path, tmp_path, [0, 1], dry=False, parts=["scale"],
                    scale_on_cpu=("study",))
    env_by_size = {(job.name.split("-")[1], job.env.get("CUDA_VISIBLE_DEVICES")) for job in jobs}
    assert env_by_size == {("study", ""), ("27M", None)}
    assert len(jobs) == 2 * 2 * 3  # sizes x seeds x (SFT and two objectives' RL)
    assert all(job.env == {} for job in gpu.plan(tmp_path, tmp_path, [0], False, ["scale"]))


def _option(job, name: str) -> str:
    return job.argv[job.argv.index(name) + 1]


def test_the_gpu_run_plans_every_size_and_spec_and_the_dry_run_each_kind_once(tmp_path):
    full = {job.name: job for job in gpu.plan(tmp_path, tmp_path, [0, 1], False, list(gpu.PARTS))}
    cells = [f"{half}-{size}-s{seed}{arm}" for size in gpu.SIZES for seed in (0, 1)
             for half, arm in [("sft", ""), *(("rl", f"-{o}") for o in gpu.OBJECTIVES)]]
    assert list(full) == ["gpu-tests", "big-model", *cells,
                          *(f"reward-{spec}" for spec in gpu.REWARD_SPECS)]
    assert all(job.after == [f"sft-{job.name.split('-', 1)[1].rsplit('-', 1)[0]}"]
               for job in full.values() if job.name.startswith("rl-"))
    # A work folder per size: two sizes' SFT preparing one folder at once raced.
    sft = [job for job in full.values() if job.name.startswith("sft-")]
    assert len({_option(job, "--work") for job in sft}) == len(gpu.SIZES)
    reward = [job for job in full.values() if job.part == "reward"]
    assert {(_option(job, "--steps"), _option(job, "--pairs")) for job in reward} == {("300", "3")}
    assert not any("--dry-run" in job.argv or "--cpu-smoke" in job.argv for job in full.values())

    dry = gpu.plan(tmp_path, tmp_path, [0], True, list(gpu.PARTS))
    assert [job.name for job in dry] == ["gpu-tests", "big-model", "sft-study-s0",
                                         "rl-study-s0-darling", "reward-correctness+batch"]
    assert all("--dry-run" in job.argv or "--cpu-smoke" in job.argv for job in dry[1:])


def test_every_sizes_cell_config_builds_for_the_gpu_run_and_the_dry_run():
    # The dry run runs one size: the other sizes' configs are checked here.
    for size in gpu.SIZES:
        for objective in gpu.OBJECTIVES:
            full = gpu.cell_config(size, 3, objective, dry_run=False)
            dry = gpu.cell_config(size, 3, objective, dry_run=True)
            assert full.seed == dry.seed == 3 and dry.rl.max_steps < full.rl.max_steps
    hidden = {size: gpu.cell_config(size, 0, "darling", False).model.hidden_size
              for size in gpu.SIZES}
    assert hidden["27M"] == 512 != hidden["study"]


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


def _delta(estimate: float) -> dict[str, float]:
    return {"estimate": estimate, "low": estimate - 0.01, "high": estimate + 0.01}


def _arm(sft: float, rl: float) -> dict:
    return {"per_model": {"sft": {"pass_at_1": [sft]}, "rl": {"pass_at_1": [rl]}},
            "paired_delta": {"pass_at_1": _delta(rl - sft)}}


def test_the_page_shows_each_size_and_arm_and_says_what_did_not_finish():
    """The layout for two sizes (the dry run's page has one), one darling cell unfinished."""
    report = load_script("results/gpu_report.py")
    rows = [{"size": "study", "seed": 0, "parameters": 1.5e6,
             "arms": {"correctness@unscaled": _arm(0.25, 0.5), "darling": _arm(0.25, 0.375)},
             "darling_minus_control": {"paired_delta": {"pass_at_1": _delta(-0.125)}}},
            {"size": "27M", "seed": 0, "parameters": 2.7e7,
             "arms": {"correctness@unscaled": _arm(0.5, 0.75), "darling": None}}]
    page = report.scale_section({"scale": rows, "scale_placement": {"study": "CPU cores",
                                                                    "27M": "GPU"}})
    assert "Where each size ran: study on the CPU cores; 27M on the GPU (one process per cell)." in page
    assert "| study | 1.50M | 0 | 0.250 | 0.500 | 0.375 | -0.125 [-0.135, -0.115] | — | — |" in page
    assert "| 27M | 27.00M | 0 | 0.500 | 0.750 | not finished | — | — | — |" in page
    assert "- study: pass@1 -0.125 (-0.125, 1 seeds)" in page  # 27M has no Δ to average
    assert not any(line.startswith("- 27M") for line in page)
    dry = report.scale_section({"scale": [{**rows[0], "arms": {"darling": _arm(0.25, 0.375)},
                                           "darling_minus_control": None}]})
    assert "| study | 1.50M | 0 | 0.250 | not run | 0.375 | — | — | — |" in dry
    narrowing = page[next(i for i, line in enumerate(page) if "against its SFT start" in line):]
    assert [line.split(" | ")[:4] for line in narrowing if line.startswith("| ")][1:] == [
        ["| study", "0", "correctness@unscaled", "+0.250 [+0.240, +0.260]"],
        ["| study", "0", "darling", "+0.125 [+0.115, +0.135]"],
        ["| 27M", "0", "correctness@unscaled", "+0.250 [+0.240, +0.260]"]]


def _rollouts(path, outcomes: dict[str, str]):
    """A rollouts file: one row per sample, correct where the outcome is "0"."""
    rows = [(p, i, o, o == "0") for p, answers in outcomes.items() for i, o in enumerate(answers)]
    pd.DataFrame(rows, columns=["problem_id", "sample_index", "outcome", "correct"]).to_parquet(path)
    return str(path)


def test_darling_is_compared_with_its_control_paired_by_problem(tmp_path):
    """What the dry run, with darling's arm alone, does not run: the two arms' comparison."""
    (tmp_path / "sft-study-s0.json").write_text(json.dumps({"parameters": 10, "stages": {}}))
    control = {"a": "0000", "b": "0111", "c": "0000"}  # pass@1 1, 0.25, 1
    darling = {"a": "0123", "b": "0000", "c": "0012"}  # pass@1 0.25, 1, 0.5
    for objective, outcomes in (("correctness@unscaled", control), ("darling", darling)):
        figures = {key: {} for key in ("per_model", "paired_delta", "sft_p", "grpo", "stages")}
        figures["rollouts"] = {"rl": _rollouts(tmp_path / f"{objective}.parquet", outcomes)}
        (tmp_path / f"rl-study-s0-{objective}.json").write_text(json.dumps(figures))
    study, other = gpu.scale_comparisons(tmp_path, [0], dry=False)
    delta = study["darling_minus_control"]["paired_delta"]["pass_at_1"]
    assert delta["estimate"] == pytest.approx((-0.75 + 0.75 - 0.5) / 3, abs=1e-4)
    assert (other["size"], other["arms"], "darling_minus_control" in other) == (
        "27M", {"correctness@unscaled": None, "darling": None}, False)  # it did not run
    (dry,) = gpu.scale_comparisons(tmp_path, [0], dry=True)  # darling alone: nothing to compare
    assert set(dry["arms"]) == {"darling"} and "darling_minus_control" not in dry


def test_the_deadline_stops_what_runs_and_what_waits_never_starts(tmp_path):
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    running = gpu.Job("long", "scale", sleep)
    waiting = gpu.Job("after-long", "scale", sleep, after=["long"])
    start = time.monotonic()
    gpu.run_jobs([running, waiting], tmp_path, start, start + 1)
    assert (running.state, waiting.state) == ("stopped at the deadline",
                                             "not started before the deadline")
    assert running.process.wait(timeout=10) == -signal.SIGKILL and running.seconds < 30
