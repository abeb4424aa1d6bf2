"""scripts/results/gpu.py --dry-run: every part of the GPU evidence run, end to end, on a CPU.

The GPU run is one shot on a lent device (15 minutes in all), so what it needs is checked
here first: each part's process, the figures each writes, and the page made from them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_the_dry_run_runs_every_part_and_writes_the_page_from_their_figures(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    done = subprocess.run(
        [sys.executable, "scripts/results/gpu.py", "--dry-run", "--seeds", "0", "--out", str(out),
         "--work", str(work), "--deadline", "840", "--scale-on-cpu", "study",
         # Two at a time, as the cores here: all eleven at once cost more CPU in all.
         "--max-jobs", "2"],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    evidence = json.loads((out / "gpu.json").read_text())
    assert {name: job["state"] for name, job in evidence["jobs"].items()} == {
        name: "ok" for name in [
            "gpu-tests", "big-model",
            *(f"{kind}-{size}-s0{suffix}" for size in ("study", "27M")
              for kind, suffix in (("sft", ""), ("rl", "-correctness@unscaled"),
                                   ("rl", "-darling"))),
            "reward-correctness", "reward-correctness+batch", "reward-darling"]}
    # Every spec's 3 pairs came back, each pair's ratio from its own two runs.
    for figures in evidence["reward"].values():
        bare, ours = figures["median_step_seconds"].values()
        assert figures["pairs_done"] == 3 and len(bare) == len(ours) == 3
        assert figures["ratios"] == pytest.approx([b / a for a, b in zip(bare, ours)])
    big = evidence["big_model"]
    assert big["dry_run"] and big["parameters"] > 0
    assert set(big["rollout"]["arms"]) == {"bare generate", "breadth transformers backend"}
    assert all(arm["tokens_per_step"] > 0 for arm in big["grpo"]["arms"].values())
    # Both sizes compared darling with its control, paired by problem.
    assert [(row["size"], row["seed"]) for row in evidence["scale"]] == [("study", 0), ("27M", 0)]
    assert all(set(row["darling_minus_control"]["paired_delta"]) >= {"pass_at_1"}
               for row in evidence["scale"])
    # The study size was placed on CPU cores; the other has no GPU to use here, and says so.
    assert evidence["scale_placement"] == {"study": "CPU cores", "27M": "CPU (no CUDA device)"}
    assert all(row["sft_stages"]["sft"]["wall_s"] > 0 for row in evidence["scale"])
    page = (out / "gpu.md").read_text()
    # Each arm's RL − SFT, one row per (size, arm) at seed 0.
    assert page.count("| 0 | correctness@unscaled |") == page.count("| 0 | darling |") == 2
    assert "**Dry run**" in page and "2 skipped" in page  # no CUDA here: the GPU tests skip
    assert page.count("| 300 ×") == 0 and page.count("| 2 × 3 of 3 |") == 3
    assert (out / "logs.tar.gz").stat().st_size > 0
